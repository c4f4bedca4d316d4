"""One action row of the postmortem form: what was done, its outcome, and why."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Checkbox, Input, Select

from console.ui.widgets.form_field import FormField
from store.models import Action, ActionOutcome

OUTCOME_CHOICES = [(outcome.value, outcome.value) for outcome in ActionOutcome]
# With the outcome list closed, one letter picks the outcome (Enter still opens the list).
OUTCOME_KEYS = {outcome.key: outcome.value for outcome in ActionOutcome}


def confirmed_label(confirmed: bool) -> Text:
    """The checkbox says its state in words: its mark alone differs only by colour."""
    if confirmed:
        return Text("why is confirmed (Space toggles)")
    return Text("why only SUSPECTED (Space toggles)", style="bold yellow")


class ActionRow(Vertical):
    """An action as the form edits it; ``values()`` gives the dict the Action model reads."""

    DEFAULT_CSS = """
    ActionRow { height: auto; border: round $primary-muted; padding: 0 1; }
    ActionRow:focus-within { border: round $accent; }
    ActionRow > .action-line { height: auto; }
    ActionRow > .action-line > .action-id { width: 14; margin-right: 1; }
    ActionRow > .action-line > .action-outcome { width: 30; margin-right: 1; }
    ActionRow > .action-line > .action-kind { width: 32; margin-right: 1; }
    ActionRow > .action-line > Checkbox { width: auto; }
    """

    def __init__(self, action_id: str, *, initial: dict[str, Any] | None = None,
                 kinds: list[str] | None = None, id: str) -> None:
        """``initial`` is a stored action (``Action.model_dump(mode="json")``) or a row's
        ``values()``; without it the row starts empty with ``action_id``."""
        super().__init__(id=id)
        self.initial: dict[str, Any] = {"id": action_id, **(initial or {})}
        self.kinds = kinds or []

    @classmethod
    def from_action(cls, action: Action, *, kinds: list[str], id: str) -> ActionRow:
        return cls(action.id, initial=action.model_dump(mode="json"), kinds=kinds, id=id)

    def field_id(self, name: str) -> str:
        """The widget id of one of this row's controls (``<row id>-<field>``)."""
        return f"{self.id}-{name}"

    def compose(self) -> ComposeResult:
        initial = self.initial
        with Horizontal(classes="action-line"):
            yield FormField("id", Input(str(initial["id"]), id=self.field_id("id"), compact=True,
                                        placeholder="A1"),
                            label_width=4, classes="action-id")
            yield FormField("did", Input(initial.get("action") or "", id=self.field_id("action"),
                                         compact=True, placeholder="what was done, e.g. "
                                         "Restarted all pods at once"),
                            label_width=5)
        with Horizontal(classes="action-line"):
            yield FormField("outcome", Select(OUTCOME_CHOICES, prompt="r/m/n/w or Enter",
                                              value=initial.get("outcome") or Select.NULL,
                                              id=self.field_id("outcome"), compact=True),
                            label_width=9, classes="action-outcome")
            yield FormField("kind", Input(initial.get("kind") or "", id=self.field_id("kind"),
                                          compact=True, placeholder="optional: restart, scale…",
                                          suggester=SuggestFromList(self.kinds,
                                                                    case_sensitive=False)),
                            label_width=6, classes="action-kind")
            confirmed = initial.get("confirmed") is not False
            yield Checkbox(confirmed_label(confirmed), value=confirmed,
                           id=self.field_id("confirmed"), compact=True)
        yield FormField("why", Input(initial.get("explanation") or "",
                                     id=self.field_id("explanation"), compact=True,
                                     placeholder="what it did, and why — the causal explanation"),
                        label_width=4)

    @on(Checkbox.Changed)
    def _say_confirmed(self, event: Checkbox.Changed) -> None:
        event.checkbox.label = confirmed_label(event.value)

    def on_key(self, event: events.Key) -> None:
        select = self.query_one(f"#{self.field_id('outcome')}", Select)
        outcome = OUTCOME_KEYS.get((event.character or "").lower())
        if outcome and self.screen.focused is select and not select.expanded:
            select.value = outcome
            event.stop()
            event.prevent_default()

    def set_position(self, number: int, total: int) -> None:
        self.border_title = f"Action {number} of {total}"
        self.border_subtitle = "alt+↑/↓ move · ctrl+d remove"

    @property
    def action_id(self) -> str:
        return self.query_one(f"#{self.field_id('id')}", Input).value.strip()

    def set_action_id(self, value: str) -> None:
        self.query_one(f"#{self.field_id('id')}", Input).value = value

    def values(self) -> dict[str, Any]:
        """The row as data for ``Action``; an unchosen outcome is left out (→ 'required')."""
        outcome = self.query_one(f"#{self.field_id('outcome')}", Select).value
        confirmed = self.query_one(f"#{self.field_id('confirmed')}", Checkbox).value
        data: dict[str, Any] = {
            "id": self.action_id,
            "action": self.query_one(f"#{self.field_id('action')}", Input).value,
            "explanation": self.query_one(f"#{self.field_id('explanation')}", Input).value,
            "kind": self.query_one(f"#{self.field_id('kind')}", Input).value.strip() or None,
            # Checked keeps what was stored (usually nothing); cleared records "suspected".
            "confirmed": (True if self.initial.get("confirmed") is True else None) if confirmed
            else False,
        }
        if outcome is not Select.NULL:
            data["outcome"] = outcome
        return data

    def is_blank(self) -> bool:
        """True when nothing but the id has been entered."""
        data = self.values()
        return not (data["action"].strip() or data["explanation"].strip() or data["kind"]
                    or "outcome" in data)
