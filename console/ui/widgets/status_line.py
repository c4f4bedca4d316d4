"""The status line: memory size, index freshness, model state."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.engine import MemoryStatus

_WHY = re.compile(r"\s*\(.*\)$")  # "qwen2.5:7b offline (Ollama not reachable)" → the reason


def model_words(model: str) -> tuple[str, str]:
    """The model's state in full, and in the fewest words that still say it."""
    if model == "not configured":
        return "model not configured (deterministic)", "no model (deterministic)"
    return f"model {model}", _WHY.sub("", model)


def status_texts(status: MemoryStatus, activity: str = "",
                 model_state: str | None = None, incoming: str = "") -> list[str]:
    """The status line from the longest wording to the shortest, for the width to choose from:
    each keeps the words that matter most (the model's state, what is happening now, a new
    page) ahead of the details, which a narrower one says shorter or leaves to F1 and
    `triage doctor`."""
    model, model_short = model_words(model_state or status.model)
    hidden = f" ({status.hidden})" if status.hidden else ""  # what the overlay hides
    index_short = _WHY.sub("", status.index)
    doing = f" · {activity}" if activity else ""
    doing += f" · {incoming}" if incoming else ""
    return [
        f"triage · memory {status.incidents} incidents / {status.actions} actions · "
        f"index {status.index}{hidden} · {model}{doing}",
        f"triage · {status.incidents} incidents · index {status.index}{hidden} · "
        f"{model_short}{doing}",
        f"{model_short}{doing} · {status.incidents} incidents · index {index_short}",
        f"{model_short.split(' (')[0]}{doing} · {status.incidents} incidents",
    ]


class StatusLine(Static):
    """One line saying what the console is working with right now, worded to fit its width."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; text-wrap: nowrap;
                 text-overflow: ellipsis; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("triage · loading memory…"), markup=False, id=id)
        self._texts: list[str] = []

    def show_status(self, status: MemoryStatus, activity: str = "",
                    model_state: str | None = None, incoming: str = "") -> None:
        self._texts = status_texts(status, activity, model_state, incoming)
        self._fit()

    def show_problem(self, message: str) -> None:
        self._texts = []
        self.update(Text(f"triage · {message}", style="bold"))

    def on_resize(self, event: events.Resize) -> None:
        if self._texts:
            self._fit()

    def _fit(self) -> None:
        room = self.content_region.width or max(self.app.size.width - 2, 1)
        self.update(Text(next((t for t in self._texts if len(t) <= room), self._texts[-1])))
