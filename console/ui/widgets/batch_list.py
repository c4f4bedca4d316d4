"""The alert groups of a multi-alert payload: each with its own state, the briefed one marked.

Hidden (taking no room) unless the briefing on screen came from a payload of several alert
groups. Enter (or a click) on a group asks for that group's briefing; F8 / Shift+F8 on the
main screen go to the next / previous group.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

if TYPE_CHECKING:  # for annotations only: this module is on first paint's path
    from console.engine.briefing.models import AlertGroup

STATE_BADGE = {
    "proven": ("PROVEN  ", "bold green"),
    "unproven": ("UNPROVEN", "bold yellow"),
    "no_prior_incident": ("NO PRIOR", "bold magenta"),
}


# The parse's notice when a payload holds more groups than are recalled (alert.py MAX_GROUPS):
# the list shows only those, so its title takes the payload's own counts from it.
_LEFT_OUT = re.compile(r"the payload holds (\d+) alert groups: .*?(\d+) group\(s\) of (\d+) "
                       r"alert\(s\) were not")


def left_out(notices: Iterable[str]) -> tuple[int, int]:
    """(groups, alerts) of the payload that are not in the list, from the parse's notice."""
    for notice in notices:
        found = _LEFT_OUT.search(notice)
        if found:
            return int(found.group(2)), int(found.group(3))
    return 0, 0


def batch_title(batch: list[AlertGroup], not_listed: tuple[int, int] = (0, 0)) -> str:
    """The list's title: how many groups and alerts the payload held, and how many are shown."""
    groups, alerts = len(batch), sum(g.alerts for g in batch)
    more_groups, more_alerts = not_listed
    if more_groups:
        counts = (f"{groups} shown of {groups + more_groups} groups, {alerts} of "
                  f"{alerts + more_alerts} alerts: the most severe and largest")
    else:
        counts = f"{groups} groups of {alerts} alerts, each recalled on its own"
    return f"Alert groups ({counts}) — F8 next · F9 pick · Enter brief"


def group_option(number: int, group: AlertGroup, pending: bool = False) -> Text:
    """One group on one line: mark, number, state, alerts, top incident, the alert itself."""
    text = Text(no_wrap=True, overflow="ellipsis")
    if pending:
        text.append("… ", style="bold")
    elif group.selected:
        text.append("▶ ", style="bold")
    else:
        text.append("  ")
    text.append(f"{number:>2} ", style="bold" if group.selected else "")
    label, style = STATE_BADGE[group.state]
    text.append(label, style=style)
    text.append(f" {group.alerts:>4}× ", style="dim")
    top = (f"{group.top_incident_id} {group.score:.2f}" if group.top_incident_id
           and group.score is not None else "—")
    text.append(f"{top:<15} ", style="dim")
    text.append(group.alert)  # untrusted: plain text, never markup
    return text


class BatchList(OptionList):
    """The payload's alert groups; Enter briefs the highlighted one."""

    DEFAULT_CSS = """
    BatchList { display: none; height: auto; max-height: 8; border: round $primary;
                text-wrap: nowrap; text-overflow: ellipsis; }
    BatchList.-shown { display: block; }
    BatchList:focus { border: round $accent; }
    """
    BORDER_TITLE = "Alert groups"

    @dataclass
    class Chosen(Message):
        """The engineer asked for the briefing of group ``index`` (0-based)."""

        index: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(markup=False, id=id)
        self.alert_groups: list[AlertGroup] = []
        self.not_listed = (0, 0)  # (groups, alerts) of the payload beyond the list

    def show_batch(self, batch: list[AlertGroup], pending: int | None = None,
                   notices: Iterable[str] | None = None) -> None:
        """Show ``batch`` (hide the list when it is empty); ``pending`` is being briefed;
        ``notices``, the briefing's, say whether the payload held groups beyond the list
        (None: as the last call said)."""
        self.alert_groups = list(batch)
        if notices is not None:
            self.not_listed = left_out(notices)
        self.set_class(bool(self.alert_groups), "-shown")
        self.clear_options()
        self.add_options([Option(group_option(n, g, pending == n - 1))
                          for n, g in enumerate(self.alert_groups, 1)])
        self.border_title = batch_title(self.alert_groups, self.not_listed)
        current = pending if pending is not None else next(
            (i for i, g in enumerate(self.alert_groups) if g.selected), None)
        if current is not None:
            self.highlighted = current

    def mark_pending(self, index: int) -> None:
        """Group ``index`` is being briefed: say so until its briefing lands."""
        self.show_batch(self.alert_groups, pending=index)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.post_message(self.Chosen(event.option_index))
