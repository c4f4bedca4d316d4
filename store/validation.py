"""Schema errors in words: the one place a pydantic error becomes what a user reads.

`triage check` (the loader) uses the full sentence; the postmortem form, which shows the
message under the field itself, uses the short one. Both say the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from store.models import ActionOutcome, Incident
from store.redact import redact

OUTCOMES = ", ".join(o.value for o in list(ActionOutcome)[:-1]) + f" or {ActionOutcome.WORSENED.value}"


def describe_error(error: Mapping[str, Any], *, short: bool = False) -> str:
    """What is wrong with one field, for a file report (default) or under a form field."""
    kind = str(error["type"])
    field = error["loc"][-1] if error["loc"] else ""
    # What was given is quoted back to the user: a secret in it is redacted first.
    given = redact(repr(error.get("input"))).text
    if kind == "string_pattern_mismatch":
        return f"{given} may use only letters, digits, '.', '_' and '-'"
    if kind == "enum":
        return f"{given} is not a valid outcome — use {OUTCOMES}"
    if kind == "extra_forbidden":
        return "unknown field (check the spelling against the schema in README)"
    if not short:
        if kind == "missing":
            return "required field is missing"
        return f"{error['msg']} (got {given})"
    if field == "outcome" and kind == "missing":
        return "pick one: r/m/n/w"
    if kind in ("missing", "string_too_short") or (kind == "value_error"
                                                  and "blank" in str(error["msg"])):
        return "required"
    if kind.startswith(("datetime", "date", "time")):
        return "not an ISO-8601 time — e.g. 2026-03-14T02:05:00Z (or leave it empty)"
    return str(error["msg"])


# A start a little after "now" is a clock or time-zone slip; past a day it is a typo (2099).
FUTURE_SLACK = timedelta(days=1)


def future_start(incident: Incident, now: datetime) -> str | None:
    """Why ``incident``'s ``started_at`` cannot be right — more than a day after ``now`` (the
    settings' clock, TRIAGE_NOW-aware) — or None. A warning, never an error: the incident is
    kept as written."""
    started = incident.started_at
    if started is None:
        return None
    if started.tzinfo is None:
        started = started.replace(tzinfo=UTC)
    if now.tzinfo is None:
        now = now.replace(tzinfo=UTC)
    if started <= now + FUTURE_SLACK:
        return None
    days = (started - now).days
    when = started.isoformat().replace("+00:00", "Z")
    return (f"{incident.id} started_at {when} is {days:,} day{'s' if days != 1 else ''} after "
            f"now ({now.date().isoformat()}) — a typo in the date? (kept as written)")
