"""The main screen: alert, briefing, recalled memory, confidence, status.

It renders what the App decides (console/ui/app.py calls its ``show_*`` methods) and turns
keys into requests: messages posted to the App (console/ui/messages.py). It reads the App's
state (console/ui/state.py) to know which keys apply, and never changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, Static

from console.ui.keys import Key
from console.ui.messages import (
    ActionNoted,
    AlertSubmitted,
    CancelRequested,
    EditRequested,
    ExportRequested,
    GameDayEndRequested,
    GroupChosen,
    GroupStepped,
    IntentTyped,
    MemoryWanted,
    PageChosen,
    PostmortemRequested,
    ProbeRunConfirmed,
    QuestionAnswered,
    ReloadRequested,
    ReplayScreenRequested,
    VerifyRequested,
)
from console.ui.widgets.alert_input import AlertInput
from console.ui.widgets.batch_list import BatchList
from console.ui.widgets.briefing_pane import BriefingPane
from console.ui.widgets.confidence_panel import ConfidencePanel
from console.ui.widgets.incoming_list import IncomingList
from console.ui.widgets.key_footer import KeyFooter
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.status_line import StatusLine
from console.ui.widgets.tripwire_line import TripwireLine
from console.ui.widgets.verification_panel import VerificationPanel

# Engine types are for annotations only, and the record screen is imported when opened: this
# module is on first paint's path (bench/first_paint.py).
if TYPE_CHECKING:
    from textual.message import Message

    from console.engine.briefing.models import Briefing, Confidence, RecalledRecord
    from console.engine.briefing.tripwire import TripwireHit
    from console.engine.engine import MemoryStatus
    from console.engine.model.client import Progress
    from console.ui.state import ConsoleState


# Below this many columns the recalled sidebar folds away (F10 shows it): at 80 columns it would
# leave the briefing 42 columns, and the first warning and the lead fix below the fold.
SIDEBAR_MIN_WIDTH = 100
# Below this many rows the confidence panel shows its first line until it is focused.
CONFIDENCE_FULL_MIN_HEIGHT = 32


class MainScreen(Screen[None]):
    """Everything an on-call engineer needs on one screen; every action has a key."""

    DEFAULT_CSS = """
    MainScreen #memory-banner { display: none; height: auto; max-height: 4; padding: 0 1;
                                background: $error; color: $text; text-style: bold; }
    MainScreen #memory-banner.-shown { display: block; }
    """

    BINDINGS = [
        Key("f2", "focus_alert", "Alert", title="Focus alert",
            tooltip="Type or paste the alert", id="focus-alert"),
        Key("f3", "focus_briefing", "Briefing", title="Focus briefing",
            tooltip="Scroll the briefing", id="focus-briefing"),
        Key("f4", "focus_recalled", "Recalled", title="Focus recalled memory",
            tooltip="Browse recalled records", id="focus-recalled"),
        Key("f10", "toggle_sidebar", "Sidebar", title="Show or hide the recalled memory",
            tooltip=f"Show or hide the recalled-memory sidebar (hidden by itself below "
                    f"{SIDEBAR_MIN_WIDTH} columns)", id="toggle-sidebar"),
        Key("f5", "reload_memory", "Reload", title="Reload memory",
            tooltip="Re-read the incidents file", id="reload-memory"),
        Key("f6", "verify", "Verify", title="Verify the briefing",
            tooltip="Audit the briefing beside it: falsifiable questions, probes, maintain / "
                    "revise / overturn (F6 again closes)", id="verify"),
        Key("f7", "open_drill", "Drill", title="Drill: replay past incidents",
            tooltip="Replay past incidents with each hidden: how often each confidence tier "
                    "was right on this memory", id="open-drill"),
        Key("ctrl+t", "focus_tripwire", "About to do", show=False,
            title="About to do… (check an action first)",
            tooltip="Type the action you intend: warned at once if it resembles one that made "
                    "things worse; Enter notes it", id="focus-tripwire"),
        Key("f12", "open_details", "Details", show=False,
            title="Details: how this briefing was worked out",
            tooltip="The confidence rule's derivation, what was searched for, evidence hashes "
                    "and score components (Esc closes)", id="open-details"),
        Key("ctrl+o", "export_briefing", "Export", show=False,
            title="Export the briefing as Markdown",
            tooltip="Write the briefing as Markdown for the incident channel (and copy it where "
                    "the terminal allows)", id="export-briefing"),
        Key("ctrl+g", "end_drill", "End drill", title="End the game day",
            tooltip="Record the resolution and write the drill report (game-day mode only)",
            id="end-drill"),
        # "Postmortem" in the footer: with F10 it keeps F1 Help on screen at 120 columns.
        Key("ctrl+r", "record_postmortem", "Postmortem", title="Record postmortem",
                tooltip="Record a postmortem; symptoms and service start from the alert (with "
                        "the verification open, its results come along as action rows)",
                id="record-postmortem"),
        Key("escape", "cancel_briefing", "Cancel briefing", show=False,
                tooltip="Stop preparing the current briefing", id="cancel-briefing"),
        Key("e", "edit_incident", "Edit incident",
                tooltip="Edit the incident of the highlighted recalled record",
                id="edit-incident"),
        # Offered only while a multi-alert payload's groups are on screen (check_action).
        Key("f8", "step_group(1)", "Next group", title="Brief the next alert group",
            tooltip="Brief the next alert group of this payload", id="next-group"),
        Key("shift+f8", "step_group(-1)", "Previous group", show=False,
            title="Brief the previous alert group",
            tooltip="Brief the previous alert group of this payload", id="previous-group"),
        Key("f9", "focus_groups", "Groups", show=False, title="Focus alert groups",
            tooltip="Pick an alert group of this payload; Enter briefs it", id="focus-groups"),
        # Offered while `triage --listen` receives pages (check_action).
        Key("f11", "focus_incoming", "Incoming", title="Focus incoming pages",
            tooltip="The pages received by --listen, newest first; Enter briefs one",
            id="focus-incoming"),
        # While the keys above have nothing to act on (check_action), they say why instead of
        # doing nothing (not in the footer or the palette).
        Key("f8,shift+f8,f9", "say_no_groups", "Next group", show=False),
        Key("f11", "say_no_pages", "Incoming", show=False),
        Key("e", "say_no_record", "Edit incident", show=False),
    ]

    def __init__(self, state: ConsoleState, *, game_day: bool = False) -> None:
        """``state``: the App's, read here (which keys apply, the status line), never changed;
        ``game_day``: Ctrl+G ends the drill."""
        super().__init__()
        self.state = state
        self.game_day = game_day
        # F10's choice, kept across resizes; None: the width decides (SIDEBAR_MIN_WIDTH).
        self.sidebar_choice: bool | None = None
        # The track record line under the confidence shown (it may come after the briefing).
        self._track_record = ""
        self._provisional = False  # the memory's own briefing is shown while a model drafts

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status-line")
        # Shown while the incidents file does not load whole (briefings go on from what does).
        yield Static(Text(""), markup=False, id="memory-banner")
        yield AlertInput(placeholder="Alert ▸ type or paste the alert, then Enter",
                         id="alert-input")
        yield IncomingList(id="incoming")
        yield BatchList(id="batch")
        with Horizontal(id="panes"):
            with Vertical(id="left"):
                yield BriefingPane(id="briefing")
                yield ConfidencePanel(id="confidence")
            yield VerificationPanel(id="verification")
            yield RecalledSidebar(id="recalled")
        yield TripwireLine(id="tripwire")
        # What a narrow footer leaves out first: Tab cycles the focus; F5 is in F1 help.
        yield KeyFooter(drop_first=("focus_alert", "focus_briefing", "focus_recalled",
                                    "reload_memory", "toggle_sidebar"))

    def on_mount(self) -> None:
        self.sync_layout()
        self.query_one("#alert-input", Input).focus()
        # The App loads the memory after the first paint (the worker's imports, LanceDB ~1 s,
        # compete for the GIL): see TriageApp.on_memory_wanted.
        self.ask(MemoryWanted())

    def ask(self, request: Message) -> None:
        """Post a request to the App, the one owner of what it changes."""
        self.app.post_message(request)

    # --- the layout for the terminal's size ---------------------------------------------

    @property
    def sidebar_shown(self) -> bool:
        """The recalled sidebar is wanted (the verification panel, while open, takes its place)."""
        if self.sidebar_choice is not None:
            return self.sidebar_choice
        return self.size.width >= SIDEBAR_MIN_WIDTH

    def sync_layout(self) -> None:
        """Fold the sidebar and the confidence panel to fit the terminal (see app.tcss)."""
        self.query_one("#panes").set_class(not self.sidebar_shown, "-no-sidebar")
        folded = self.size.height < CONFIDENCE_FULL_MIN_HEIGHT
        self.set_class(folded, "-short")
        confidence = self.query_one(ConfidencePanel)
        confidence.folded = folded
        confidence.sync_hint()
        # A compact footer keeps more keys on a narrow screen.
        self.query_one(KeyFooter).compact = self.size.width < SIDEBAR_MIN_WIDTH
        self._sync_sidebar_hint()

    def _sync_sidebar_hint(self) -> None:
        """A hidden sidebar is named under the briefing, with the key that shows it."""
        records = len(self.query_one(RecalledSidebar).records)
        hidden = not self.sidebar_shown and not self.verification_open
        self.query_one(BriefingPane).border_subtitle = (
            f"recalled memory ({records}): F10" if hidden and records else "")

    def on_resize(self, event: events.Resize) -> None:
        self.sync_layout()

    def action_toggle_sidebar(self) -> None:
        if self.verification_open:
            self.notify("The verification panel has the sidebar's place: F6 closes it.",
                        title="Sidebar", timeout=4)
            return
        self.sidebar_choice = not self.sidebar_shown
        self.sync_layout()

    # --- rendering what the App decided (called on the event loop, never from a worker) ---

    def memory_loaded(self, status: MemoryStatus) -> None:
        self.show_status()
        self._show_banner(status.partial)
        # One notification (the console shows one at a time: app.tcss); the banner says the
        # partial memory, and stays.
        notices = [notice for notice in status.notices if notice != status.partial]
        if notices:
            self.notify("\n".join(notices), title="Memory", timeout=6)
        if status.incidents == 0:
            self.query_one(BriefingPane).show_text(Text(
                f"The memory is empty: {status.source} holds no incidents yet.\n"
                "Briefings will say 'no prior incident' until postmortems are recorded."))

    def _show_banner(self, partial: str) -> None:
        """The partial-memory banner: what the briefings read while the incidents file has
        problems, and what they leave out; hidden once the file loads whole."""
        banner = self.query_one("#memory-banner", Static)
        banner.update(Text(f"⚠ {partial} (F5 reloads)" if partial else ""))
        banner.set_class(bool(partial), "-shown")

    def memory_failed(self, title: str, problems: list[str], hint: str = "",
                      about_file: bool = True) -> None:
        """``about_file``: the incidents file has problems; else the data dir or index does."""
        self._show_banner("")
        self.query_one(StatusLine).show_problem(title + " — fix it, then F5 to reload")
        text = Text(f"The memory cannot be loaded: {title}\n\n", style="bold red")
        for line in problems:
            text.append(f"  {line}\n")
        if hint:
            text.append(f"\n{hint}")
        text.append("\nNothing was changed. " + ("Fix the file (or run `triage check`), then "
                    "press F5." if about_file else "Press F5 to try again once that is done."),
                    style="bold")
        self.query_one(BriefingPane).show_text(text)

    def show_status(self, activity: str = "") -> None:
        status = self.state.memory_status
        if status:
            self.query_one(StatusLine).show_status(status, activity, self.state.model_state,
                                                   self.state.incoming_words())

    def show_incoming(self) -> None:
        """The pages received (the App's list), the status line counting the new ones; the
        briefing on screen, and the focus, stay where they are."""
        pages = self.query_one(IncomingList)
        pages.address = self.state.listening
        pages.show_pages(self.state.incoming, self.state.incoming_shown)
        self.refresh_bindings()
        if self.state.memory_status:
            self.show_status()
        else:
            self.query_one(StatusLine).show_problem(
                f"loading memory… · {self.state.incoming_words()}")

    def put_alert(self, raw: str) -> None:
        """The alert box holds what is briefed (a page chosen from the incoming list): Enter
        briefs it again, Ctrl+R takes it as a paste would be taken."""
        self.query_one("#alert-input", Input).value = raw

    def show_reloading(self) -> None:
        self.query_one(StatusLine).show_problem("reloading memory…")

    def show_index_progress(self, done: int, total: int) -> None:
        if total and done < total:
            self.query_one(StatusLine).show_problem(
                f"indexing the memory · embedding {done}/{total} incidents "
                "(first build; later saves re-embed only what changed)")

    def show_started(self) -> None:
        self._provisional = False
        self.query_one(BatchList).show_batch([])  # a new alert: the old groups are not its own
        self.refresh_bindings()
        self.query_one(RecalledSidebar).show_records([])
        self._sync_sidebar_hint()
        self.query_one(ConfidencePanel).clear()
        self.query_one(BriefingPane).show_working("Recalling similar incidents…")
        self.show_status("briefing… (Esc cancels)")

    def show_group_started(self, index: int) -> None:
        """Another group of the payload on screen is being briefed; the list stays."""
        groups = self.query_one(BatchList)
        groups.mark_pending(index)
        self.query_one(RecalledSidebar).show_records([])
        self._sync_sidebar_hint()
        self.query_one(ConfidencePanel).clear()
        self.query_one(BriefingPane).show_working(
            f"Recalling similar incidents for alert group {index + 1} of {len(groups.alert_groups)} "
            "(every group is recalled again; only this one is briefed)…")
        self.show_status(f"briefing group {index + 1}… (Esc cancels)")

    def show_recall(self, records: list[RecalledRecord], asking_model: bool) -> None:
        self.query_one(RecalledSidebar).show_records(records)
        self._sync_sidebar_hint()
        if records and asking_model:
            self.query_one(BriefingPane).show_working(
                f"Recalled {len(records)} records (see the sidebar). Asking the model "
                "for a draft; it is checked against the memory before it is shown. Esc cancels.")

    def show_progress(self, progress: Progress) -> None:
        self.show_status(f"drafting · attempt {progress.attempt} · {progress.characters} chars "
                         f"· {progress.elapsed:.1f}s")
        if self._provisional:
            return  # the memory's own briefing stays readable while the model drafts
        self.query_one(BriefingPane).show_working(
            f"The model is drafting (attempt {progress.attempt}, {progress.characters} characters, "
            f"{progress.elapsed:.1f}s).\nNothing it writes is shown until every citation, warning "
            "and confidence figure has been checked against the memory. Esc cancels.")

    def show_provisional(self, briefing: Briefing, track_record: str = "",
                         drill_ids: frozenset[str] = frozenset()) -> None:
        """The memory's own briefing while the model drafts: shown whole, the status saying
        the model's may replace it (F6, Ctrl+O and Ctrl+T wait for the final one)."""
        self.show_briefing(briefing, track_record, drill_ids)
        self._provisional = True
        self.show_status("the model is drafting; the memory's own briefing meanwhile "
                         "(Esc cancels)")

    def show_briefing(self, briefing: Briefing, track_record: str = "",
                      drill_ids: frozenset[str] = frozenset()) -> None:
        """``track_record``: the tier's record in the last drill (or why there is none);
        ``drill_ids``: the incidents the memory marks as drills (the sidebar says so)."""
        self._provisional = False
        self.query_one(BatchList).show_batch(
            briefing.batch, notices=briefing.search.notices if briefing.search else ())
        self.refresh_bindings()
        self.query_one(BriefingPane).show_briefing(briefing)
        self._track_record = track_record
        self.query_one(ConfidencePanel).show_confidence(briefing.confidence, track_record,
                                                        state=briefing.state)
        self.query_one(RecalledSidebar).show_records(briefing.recalled, drill_ids)
        self.query_one(TripwireLine).show_hits("", [])
        self._sync_sidebar_hint()
        self.show_status()

    def show_track_record(self, confidence: Confidence, track_record: str) -> None:
        """The saved drill was read (again) while a briefing is shown: its line follows."""
        if track_record != self._track_record:
            self._track_record = track_record
            self.query_one(ConfidencePanel).show_confidence(confidence, track_record)

    def show_tripwire(self, text: str, hits: list[TripwireHit]) -> None:
        self.query_one(TripwireLine).show_hits(text, hits)

    @on(TripwireLine.Check)
    def check_intent(self, event: TripwireLine.Check) -> None:
        self.ask(IntentTyped(event.text))

    @on(TripwireLine.Noted)
    def note_action(self, event: TripwireLine.Noted) -> None:
        self.ask(ActionNoted(event.text, list(self.query_one(TripwireLine).hits)))

    def show_failure(self, reason: str) -> None:
        self._unmark_pending()
        self.query_one(BriefingPane).show_text(Text(reason, style="bold yellow"))
        self.show_status()

    def _unmark_pending(self) -> None:
        groups = self.query_one(BatchList)
        if groups.alert_groups:
            groups.show_batch(groups.alert_groups)

    def show_cancelled(self) -> None:
        self._unmark_pending()
        self.query_one(BriefingPane).show_text(Text(
            "Briefing cancelled — nothing from it will be shown. Enter briefs the alert again.",
            style="bold yellow"))
        self.show_status("cancelled")

    # --- the verification panel, beside the briefing --------------------------------------

    @property
    def verification_open(self) -> bool:
        return self.query_one("#panes").has_class("-verifying")

    def open_verification(self, working: str | None = None) -> None:
        """Show the panel beside the briefing (the recalled list makes room)."""
        self.query_one("#panes").add_class("-verifying")
        self._sync_sidebar_hint()
        panel = self.query_one(VerificationPanel)
        if working is not None:
            panel.show_working(working)
        panel.question_list.focus()

    def show_verification(self, result: dict[str, Any], states: dict[str, str],
                          not_needed: str = "") -> None:
        self.query_one(VerificationPanel).show_result(result, states, not_needed)
        self.refresh_bindings()

    def verification_failed(self, reason: str) -> None:
        self.query_one(VerificationPanel).show_failure(reason)

    def close_verification(self) -> None:
        if self.verification_open:
            self.query_one("#panes").remove_class("-verifying")
            self._sync_sidebar_hint()
            self.query_one(BriefingPane).focus()

    @on(VerificationPanel.Answered)
    def answer_question(self, event: VerificationPanel.Answered) -> None:
        self.ask(QuestionAnswered(event.question_id, event.answer))

    @on(VerificationPanel.ProbeConfirmed)
    def confirm_probe(self, event: VerificationPanel.ProbeConfirmed) -> None:
        self.ask(ProbeRunConfirmed(event.question_id))

    @on(Input.Submitted, "#alert-input")
    def submit_alert(self, event: Input.Submitted) -> None:
        self.ask(AlertSubmitted(event.value))

    @on(BatchList.Chosen)
    def brief_group(self, event: BatchList.Chosen) -> None:
        self.ask(GroupChosen(event.index))

    @on(IncomingList.Chosen)
    def brief_page(self, event: IncomingList.Chosen) -> None:
        self.ask(PageChosen(event.number))

    @on(RecalledSidebar.Opened)
    def open_record(self, event: RecalledSidebar.Opened) -> None:
        from console.ui.screens.record import RecordScreen

        self.app.push_screen(RecordScreen(event.record))

    # --- key actions ------------------------------------------------------------------

    def action_verify(self) -> None:
        self.ask(VerifyRequested())

    def action_open_drill(self) -> None:
        self.ask(ReplayScreenRequested())

    def action_focus_tripwire(self) -> None:
        self.query_one(TripwireLine).open(checked=self.state.shown is not None)

    def action_open_details(self) -> None:
        briefing = self.query_one(BriefingPane).briefing
        if briefing is None:
            self.notify("No briefing on screen yet: brief an alert first (Enter in the alert "
                        "box).", title="Details", timeout=4)
            return
        from console.ui.screens.details import DetailsScreen

        self.app.push_screen(DetailsScreen(briefing, self.query_one(ConfidencePanel).track_record))

    def action_export_briefing(self) -> None:
        self.ask(ExportRequested())

    def action_end_drill(self) -> None:
        self.ask(GameDayEndRequested())

    def action_record_postmortem(self) -> None:
        self.ask(PostmortemRequested(self.query_one("#alert-input", Input).value))

    def action_edit_incident(self) -> None:
        record = self._highlighted_record()
        if record is not None:
            self.ask(EditRequested(record.incident_id))

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
        if action == "cancel_briefing":
            return self.state.request is not None
        if action in ("step_group", "focus_groups"):
            return self.state.batch_alert is not None
        if action == "say_no_groups":
            return self.state.batch_alert is None
        if action == "focus_incoming":
            return bool(self.state.incoming)
        if action == "say_no_pages":
            return not self.state.incoming
        if action == "say_no_record":
            return self._highlighted_record() is None
        if action == "end_drill":
            return self.game_day
        if action == "export_briefing":  # (not a provisional one: the final may differ)
            return self.state.shown is not None and self.state.request is None
        return True

    def action_focus_alert(self) -> None:
        self.query_one("#alert-input", Input).focus()

    def action_focus_briefing(self) -> None:
        self.query_one(BriefingPane).focus()

    def action_focus_recalled(self) -> None:
        if not self.sidebar_shown and not self.verification_open:
            self.sidebar_choice = True  # F4 on a narrow terminal shows the sidebar it focuses
            self.sync_layout()
        self.query_one(RecalledSidebar).focus()

    def action_step_group(self, step: int) -> None:
        self.ask(GroupStepped(step))

    def action_say_no_groups(self) -> None:
        self.ask(GroupStepped(1))  # the App says there are none (TriageApp.brief_group)

    def action_say_no_record(self) -> None:
        if not self.query_one(RecalledSidebar).records:
            said = "No recalled incident to edit yet: brief an alert first (Enter in the alert box)."
        else:
            said = ("e edits the incident of the highlighted recalled record: F4 goes to the "
                    "recalled memory, ↑↓ picks a record, then e.")
        self.notify(said, title="Edit incident", timeout=5)

    def action_focus_groups(self) -> None:
        self.query_one(BatchList).focus()

    def action_focus_incoming(self) -> None:
        self.query_one(IncomingList).focus()

    def action_say_no_pages(self) -> None:
        if self.state.listening:
            said = (f"No page received yet. Point an Alertmanager webhook or a Grafana contact "
                    f"point at {self.state.listening}: pages are listed here as they come.")
        else:
            said = ("F11 lists pages received while the console listens: start it with "
                    "`triage --listen` (127.0.0.1:9095) and point Alertmanager at it.")
        self.notify(said, title="Incoming pages", timeout=6, markup=False)

    def action_reload_memory(self) -> None:
        self.ask(ReloadRequested())

    def action_cancel_briefing(self) -> None:
        self.ask(CancelRequested())
