"""The Textual app: the one owner of the console's state; screens render what it decides.

Threads: the memory worker and the briefing worker run on threads of their own and only
post messages (tagged, for a briefing, with its request id). Every attribute of the App —
the engine's memory, the memory status, the current request — changes on the App's event
loop, in the handlers below. A result for a request that is no longer current is dropped
(and the audit log says so), never shown.

A briefing of a multi-alert payload lists its alert groups; the App keeps that payload
(``batch_alert``) so the engineer can ask for another group's briefing — a new request like
any other, cancelling the running one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from textual import work
from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from console.engine.alert import Alert, AlertError, parse_alert
from console.engine.audit import AuditLog
from console.engine.briefing import RecalledRecord
from console.engine.config import Settings
from console.engine.engine import MemoryStatus, TriageEngine
from console.engine.model_client import Progress
from console.engine.pipeline import Hooks
from console.engine.request import BriefingCancelled, BriefingRequest
from console.ui.keys import Key
from console.ui.messages import (
    BriefingFailed,
    BriefingReady,
    DraftProgress,
    IndexProgress,
    MemoryFailed,
    MemoryLoaded,
    ModelState,
    RecallReady,
)
from console.ui.screens.error import ErrorScreen
from console.ui.screens.help import HelpScreen
from console.ui.screens.main import MainScreen
from console.ui.screens.postmortem import PostmortemScreen
from store.errors import TriageError


def binding_commands(screen: Screen[object]) -> Iterable[SystemCommand]:
    """A palette command for every key binding of ``screen`` that has an id and a tooltip,
    offered only while the screen would run it (its ``check_action``): the palette and the
    keys cannot drift apart, because there is only the list of bindings."""
    seen: set[str] = set()
    for binding in screen.BINDINGS:
        if not isinstance(binding, Binding) or not binding.id or not binding.tooltip \
                or binding.action in seen:
            continue
        seen.add(binding.action)
        _, name, parameters = parse_action(binding.action)
        if screen.check_action(name, parameters) is not True:
            continue
        key = binding.key_display or binding.key.split(",")[0]
        title = binding.palette_title if isinstance(binding, Key) else binding.description
        yield SystemCommand(title, f"{binding.tooltip} ({key})",
                            partial(screen.run_action, binding.action))


class TriageApp(App[None]):
    """Incident triage console."""

    TITLE = "triage"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    BINDINGS = [
        Binding("f1", "help", "Help", tooltip="What the console shows, and every key", id="help"),
        Binding("ctrl+q", "quit", "Quit", tooltip="Quit the console", id="quit", priority=True),
    ]

    def __init__(self, settings: Settings, engine: TriageEngine | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.engine = engine or TriageEngine(settings)
        self.memory_status: MemoryStatus | None = None
        self.model_state: str | None = None
        self.request: BriefingRequest | None = None
        self._last_request_id = 0
        # The multi-alert payload whose groups are on screen (None: no batch shown), the
        # group whose briefing is shown, and the group shown or being briefed.
        self.batch_alert: Alert | None = None
        self.batch_shown: int | None = None
        self.batch_group: int | None = None
        self.audit = AuditLog(settings.audit_path)

    def on_mount(self) -> None:
        # The main screen asks for the memory after its first paint (see MainScreen.on_mount).
        self.push_screen(MainScreen(self.engine))

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    # --- workers: never touch widgets or App state, only post messages ---------------------

    @work(thread=True, exclusive=True, group="memory", exit_on_error=False)
    def load_memory(self) -> None:
        posted = [0.0]

        def on_progress(done: int, total: int) -> None:
            # At most ~4 redraws a second: a first build of thousands of incidents is minutes.
            now = time.monotonic()
            if done == total or now - posted[0] >= 0.25:
                posted[0] = now
                self.post_message(IndexProgress(done, total))

        try:
            self.post_message(MemoryLoaded(self.engine.load(progress=on_progress)))
        except TriageError as exc:  # a broken file, an unusable data dir or index: named
            self.post_message(MemoryFailed.from_error(exc))
            return
        self.post_message(ModelState(self.engine.model_state()))

    @work(thread=True, group="brief", exit_on_error=False)
    def run_brief(self, request: BriefingRequest) -> None:
        def on_recall(records: list[RecalledRecord]) -> None:
            self.post_message(RecallReady(records, request.id))

        def on_progress(progress: Progress) -> None:
            self.post_message(DraftProgress(progress, request.id))

        try:
            briefing = self.engine.run(request, Hooks(on_recall, on_progress, self.audit))
        except BriefingCancelled:
            self.audit.append({"event": "briefing_cancelled", "request": request.id})
            return
        except TriageError as exc:
            self.post_message(MemoryFailed.from_error(exc))
            # The problems are on screen already (MemoryFailed); this only ends the request.
            self.post_message(BriefingFailed("", request.id))
            return
        self.post_message(BriefingReady(briefing, request.id))

    # --- what screens and keys ask of the App ------------------------------------------------

    def reload_memory(self) -> None:
        """Re-read the incidents file; every screen hears the result."""
        if self.main_screen is not None:
            self.main_screen.show_reloading()
        self.load_memory()

    def submit_alert(self, raw_alert: str) -> None:
        """A new briefing request; the running one (if any) is cancelled and its answer dropped."""
        self.cancel_briefing(quiet=True)
        main = self.main_screen
        try:
            alert = parse_alert(raw_alert)
        except AlertError as exc:
            if main is not None:
                main.show_failure(str(exc))
            return
        self.batch_alert = self.batch_shown = self.batch_group = None
        request = self._new_request(alert)
        if main is not None:
            main.show_started()
        self.run_brief(request)

    def brief_group(self, index: int) -> None:
        """Brief group ``index`` (0-based, wrapping) of the payload on screen: a new request;
        the running one (if any) is cancelled and its answer dropped."""
        if self.batch_alert is None:
            self.notify("No alert groups on screen: brief a multi-alert payload first.",
                        timeout=3)
            return
        self.cancel_briefing(quiet=True)
        self.batch_group = index % len(self.batch_alert.groups)
        request = self._new_request(self.batch_alert.for_group(self.batch_group))
        if self.main_screen is not None:
            self.main_screen.show_group_started(self.batch_group)
        self.run_brief(request)

    def step_group(self, step: int) -> None:
        """Brief the group ``step`` places after the one shown or being briefed."""
        if self.batch_group is None:
            self.brief_group(0)
        else:
            self.brief_group(self.batch_group + step)

    def _new_request(self, alert: Alert) -> BriefingRequest:
        self._last_request_id += 1
        self.request = BriefingRequest(alert, self._last_request_id)
        return self.request

    def cancel_briefing(self, quiet: bool = False) -> bool:
        """Cancel the briefing being prepared; True if there was one."""
        request, self.request = self.request, None
        if request is None:
            if not quiet:
                self.notify("No briefing is being prepared.", timeout=3)
            return False
        request.cancel.cancel()
        self.batch_group = self.batch_shown
        if not quiet and self.main_screen is not None:
            self.main_screen.show_cancelled()
        return True

    def _is_current(self, request_id: int, what: str) -> bool:
        if self.request is not None and self.request.id == request_id:
            return True
        self.audit.append({"event": "stale_result_dropped", "what": what, "request": request_id,
                           "current": self.request.id if self.request else None})
        return False

    # --- handlers: the only place App state changes ------------------------------------------

    def on_index_progress(self, message: IndexProgress) -> None:
        if self.main_screen is not None:
            self.main_screen.show_index_progress(message.done, message.total)

    def on_memory_loaded(self, message: MemoryLoaded) -> None:
        self.memory_status = message.status
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen | PostmortemScreen):
                screen.memory_loaded(message.status)

    def on_memory_failed(self, message: MemoryFailed) -> None:
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen | PostmortemScreen):
                screen.memory_failed(message.title, list(message.problems), message.hint,
                                     about_file=message.about_file)

    def on_model_state(self, message: ModelState) -> None:
        self.model_state = message.label
        if self.main_screen is not None:
            self.main_screen.show_status()

    def on_recall_ready(self, message: RecallReady) -> None:
        if self._is_current(message.request_id, "recall") and self.main_screen is not None:
            self.main_screen.show_recall(message.records,
                                         asking_model=self.engine.model_client() is not None)

    def on_draft_progress(self, message: DraftProgress) -> None:
        if self._is_current(message.request_id, "draft progress") and self.main_screen is not None:
            self.main_screen.show_progress(message.progress)

    def on_briefing_ready(self, message: BriefingReady) -> None:
        if not self._is_current(message.request_id, "briefing") or self.request is None:
            return
        request, self.request = self.request, None
        batch = message.briefing.batch
        shown = next((i for i, group in enumerate(batch) if group.selected), None)
        self.batch_alert = request.alert if batch and request.alert.groups else None
        self.batch_shown = self.batch_group = shown if self.batch_alert else None
        if self.main_screen is not None:
            self.main_screen.show_briefing(message.briefing)

    def on_briefing_failed(self, message: BriefingFailed) -> None:
        if self._is_current(message.request_id, "failure"):
            self.request = None
            self.batch_group = self.batch_shown
            if message.reason and self.main_screen is not None:
                self.main_screen.show_failure(message.reason)

    def saved(self, status: MemoryStatus, incident_id: str) -> None:
        """A postmortem was saved: the memory status follows."""
        self.memory_status = status
        if self.main_screen is not None:
            self.main_screen.show_status(f"saved {incident_id}")

    # --- global keys and the palette --------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "What the console shows, and every key (F1)", self.action_help)
        yield from binding_commands(screen)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            if event.worker.group == "brief":
                self.request = None
                self.batch_group = self.batch_shown
            self.push_screen(ErrorScreen(
                f"Something went wrong in {event.worker.name or 'a background task'}",
                f"{type(error).__name__}: {error}\n\nIf it persists, run `triage index --rebuild` "
                "and `triage check`, and report this message."))
