"""The memory's schema: incidents and the actions taken in them, with outcomes."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from store.text import CleanStr

ID_PATTERN = r"^[A-Za-z0-9._-]+$"



def without_absent(data: object, name: str) -> object:
    """A model's dump without field ``name`` when it is None: an optional field added later
    leaves the dumps (and hashes) of what does not use it as they were."""
    if isinstance(data, dict) and data.get(name) is None:
        data.pop(name, None)
    return data

class ActionOutcome(StrEnum):
    """What an action did to the incident, best first (the order ``rank`` gives)."""

    RESOLVED = "RESOLVED"
    MITIGATED = "MITIGATED"
    NO_EFFECT = "NO_EFFECT"
    WORSENED = "WORSENED"

    @property
    def is_fix(self) -> bool:
        """Evidence for a recommendation: it resolved or mitigated the incident."""
        return self in (ActionOutcome.RESOLVED, ActionOutcome.MITIGATED)

    @property
    def is_failure(self) -> bool:
        """It did nothing or made things worse: evidence against, never for, an action."""
        return not self.is_fix

    @property
    def is_proof(self) -> bool:
        """It resolved the incident: what the confidence rule counts as proven."""
        return self is ActionOutcome.RESOLVED

    @property
    def rank(self) -> int:
        """0 for the best outcome (RESOLVED) to 3 for the worst (WORSENED)."""
        return list(ActionOutcome).index(self)

    @property
    def key(self) -> str:
        """The one-letter key the postmortem form uses for it (r, m, n, w)."""
        return {"NO_EFFECT": "n"}.get(self.value, self.value[0].lower())


class Action(BaseModel):
    """One thing the team did during an incident, with its outcome and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN, min_length=1)
    action: CleanStr = Field(min_length=1)
    outcome: ActionOutcome
    explanation: CleanStr = Field(min_length=1)
    kind: CleanStr | None = None
    confirmed: bool | None = None

    @field_validator("action", "explanation")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class Incident(BaseModel):
    """A past incident as the team recorded it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=ID_PATTERN, min_length=1)
    title: CleanStr | None = None
    service: CleanStr = Field(min_length=1)
    started_at: datetime | None = None
    severity: CleanStr | None = None
    symptoms: CleanStr = Field(min_length=1)
    root_cause: CleanStr | None = None
    tags: list[CleanStr] = Field(default_factory=list)
    actions: list[Action] = Field(default_factory=list)
    # Ids of known recurrences of the same problem (drills measure whether recall finds them).
    related: list[Annotated[str, Field(pattern=ID_PATTERN, min_length=1)]] = Field(
        default_factory=list)
    # Recorded in a game day: never evidence in a real briefing unless drills are included.
    drill: bool = False
    # The runbook that applied (a URL or a path in the team's docs): shown, never fetched.
    runbook: CleanStr | None = Field(default=None, max_length=2000)

    @field_validator("runbook")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.strip():
            raise ValueError("must not be blank (leave the field out instead)")
        if "\n" in value.strip():
            raise ValueError("must be one line: the runbook's URL or path")
        return value.strip()

    @model_serializer(mode="wrap")
    def _without_absent_runbook(self, handler: SerializerFunctionWrapHandler) -> object:
        # An incident without a runbook dumps (and hashes) exactly as before the field
        # existed: indexes and shared versions built before it stay fresh and comparable.
        return without_absent(handler(self), "runbook")

    @field_validator("symptoms", "service")
    @classmethod
    def _required_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()

    @field_validator("tags", mode="before")
    @classmethod
    def _tags_as_text(cls, value: object) -> object:
        # `tags: [nginx, 502]` is natural to write; YAML reads 502 as a number.
        if isinstance(value, list):
            return [str(v) if isinstance(v, int | float) and not isinstance(v, bool) else v
                    for v in value]
        return value

    def action_ref(self, action: Action) -> str:
        """The citable id of one of this incident's actions, e.g. ``INC-2041/A1``."""
        return f"{self.id}/{action.id}"
