"""An unexpected failure, shown instead of a traceback; the console keeps running."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ErrorScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "dismiss", "Close", tooltip="Close", id="error-close")]
    DEFAULT_CSS = """
    ErrorScreen { align: center middle; }
    ErrorScreen > Vertical { width: 90; height: auto; border: thick $error;
        background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str, detail: str) -> None:
        super().__init__()
        self.title_text = title
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text, style="bold"), markup=False)
            yield Static(Text(self.detail), markup=False, id="error-detail")
            yield Static(Text("Nothing stored was changed. Esc to close.", style="dim"),
                         markup=False)
