"""The postmortem form: incident fields and action rows, each with its inline error."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Select, Static

from console.ui.widgets.action_row import ActionRow
from console.ui.widgets.form_field import FormField
from store.models import Action, Incident
from store.validation import describe_error

# model field → (widget id, label shown beside it)
INCIDENT_FIELDS: dict[str, tuple[str, str]] = {
    "id": ("pm-id", "Incident id"), "severity": ("pm-severity", "Severity"),
    "started_at": ("pm-started-at", "Started at"), "title": ("pm-title", "Title"),
    "service": ("pm-service", "Service"), "symptoms": ("pm-symptoms", "Symptoms"),
    "root_cause": ("pm-root-cause", "Root cause"), "tags": ("pm-tags", "Tags"),
    "runbook": ("pm-runbook", "Runbook"),
}
ROW_LABELS = {"id": "id", "action": "did", "outcome": "outcome", "explanation": "why",
              "kind": "kind", "confirmed": "confirmed"}
SEVERITIES = ["SEV1", "SEV2", "SEV3", "SEV4"]


class PostmortemForm(VerticalScroll):
    """What the form says, as ``Incident`` data, and the errors under each field.

    Errors show once a field has been left (or after the first save attempt) and update
    as you type. ``id_problem`` says whether an incident id may be used (e.g. taken in memory).
    """

    DEFAULT_CSS = """
    PostmortemForm { height: 1fr; padding: 0 1; }
    PostmortemForm > #pm-top { height: auto; }
    PostmortemForm > #pm-top > FormField { width: 22; margin-right: 1; }
    PostmortemForm > #pm-top > #pm-severity-field { width: 20; }
    PostmortemForm > #pm-top > FormField.-last { width: 1fr; margin-right: 0; }
    PostmortemForm > #pm-actions-heading { margin-top: 1; color: $text-muted; }
    PostmortemForm > #pm-actions { height: auto; }
    /* Narrower than an action row's outcome, kind and confirmed line (under 80-110 columns):
       that line folds in two, the confirmed box below, so no label is cut. */
    PostmortemForm.-narrow ActionRow > .action-line:last-of-type { layout: grid; grid-size: 2;
        grid-columns: 31 1fr; grid-rows: auto; height: auto; }
    PostmortemForm.-narrow ActionRow > .action-line > .action-kind { width: 1fr;
        margin-right: 0; }
    PostmortemForm.-narrow ActionRow > .action-line > Checkbox { column-span: 2; }
    """
    # Below this width the outcome, kind and confirmed controls of a row do not fit one line.
    NARROW_BELOW = 110

    def __init__(self, values: dict[str, str], *,
                 actions: list[Action | dict[str, Any]] | None = None,
                 id_locked: bool = False, services: list[str], kinds: list[str],
                 id_problem: Callable[[str], str | None], id: str | None = None) -> None:
        super().__init__(id=id)
        self.initial = values
        self.initial_actions = actions
        self.id_locked = id_locked
        self.services = services
        self.kinds = kinds
        self.id_problem = id_problem
        self.touched: set[str] = set()
        self.save_attempted = False
        self._row_serial = 0
        self._ready = False

    def _input(self, field: str, placeholder: str, **options: Any) -> Input:
        return Input(self.initial.get(field, ""), id=INCIDENT_FIELDS[field][0], compact=True,
                     placeholder=placeholder, **options)

    def _field(self, field: str, control: Widget, width: int = 12) -> FormField:
        return FormField(INCIDENT_FIELDS[field][1], control, label_width=width)

    def compose(self) -> ComposeResult:
        with Horizontal(id="pm-top"):
            yield self._field("id", self._input("id", "INC-1234", disabled=self.id_locked))
            yield self._field("severity", self._input(
                "severity", "SEV1…SEV4", suggester=SuggestFromList(SEVERITIES)), 9)
            started = self._field("started_at", self._input(
                "started_at", "e.g. 2026-03-14T02:05:00Z"), 11)
            started.add_class("-last")
            yield started
        yield self._field("title", self._input("title", "optional one-line summary"))
        yield self._field("service", self._input(
            "service", "required, e.g. payments-api — → accepts the grey suggestion",
            suggester=SuggestFromList(self.services, case_sensitive=False)))
        yield self._field("symptoms", self._input(
            "symptoms", "required: what was seen when the alert fired"))
        yield self._field("root_cause", self._input("root_cause", "what caused it, or 'unknown'"))
        yield self._field("tags", self._input(
            "tags", "optional, comma-separated: postgres, connection-pool"))
        yield self._field("runbook", self._input(
            "runbook", "optional: the runbook that applied, its URL or path (one line)"))
        yield Static(Text("Actions, in the order they were taken · ctrl+n add · ctrl+d remove · "
                          "alt+↑/↓ move · outcome: r m n w or Enter"),
                     markup=False, id="pm-actions-heading")
        with Vertical(id="pm-actions"):
            if self.initial_actions is not None:
                for action in self.initial_actions:
                    if isinstance(action, Action):
                        yield ActionRow.from_action(action, kinds=self.kinds, id=self._row_id())
                    else:  # a row's values (e.g. with no outcome chosen yet)
                        yield ActionRow(str(action.get("id") or ""), initial=action,
                                        kinds=self.kinds, id=self._row_id())
            else:
                yield ActionRow("A1", kinds=self.kinds, id=self._row_id())

    def on_mount(self) -> None:
        self._update_rows()
        self._fit(self.app.size.width)
        self.call_after_refresh(self._mark_ready)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        self.set_class(width < self.NARROW_BELOW, "-narrow")

    def _mark_ready(self) -> None:
        self._ready = True

    def _row_id(self) -> str:
        self._row_serial += 1
        return f"pm-action-{self._row_serial}"

    # --- reading and checking ------------------------------------------------------------

    def rows(self) -> list[ActionRow]:
        return list(self.query_one("#pm-actions", Vertical).query_children(ActionRow))

    def row_of(self, widget: Widget | None) -> ActionRow | None:
        """The action row ``widget`` (e.g. the focused one) belongs to, if any."""
        node: object = widget
        while isinstance(node, Widget) and not isinstance(node, ActionRow):
            node = node.parent
        return node if isinstance(node, ActionRow) else None

    def value(self, field: str) -> str:
        return self.query_one(f"#{INCIDENT_FIELDS[field][0]}", Input).value

    def snapshot(self) -> list[tuple[str | None, object]]:
        """Every control's value, to tell whether the form changed."""
        return [(w.id, w.value) for w in self.query("Input, Select, Checkbox")
                if isinstance(w, Input | Select | Checkbox)]

    def data(self) -> tuple[dict[str, Any], list[ActionRow]]:
        """The form as data for ``Incident``, and the rows it used (empty rows are left out)."""
        rows = [row for row in self.rows() if not row.is_blank()]
        data: dict[str, Any] = {
            "id": self.value("id").strip(), "service": self.value("service"),
            "symptoms": self.value("symptoms"),
            "tags": [tag.strip() for tag in self.value("tags").split(",") if tag.strip()],
            "actions": [row.values() for row in rows],
        }
        for optional in ("title", "started_at", "severity", "root_cause", "runbook"):
            data[optional] = self.value(optional).strip() or None
        return data, rows

    def check(self) -> tuple[Incident | None, dict[str, str]]:
        """The incident the form describes, or errors keyed by widget id: `triage check`'s
        rules, plus duplicate action ids and ``id_problem``."""
        data, rows = self.data()
        errors: dict[str, str] = {}
        incident: Incident | None = None
        try:
            incident = Incident.model_validate(data)
        except ValidationError as exc:
            for error in exc.errors():
                errors.setdefault(self._widget_for(error["loc"], rows),
                                 describe_error(error, short=True))
        seen: dict[str, int] = {}
        for number, row in enumerate(rows, 1):
            if row.action_id and row.action_id in seen:
                errors.setdefault(row.field_id("id"), f"duplicate action id {row.action_id!r} in "
                                  f"this incident (action {seen[row.action_id]} has it)")
            seen.setdefault(row.action_id, number)
        problem = self.id_problem(data["id"]) if data["id"] else None
        if problem:
            errors.setdefault("pm-id", problem)
        return (None if errors else incident), errors

    def _widget_for(self, loc: tuple[Any, ...], rows: list[ActionRow]) -> str:
        if loc and loc[0] in INCIDENT_FIELDS:
            return INCIDENT_FIELDS[loc[0]][0]
        if len(loc) >= 2 and loc[0] == "actions" and isinstance(loc[1], int) \
                and loc[1] < len(rows):
            name = loc[2] if len(loc) > 2 and loc[2] in ROW_LABELS else "action"
            return rows[loc[1]].field_id(str(name))
        return "pm-id"

    def label_of(self, widget_id: str) -> str:
        for field_id, label in INCIDENT_FIELDS.values():
            if field_id == widget_id:
                return label
        for number, row in enumerate(self.rows(), 1):
            for name, label in ROW_LABELS.items():
                if row.field_id(name) == widget_id:
                    return f"action {number} ({row.action_id or 'no id'}) {label}"
        return widget_id

    def revalidate(self) -> dict[str, str]:
        """Check the form and show each error under its field (once touched or after a save)."""
        _incident, errors = self.check()
        for field in self.query(FormField):
            shown = self.save_attempted or field.control_id in self.touched
            message = errors.get(field.control_id) if shown else None
            if message is None and field.control_id == "pm-service":
                service = self.value("service").strip()
                if service and self.services and service not in self.services:
                    field.show_message(self._service_hint(service), hint=True)
                    continue
            field.show_message(message)
        return errors

    def _service_hint(self, service: str) -> str:
        """A typed service the memory does not know: probably a typo, maybe really new."""
        lowered = service.lower()
        close = [s for s in self.services if lowered in s.lower()] or difflib.get_close_matches(
            lowered, self.services, n=3, cutoff=0.6)
        if close:
            return (f"not in memory yet — did you mean {' or '.join(close[:3])}? "
                    "(→ accepts the grey suggestion)")
        return "a new service, not in memory yet (saving adds it)"

    def focus_first_error(self, errors: dict[str, str]) -> None:
        first = next((w for w in self.query("Input, Select") if w.id in errors), None)
        if first is not None:
            first.focus()
            self.call_after_refresh(first.scroll_visible)

    def set_services(self, services: list[str]) -> None:
        self.services = services
        self.query_one("#pm-service", Input).suggester = SuggestFromList(services,
                                                                         case_sensitive=False)

    def on_descendant_blur(self, event: events.DescendantBlur) -> None:
        if self._ready and event.widget.id and event.widget.id.startswith("pm-"):
            self.touched.add(event.widget.id)
            self.revalidate()

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Checkbox.Changed)
    def _changed(self) -> None:
        if self._ready:
            self.revalidate()

    @on(Input.Submitted)
    def _next_field(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.focus_next()

    # --- action rows -------------------------------------------------------------------------

    def _sequential(self) -> bool:
        """Ids still numbered A1, A2, … in order, so they follow the rows (never when editing)."""
        ids = [row.action_id for row in self.rows()]
        return not self.id_locked and ids == [f"A{n}" for n in range(1, len(ids) + 1)]

    def _next_free_id(self) -> str:
        numbers = [int(m.group(1)) for row in self.rows()
                   if (m := re.fullmatch(r"A(\d+)", row.action_id))]
        return f"A{max(numbers, default=0) + 1}"

    def _update_rows(self, renumber: bool = False) -> None:
        rows = self.rows()
        for number, row in enumerate(rows, 1):
            if renumber:
                row.set_action_id(f"A{number}")
            row.set_position(number, len(rows))
        if self._ready:
            self.revalidate()

    def _focus_row(self, row: ActionRow) -> None:
        row.query_one(f"#{row.field_id('action')}", Input).focus()
        self.call_after_refresh(row.scroll_visible)

    async def add_row(self, after: ActionRow | None,
                      values: dict[str, Any] | None = None, index: int | None = None) -> None:
        """A new row after ``after`` (or at ``index``, or last), focused; ``values`` restores one."""
        rows, renumber = self.rows(), self._sequential()
        action_id = str((values or {}).get("id") or self._next_free_id())
        row = ActionRow(action_id, initial=values, kinds=self.kinds, id=self._row_id())
        container = self.query_one("#pm-actions", Vertical)
        if after is not None:
            await container.mount(row, after=after)
        elif index is not None and index < len(rows):
            await container.mount(row, before=rows[index])
        else:
            await container.mount(row)
        self._update_rows(renumber)
        self._focus_row(row)

    async def remove_row(self, row: ActionRow) -> tuple[int, dict[str, Any]]:
        """Remove ``row``; returns where it was and what it held, to bring it back."""
        rows, renumber = self.rows(), self._sequential()
        index, values = rows.index(row), row.values()
        await row.remove()
        self._update_rows(renumber)
        rest = self.rows()
        if rest:
            self._focus_row(rest[min(index, len(rest) - 1)])
        else:
            self.query_one("#pm-runbook", Input).focus()
        return index, values

    def move_row(self, row: ActionRow, step: int) -> bool:
        """Move ``row`` up (-1) or down (+1); False when it is already at that end."""
        rows = self.rows()
        target = rows.index(row) + step
        if not 0 <= target < len(rows):
            return False
        renumber = self._sequential()
        container = self.query_one("#pm-actions", Vertical)
        if step < 0:
            container.move_child(row, before=rows[target])
        else:
            container.move_child(row, after=rows[target])
        self._update_rows(renumber)
        self.call_after_refresh(row.scroll_visible)
        return True
