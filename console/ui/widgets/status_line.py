"""The status line: memory size, index freshness, model state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.engine import MemoryStatus


class StatusLine(Static):
    """One line saying what the console is working with right now."""

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; color: $text; padding: 0 1; text-wrap: nowrap;
                 text-overflow: ellipsis; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("triage · loading memory…"), markup=False, id=id)

    def show_status(self, status: MemoryStatus, activity: str = "",
                    model_state: str | None = None) -> None:
        model = model_state or status.model
        if model == "not configured":
            model_text = "model not configured (deterministic)"
        else:
            model_text = f"model {model}"
        hidden = f" ({status.hidden})" if status.hidden else ""  # what the overlay hides
        text = (f"triage · memory {status.incidents} incidents / {status.actions} actions · "
                f"index {status.index}{hidden} · {model_text}")
        self.update(Text(text + (f" · {activity}" if activity else "")))

    def show_problem(self, message: str) -> None:
        self.update(Text(f"triage · {message}", style="bold"))
