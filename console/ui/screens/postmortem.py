"""Record a postmortem (or edit a stored incident) by keys; the save runs in a worker."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static
from textual.worker import Worker, WorkerState

from console.engine.briefing.alert import AlertError, parse_alert
from console.engine.briefing.services import read_service
from console.engine.engine import MemoryStatus, SaveResult, TriageEngine
from console.ui.keys import Key
from console.ui.messages import ReloadRequested
from console.ui.widgets.key_footer import KeyFooter
from console.ui.widgets.postmortem_form import INCIDENT_FIELDS, PostmortemForm
from store.loader import IncidentFileError
from store.models import Action, Incident
from store.writer import FileChangedOnDisk, SaveFailed, SaveRefused, added_meanwhile

DISCARD_WINDOW = 4.0  # seconds in which a second Esc discards a changed form


def prefill_from_alert(raw_alert: str, services: list[str],
                       aliases: Mapping[str, Sequence[str]] | None = None,
                       alert_payload: str | None = None) -> tuple[str, str]:
    """Symptoms and service for a postmortem started from the alert on the main screen: the
    service as the briefing reads it (the labels of the payload's group briefed, then the
    text; the one assumed when unsure)."""
    try:
        alert = parse_alert(raw_alert)
    except AlertError:
        return " ".join(raw_alert.split()), ""
    labelled = alert
    if alert_payload is not None and alert_payload != raw_alert:
        with contextlib.suppress(AlertError, ValueError):  # an unreadable payload: the text
            payload = parse_alert(alert_payload)
            labelled = next((payload.for_group(n) for n, group in enumerate(payload.groups)
                             if group.text == raw_alert), payload)
    read = read_service(alert.text, labelled.service, services,
                        labels=labelled.service_labels, aliases=aliases)
    return " ".join(alert.text.split()), read.named or ""


def runbook_from_alert(alert_text: str, alert_payload: str | None = None) -> str:
    """The runbook address the alert names, "" when it names none or does not parse: of the
    payload when given (of its group briefed, when ``alert_text`` is one group of it)."""
    raw = alert_payload or alert_text
    if not raw.strip():
        return ""
    try:
        alert = parse_alert(raw)
    except (AlertError, ValueError):  # an unreadable alert pre-fills no runbook
        return ""
    if alert_payload is not None and alert.groups:
        for group in alert.groups:
            if group.text == alert_text:
                return group.runbook_url or ""
    return alert.runbook_url or ""


def iso_utc(moment: datetime) -> str:
    """``moment`` as the incidents file writes it: ISO-8601 UTC to the second, with ``Z``."""
    return moment.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def alert_started_at(raw_alert: str) -> str | None:
    """When the alert says it started, as ISO-8601 UTC, or None when it does not say: the
    earliest ``startsAt`` of an Alertmanager (or Grafana) payload's firing alerts (its
    resolved ones when none fires), a PagerDuty event's ``timestamp`` or ``occurred_at``, an
    Opsgenie alert's ``createdAt``."""
    try:
        payload = json.loads(raw_alert)
    except ValueError:
        return None
    candidates: list[Any] = []
    if isinstance(payload, dict):
        alerts = payload.get("alerts")
        if isinstance(alerts, list):
            items = [a for a in alerts if isinstance(a, dict)]
            firing = [a for a in items if str(a.get("status", "")).lower() != "resolved"]
            candidates += [a.get("startsAt") for a in firing or items]
        candidates.append(payload.get("startsAt"))
        for part in ("payload", "event", "alert"):
            inner = payload.get(part)
            if isinstance(inner, dict):
                candidates += [inner.get("timestamp"), inner.get("occurred_at"),
                               inner.get("createdAt")]
    moments = [m for m in map(_moment, candidates) if m is not None]
    return iso_utc(min(moments)) if moments else None


def _moment(value: Any) -> datetime | None:
    """An aware time from an ISO-8601 string (or Opsgenie's milliseconds since 1970); None for
    anything else, a time without a zone, or Alertmanager's zero time (0001-01-01, "not set")."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**14:
        return datetime.fromtimestamp(value / 1000, UTC)
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None or moment.year < 1970:
        return None
    return moment


class PostmortemScreen(Screen[SaveResult | None]):
    """Incident fields and action rows; ctrl+s checks and saves, Esc goes back."""

    # Priority: these work from any field. Inside an action row ctrl+d removes the row;
    # elsewhere check_action lets it through to the input (delete right).
    BINDINGS = [
        Key("ctrl+s", "save", "Save", title="Save postmortem",
            tooltip="Check the form and save it to the incidents file", id="postmortem-save",
            priority=True),
        Binding("ctrl+n", "add_action", "Add action", tooltip="Add an action row after the "
                "focused one", id="postmortem-add-action", priority=True),
        Binding("ctrl+d", "remove_action", "Remove action", tooltip="Remove the focused action "
                "row (ctrl+z brings it back)", id="postmortem-remove-action", priority=True),
        Binding("alt+up,ctrl+up", "move_action(-1)", "Move action", key_display="alt+↑↓",
                tooltip="Move the focused action row up (alt+↓ moves it down)",
                id="postmortem-move-up"),
        Binding("alt+down,ctrl+down", "move_action(1)", "Move down", show=False,
                tooltip="Move the focused action row down", id="postmortem-move-down"),
        Binding("ctrl+z", "restore_action", "Restore action", show=False,
                tooltip="Bring back the last removed action row", id="postmortem-restore"),
        Key("ctrl+l", "reload", "Reload", title="Reload memory", tooltip="Re-read the incidents file "
                "(after someone else edited it); the form is kept", id="postmortem-reload"),
        Key("escape", "cancel", "Cancel", title="Cancel postmortem",
            tooltip="Back to the console without saving (twice if the form has changes)",
            id="postmortem-cancel"),
    ]
    DEFAULT_CSS = """
    PostmortemScreen #pm-heading { height: auto; padding: 0 1; background: $panel; }
    PostmortemScreen #pm-problems { display: none; height: auto; max-height: 12;
        padding: 0 1; border-top: heavy $error; background: $error 10%; }
    PostmortemScreen #pm-problems.-notice { border-top: heavy $accent; background: $boost; }
    PostmortemScreen #pm-problems.-shown { display: block; }
    """

    @dataclass
    class Saved(Message):
        result: SaveResult

    @dataclass
    class Refused(Message):
        reasons: list[str]
        changed_on_disk: bool
        heading: str | None = None  # when the disk refused the write: what happened, where

    def __init__(self, engine: TriageEngine, *, alert_text: str = "",
                 editing: Incident | None = None, carried: list[Action] | None = None,
                 noted: list[Action] | None = None, alert_payload: str | None = None) -> None:
        """For a new incident only: ``noted``, the actions noted on the "about to do…" line
        under the briefing shown (their outcome is left for the engineer to set: none was
        observed); ``carried``, action rows brought from a verification (see
        console/engine/verification/passes.py carry_rows). ``alert_payload``: the alert as
        pasted, when ``alert_text`` is one group of it (its time starts the form's)."""
        super().__init__()
        self.engine = engine
        self.editing = editing
        self.noted = list(noted or []) if editing is None else []
        self.carried = list(carried or []) if editing is None else []
        self.prefilled: list[str] = []
        self.from_alert = bool(alert_text.strip()) and editing is None
        self.initial = self._initial_values(alert_text, alert_payload)
        self.saving = False
        self.reloading = False
        self.left_out = 0  # empty action rows the last save left out
        self.removed: list[tuple[int, dict[str, object]]] = []
        self._clean_snapshot: object = None
        self._escape_at = 0.0

    def _initial_values(self, alert_text: str, alert_payload: str | None) -> dict[str, str]:
        incident = self.editing
        if incident is not None:
            started = (incident.started_at.isoformat().replace("+00:00", "Z")
                       if incident.started_at else "")
            return {"id": incident.id, "title": incident.title or "", "service": incident.service,
                    "started_at": started, "severity": incident.severity or "",
                    "symptoms": incident.symptoms, "root_cause": incident.root_cause or "",
                    "tags": ", ".join(incident.tags), "runbook": incident.runbook or ""}
        values = dict.fromkeys(INCIDENT_FIELDS, "")
        values["id"] = self.engine.suggest_incident_id()
        if alert_text.strip():
            services = self.engine.known_services()
            values["symptoms"], values["service"] = prefill_from_alert(
                alert_text, services, self.engine.service_aliases(), alert_payload)
            self.prefilled = ["symptoms"] + ([f"service ({values['service']})"]
                                             if values["service"] else [])
            values["runbook"] = runbook_from_alert(alert_text, alert_payload)
            if values["runbook"]:
                self.prefilled.append("runbook")
        # An incident has a start: the alert's when it says, else now (editable, like the rest).
        fired = alert_started_at(alert_payload or alert_text)
        values["started_at"] = fired or iso_utc(self.engine.settings.now())
        self.prefilled.append("started at (when it fired)" if fired else
                              "started at (now: the alert gives no time)" if alert_text.strip()
                              else "started at (now)")
        return values

    @property
    def actions(self) -> list[Action | dict[str, Any]] | None:
        """The action rows the form starts with (None: one empty row): the noted ones first,
        in the order noted, their outcome left unset (nothing was observed yet: a default
        would be saved as if it had been), then the verification's; numbered A1, A2, …"""
        if self.editing is not None:
            return list(self.editing.actions)
        noted = [{k: v for k, v in a.model_dump(mode="json").items() if k != "outcome"}
                 for a in self.noted]
        carried = [a.model_dump(mode="json") for a in self.carried]
        return [{**row, "id": f"A{n}"} for n, row in enumerate(noted + carried, 1)] or None

    def compose(self) -> ComposeResult:
        memory = self.engine.memory
        kinds = sorted({a.kind for i in (memory.incidents if memory else []) for a in i.actions
                        if a.kind})
        yield Static(self._heading(), markup=False, id="pm-heading")
        yield PostmortemForm(self.initial, actions=self.actions,
                             id_locked=self.editing is not None,
                             services=self.engine.known_services(), kinds=kinds,
                             id_problem=self.id_problem, id="pm-form")
        yield Static("", markup=False, id="pm-problems")
        # As many keys as fit (at 80 columns Textual's footer cut 'Reload' to '^l Re'): the
        # row keys go first, Save, Reload, Cancel, Help and Quit stay (each is in F1 help too).
        yield KeyFooter(drop_first=("move_action(-1)", "remove_action", "add_action"))

    def _heading(self) -> Text:
        size = len(self.engine.memory.incidents) if self.engine.memory else 0
        if self.editing is not None:
            text = Text(f"Edit incident {self.editing.id}", style="bold")
            text.append(" · saving replaces its block in the incidents file; nothing else "
                        "changes", style="dim")
        else:
            text = Text("Record postmortem", style="bold")
            text.append(f" · a new incident for the memory ({size} incidents now)", style="dim")
        text.append("\nTab / Shift+Tab move between fields · Enter next field · → accepts a "
                    "suggestion · ctrl+s save · Esc cancel", style="dim")
        if self.prefilled:
            source = " from the alert" if self.from_alert else ""
            text.append(f"\nPre-filled{source}: {', '.join(self.prefilled)} — check them "
                        "before saving.", style="yellow")
        if self.noted:
            text.append(f"\nNoted on the about-to-do line under this briefing: "
                        f"{len(self.noted)} action row(s) — set the outcome you saw for each, "
                        "or remove it (ctrl+d).", style="yellow")
        if self.carried:
            text.append(f"\nCarried from the verification: {len(self.carried)} action row(s) "
                        "(kind verify; a refuted fix's outcome is pre-filled, unconfirmed) — "
                        "accept or change each before saving.", style="yellow")
        return text

    def on_mount(self) -> None:
        title = self.query_one("#pm-title", Input)
        title.focus()
        # Tab into a field selects its text (so typing replaces it); on opening, a stray key
        # must not wipe a stored title, so the cursor starts at the end instead.
        self.call_after_refresh(title.action_end)
        self.call_after_refresh(self._remember_clean)

    def _remember_clean(self) -> None:
        self._clean_snapshot = self.form.snapshot()

    @property
    def form(self) -> PostmortemForm:
        return self.query_one(PostmortemForm)

    def id_problem(self, incident_id: str) -> str | None:
        """Why ``incident_id`` cannot be used for this incident, if it cannot."""
        if self.editing is not None and incident_id == self.editing.id:
            return None
        if self.engine.incident(incident_id) is not None:
            return (f"{incident_id} already exists in memory — use "
                    f"{self.engine.suggest_incident_id()} (to change {incident_id}, press e on "
                    "one of its records in the recalled list)")
        return None

    def _show_problems(self, heading: str | None, lines: Sequence[str] = (), *,
                       notice: bool = False) -> None:
        panel = self.query_one("#pm-problems", Static)
        text = Text()
        if heading:
            text.append(heading, style="bold")
            for line in lines:
                text.append(f"\n  • {line}")
        panel.update(text)
        panel.set_class(bool(heading), "-shown")
        panel.set_class(notice, "-notice")

    # --- the save worker: never touches widgets, only posts ----------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="postmortem-save")
    def save(self, incident: Incident) -> None:
        known = self.engine.incident(incident.id) is not None
        try:
            result = self.engine.save_incident(incident)
        except FileChangedOnDisk as exc:
            taken = None if known else added_meanwhile(
                self.engine.settings.incidents_path, incident.id,
                "press ctrl+l to reload the memory (your form is kept), then give yours a new id")
            if taken is not None:  # a teammate saved the same new id first
                self.post_message(self.Refused(list(taken.reasons), changed_on_disk=False,
                                               heading=f"Not saved — {incident.id} was just "
                                                       "added by another save"))
            else:
                self.post_message(self.Refused(list(exc.reasons), changed_on_disk=True))
        except SaveRefused as exc:
            self.post_message(self.Refused(list(exc.reasons), changed_on_disk=False))
        except SaveFailed as exc:
            self.post_message(self.Refused(list(exc.reasons), changed_on_disk=False,
                                           heading=f"Not saved — {exc.reason}; nothing was "
                                                   "written, your form is kept"))
        except IncidentFileError as exc:
            self.post_message(self.Refused([str(p) for p in exc.problems], changed_on_disk=False))
        else:
            self.post_message(self.Saved(result))

    # --- handlers own every state change -----------------------------------------------------

    def on_postmortem_screen_saved(self, message: Saved) -> None:
        result = message.result
        self.saving = False
        redacted = (f"redacted before saving: {', '.join(result.redacted)}" if result.redacted
                    else "nothing needed redacting")
        left_out = f" ({self.left_out} empty action row(s) left out)" if self.left_out else ""
        # One notification, what was saved first and every warning after it: the console shows
        # one toast at a time (app.tcss), and a second one hid the first.
        said = [f"Saved {result.incident.id} with {len(result.incident.actions)} action(s)"
                f"{left_out} to {result.path}; {redacted}. Memory: {result.status.incidents} "
                "incidents."]
        if result.index_problem is not None:
            # The file save and the index are separate outcomes: the first happened.
            said.append(f"⚠ {result.incident.id} is saved in {result.path}, but the index "
                        f"could not be updated on disk ({result.index_problem}). Recall in this "
                        "session uses an index held in memory, so briefings still find it; the "
                        "console rebuilds the index when it next starts (or run `triage index` "
                        "once the data dir is writable).")
        said.extend(f"⚠ {note}" for note in result.notes)
        warned = len(said) > 1
        self.notify("\n".join(said),
                    title=("Saved — index not updated" if result.index_problem is not None
                           else "Saved — with a warning" if warned else "Postmortem saved"),
                    severity="warning" if warned else "information",
                    timeout=20 if warned else 12, markup=False)
        self.dismiss(result)

    def on_postmortem_screen_refused(self, message: Refused) -> None:
        self.saving = False
        lines = list(message.reasons)
        if message.changed_on_disk:
            lines.append("press ctrl+l to reload the memory (your form is kept), then ctrl+s "
                         "to save again")
        self._show_problems(message.heading or (
            "Not saved — the incidents file changed on disk since it was loaded"
            if message.changed_on_disk else "Not saved"), lines)

    def memory_loaded(self, status: MemoryStatus) -> None:
        """The App reloaded the memory (ctrl+l here, or F5 on the main screen)."""
        self.reloading = False
        self.form.set_services(self.engine.known_services())
        self.query_one("#pm-heading", Static).update(self._heading())
        self._show_problems(f"Memory reloaded: {status.incidents} incidents. Your form "
                            "is unchanged — ctrl+s saves it.", notice=True)
        self.form.revalidate()

    def memory_failed(self, title: str, problems: list[str], hint: str = "",
                      about_file: bool = True) -> None:
        self.reloading = False
        todo = "fix the file" if about_file else hint
        self._show_problems(f"The memory cannot be reloaded: {title} — {todo}, "
                            "then ctrl+l again (your form is kept)", problems)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The app shows the error itself; here the form just becomes usable again.
        if event.worker.group == "postmortem-save" and event.state == WorkerState.ERROR:
            self.saving = False
            self._show_problems("Not saved — the save failed unexpectedly; your form is kept",
                                [str(event.worker.error)])

    # --- key actions ---------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("remove_action", "move_action"):
            forms = self.query(PostmortemForm)
            return True if forms and forms.first().row_of(self.focused) is not None else None
        if action == "restore_action":
            return True if self.removed else None
        return True

    def action_save(self) -> None:
        if self.saving or self.reloading:
            self.notify("Still saving or reloading — a moment.", timeout=3)
            return
        form = self.form
        form.save_attempted = True
        errors = form.revalidate()
        incident, _ = form.check()
        if incident is not None and self.editing is not None:
            # Fields the form does not show are kept as stored (known recurrences, a drill).
            incident = incident.model_copy(update={"related": list(self.editing.related),
                                                   "drill": self.editing.drill})
        if incident is None:
            self._show_problems(f"Not saved — {len(errors)} problem(s) to fix first; nothing was "
                                "written", [f"{form.label_of(w)}: {m}" for w, m in errors.items()])
            form.focus_first_error(errors)
            return
        self.saving = True
        self.left_out = len(form.rows()) - len(incident.actions)
        self._show_problems(f"Saving {incident.id}…", notice=True)
        self.save(incident)

    async def action_add_action(self) -> None:
        await self.form.add_row(after=self.form.row_of(self.focused))
        self.refresh_bindings()

    async def action_remove_action(self) -> None:
        row = self.form.row_of(self.focused)
        if row is not None:
            index, values = await self.form.remove_row(row)
            self.removed.append((index, values))
            self.notify(f"Removed action {index + 1} — ctrl+z brings it back.", timeout=4)
            self.refresh_bindings()

    async def action_restore_action(self) -> None:
        if self.removed:
            index, values = self.removed.pop()
            await self.form.add_row(after=None, values=dict(values), index=index)
            self.refresh_bindings()

    def action_move_action(self, step: int) -> None:
        row = self.form.row_of(self.focused)
        if row is not None and not self.form.move_row(row, step):
            self.app.bell()

    def action_reload(self) -> None:
        """Ask the App (the memory's one owner) to reload; the form hears back and is kept."""
        if self.saving:
            self.notify("Saving — reload after it finishes.", timeout=3)
            return
        self.reloading = True
        self._show_problems("Reloading the memory from disk… your form is kept.", notice=True)
        self.app.post_message(ReloadRequested())

    def action_cancel(self) -> None:
        if self.saving:
            self.notify("Saving — wait for it to finish.", timeout=3)
            return
        if self.form.snapshot() == self._clean_snapshot \
                or time.monotonic() - self._escape_at < DISCARD_WINDOW:
            self.dismiss(None)
            return
        self._escape_at = time.monotonic()
        self.notify("The form has unsaved changes: Esc again discards them, ctrl+s saves.",
                    title="Discard this postmortem?", severity="warning", timeout=DISCARD_WINDOW)
