"""The confidence panel: the number and exactly how the rule produced it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.briefing.models import Confidence

FOLDED_HINT = "focus it (Tab) for the derivation"


class ConfidencePanel(Static, can_focus=True):
    """Confidence as a rule on evidence, with inputs, branch and result.

    ``folded`` (a short screen, see MainScreen): only the first line shows until the panel is
    focused (the CSS in app.tcss); the border says how to see the rest."""

    BORDER_TITLE = "Confidence"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("No briefing yet.", style="dim"), markup=False, id=id)
        self.folded = False
        self._showing = False

    def show_confidence(self, confidence: Confidence, track_record: str = "") -> None:
        """``track_record``: the tier's record in the last drill on this memory (or why there
        is none), as console/engine/practice/replay.py TrackRecord words it."""
        self.border_title = f"Confidence {confidence.value} — a rule on evidence, not a probability"
        text = Text()
        text.append(confidence.derivation + "\n")
        text.append(confidence.explanation + "\n", style="bold")
        claim = "none" if confidence.model_claim is None else str(confidence.model_claim)
        text.append(f"model claim {claim} · floor {confidence.floor} · cap {confidence.cap} · "
                    f"failed in this failure {confidence.failed_strong} · proven elsewhere "
                    f"{confidence.proven_elsewhere}", style="dim")
        if track_record:
            text.append(f"\ntrack record: {track_record}", style="italic")
        self.update(text)
        self._showing = True
        self.sync_hint()

    def clear(self) -> None:
        self.border_title = "Confidence"
        self.update(Text("No briefing yet.", style="dim"))
        self._showing = False
        self.sync_hint()

    def sync_hint(self, focused: bool | None = None) -> None:
        """``focused``: as a Focus or Blur event says (``has_focus`` follows it only later)."""
        focused = self.has_focus if focused is None else focused
        folded = self.folded and self._showing and not focused
        self.border_subtitle = FOLDED_HINT if folded else ""

    def on_focus(self) -> None:
        self.sync_hint(focused=True)

    def on_blur(self) -> None:
        self.sync_hint(focused=False)
