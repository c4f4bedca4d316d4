"""The one base for the console's dialogs: centred, bordered, scrollable, Esc closes."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget


class Dialog(ModalScreen[None]):
    """A modal over the console. Subclasses give ``dialog_title`` and ``body()``."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", tooltip="Close this dialog",
                        id="dialog-close")]
    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > VerticalScroll { width: 90; height: auto; max-height: 85%;
        border: thick $accent; background: $surface; padding: 1 2; }
    Dialog.-error > VerticalScroll { border: thick $error; }
    Dialog.-wide > VerticalScroll { width: 100; max-height: 90%; }
    """
    dialog_title = ""

    def body(self) -> Iterable[Widget]:
        return ()

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="dialog-scroll") as scroll:
            scroll.border_title = self.dialog_title
            yield from self.body()
