"""The confidence panel: the number and exactly how the rule produced it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.briefing import Confidence


class ConfidencePanel(Static):
    """Confidence as a rule on evidence, with inputs, branch and result."""

    BORDER_TITLE = "Confidence"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("No briefing yet.", style="dim"), markup=False, id=id)

    def show_confidence(self, confidence: Confidence) -> None:
        self.border_title = f"Confidence {confidence.value} — a rule on evidence, not a probability"
        text = Text()
        text.append(confidence.derivation + "\n")
        text.append(confidence.explanation + "\n", style="bold")
        claim = "none" if confidence.model_claim is None else str(confidence.model_claim)
        text.append(f"model claim {claim} · floor {confidence.floor} · cap {confidence.cap} · "
                    f"failed {confidence.failed}", style="dim")
        self.update(text)

    def clear(self) -> None:
        self.border_title = "Confidence"
        self.update(Text("No briefing yet.", style="dim"))
