"""The main screen: alert, briefing, recalled memory, confidence, status."""

from __future__ import annotations

import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input

from console.engine.alert import AlertError, parse_alert
from console.engine.briefing import RecalledRecord
from console.engine.engine import MemoryStatus, SaveResult, TriageEngine
from console.engine.model_client import Progress
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
from console.ui.screens.postmortem import PostmortemScreen
from console.ui.screens.record import RecordScreen
from console.ui.widgets.briefing_pane import BriefingPane
from console.ui.widgets.confidence_panel import ConfidencePanel
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.status_line import StatusLine
from store.loader import IncidentFileError


class MainScreen(Screen[None]):
    """Everything an on-call engineer needs on one screen; every action has a key."""

    BINDINGS = [
        Binding("f2", "focus_alert", "Alert", tooltip="Type or paste the alert", id="focus-alert"),
        Binding("f3", "focus_briefing", "Briefing", tooltip="Scroll the briefing",
                id="focus-briefing"),
        Binding("f4", "focus_recalled", "Recalled", tooltip="Browse recalled records",
                id="focus-recalled"),
        Binding("f5", "reload_memory", "Reload", tooltip="Re-read the incidents file",
                id="reload-memory"),
        Binding("ctrl+r", "record_postmortem", "Record postmortem",
                tooltip="Record a postmortem; symptoms and service start from the alert",
                id="record-postmortem"),
        Binding("e", "edit_incident", "Edit incident",
                tooltip="Edit the incident of the highlighted recalled record",
                id="edit-incident"),
    ]

    def __init__(self, engine: TriageEngine) -> None:
        super().__init__()
        self.engine = engine
        self.status: MemoryStatus | None = None
        self.model_state: str | None = None

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status-line")
        yield Input(placeholder="Alert ▸ type or paste the alert, then Enter", id="alert-input")
        with Horizontal(id="panes"):
            with Vertical(id="left"):
                yield BriefingPane(id="briefing")
                yield ConfidencePanel(id="confidence")
            yield RecalledSidebar(id="recalled")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#alert-input", Input).focus()
        # Load after the first paint: the worker's imports (LanceDB ~1 s) compete for the GIL.
        self.call_after_refresh(self.load_memory)

    # --- workers: never touch widgets, only post messages -------------------------------

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
        except IncidentFileError as exc:
            self.post_message(MemoryFailed.from_error(exc))
            return
        self.post_message(ModelState(self.engine.model_state()))

    @work(thread=True, exclusive=True, group="brief", exit_on_error=False)
    def run_brief(self, raw_alert: str) -> None:
        try:
            alert = parse_alert(raw_alert)
        except AlertError as exc:
            self.post_message(BriefingFailed(str(exc)))
            return

        def on_recall(records: list[RecalledRecord]) -> None:
            self.post_message(RecallReady(records))

        def on_progress(progress: Progress) -> None:
            self.post_message(DraftProgress(progress))

        try:
            briefing = self.engine.brief(alert, on_recall=on_recall, on_progress=on_progress)
        except IncidentFileError as exc:
            self.post_message(MemoryFailed.from_error(exc))
            return
        self.post_message(BriefingReady(briefing))

    # --- handlers own every state change -----------------------------------------------

    def on_memory_loaded(self, message: MemoryLoaded) -> None:
        self._tell_postmortem(MemoryLoaded(message.status))
        self.status = message.status
        self._show_status()
        for notice in message.status.notices:
            self.notify(notice, title="Memory", timeout=6)
        if message.status.incidents == 0:
            self.query_one(BriefingPane).show_text(Text(
                f"The memory is empty: {message.status.source} holds no incidents yet.\n"
                "Briefings will say 'no prior incident' until postmortems are recorded."))

    def on_index_progress(self, message: IndexProgress) -> None:
        if message.total and message.done < message.total:
            self.query_one(StatusLine).show_problem(
                f"indexing the memory · embedding {message.done}/{message.total} incidents "
                "(first build; later saves re-embed only what changed)")

    def on_model_state(self, message: ModelState) -> None:
        self.model_state = message.label
        self._show_status()

    def _show_status(self, activity: str = "") -> None:
        if self.status:
            self.query_one(StatusLine).show_status(self.status, activity, self.model_state)

    def on_draft_progress(self, message: DraftProgress) -> None:
        progress = message.progress
        self._show_status(f"drafting · attempt {progress.attempt} · {progress.characters} chars "
                          f"· {progress.elapsed:.1f}s")
        self.query_one(BriefingPane).show_working(
            f"The model is drafting (attempt {progress.attempt}, {progress.characters} characters, "
            f"{progress.elapsed:.1f}s).\nNothing it writes is shown until every citation, warning "
            "and confidence figure has been checked against the memory.")

    def on_memory_failed(self, message: MemoryFailed) -> None:
        self._tell_postmortem(MemoryFailed(message.title, list(message.problems)))
        self.query_one(StatusLine).show_problem(message.title + " — fix it, then F5 to reload")
        text = Text(f"The memory cannot be loaded: {message.title}\n\n", style="bold red")
        for line in message.problems:
            text.append(f"  {line}\n")
        text.append("\nNothing was changed. Fix the file (or run `triage check`), then press F5.",
                    style="bold")
        self.query_one(BriefingPane).show_text(text)

    def on_recall_ready(self, message: RecallReady) -> None:
        self.query_one(RecalledSidebar).show_records(message.records)
        if message.records and self.engine.model_client() is not None:
            self.query_one(BriefingPane).show_working(
                f"Recalled {len(message.records)} records (see the sidebar). Asking the model "
                "for a draft; it is checked against the memory before it is shown.")

    def on_briefing_ready(self, message: BriefingReady) -> None:
        briefing = message.briefing
        self.query_one(BriefingPane).show_briefing(briefing)
        self.query_one(ConfidencePanel).show_confidence(briefing.confidence)
        self.query_one(RecalledSidebar).show_records(briefing.recalled)
        self._show_status()

    def on_briefing_failed(self, message: BriefingFailed) -> None:
        self.query_one(BriefingPane).show_text(Text(message.reason, style="bold yellow"))
        self._show_status()

    @on(Input.Submitted, "#alert-input")
    def submit_alert(self, event: Input.Submitted) -> None:
        self.query_one(RecalledSidebar).show_records([])
        self.query_one(ConfidencePanel).clear()
        self.query_one(BriefingPane).show_working("Recalling similar incidents…")
        self._show_status("briefing…")
        self.run_brief(event.value)

    @on(RecalledSidebar.Opened)
    def open_record(self, event: RecalledSidebar.Opened) -> None:
        self.app.push_screen(RecordScreen(event.record))

    def _tell_postmortem(self, message: Message) -> None:
        """An open postmortem form reacts to reloads (it keeps what was typed)."""
        for screen in self.app.screen_stack:
            if isinstance(screen, PostmortemScreen):
                screen.post_message(message)

    def _postmortem_closed(self, result: SaveResult | None) -> None:
        if result is not None:
            self.status = result.status
            self._show_status(f"saved {result.incident.id}")

    def _open_postmortem(self, screen: PostmortemScreen) -> None:
        if self.engine.memory is None:
            self.notify("The memory is not loaded yet (or the incidents file has problems — see "
                        "the briefing pane). Press F5 to reload, then try again.",
                        title="Postmortem", severity="warning", timeout=6)
            return
        self.app.push_screen(screen, self._postmortem_closed)

    # --- key actions ------------------------------------------------------------------

    def action_record_postmortem(self) -> None:
        alert_text = self.query_one("#alert-input", Input).value
        self._open_postmortem(PostmortemScreen(self.engine, alert_text=alert_text,
                                               reload_memory=self.action_reload_memory))

    def action_edit_incident(self) -> None:
        record = self._highlighted_record()
        if record is None:
            return
        incident = self.engine.incident(record.incident_id)
        if incident is None:
            self.notify(f"{record.incident_id} is no longer in memory (reloaded since?). Brief "
                        "again and pick another record.", title="Edit incident", timeout=6,
                        markup=False)
            return
        self._open_postmortem(PostmortemScreen(self.engine, editing=incident,
                                               reload_memory=self.action_reload_memory))

    def _highlighted_record(self) -> RecalledRecord | None:
        sidebars = self.query(RecalledSidebar)
        sidebar = sidebars.first() if sidebars else None
        if sidebar is None or self.focused is not sidebar or sidebar.highlighted is None \
                or sidebar.highlighted >= len(sidebar.records):
            return None
        return sidebar.records[sidebar.highlighted]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit_incident":
            return self._highlighted_record() is not None
        return True

    def action_focus_alert(self) -> None:
        self.query_one("#alert-input", Input).focus()

    def action_focus_briefing(self) -> None:
        self.query_one(BriefingPane).focus()

    def action_focus_recalled(self) -> None:
        self.query_one(RecalledSidebar).focus()

    def action_reload_memory(self) -> None:
        self.query_one(StatusLine).show_problem("reloading memory…")
        self.load_memory()
