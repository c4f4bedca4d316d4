"""The Textual app: the one owner of the console's state; screens render what it decides.

Threads: the memory worker and the briefing worker run on threads of their own and only
post messages (tagged, for a briefing, with its request id). The console's state
(console/ui/state.py: the memory status, the current request, the batch, the briefing and
verification shown, the saved drill) changes on the App's event loop only, in the handlers
below; screens read it and ask for changes by posting messages (console/ui/messages.py). A
result for a request that is no longer current is dropped (and the audit log says so), never
shown.

A briefing of a multi-alert payload lists its alert groups; the App keeps that payload
(``state.batch_alert``) so the engineer can ask for another group's briefing — a new request
like any other, cancelling the running one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from console.ui.briefing_tools import BriefingToolsMixin
from console.ui.incoming import IncomingMixin
from console.ui.keys import binding_commands
from console.ui.messages import (
    AlertSubmitted,
    BriefingFailed,
    BriefingReady,
    CancelRequested,
    DraftProgress,
    EditRequested,
    GameDayEndRequested,
    GroupChosen,
    GroupStepped,
    IndexProgress,
    MemoryFailed,
    MemoryLoaded,
    MemoryWanted,
    ModelState,
    PostmortemRequested,
    ProvisionalBriefing,
    RecallReady,
    ReloadRequested,
    ReplayScreenRequested,
    ReplaysSaved,
    SavedReplayRead,
)
from console.ui.screens.main import MainScreen
from console.ui.state import ConsoleState, SavedReplay
from console.ui.verification import PROBE_SLOTS, VerificationMixin

# First paint (bench/first_paint.py) needs only the main screen: the engine and its pipeline
# are imported where they are first used, after that paint.
if TYPE_CHECKING:
    from console.engine.briefing.alert import Alert
    from console.engine.briefing.audit import AuditLog
    from console.engine.briefing.request import BriefingRequest
    from console.engine.config import Settings
    from console.engine.engine import MemoryStatus, SaveResult, TriageEngine
    from console.engine.listen import Receiver
    from console.engine.practice.gameday import Timeline
    from console.ui.screens.postmortem import PostmortemScreen
    from store.models import Action


# What F8 (and Shift+F8, F9) say while no payload's alert groups are on screen.
NO_GROUPS = ("No alert groups: paste an Alertmanager payload with several alerts (then Enter); "
             "F8 steps through its groups.")


def reloaded(status: MemoryStatus, before: MemoryStatus | None) -> str:
    """What F5 says once the memory is loaded again."""
    changed = before is not None and (before.incidents, before.actions) != (
        status.incidents, status.actions)
    was = f" (before: {before.incidents} / {before.actions})" if changed and before else ""
    partial = " Part of the file has problems: see the banner." if status.partial else ""
    return (f"Memory reloaded: {status.incidents} incidents / {status.actions} actions{was} from "
            f"{status.source} · index {status.index}.{partial}")


class TriageApp(VerificationMixin, BriefingToolsMixin, IncomingMixin, App[None]):
    """Incident triage console."""

    TITLE = "triage"
    CSS_PATH = Path(__file__).with_name("app.tcss")
    BINDINGS = [
        Binding("f1", "help", "Help", tooltip="What the console shows, and every key", id="help"),
        Binding("ctrl+q", "quit", "Quit", tooltip="Quit the console", id="quit", priority=True),
    ]

    def __init__(self, settings: Settings, engine: TriageEngine | None = None,
                 listen: tuple[str, int] | None = None) -> None:
        """``listen``: (host, port) to receive webhooks on while the console runs (`triage
        --listen`); bound here, so a port in use is a ListenError before anything is drawn."""
        super().__init__()
        self.settings = settings
        self._engine = engine
        self._engine_lock = threading.Lock()
        self.state = ConsoleState()
        self._audit: AuditLog | None = None
        self._probe_slots = threading.BoundedSemaphore(PROBE_SLOTS)
        # Set once the main screen's first frame is out: the memory worker waits for it.
        self.painted = threading.Event()
        # On a game day, the drill's timeline; ``drill_over`` once Ctrl+G has ended it.
        self.timeline: Timeline | None = None
        self.drill_over = False
        # F5 was pressed: the next memory loaded says so (how many incidents it now holds).
        self._reload_asked = False
        # The webhook receiver (`--listen`) and the pages it handed over that the event loop
        # has not taken yet (counted under a lock: the receiver's threads add, the loop takes).
        self.receiver: Receiver | None = None
        self._pages_waiting = 0
        self._pages_lock = threading.Lock()
        if listen is not None:
            from console.engine.listen import Receiver

            token = settings.listen_token.get_secret_value() if settings.listen_token else None
            self.receiver = Receiver(*listen, on_alert=self._page_arrived, token=token)

    @property
    def engine(self) -> TriageEngine:
        """The engine handed in, else one made on first use: importing it imports the whole
        pipeline, which first paint does not need (the memory worker is its first user)."""
        with self._engine_lock:  # the memory worker's thread and the event loop may race here
            if self._engine is None:
                from console.engine.engine import TriageEngine

                self._engine = TriageEngine(self.settings)
            return self._engine

    @property
    def audit(self) -> AuditLog:
        """The audit log, opened on first use: importing the briefing package imports pydantic,
        which first paint does not need (tests/ui/test_main_screen.py holds that)."""
        with self._engine_lock:
            if self._audit is None:
                from console.engine.briefing.audit import AuditLog

                self._audit = AuditLog(self.settings.audit_path)
            return self._audit

    @property
    def memory_status(self) -> MemoryStatus | None:
        """The memory as last loaded or saved (None before the first load)."""
        return self.state.memory_status

    def on_mount(self) -> None:
        # The main screen asks for the memory once mounted (MemoryWanted, see on_memory_wanted).
        if self.settings.game_day:
            self._start_game_day()
        self.push_screen(MainScreen(self.state, game_day=self.settings.game_day))
        if self.receiver is not None:
            self._start_listening(self.receiver)

    def on_unmount(self) -> None:
        if self.receiver is not None:
            self.receiver.stop()

    # --- game day: a DRILL banner on every screen, audit lines tagged, a timeline ------------

    def _start_game_day(self) -> None:
        from console.engine.briefing.audit import AuditLog
        from console.engine.practice.gameday import Timeline, game_day_audit_tags

        self.timeline = Timeline.start(self.settings.data_dir)
        self._audit = AuditLog(self.settings.audit_path,
                               tags=game_day_audit_tags(self.timeline.drill_id))
        self.title = "triage · DRILL"

    def mount_drill_banner(self) -> None:
        """Every screen shown on a game day carries the DRILL banner (mounted once each), until
        the drill ends."""
        if self.timeline is None or self.drill_over:
            return
        for screen in self.screen_stack:
            if not screen.query(".drill-banner"):
                screen.mount(Static(
                    f"DRILL · game day {self.timeline.drill_id} — practice: nothing recorded "
                    "here counts as real evidence · Ctrl+G ends it and writes the report",
                    markup=False, classes="drill-banner"))

    def push_screen(self, *args: Any, **kwargs: Any) -> Any:
        pushed = super().push_screen(*args, **kwargs)
        if self.timeline is not None:
            self.call_after_refresh(self.mount_drill_banner)
        return pushed

    def on_game_day_end_requested(self, message: GameDayEndRequested) -> None:
        """Ctrl+G ends the game day once: the DRILL banner goes from every screen, the
        resolution is recorded and the drill report written (BriefingToolsMixin._drill_report).
        Pressed again (here or in another console on the drill), it says the drill is over and
        records nothing, nor writes the report again."""
        if self.timeline is None:
            return
        ended = self.timeline.ended
        self.drill_over = True
        self.title = "triage · drill over"
        for screen in self.screen_stack:
            for banner in screen.query(".drill-banner"):
                banner.remove()
        if ended is not None:
            self.notify(f"The drill {self.timeline.drill_id} is already over (ended "
                        f"{ended.at:%H:%M:%S} UTC): nothing was recorded. Its report is "
                        f"{self.timeline.path.with_suffix('.md')}.", title="Game day",
                        timeout=8, markup=False)
            return
        self.timeline.resolution("ended from the console (Ctrl+G)")
        shown = self.state.shown
        self._drill_report(self.timeline, shown.briefing if shown is not None else None)

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    # --- workers: never touch widgets or App state, only post messages ---------------------

    @work(thread=True, exclusive=True, group="memory", exit_on_error=False)
    def load_memory(self) -> None:
        # Its imports (LanceDB ~1 s) would share the GIL with the first paint: wait for it (a
        # bounded wait: a screen that never paints must not keep the memory from loading).
        self.painted.wait(timeout=2.0)
        from console.engine.progress import INDEX_INTERVAL, throttled
        from store.errors import TriageError

        def on_progress(done: int, total: int) -> None:
            self.post_message(IndexProgress(done, total))

        try:
            # partial: an incidents file that does not load whole still briefs (the banner
            # on the main screen names what is not searched).
            self.post_message(MemoryLoaded(self.engine.load(
                progress=throttled(on_progress, INDEX_INTERVAL), partial=True)))
        except TriageError as exc:  # a broken file, an unusable data dir or index: named
            self.post_message(MemoryFailed.from_error(exc))
            return
        self.post_message(SavedReplayRead(self._saved_replay()))
        self.post_message(ModelState(self.engine.model_state()))

    @work(thread=True, exclusive=True, group="saved-drill", exit_on_error=False)
    def read_saved_replay(self) -> None:
        """Re-read DATA/drill.json: after a save (the record may be stale now) or a replay."""
        self.post_message(SavedReplayRead(self._saved_replay()))

    def _saved_replay(self) -> SavedReplay:
        """(On a worker thread.) The last saved replay and its record on the memory shown."""
        from store.errors import TriageError

        try:
            return SavedReplay(*self.engine.saved_replays())
        except (OSError, ValueError, TriageError):
            return SavedReplay(readable=False)

    @work(thread=True, group="brief", exit_on_error=False)
    def run_brief(self, request: BriefingRequest) -> None:
        from console.engine.briefing.models import Briefing, RecalledRecord
        from console.engine.briefing.request import BriefingCancelled
        from console.engine.model.client import Progress
        from console.engine.pipeline import Hooks
        from store.errors import TriageError

        def on_recall(records: list[RecalledRecord]) -> None:
            self.post_message(RecallReady(records, request.id))

        def on_progress(progress: Progress) -> None:
            self.post_message(DraftProgress(progress, request.id))

        def on_provisional(briefing: Briefing) -> None:
            self.post_message(ProvisionalBriefing(briefing, request.id))

        try:
            routed = self.engine.brief(request, Hooks(on_recall, on_progress, self.audit,
                                                      on_provisional=on_provisional))
        except BriefingCancelled:
            self.audit.append({"event": "briefing_cancelled", "request": request.id})
            return
        except TriageError as exc:
            self.post_message(MemoryFailed.from_error(exc))
            # The problems are on screen already (MemoryFailed); this only ends the request.
            self.post_message(BriefingFailed("", request.id))
            return
        self.post_message(BriefingReady(routed.briefing, request.id, routed))

    # --- what screens and keys ask of the App (their messages) -------------------------------

    def on_memory_wanted(self, message: MemoryWanted) -> None:
        # The worker starts now (so a test waiting for workers waits for it) but holds its
        # imports until the App's after-refresh queue runs, which is after the first frame.
        self.load_memory()
        self.call_after_refresh(self.painted.set)

    def on_reload_requested(self, message: ReloadRequested) -> None:
        """Re-read the incidents file; every screen hears the result."""
        if self.main_screen is not None:
            self.main_screen.show_reloading()
        self._reload_asked = True
        self.load_memory()

    def on_alert_submitted(self, message: AlertSubmitted) -> None:
        """A new briefing request; the running one (if any) is cancelled and its answer dropped."""
        self._brief_text(message.raw_alert)

    def _brief_text(self, raw_alert: str, page: int | None = None) -> None:
        """Brief ``raw_alert`` (typed, pasted, or the body of incoming ``page``)."""
        from console.engine.briefing.alert import AlertError, parse_alert

        self.cancel_briefing(quiet=True)
        main = self.main_screen
        state = self.state
        state.incoming_shown = page
        if state.incoming and main is not None:
            main.show_incoming()
        try:
            alert = parse_alert(raw_alert)
        except AlertError as exc:
            if main is not None:
                main.show_failure(str(exc))
            return
        state.batch_alert = state.batch_shown = state.batch_group = None
        if self.timeline is not None and page is None:  # (a page joined it when it came)
            self.timeline.alert_received(alert.text)
        request = self._new_request(alert)
        if main is not None:
            main.show_started()
        self.run_brief(request)

    def on_group_chosen(self, message: GroupChosen) -> None:
        self.brief_group(message.index)

    def on_group_stepped(self, message: GroupStepped) -> None:
        """Brief the group ``step`` places after the one shown or being briefed."""
        if self.state.batch_group is None:
            self.brief_group(0)
        else:
            self.brief_group(self.state.batch_group + message.step)

    def brief_group(self, index: int) -> None:
        """Brief group ``index`` (0-based, wrapping) of the payload on screen: a new request;
        the running one (if any) is cancelled and its answer dropped."""
        state = self.state
        if state.batch_alert is None:
            self.notify(NO_GROUPS, title="Alert groups", timeout=5)
            return
        self.cancel_briefing(quiet=True)
        state.batch_group = index % len(state.batch_alert.groups)
        request = self._new_request(state.batch_alert.for_group(state.batch_group))
        if self.main_screen is not None:
            self.main_screen.show_group_started(state.batch_group)
        self.run_brief(request)

    def _new_request(self, alert: Alert) -> BriefingRequest:
        from console.engine.briefing.request import BriefingRequest

        self.state.last_request_id += 1
        self.state.request = BriefingRequest(alert, self.state.last_request_id)
        return self.state.request

    def on_cancel_requested(self, message: CancelRequested) -> None:
        self.cancel_briefing()

    def cancel_briefing(self, quiet: bool = False) -> bool:
        """Cancel the briefing being prepared; True if there was one."""
        state = self.state
        request, state.request = state.request, None
        if request is None:
            if not quiet:
                self.notify("No briefing is being prepared.", timeout=3)
            return False
        request.cancel.cancel()
        state.batch_group = state.batch_shown
        if not quiet and self.main_screen is not None:
            self.main_screen.show_cancelled()
        return True

    def _is_current(self, request_id: int, what: str) -> bool:
        request = self.state.request
        if request is not None and request.id == request_id:
            return True
        self.audit.append({"event": "stale_result_dropped", "what": what, "request": request_id,
                           "current": request.id if request else None})
        return False

    # --- other screens: opened by the App, on its engine (the memory it shows) ---------------

    def on_replay_screen_requested(self, message: ReplayScreenRequested) -> None:
        from console.ui.screens.drill import DrillScreen

        self.push_screen(DrillScreen(self.engine, self.state.saved_replay))

    def on_replays_saved(self, message: ReplaysSaved) -> None:
        self.read_saved_replay()

    def on_postmortem_requested(self, message: PostmortemRequested) -> None:
        """A new postmortem: symptoms and service start from the alert briefed; the actions
        noted, and (with the verification open) its results, come along as action rows."""
        from console.ui.screens.postmortem import PostmortemScreen

        state, main, alert_text = self.state, self.main_screen, message.alert_text
        payload = None
        if state.batch_alert is not None and state.batch_shown is not None:
            # A postmortem is of the group briefed, not of the payload's first group (the
            # payload still says when it fired).
            alert_text, payload = state.batch_alert.groups[state.batch_shown].text, alert_text
        carried: list[Action] = []
        verifying = state.verifying
        if main is not None and main.verification_open and verifying is not None \
                and verifying.result is not None:
            from console.engine.verification.passes import carry_rows

            carried = carry_rows(verifying.result, verifying.routed.briefing)
        self._open_postmortem(PostmortemScreen(self.engine, alert_text=alert_text,
                                               noted=self.noted_rows(), carried=carried,
                                               alert_payload=payload))

    def on_edit_requested(self, message: EditRequested) -> None:
        from console.ui.screens.postmortem import PostmortemScreen

        incident = self.engine.incident(message.incident_id)
        if incident is None:
            self.notify(f"{message.incident_id} is no longer in memory (reloaded since?). Brief "
                        "again and pick another record.", title="Edit incident", timeout=6,
                        markup=False)
            return
        self._open_postmortem(PostmortemScreen(self.engine, editing=incident))

    def _open_postmortem(self, screen: PostmortemScreen) -> None:
        if self.engine.memory is None:
            self.notify("The memory is not loaded yet (or the incidents file has problems — see "
                        "the briefing pane). Press F5 to reload, then try again.",
                        title="Postmortem", severity="warning", timeout=6)
            return
        self.push_screen(screen, lambda result: self._postmortem_closed(result, screen))

    def _postmortem_closed(self, result: SaveResult | None,
                           screen: PostmortemScreen | None = None) -> None:
        """A postmortem was saved: the memory status follows, the noted actions it carried
        are taken (the next postmortem does not bring them again), and the saved drill's
        record is read again (it may no longer apply to this memory)."""
        if result is None:
            return
        if screen is not None and screen.noted:
            self.state.noted_saved()
        self.state.memory_status = result.status
        if self.main_screen is not None:
            self.main_screen.show_status(f"saved {result.incident.id}")
        self.read_saved_replay()

    # --- handlers: the only place App state changes ------------------------------------------

    def on_index_progress(self, message: IndexProgress) -> None:
        if self.main_screen is not None:
            self.main_screen.show_index_progress(message.done, message.total)

    def on_memory_loaded(self, message: MemoryLoaded) -> None:
        from console.ui.screens.postmortem import PostmortemScreen

        before, self.state.memory_status = self.state.memory_status, message.status
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen | PostmortemScreen):
                screen.memory_loaded(message.status)
        self._look_at_pages()  # (pages that came while it loaded)
        if self._reload_asked:
            self._reload_asked = False
            self.notify(reloaded(message.status, before), title="Reload (F5)", timeout=5,
                        markup=False)

    def on_memory_failed(self, message: MemoryFailed) -> None:
        from console.ui.screens.postmortem import PostmortemScreen

        self._reload_asked = False  # (the briefing pane and the status line say what failed)
        waiting = set(self.state.to_look)
        for page in self.state.incoming:
            if page.received.number in waiting:
                page.failed = "the memory did not load: F5 once it is fixed"
        if waiting and self.main_screen is not None:
            self.main_screen.show_incoming()

        for screen in self.screen_stack:
            if isinstance(screen, MainScreen | PostmortemScreen):
                screen.memory_failed(message.title, list(message.problems), message.hint,
                                     about_file=message.about_file)

    def on_saved_replay_read(self, message: SavedReplayRead) -> None:
        from console.ui.screens.drill import DrillScreen

        saved = self.state.saved_replay = message.saved
        shown, main = self.state.shown, self.main_screen
        if shown is not None and main is not None:
            main.show_track_record(shown.briefing.confidence,
                                   saved.line(shown.briefing.confidence.tier))
        for screen in self.screen_stack:
            if isinstance(screen, DrillScreen):
                screen.saved_drill_read(saved)

    def on_model_state(self, message: ModelState) -> None:
        self.state.model_state = message.label
        if self.main_screen is not None:
            self.main_screen.show_status()

    def on_recall_ready(self, message: RecallReady) -> None:
        if self._is_current(message.request_id, "recall") and self.main_screen is not None:
            self.main_screen.show_recall(message.records,
                                         asking_model=self.engine.model_client() is not None)

    def on_provisional_briefing(self, message: ProvisionalBriefing) -> None:
        """The memory's own briefing while the model drafts: read now, replaced by the final
        one; nothing acts on it (verify, export and the tripwire wait for the final)."""
        # Another group of a payload on screen keeps the group shown until its final briefing
        # (the list marks it pending; Esc returns to the one shown).
        if self._is_current(message.request_id, "provisional briefing") \
                and self.main_screen is not None and self.state.batch_alert is None:
            saved, memory = self.state.saved_replay, self.engine.memory
            self.main_screen.show_provisional(
                message.briefing,
                saved.line(message.briefing.confidence.tier) if saved is not None else "",
                memory.drill_ids if memory is not None else frozenset())

    def on_draft_progress(self, message: DraftProgress) -> None:
        if self._is_current(message.request_id, "draft progress") and self.main_screen is not None:
            self.main_screen.show_progress(message.progress)

    def on_briefing_ready(self, message: BriefingReady) -> None:
        state = self.state
        if not self._is_current(message.request_id, "briefing") or state.request is None:
            return
        request, state.request = state.request, None
        batch = message.briefing.batch
        shown = next((i for i, group in enumerate(batch) if group.selected), None)
        state.batch_alert = request.alert if batch and request.alert.groups else None
        state.batch_shown = state.batch_group = shown if state.batch_alert else None
        state.shown = message.routed
        state.tripwire = None
        if message.routed is not None:
            self.build_tripwire(request.id, message.routed)
        if self.timeline is not None:
            self.timeline.briefing_shown(message.briefing)
        main = self.main_screen
        if state.verifying is not None:
            # A verification audits the briefing it was opened on, never another one.
            state.verifying = None
            if main is not None:
                main.close_verification()
        if main is not None:
            saved, memory = state.saved_replay, self.engine.memory
            main.show_briefing(
                message.briefing,
                saved.line(message.briefing.confidence.tier) if saved is not None else "",
                memory.drill_ids if memory is not None else frozenset())
        known = state.memory_status
        status = self.engine.status() if known is not None else None
        if known is not None and status is not None and status.index != known.index:
            # (the shared index stopped answering during this briefing: say what recall reads)
            state.memory_status = status
            if main is not None:
                main.show_status()

    def on_briefing_failed(self, message: BriefingFailed) -> None:
        if self._is_current(message.request_id, "failure"):
            self.state.request = None
            self.state.batch_group = self.state.batch_shown
            if message.reason and self.main_screen is not None:
                self.main_screen.show_failure(message.reason)

    # --- global keys and the palette --------------------------------------------------------

    def action_help(self) -> None:
        from console.ui.screens.help import HelpScreen

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
                self.state.request = None
                self.state.batch_group = self.state.batch_shown
            if event.worker.group == "incoming":  # (a page's first look: never over the briefing)
                self.state.looking = False
                for page in self.state.incoming:
                    if page.look is None and not page.failed:
                        page.failed = f"{type(error).__name__}: {error}"[:80]
                if self.main_screen is not None:
                    self.main_screen.show_incoming()
                return
            if event.worker.group.startswith("verify"):
                self.state.verifying = None
                if self.main_screen is not None:
                    self.main_screen.verification_failed(
                        f"verification failed: {type(error).__name__}: {error}")
                return
            from console.ui.screens.error import ErrorScreen

            self.push_screen(ErrorScreen(
                f"Something went wrong in {event.worker.name or 'a background task'}",
                f"{type(error).__name__}: {error}\n\nIf it persists, run `triage index --rebuild` "
                "and `triage check`, and report this message."))
