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

import threading
import time
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.actions import parse as parse_action
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from console.engine.briefing.audit import AuditLog
from console.ui.keys import Key
from console.ui.screens.main import MainScreen
from console.ui.verifying import PROBE_SLOTS, VerificationMixin, Verifying

# First paint (bench/first_paint.py) needs only the main screen: the engine, its pipeline and
# the messages the workers post are imported where they are first used, after that paint.
if TYPE_CHECKING:
    from console.engine.briefing.alert import Alert
    from console.engine.briefing.request import BriefingRequest
    from console.engine.briefing.tripwire import Tripwire, TripwireHit
    from console.engine.config import Settings
    from console.engine.engine import MemoryStatus, TriageEngine
    from console.engine.pipeline import Routed
    from console.engine.practice.gameday import Timeline
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
    from store.models import Action

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


class TriageApp(VerificationMixin, App[None]):
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
        self._engine = engine
        self._engine_lock = threading.Lock()
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
        # The briefing on screen with its recall, and the verification of it (if any).
        self.shown: Routed | None = None
        self.verifying: Verifying | None = None
        self._last_verification_id = 0
        self._probe_slots = threading.BoundedSemaphore(PROBE_SLOTS)
        # Set once the main screen's first frame is out: the memory worker waits for it.
        self.painted = threading.Event()
        # The tripwire of the briefing on screen (built in a worker), the actions the engineer
        # noted on the "about to do…" line, and — on a game day — the drill's timeline.
        self.tripwire: Tripwire | None = None
        self.noted: list[tuple[str, list[TripwireHit]]] = []
        self.timeline: Timeline | None = None

    @property
    def engine(self) -> TriageEngine:
        """The engine handed in, else one made on first use: importing it imports the whole
        pipeline, which first paint does not need (the memory worker is its first user)."""
        with self._engine_lock:  # the memory worker's thread and the event loop may race here
            if self._engine is None:
                from console.engine.engine import TriageEngine

                self._engine = TriageEngine(self.settings)
            return self._engine

    def on_mount(self) -> None:
        # The main screen asks for the memory after its first paint (see MainScreen.on_mount).
        if self.settings.game_day:
            self._start_game_day()
        self.push_screen(MainScreen())

    # --- game day: a DRILL banner on every screen, audit lines tagged, a timeline ------------

    def _start_game_day(self) -> None:
        from console.engine.practice.gameday import Timeline, drill_audit_tags

        self.timeline = Timeline.start(self.settings.data_dir)
        self.audit = AuditLog(self.settings.audit_path,
                              tags=drill_audit_tags(self.timeline.drill_id))
        self.title = "triage · DRILL"

    def mount_drill_banner(self) -> None:
        """Every screen shown on a game day carries the DRILL banner (mounted once each)."""
        if self.timeline is None:
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

    @property
    def main_screen(self) -> MainScreen | None:
        return next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)

    # --- workers: never touch widgets or App state, only post messages ---------------------

    @work(thread=True, exclusive=True, group="memory", exit_on_error=False)
    def load_memory(self) -> None:
        # Its imports (LanceDB ~1 s) would share the GIL with the first paint: wait for it (a
        # bounded wait: a screen that never paints must not keep the memory from loading).
        self.painted.wait(timeout=2.0)
        from console.ui.messages import IndexProgress, MemoryFailed, MemoryLoaded, ModelState
        from store.errors import TriageError

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
        from console.engine.briefing.models import RecalledRecord
        from console.engine.briefing.request import BriefingCancelled
        from console.engine.model.client import Progress
        from console.engine.pipeline import Hooks
        from console.ui.messages import (
            BriefingFailed,
            BriefingReady,
            DraftProgress,
            MemoryFailed,
            RecallReady,
        )
        from store.errors import TriageError

        def on_recall(records: list[RecalledRecord]) -> None:
            self.post_message(RecallReady(records, request.id))

        def on_progress(progress: Progress) -> None:
            self.post_message(DraftProgress(progress, request.id))

        try:
            routed = self.engine.route(request, Hooks(on_recall, on_progress, self.audit))
        except BriefingCancelled:
            self.audit.append({"event": "briefing_cancelled", "request": request.id})
            return
        except TriageError as exc:
            self.post_message(MemoryFailed.from_error(exc))
            # The problems are on screen already (MemoryFailed); this only ends the request.
            self.post_message(BriefingFailed("", request.id))
            return
        self.post_message(BriefingReady(routed.briefing, request.id, routed))

    # --- what screens and keys ask of the App ------------------------------------------------

    def reload_memory(self) -> None:
        """Re-read the incidents file; every screen hears the result."""
        if self.main_screen is not None:
            self.main_screen.show_reloading()
        self.load_memory()

    def submit_alert(self, raw_alert: str) -> None:
        """A new briefing request; the running one (if any) is cancelled and its answer dropped."""
        from console.engine.briefing.alert import AlertError, parse_alert

        self.cancel_briefing(quiet=True)
        main = self.main_screen
        try:
            alert = parse_alert(raw_alert)
        except AlertError as exc:
            if main is not None:
                main.show_failure(str(exc))
            return
        self.batch_alert = self.batch_shown = self.batch_group = None
        if self.timeline is not None:
            self.timeline.alert_received(alert.text)
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
        from console.engine.briefing.request import BriefingRequest

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
        from console.ui.screens.postmortem import PostmortemScreen

        self.memory_status = message.status
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen | PostmortemScreen):
                screen.memory_loaded(message.status)

    def on_memory_failed(self, message: MemoryFailed) -> None:
        from console.ui.screens.postmortem import PostmortemScreen

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
        self.shown = message.routed
        self.tripwire = None
        if message.routed is not None:
            self.build_tripwire(request.id, message.routed)
        if self.timeline is not None:
            self.timeline.briefing_shown(message.briefing)
        if self.verifying is not None:
            # A verification audits the briefing it was opened on, never another one.
            self.verifying = None
            if self.main_screen is not None:
                self.main_screen.close_verification()
        if self.main_screen is not None:
            self.main_screen.show_briefing(message.briefing)
        known = self.memory_status
        status = self.engine.status() if known is not None else None
        if known is not None and status is not None and status.index != known.index:
            # (the shared index stopped answering during this briefing: say what recall reads)
            self.memory_status = status
            if self.main_screen is not None:
                self.main_screen.show_status()

    def on_briefing_failed(self, message: BriefingFailed) -> None:
        if self._is_current(message.request_id, "failure"):
            self.request = None
            self.batch_group = self.batch_shown
            if message.reason and self.main_screen is not None:
                self.main_screen.show_failure(message.reason)

    # --- the tripwire: "about to do…" ---------------------------------------------------------

    @work(thread=True, exclusive=True, group="tripwire", exit_on_error=False)
    def build_tripwire(self, request_id: int, routed: Routed) -> None:
        from console.engine.briefing.tripwire import Tripwire, gather_candidates
        from console.ui.messages import TripwireReady

        memory = self.engine.memory
        embedder = self.engine.embedder()
        if memory is None or embedder is None:
            return  # lexical-only memory: no tripwire (the warnings in the briefing stand)
        candidates = gather_candidates(routed.recall, memory, [routed.alert.service],
                                       include_drills=self.settings.include_drills)
        self.post_message(TripwireReady(Tripwire(candidates, embedder), request_id))

    def on_tripwire_ready(self, message: Any) -> None:
        if self.shown is not None and self._last_request_id == message.request_id:
            self.tripwire = message.tripwire

    def check_intent(self, text: str) -> None:
        if self.tripwire is not None:
            self._check_intent(self._last_request_id, self.tripwire, text)

    @work(thread=True, exclusive=True, group="tripwire-check", exit_on_error=False)
    def _check_intent(self, request_id: int, tripwire: Tripwire, text: str) -> None:
        from console.ui.messages import TripwireChecked
        from store.embedder import EmbedderUnavailable

        try:
            hits = tripwire.check(text)
        except EmbedderUnavailable:
            return
        self.post_message(TripwireChecked(text, hits, request_id))

    def on_tripwire_checked(self, message: Any) -> None:
        if message.request_id == self._last_request_id and self.main_screen is not None:
            self.main_screen.show_tripwire(message.text, message.hits)

    def note_action(self, text: str, hits: list[TripwireHit]) -> None:
        """An action the engineer is about to take: kept for the postmortem form (and the
        game day's timeline), with the warnings it raised."""
        from console.engine.briefing.tripwire import safe_intent

        noted = safe_intent(text)
        self.noted.append((noted, list(hits)))
        if self.timeline is not None:
            self.timeline.action_noted(noted, None, hits)
        warned = f" — it resembles {hits[0].action_id} WORSENED" if hits else ""
        self.notify(f"Noted: {noted}{warned}. Ctrl+R carries it into the postmortem.",
                    title="About to do", timeout=4, markup=False)

    def noted_rows(self) -> list[Action]:
        """The noted actions as postmortem rows: outcome not observed yet (NO_EFFECT,
        unconfirmed) for the engineer to set."""
        from store.models import Action, ActionOutcome

        rows: list[Action] = []
        for text, hits in self.noted:
            warned = (f" The tripwire warned: it resembles {hits[0].action_id} WORSENED."
                      if hits else "")
            rows.append(Action(id=f"A{len(rows) + 1}", action=text,
                               outcome=ActionOutcome.NO_EFFECT, confirmed=False,
                               explanation="noted on the about-to-do line during triage; set "
                                           f"the outcome you saw.{warned}"))
        return rows

    # --- export and the drill report ----------------------------------------------------------

    def export_briefing(self) -> None:
        if self.shown is None:
            self.notify("No briefing to export yet.", timeout=3)
            return
        self._export(self.shown.briefing)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, briefing: Any) -> None:
        from console.engine.render.markdown import briefing_markdown, write_markdown
        from console.ui.messages import Exported

        path = write_markdown(briefing, self.settings.data_dir / "exports")
        self.post_message(Exported(str(path), briefing_markdown(briefing)))

    def on_exported(self, message: Any) -> None:
        self.copy_to_clipboard(message.markdown)  # OSC 52: where the terminal supports it
        self.notify(f"Briefing written to {message.path} (and copied to the clipboard where "
                    "the terminal supports it).", title="Export", timeout=6, markup=False)

    def end_drill(self) -> None:
        if self.timeline is None:
            return
        self.timeline.resolution("ended from the console (Ctrl+G)")
        briefing = self.shown.briefing if self.shown is not None else None
        self._drill_report(self.timeline, briefing)

    @work(thread=True, exclusive=True, group="drill-report", exit_on_error=False)
    def _drill_report(self, timeline: Timeline, briefing: Any) -> None:
        from console.engine.practice.gameday import drill_report
        from console.ui.messages import DrillReported

        report = drill_report(timeline, briefing, self.engine.embedder())
        path = timeline.path.with_suffix(".md")
        path.write_text(report, encoding="utf-8")
        self.post_message(DrillReported(str(path)))

    def on_drill_reported(self, message: Any) -> None:
        self.notify(f"Drill report written to {message.path}", title="Game day", timeout=10,
                    markup=False)

    def track_record_line(self, tier: str) -> str:
        """The confidence tier's record in the last drill on this memory, or why there is
        none (read from DATA/drill.json; never fails the briefing)."""
        from console.engine.practice.replay import track_record

        try:
            record = track_record(self.settings, self.engine.memory)
        except (OSError, ValueError):
            return ""
        if record is None:
            return "no drill run on this memory yet (F7 replays it)"
        return record.line(tier)

    def saved(self, status: MemoryStatus, incident_id: str) -> None:
        """A postmortem was saved: the memory status follows."""
        self.memory_status = status
        if self.main_screen is not None:
            self.main_screen.show_status(f"saved {incident_id}")

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
                self.request = None
                self.batch_group = self.batch_shown
            if event.worker.group.startswith("verify"):
                self.verifying = None
                if self.main_screen is not None:
                    self.main_screen.verification_failed(
                        f"verification failed: {type(error).__name__}: {error}")
                return
            from console.ui.screens.error import ErrorScreen

            self.push_screen(ErrorScreen(
                f"Something went wrong in {event.worker.name or 'a background task'}",
                f"{type(error).__name__}: {error}\n\nIf it persists, run `triage index --rebuild` "
                "and `triage check`, and report this message."))
