"""A console saving a postmortem while a teammate's `triage add` saves at the same moment:
both incidents are kept, the console says saved, and its memory holds both (issue 9: "same
for two consoles saving"). The two writers race for real; whichever takes the lock first,
the outcome asserted is the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from console.ui.screens.postmortem import PostmortemScreen
from store.loader import load_incidents
from tests.ui.test_postmortem import (
    fill_disk_postmortem,
    incidents,  # noqa: F401  (the fixture)
    make_app,
    settle,
    text_of,
)

REPO = Path(__file__).resolve().parents[2]
TEAMMATE = """\
- id: INC-9500
  service: airship-api
  symptoms: zeppelin mooring lines snapped at dawn
  actions:
    - id: A1
      action: Re-tied the mooring lines
      outcome: RESOLVED
      explanation: The zeppelin stayed put
"""


async def test_a_console_and_a_triage_add_saving_at_once_both_keep_their_incident(
        tmp_path: Path, incidents: Path) -> None:  # noqa: F811
    app = make_app(tmp_path, incidents)
    new_file = tmp_path / "teammate.yaml"
    new_file.write_text(TEAMMATE, encoding="utf-8")
    env = {**os.environ, "TRIAGE_INCIDENTS": str(incidents),
           "TRIAGE_DATA_DIR": str(tmp_path / "data")}
    async with app.run_test(size=(120, 40)) as pilot:
        await fill_disk_postmortem(pilot, app)
        own_id = app.screen.query_one("#pm-id").value  # type: ignore[attr-defined]
        teammate = subprocess.Popen([sys.executable, "-m", "console", "add", str(new_file)],
                                    env=env, cwd=REPO, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        out, err = teammate.communicate(timeout=120)
        assert teammate.returncode == 0, err
        assert "saved INC-9500" in out
        assert not isinstance(app.screen, PostmortemScreen), "the console's save was refused"
        stored = {i.id for i in load_incidents(incidents).incidents}
        assert {own_id, "INC-9500"} <= stored
        assert "Traceback" not in err
        assert text_of(app, "#status-line")  # the console is still up
