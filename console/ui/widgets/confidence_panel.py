"""The confidence panel: the number, and in a sentence what it stands on and what would change
it. The rule's derivation (formula, floor, cap, model claim) is on the details view (F12)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.briefing.models import Confidence

DETAILS_KEY = "F12"
DETAILS_HINT = f"{DETAILS_KEY}: how it was worked out"
FOLDED_HINT = f"focus it (Tab) for the rest · {DETAILS_HINT}"


class ConfidencePanel(Static, can_focus=True):
    """Confidence as a rule on evidence, said in words.

    ``folded`` (a short screen, see MainScreen): only the first line shows until the panel is
    focused (the CSS in app.tcss); the border says how to see the rest."""

    BORDER_TITLE = "Confidence"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("No briefing yet.", style="dim"), markup=False, id=id)
        self.folded = False
        self._showing = False
        self._state: str | None = None
        self.track_record = ""

    def show_confidence(self, confidence: Confidence, track_record: str = "",
                        state: str | None = None) -> None:
        """``track_record``: the tier's record in the last drill on this memory (or why there
        is none), as console/engine/practice/replay.py TrackRecord words it; ``state``: the
        briefing's (None: the one last shown). After no prior incident there is no fix, so no
        track record: the panel says what that state means instead."""
        from console.engine.briefing.confidence import confidence_words

        if state is not None:
            self._state = state
        self.track_record = track_record
        self.border_title = f"Confidence {confidence.value} — a rule on evidence, not a probability"
        first, *rest = confidence_words(confidence, self._state)
        text = Text(first, style="bold")
        for line in rest:
            text.append("\n" + line)
        if track_record and self._state != "no_prior_incident":
            text.append(f"\ntrack record: {track_record}", style="italic")
        self.update(text)
        self._showing = True
        self.sync_hint()

    def clear(self) -> None:
        self.border_title = "Confidence"
        self.update(Text("No briefing yet.", style="dim"))
        self._showing = False
        self._state = None
        self.track_record = ""
        self.sync_hint()

    def sync_hint(self, focused: bool | None = None) -> None:
        """``focused``: as a Focus or Blur event says (``has_focus`` follows it only later)."""
        focused = self.has_focus if focused is None else focused
        folded = self.folded and self._showing and not focused
        self.border_subtitle = (FOLDED_HINT if folded else DETAILS_HINT) if self._showing else ""

    def on_focus(self) -> None:
        self.sync_hint(focused=True)

    def on_blur(self) -> None:
        self.sync_hint(focused=False)
