"""A crashed save's temp file (issue 22 item 6): `triage check` names it and its age, and the
next `triage add` removes it under the save lock once it is older than any live save could be
(store.writer.STALE_TEMP_SECONDS); a fresh one is left alone (tests/store/test_writer_bytes.py)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from store.writer import STALE_TEMP_SECONDS
from tests.conftest import BUNDLED_INCIDENTS
from tests.test_cli import call_cli
from tests.test_cli_add_bytes import new_file  # noqa: F401  (the fixture)


def test_check_reports_a_crashed_saves_temp_file_and_the_next_add_removes_it(
        tmp_path: Path, bundled_data_dir: Path, new_file: Path) -> None:  # noqa: F811
    incidents = tmp_path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, incidents)
    temp = tmp_path / ".incidents.yaml.q7w_e2rt.tmp"
    temp.write_bytes(BUNDLED_INCIDENTS.read_bytes()[:500])
    then = time.time() - STALE_TEMP_SECONDS - 5 * 60
    os.utime(temp, (then, then))

    checked = call_cli("check", data_dir=bundled_data_dir, incidents=incidents)
    assert checked.returncode == 0, checked.stderr  # a warning: the memory itself is fine
    assert (f"{temp}: warning: temporary file left by an interrupted save, 65 min old — not "
            "part of the memory; the next save removes it") in checked.stdout

    added = call_cli("add", str(new_file), data_dir=bundled_data_dir, incidents=incidents)
    assert added.returncode == 0, added.stderr
    assert not temp.exists()
    again = call_cli("check", data_dir=bundled_data_dir, incidents=incidents)
    assert "temporary file" not in again.stdout
