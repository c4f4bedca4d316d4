"""Pictures of the screens issue 23 changed that had none: the verification panel at 120x40
and its record screen (Enter), the help overlay at 80x24, the about-to-do row (Ctrl+T) at both
sizes. The main-screen states, the details view (tests/ui/test_plain_words_snapshots.py) and
the postmortem form have theirs. Update as tests/ui/test_snapshots.py says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from tests.ui.test_snapshots import SIZE, SMALL, app_for, briefed

LEDGER = ("statement timeout errors: queries timing out after 30s, canceling statement due "
          "to statement timeout (service ledger-api)")
PAYMENTS = "payments-api p99 latency up, intermittent database connection errors"


async def settled(pilot: Any) -> None:
    for _ in range(3):
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    pilot.app.clear_notifications()
    await pilot.pause()


def test_verification_panel_at_120x40(snap_compare: Any, bundled_data_dir: Path) -> None:
    async def verify(pilot: Any) -> None:
        await briefed(LEDGER)(pilot)
        await pilot.press("f6")
        await settled(pilot)

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SIZE, run_before=verify)


def test_verification_record_screen(snap_compare: Any, bundled_data_dir: Path) -> None:
    async def record(pilot: Any) -> None:
        await briefed(LEDGER)(pilot)
        await pilot.press("f6")
        await settled(pilot)
        await pilot.press("enter")
        await settled(pilot)

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SIZE, run_before=record)


def test_help_overlay_at_80x24(snap_compare: Any, bundled_data_dir: Path) -> None:
    async def help_shown(pilot: Any) -> None:
        await settled(pilot)
        await pilot.press("f1")
        await settled(pilot)

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SMALL, run_before=help_shown)


@pytest.mark.parametrize("size", [SIZE, SMALL], ids=["120x40", "80x24"])
def test_about_to_do_row(snap_compare: Any, bundled_data_dir: Path,
                         size: tuple[int, int]) -> None:
    async def about_to_do(pilot: Any) -> None:
        await briefed(PAYMENTS)(pilot)
        await pilot.press("ctrl+t")
        await settled(pilot)

    assert snap_compare(app_for(bundled_data_dir), terminal_size=size, run_before=about_to_do)
