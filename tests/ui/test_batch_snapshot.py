"""A picture of the main screen briefing a multi-alert payload: the alert groups above the
briefing, the briefed one marked, F8 in the footer. (The states without a batch are pictured
in test_snapshots.py, unchanged by the list: it takes no room when there is no batch.)

Deterministic as those are: prebuilt index, no model, nothing timed on screen. After an
intended change: `.venv/bin/python -m pytest tests/ui/test_batch_snapshot.py --snapshot-update`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.batches import hundred_alert_batch
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief_and_wait


def test_a_hundred_alert_batch_briefed_on_its_proven_group(snap_compare: Any,
                                                           bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))

    async def run_before(pilot: Any) -> None:
        await brief_and_wait(pilot, hundred_alert_batch())
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
