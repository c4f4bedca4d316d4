"""The raw recalled memory: each record as stored, with outcome badge and score."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:  # the memory's models are not needed to paint an empty sidebar
    from console.engine.briefing import RecalledRecord
    from store.models import ActionOutcome


@cache
def outcome_styles() -> dict[ActionOutcome, str]:
    from store.models import ActionOutcome

    return {ActionOutcome.RESOLVED: "bold green", ActionOutcome.MITIGATED: "bold cyan",
            ActionOutcome.NO_EFFECT: "bold white", ActionOutcome.WORSENED: "bold red"}


def record_option(record: RecalledRecord, drill: bool = False) -> Text:
    """One record as a row; ``drill``: its incident was recorded in a game day (shown only
    with --include-drills)."""
    text = Text()
    if record.action_id is None:
        text.append(f"{record.incident_id} ", style="bold")
        text.append("no actions recorded", style="italic")
        text.append(f"  {record.score:.2f}", style="dim")
        text.append("\n")
        text.append(f" {record.service} · {record.title}", style="")
        return text
    text.append(f"{record.action_id} ", style="bold")
    text.append(f"{record.outcome}", style=outcome_styles()[record.outcome] if record.outcome
                else "bold")
    text.append(f"  {record.score:.2f}", style="dim")
    if not record.confirmed:
        text.append("  suspected", style="yellow")
    if record.quarantined:
        text.append("  ⚑ quarantined", style="bold yellow")
    if drill:
        text.append("  ◆ drill", style="bold magenta")
    text.append("\n")
    text.append(f" {record.service} · {record.action}", style="")
    return text


class RecalledSidebar(OptionList):
    """Recalled records; Enter opens one in full."""

    BORDER_TITLE = "Recalled memory"

    @dataclass
    class Opened(Message):
        record: RecalledRecord

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(markup=False, id=id)
        self.records: list[RecalledRecord] = []

    def show_records(self, records: list[RecalledRecord],
                     drills: frozenset[str] = frozenset()) -> None:
        """``drills``: incidents recorded in a game day (marked ◆ drill)."""
        self.records = list(records)
        self.clear_options()
        self.add_options([Option(record_option(r, r.incident_id in drills),
                                 id=r.action_id or r.incident_id) for r in self.records])
        self.border_title = f"Recalled memory ({len(self.records)})"
        if self.records:
            self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Opened(self.records[event.option_index]))
