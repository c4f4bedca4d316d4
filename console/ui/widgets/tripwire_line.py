"""The "about to do…" line: the engineer types the action they intend; if it resembles a
WORSENED action of the recalled memory (or of the alert's service), the warning shows at once,
with its citation and why it went wrong. Enter notes the action (the game-day timeline and the
postmortem form get it).

The widget only renders and asks: the App checks the text in a worker (the tripwire of the
briefing on screen) and answers with :meth:`show_hits`, tagged with the text it checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from store.text import clean

if TYPE_CHECKING:
    from console.engine.briefing.tripwire import TripwireHit

# A check once typing pauses this long (a check costs one embed, ~12–28 ms measured).
PAUSE = 0.25


class TripwireLine(Vertical):
    """An Input and, below it, the warnings for what is typed (nothing while it is harmless)."""

    DEFAULT_CSS = """
    TripwireLine { height: auto; }
    TripwireLine > Input { margin: 0; }
    TripwireLine > #tripwire-warning { height: auto; max-height: 6; padding: 0 1;
        color: $error; display: none; }
    TripwireLine > #tripwire-warning.-shown { display: block; }
    """

    @dataclass
    class Check(Message):
        """Check this intended action (asked once typing pauses)."""

        text: str

    @dataclass
    class Noted(Message):
        """The engineer pressed Enter on an intended action: note it."""

        text: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._timer: Timer | None = None
        self.hits: list[TripwireHit] = []

    def compose(self) -> ComposeResult:
        yield Input(compact=True,
                    placeholder="About to do… type the action you intend (checked against "
                                "what made things worse); Enter notes it", id="tripwire-input")
        yield Static("", markup=False, id="tripwire-warning")

    @property
    def input(self) -> Input:
        return self.query_one("#tripwire-input", Input)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self._timer is not None:
            self._timer.stop()
        text = event.value
        if not text.strip():
            self.show_hits("", [])
            return
        self._timer = self.set_timer(PAUSE, lambda: self.post_message(self.Check(text)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = clean(event.value).strip()
        if text:
            self.post_message(self.Noted(text))
            self.input.value = ""

    def show_hits(self, text: str, hits: Sequence[TripwireHit]) -> None:
        """The warnings for ``text`` — dropped if the line no longer holds it."""
        if text and text != self.input.value:
            return
        self.hits = list(hits)
        warning = self.query_one("#tripwire-warning", Static)
        shown = Text()
        for hit in self.hits:
            shown.append("⚠ ", style="bold red")
            shown.append(hit.warning + "\n")
        warning.update(shown)
        warning.set_class(bool(self.hits), "-shown")
