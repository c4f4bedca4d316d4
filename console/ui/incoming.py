"""Pages received while the console runs (`triage --listen`): the App owns them, the main
screen's incoming list renders them.

``IncomingMixin`` is part of :class:`console.ui.app.TriageApp` (kept in its own file to keep
the App readable). The webhook receiver (console/engine/listen.py) calls ``_page_arrived`` on
its own threads, which only counts the page and posts it; the first-look worker recalls
pages a batch at a time and posts what the memory alone says of each. The handlers here, on
the App's event loop, are the only place the incoming state (console/ui/state.py) changes.
A page is listed and announced (the list, the status line); it never replaces the briefing
on screen. Enter on one briefs it as if its body had been pasted (``_brief_text``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from textual import work

from console.ui.messages import PageChosen, PageLooked, PageReceived, PagesLooked

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel

    from console.engine.briefing.alert import Alert
    from console.engine.briefing.audit import AuditLog
    from console.engine.engine import TriageEngine
    from console.engine.listen import ReceivedAlert, Receiver
    from console.engine.practice.gameday import Timeline
    from console.ui.state import ConsoleState


class IncomingView(Protocol):
    """Where the pages are shown: the main screen."""

    def show_incoming(self) -> None: ...

    def put_alert(self, raw: str) -> None: ...


class IncomingMixin:
    """The App's incoming pages: the receiver's hand-over, the first-look worker, the handlers."""

    if TYPE_CHECKING:  # provided by TriageApp
        timeline: Timeline | None
        state: ConsoleState
        _pages_waiting: int
        _pages_lock: threading.Lock

        @property
        def engine(self) -> TriageEngine: ...

        @property
        def audit(self) -> AuditLog: ...

        @property
        def is_running(self) -> bool: ...

        @property
        def main_screen(self) -> IncomingView | None: ...

        def post_message(self, message: Message) -> bool: ...

        def notify(self, message: str, *, title: str = "",
                   severity: SeverityLevel = "information", timeout: float | None = None,
                   markup: bool = True) -> None: ...

        def _brief_text(self, raw_alert: str, page: int | None = None) -> None: ...

    def _start_listening(self, receiver: Receiver) -> None:
        from console.engine.listen import is_loopback

        receiver.audit = self.audit  # (a game day's tagged log, opened just above)
        receiver.start()
        host, port = receiver.address
        shown = f"[{host}]" if ":" in host else host
        self.state.listening = f"http://{shown}:{port}/"
        if not is_loopback(host) and receiver.token is None:
            self.notify(f"Listening on {self.state.listening} beyond this machine without a "
                        "token: anyone who can reach it can post pages. Set "
                        "TRIAGE_LISTEN_TOKEN (senders then need `Authorization: Bearer …`).",
                        title="Listening", severity="warning", timeout=12, markup=False)

    # Pages handed over and not yet taken by the event loop: beyond this the sender is told
    # to retry (503), so a flood never grows the message queue without bound.
    MAX_PAGES_WAITING = 100

    def _page_arrived(self, received: ReceivedAlert) -> bool:
        """(On a receiver thread.) Hand a page to the event loop; False when it has too many
        waiting (the sender gets 503 and retries) or the console is closing."""
        with self._pages_lock:
            if self._pages_waiting >= self.MAX_PAGES_WAITING or not self.is_running:
                return False
            self._pages_waiting += 1
        self.post_message(PageReceived(received))
        return True

    def on_page_received(self, message: PageReceived) -> None:
        """A page is listed (and, on a game day, joins the timeline); the briefing on screen
        stays: the list and the status line say a page came, nothing else moves."""
        with self._pages_lock:
            self._pages_waiting -= 1
        received = message.received
        self.state.received(received)
        if self.timeline is not None:
            self.timeline.alert_received(received.alert.text,
                                         via=f"webhook #{received.number} from {received.peer}")
        if self.main_screen is not None:
            self.main_screen.show_incoming()
        self._look_at_pages()

    def _look_at_pages(self) -> None:
        """Start the first-look worker on the pages waiting for one (one batch at a time, and
        only once the memory is loaded: the memory worker loads it, never two at once)."""
        state = self.state
        if state.looking or not state.to_look or state.memory_status is None:
            return
        numbers, state.to_look = state.to_look, []
        pages = [(n, page.received.alert) for n in numbers if (page := state.page(n))]
        if not pages:
            return
        state.looking = True
        self.look_at_pages(pages)

    @work(thread=True, group="incoming", exit_on_error=False)
    def look_at_pages(self, pages: list[tuple[int, Alert]]) -> None:
        """Recall each page (the memory alone: no model) for the list's state and top incident."""
        from store.errors import TriageError

        try:
            for number, alert in pages:
                try:
                    self.post_message(PageLooked(number, self.engine.first_look(alert)))
                except TriageError as exc:
                    self.post_message(PageLooked(number, failed=exc.title))
        finally:
            self.post_message(PagesLooked())

    def on_page_looked(self, message: PageLooked) -> None:
        page = self.state.page(message.number)
        if page is None:
            return  # (it has left the list since)
        page.look, page.failed = message.look, message.failed
        if self.main_screen is not None:
            self.main_screen.show_incoming()

    def on_pages_looked(self, message: PagesLooked) -> None:
        self.state.looking = False
        self._look_at_pages()

    def on_page_chosen(self, message: PageChosen) -> None:
        """Enter on a page: it is briefed as if its body had been pasted in the alert box."""
        state = self.state
        page = state.page(message.number)
        if page is None:
            self.notify(f"Page #{message.number} has left the list (only the newest "
                        "are kept; the audit log has every one).", title="Incoming pages",
                        timeout=5)
            return
        from console.ui.widgets.alert_input import as_pasted

        page.seen = True
        text = as_pasted(page.received.raw) or page.received.alert.text
        if self.main_screen is not None:
            self.main_screen.put_alert(text)
        self._brief_text(text, page=message.number)
