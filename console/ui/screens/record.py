"""One recalled record in full, exactly as stored."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.engine.briefing import RecalledRecord


class RecordScreen(ModalScreen[None]):
    """The stored text of a recalled action; Escape closes it."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", tooltip="Back to the briefing",
                        id="record-close")]
    DEFAULT_CSS = """
    RecordScreen { align: center middle; }
    RecordScreen > VerticalScroll { width: 90; height: auto; max-height: 80%;
        border: thick $accent; background: $surface; padding: 1 2; }
    """

    def __init__(self, record: RecalledRecord) -> None:
        super().__init__()
        self.record = record

    def compose(self) -> ComposeResult:
        record = self.record
        label = (f"{record.action_id}  {record.outcome}" if record.action_id
                 else f"{record.incident_id}  no actions recorded")
        header = Text(f"{label}  score {record.score:.2f}{_components(record)}\n", style="bold")
        if not record.confirmed:
            header.append("explanation suspected, not confirmed\n", style="yellow")
        with VerticalScroll(id="record-scroll") as scroll:
            scroll.border_title = f"Recalled record · {record.service}"
            yield Static(header + Text("\n") + Text(record.text), markup=False, id="record-text")
            yield Static(Text("Esc to close", style="dim"), markup=False)


def _components(record: RecalledRecord) -> str:
    """The evidence behind the score: which layers found this incident."""
    parts = [f"cosine {record.cosine:.2f}" if record.cosine is not None else "",
             f"BM25 {record.bm25:.1f}" if record.bm25 is not None else ""]
    shown = " · ".join(p for p in parts if p)
    return f" ({shown})" if shown else ""
