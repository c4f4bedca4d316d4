"""The "about to do…" line: the engineer types the action they intend; if it resembles a
WORSENED action of the recalled memory (or of the alert's service), the warning shows at once,
with its citation and why it went wrong. Enter notes the action (the game-day timeline and the
postmortem form get it).

The widget only renders and asks: the App checks the text in a worker (the tripwire of the
briefing on screen) and answers with :meth:`show_hits`, tagged with the text it checked.

The line takes a row of its own above the key footer only while it is in use (Ctrl+T opens
it, focused): docked at the bottom it sat under the footer, and what was typed there was
typed blind. It folds away again once it loses focus holding neither text nor a warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Static

from store.text import clean

if TYPE_CHECKING:
    from console.engine.briefing.tripwire import TripwireHit

# A check once typing pauses this long (a check costs one embed, ~12–28 ms measured).
PAUSE = 0.25
# Fits 80 columns whole, after the line's label.
PLACEHOLDER = "type the action: warned if it made things worse · Enter notes it"
# Before a briefing there is no recalled memory to check against: said, not typed blind.
UNCHECKED = "no briefing yet: nothing to check it against · Enter notes it"


class TripwireLine(Vertical):
    """An Input and, below it, the warnings for what is typed (nothing while it is harmless)."""

    DEFAULT_CSS = """
    TripwireLine { height: auto; display: none; }
    TripwireLine.-open { display: block; }
    TripwireLine > #tripwire-row { height: 1; }
    TripwireLine #tripwire-label { width: auto; padding: 0 1; text-style: bold;
        background: $boost; }
    TripwireLine Input { margin: 0; width: 1fr; background: $boost; }
    TripwireLine Input:focus { background: $primary 20%; }
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
        with Horizontal(id="tripwire-row"):
            # The label stays while typing: the row reads as the about-to-do line, not the alert.
            yield Static("About to do ▸", markup=False, id="tripwire-label")
            yield Input(compact=True, placeholder=PLACEHOLDER, id="tripwire-input")
        yield Static("", markup=False, id="tripwire-warning")

    @property
    def input(self) -> Input:
        return self.query_one("#tripwire-input", Input)

    def open(self, checked: bool = True) -> None:
        """Show the line (a row above the key footer) and put the cursor in it; ``checked``:
        a briefing is on screen, so what is typed is checked against its recalled memory."""
        self.input.placeholder = PLACEHOLDER if checked else UNCHECKED
        self.add_class("-open")
        self.input.focus()

    def _fold_if_idle(self) -> None:
        """Fold away once the cursor has left and the line holds neither text nor a warning."""
        if not self.input.has_focus and not self.input.value.strip() and not self.hits:
            self.remove_class("-open")

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        self._fold_if_idle()

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
        if self.hits:
            self.add_class("-open")  # a warning is never hidden behind a folded line
        else:
            self._fold_if_idle()
