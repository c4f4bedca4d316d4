"""Driving the console as a user does, shared by the Pilot and snapshot tests."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input


async def brief_and_wait(pilot: Any, alert: str) -> None:
    """Wait for the memory, type ``alert`` into the alert box, press Enter, wait for the answer."""
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()
