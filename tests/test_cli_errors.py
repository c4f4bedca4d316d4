"""Environment mistakes get a message, not a traceback.

Through the real entry point in process (tests/test_cli.py's ``call_cli``: the same
environment, exit code and output; a Traceback escaping ``main`` fails the test): a
subprocess cost ~2-3 s and showed nothing more. The script's own exit codes are checked by
tests/test_cli.py's subprocess runs."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli import call_cli


def test_unusable_data_dir_is_explained(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    result = call_cli("brief", "disk full", data_dir=blocker / "data")
    assert result.returncode == 1
    assert "TRIAGE_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr
    assert blocker.read_text() == "x"
