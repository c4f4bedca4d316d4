"""The console started on a data dir it cannot write (read-only, or full): it still briefs,
from an index held in memory, and says so — in the status line, a notice, every briefing.

Real faults (tmpfs remounted read-only / filled); injected where mount is not permitted
(tests/disk_faults.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.disk_faults import Disks, disks_fixture  # noqa: F401
from tests.ui.driving import brief_and_wait
from tests.ui.test_postmortem import SIZE, notifications, settle, text_of

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"


@pytest.mark.parametrize("fault", ["read-only", "full"])
async def test_console_on_an_unwritable_data_dir_briefs_and_says_why(
        fault: str, disks: Disks, tmp_path: Path) -> None:
    data = disks.make("data", size="256k")
    incidents = tmp_path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, incidents)
    if fault == "full":
        data.fill()
    else:
        data.read_only()
    reason = "Read-only file system" if fault == "read-only" else "No space left on device"
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data.path))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "index in memory only" in text_of(app, "#status-line")
        assert (f"the index could not be written: {reason} at {data.path / 'index'}; recall uses "
                "an index held in memory for now") in notifications(app)
        assert "Something went wrong" not in notifications(app)

        await brief_and_wait(pilot, CHECKOUT)
        body = text_of(app, "#briefing-body")
        assert "INC-2041" in body
        assert "NO PRIOR INCIDENT" not in body.upper()
        assert (f"the index could not be written ({reason} at {data.path / 'index'}): this "
                "recall searched an index held in memory") in " ".join(body.split())
