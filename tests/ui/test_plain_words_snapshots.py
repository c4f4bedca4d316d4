"""Pictures of the details view (F12): how a briefing was worked out, at 120×40 and 80×24.

Baselines live in tests/ui/__snapshots__/test_plain_words_snapshots/; after an intended change
run `.venv/bin/python -m pytest tests/ui/test_plain_words_snapshots.py --snapshot-update`, look
at the new pictures, and commit them with the reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief_and_wait


def details_of(alert: str) -> Any:
    async def run_before(pilot: Any) -> None:
        pilot.app.screen.query_one("#alert-input", Input).cursor_blink = False
        await brief_and_wait(pilot, alert)
        pilot.app.clear_notifications()
        await pilot.press("f12")
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
@pytest.mark.parametrize("alert", [
    "payments-api 5xx error rate above 5% after deploy, checkout failing",
    "TLS certificate expired on internal gRPC mesh",
], ids=["proven", "no_prior_incident"])
def test_details_view(alert: str, size: tuple[int, int], snap_compare: Any,
                      bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    assert snap_compare(app, terminal_size=size, run_before=details_of(alert))
