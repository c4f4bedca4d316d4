"""A paste copied from a terminal: escape sequences go whole, the alert reads in order
(issue 22 item 13), and a paste over 1 MB is cut there and says so (issue 22 item 11)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import Input, Static

from console.engine.briefing.alert import MAX_ALERT_BYTES
from console.engine.config import Settings
from console.ui.app import TriageApp
from store.sequences import strip_sequences
from tests.conftest import BUNDLED_INCIDENTS

SIZE = (120, 40)
ALERT = "checkout-service p99 latency up, intermittent database connection errors"

# What a terminal copy carries: a cursor home (which, echoed, moved the text after it to the
# start of the line), colour on and off, an OSC 52 clipboard write ("rm -rf /" in base64),
# the same in 8-bit C1 form, a charset switch, an OSC 8 link ended by ST.
PASTED = ("\x1b[Hcheckout-service \x1b[1;31mp99 latency up\x1b[0m, "
          "\x1b]52;c;cm0gLXJmIC8=\x07intermittent \x9b2J\x1b(Bdatabase "
          "\x1b]8;;http://evil.example/\x1b\\connection\x1b]8;;\x1b\\ \x9d0;title\x9cerrors\x1b")


async def settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def paste(pilot: Any, text: str) -> Input:
    box = pilot.app.screen.query_one("#alert-input", Input)
    box.focus()
    await pilot.pause()
    box.post_message(events.Paste(text))  # as a terminal delivers a bracketed paste
    await pilot.pause()
    return box


async def test_a_paste_with_escape_sequences_holds_the_readable_alert_in_order(
        bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = await paste(pilot, PASTED)
        assert box.value == ALERT
        await pilot.press("enter")
        await settle(pilot)
        shown = str(app.screen.query_one("#briefing-body", Static).content)
        assert "INC-2041" in shown


@pytest.mark.parametrize(("pasted", "kept"), [
    ("\x1b[38;5;196mERROR\x1b[m pool exhausted", "ERROR pool exhausted"),
    ("a\x1b[?1049hb\x1b7c\x1b8", "abc"),           # private CSI, save/restore cursor
    ("x\x1bP1$r0m\x1b\\y", "xy"),                   # DCS answered with ST
    ("head \x1b]0;unterminated title\nnext line", "head \nnext line"),  # ends at its line
    ("tab\tand\nnewline \u202espoof", "tab\tand\nnewline spoof"),
])
def test_the_stripper_removes_each_sequence_whole(pasted: str, kept: str) -> None:
    assert strip_sequences(pasted) == kept


async def test_a_paste_over_one_megabyte_is_cut_there_and_the_console_says_so(
        bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    line = ALERT + "\n"
    pasted = line * (2 * MAX_ALERT_BYTES // len(line))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = await paste(pilot, pasted)
        assert len(box.value.encode()) <= MAX_ALERT_BYTES
        assert box.value.startswith(f"{ALERT} {ALERT}")
        await pilot.pause()
        toasts = [str(n.message) for n in app._notifications]
        assert ("the pasted alert was longer than 1 MB (1,048,576 bytes): only its first 1 MB "
                "was read and briefed") in toasts
