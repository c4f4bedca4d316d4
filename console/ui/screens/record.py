"""One recalled record in full, exactly as stored."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from console.engine.briefing.applicability import MATCH_WORDS
from console.engine.briefing.models import RecalledRecord
from console.engine.briefing.timeline import moment
from console.ui.screens.dialog import Dialog


class RecordScreen(Dialog):
    """The stored text of a recalled record; Escape closes it."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", tooltip="Back to the briefing",
                        id="record-close")]

    def __init__(self, record: RecalledRecord) -> None:
        super().__init__()
        self.record = record
        self.dialog_title = f"Recalled record · {record.service}"

    def body(self) -> Iterable[Widget]:
        record = self.record
        label = (f"{record.action_id}  {record.outcome}" if record.action_id
                 else f"{record.incident_id}  no actions recorded")
        header = Text(f"{label}  score {record.score:.2f}{_components(record)}\n", style="bold")
        header.append(f"{record.incident_id}: {MATCH_WORDS[record.match]} · applicability "
                      f"{record.applicability:.2f}\n")
        header.append(_started(record) + "\n")
        if not record.confirmed:
            header.append("explanation suspected, not confirmed\n", style="yellow")
        yield Static(header + Text("\n") + Text(record.text), markup=False, id="record-text")
        yield Static(Text("Esc to close", style="dim"), markup=False)


def _started(record: RecalledRecord) -> str:
    """"started 2026-04-09 08:55 UTC · 236 days ago", or that no start time was recorded."""
    when = moment(record.started_at)
    if when is None:
        return "undated: no start time recorded"
    return (f"started {when.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
            + (f" · {record.age}" if record.age else ""))


def _components(record: RecalledRecord) -> str:
    """The evidence behind the score: which layers found this incident."""
    parts = [f"cosine {record.cosine:.2f}" if record.cosine is not None else "",
             f"BM25 {record.bm25:.1f}" if record.bm25 is not None else ""]
    shown = " · ".join(p for p in parts if p)
    return f" ({shown})" if shown else ""
