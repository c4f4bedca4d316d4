"""Pages received by ``triage --listen`` while the console runs: newest first, each with the
state and top incident the memory gives it once recalled.

Hidden (taking no room) until the first page arrives. A page never replaces the briefing on
screen: it is added here, marked new (●) until it is briefed, and the status line counts the
new ones. F11 focuses the list; Enter (or a click) briefs the highlighted page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from console.ui.widgets.batch_list import STATE_BADGE

if TYPE_CHECKING:  # for annotations only: this module is on first paint's path
    from console.ui.state import Incoming


def received_clock(received_at: str) -> str:
    """``HH:MM:SS`` of an ISO time (UTC), or the text as it is when it is not one."""
    _, _, clock = received_at.partition("T")
    return clock[:8] if len(clock) >= 8 else received_at[:19]


def one_line(text: str) -> str:
    return " · ".join(part.strip() for part in text.splitlines() if part.strip())


def incoming_option(page: Incoming, shown: bool = False) -> Text:
    """One page on one line: new mark, number, time, state, top incident, the alert itself."""
    received = page.received
    text = Text(no_wrap=True, overflow="ellipsis")
    if shown:
        text.append("▶ ", style="bold")
    elif not page.seen:
        text.append("● ", style="bold cyan")
    else:
        text.append("  ")
    text.append(f"#{received.number:<2} ", style="bold" if not page.seen else "")
    text.append(f"{received_clock(received.received_at)} ", style="dim")
    if page.look is not None:
        label, style = STATE_BADGE[page.look.state]
        text.append(label, style=style)
        top = (f"{page.look.top_incident_id} {page.look.score:.2f}"
               if page.look.top_incident_id and page.look.score is not None else "—")
        text.append(f" {top:<15} ", style="dim")
    elif page.failed:
        text.append("not recalled ", style="bold red")
        text.append(f"({page.failed[:40]}) ", style="dim")
    else:
        text.append("recalling…              ", style="dim")
    alert = received.alert
    status = alert.status
    if status and status != "firing":
        text.append(f"[{status}] ", style="bold")
    if alert.groups:
        text.append(f"({len(alert.groups)} groups) ", style="dim")
    text.append(one_line(alert.text))  # untrusted: plain text, never markup
    return text


def incoming_title(pages: list[Incoming], address: str) -> str:
    new = sum(not page.seen for page in pages)
    counts = f"{new} new of {len(pages)}" if new else f"{len(pages)} received"
    return f"Incoming pages ({counts}) — F11 pick · Enter brief · on {address}"


class IncomingList(OptionList):
    """The pages received, newest first; Enter briefs the highlighted one."""

    DEFAULT_CSS = """
    IncomingList { display: none; height: auto; max-height: 7; border: round $warning;
                   text-wrap: nowrap; text-overflow: ellipsis; }
    IncomingList.-shown { display: block; }
    IncomingList:focus { border: round $accent; }
    """

    @dataclass
    class Chosen(Message):
        """The engineer asked for the briefing of page ``number`` (as received)."""

        number: int

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(markup=False, id=id)
        self.pages: list[Incoming] = []
        self.address = ""

    def show_pages(self, pages: list[Incoming], shown: int | None = None) -> None:
        """Show ``pages`` (newest first); ``shown`` is the number of the page whose briefing
        is on screen. While the engineer is picking (the list has the focus) the highlight
        stays on the page it was on, so a page arriving does not move their choice; else it
        is on the newest, where F11 lands."""
        was = (self.pages[self.highlighted].received.number
               if self.has_focus and self.highlighted is not None
               and self.highlighted < len(self.pages) else None)
        self.pages = list(pages)
        self.set_class(bool(self.pages), "-shown")
        self.clear_options()
        self.add_options([Option(incoming_option(page, page.received.number == shown))
                          for page in self.pages])
        self.border_title = incoming_title(self.pages, self.address)
        numbers = [page.received.number for page in self.pages]
        if was in numbers:
            self.highlighted = numbers.index(was)
        elif self.pages:
            self.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_index < len(self.pages):
            self.post_message(self.Chosen(self.pages[event.option_index].received.number))
