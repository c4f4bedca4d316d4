"""Driving the console as a user does, shared by the Pilot and snapshot tests."""

from __future__ import annotations

import unicodedata
from typing import Any

from textual import events
from textual.keys import REPLACED_KEYS, _character_to_key, _get_unicode_name_from_key
from textual.widgets import Input


def key_event(character: str) -> events.Key:
    """The Key event ``pilot.press(character)`` sends for one typed character (textual 8.2.8's
    App._press_keys, without its pauses)."""
    key = character if character.isalnum() else _character_to_key(character)
    try:
        char: str | None = unicodedata.lookup(
            _get_unicode_name_from_key(REPLACED_KEYS.get(key, key)))
    except KeyError:
        char = key if len(key) == 1 else None
    return events.Key(key, char)


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` into the focused widget: one real Key event per character, as
    ``pilot.press(*text)`` sends, but queued at once (a fast typist, or a paste in a terminal
    without bracketed paste) instead of ~40-100 ms of idle-waiting after every key.

    Only for plain text within one field: a key that moves the focus (tab) must go through
    ``pilot.press``, which waits for it before the next key is routed. Returns once the app,
    the screen and the focused widget have handled every key and the messages they posted
    (each pause waits for every widget's queue as it stood, so three cover app → widget →
    the Changed message it bubbles)."""
    app = pilot.app
    for character in text:
        event = key_event(character)
        event.set_sender(app)
        app.post_message(event)
    for _ in range(3):
        await pilot.pause()


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


async def settle(pilot: Any, app: Any) -> None:
    """Let the App's workers (memory, briefing) finish and the screen catch up with them."""
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def brief(pilot: Any, app: Any, alert: str) -> None:
    """As the engineer does it: F2, the alert, Enter; settled once the briefing is shown."""
    await settle(pilot, app)
    await pilot.press("f2")
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")
    await settle(pilot, app)
