"""The raw recalled memory: each record as stored, with outcome badge and score, under its
incident's line saying how that incident applies to the alert."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:  # the memory's models are not needed to paint an empty sidebar
    from console.engine.briefing.models import Match, RecalledRecord
    from store.models import ActionOutcome


@cache
def outcome_styles() -> dict[ActionOutcome, str]:
    from store.models import ActionOutcome

    return {ActionOutcome.RESOLVED: "bold green", ActionOutcome.MITIGATED: "bold cyan",
            ActionOutcome.NO_EFFECT: "bold white", ActionOutcome.WORSENED: "bold red"}


MATCH_STYLES = {"strong": "bold green", "elsewhere": "bold yellow", "weak": "italic"}
# The sidebar's narrowest text width (min-width 34, less its border, padding and scrollbar).
INCIDENT_LINE = 30


@cache
def match_words() -> Mapping[Match, str]:
    """MATCH_WORDS, imported when records are shown (not on the first paint's path)."""
    from console.engine.briefing.applicability import MATCH_WORDS

    return MATCH_WORDS


def incident_line(record: RecalledRecord) -> Text:
    """The incident's line above its first record: how it applies to this alert, in words
    (on a line of their own when both would not fit the sidebar's narrowest width), then when
    it started and how long ago."""
    words = match_words()[record.match]
    text = Text(record.incident_id, style="bold underline")
    fits = len(record.incident_id) + 3 + len(words) <= INCIDENT_LINE
    text.append(" · " if fits else "\n ")
    text.append(words, style=MATCH_STYLES[record.match])
    text.append("\n ")
    text.append_text(when_text(record))
    return text


def when_text(record: RecalledRecord) -> Text:
    """"2026-04-09 · 236 days ago", or "undated" (dimmed)."""
    if not record.started_at:
        return Text("undated", style="dim italic")
    return Text(f"{record.started_at[:10]}" + (f" · {record.age}" if record.age else ""),
                style="dim")


def by_strength_then_newest(records: list[RecalledRecord]) -> list[RecalledRecord]:
    """Incidents strongest class first and, within a class, newest first (undated last); each
    incident's records stay together in the order they were taken."""
    # (records exist only once the engine has loaded: these imports cost the first paint nothing)
    from console.engine.briefing.applicability import MATCH_RANK
    from console.engine.briefing.timeline import moment

    incidents: dict[str, list[RecalledRecord]] = {}
    for record in records:
        incidents.setdefault(record.incident_id, []).append(record)

    def key(group: list[RecalledRecord]) -> tuple[int, bool, float]:
        when = moment(group[0].started_at)
        return (-MATCH_RANK[group[0].match], when is None,
                -when.timestamp() if when is not None else 0.0)

    return [record for group in sorted(incidents.values(), key=key) for record in group]


def record_option(record: RecalledRecord, drill: bool = False, first: bool = False) -> Text:
    """One record as a row; ``drill``: its incident was recorded in a game day (shown only
    with --include-drills); ``first``: the incident's first record, under its incident line."""
    text = Text()
    if first:
        text.append_text(incident_line(record))
        text.append("\n")
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
        """``drills``: incidents recorded in a game day (marked ◆ drill). Shown strongest
        class first, newest first within a class."""
        self.records = by_strength_then_newest(list(records))
        self.clear_options()
        seen: set[str] = set()
        options = []
        for record in self.records:
            first = record.incident_id not in seen
            seen.add(record.incident_id)
            options.append(Option(record_option(record, record.incident_id in drills, first),
                                  id=record.action_id or record.incident_id))
        self.add_options(options)
        self.border_title = f"Recalled memory ({len(self.records)})"
        if self.records:
            self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Opened(self.records[event.option_index]))
