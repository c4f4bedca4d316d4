"""An unexpected failure, shown instead of a traceback; the console keeps running."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from console.ui.screens.dialog import Dialog


class ErrorScreen(Dialog):
    """A surprise (a worker failed): what happened, and that nothing stored changed."""

    BINDINGS = [Binding("escape,enter", "dismiss", "Close", tooltip="Close", id="error-close")]

    def __init__(self, title: str, detail: str) -> None:
        super().__init__()
        self.title_text = title
        self.detail = detail
        self.dialog_title = "Error"

    def on_mount(self) -> None:
        self.add_class("-error")

    def body(self) -> Iterable[Widget]:
        yield Static(Text(self.title_text, style="bold"), markup=False)
        yield Static(Text(self.detail), markup=False, id="error-detail")
        yield Static(Text("Nothing stored was changed. Esc to close.", style="dim"),
                     markup=False)
