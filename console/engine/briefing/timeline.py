"""Time in the memory: when a failure keeps coming back, and when a fix stopped working.

Both read only the recall (each recalled incident's ``started_at``, ``related`` and root
cause) and the verdict's match classes, as of ``now`` — the settings' clock (``TRIAGE_NOW``
for demos and tests), or for a replay the day the replayed incident started.

- **Recurrence.** The strongly matching incidents on one service (a ``related:`` link to a
  strong incident makes an incident strong already, applicability.py) are the earlier
  occurrences of this failure; two or more is a recurrence. It says how many, over what
  span, the last one and how long ago, and whether one fix closed every one — a fix that
  resolves a failure which keeps returning is a mitigation: the recorded root causes are
  listed so the engineer sees what was never fixed.
- **Fix history.** A fix's strong evidence in time order. When the most recent strong
  incident where it was tried is one where it failed (NO_EFFECT / WORSENED) after earlier
  successes, that fact goes next to it ("worked 2× until 2025-11, failed on 2026-07-24 in
  INC-2233"). The failure already lowered the count that sets the tier (verdict.py): this is
  where it is *said*, not a second penalty. A fix whose newest success is older than
  ``STALE_AFTER`` is marked as old evidence — the window the verification uses too.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from console.engine.briefing.models import FixHistory, Match, Recurrence
from store.recall import Recall, RecalledIncident

# Evidence older than this is "old": the one window for the briefing and the verification.
STALE_AFTER = timedelta(days=365)
# Root causes are listed whole in the JSON; a briefing line cuts each to this many characters.
ROOT_CAUSE_SHOWN = 160


def moment(text: str | None) -> datetime | None:
    """A stored ``started_at`` (ISO text) as an aware datetime; None when blank or unreadable."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def clock(now: datetime | None) -> datetime:
    """``now`` as an aware datetime (None: the wall clock)."""
    if now is None:
        return datetime.now(UTC)
    return now if now.tzinfo else now.replace(tzinfo=UTC)


def day(when: datetime) -> str:
    return when.date().isoformat()


def month(when: datetime) -> str:
    return f"{when.year:04d}-{when.month:02d}"


def age(then: datetime | None, now: datetime | None) -> str:
    """How long ago, in words an engineer says: "today", "yesterday", "14 days ago",
    "3 months ago", "14 months ago", "2 years ago" ("" when undated; "after now" when it
    started after ``now``)."""
    if then is None:
        return ""
    days = (clock(now) - then).days
    if days < 0:
        return "after now"
    if days == 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 60:
        return f"{days} days ago"
    if days < 730:
        return f"{round(days / 30.44)} months ago"
    return f"{days // 365} years ago"


# --- recurrence -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ClosingFix:
    """A recommended fix and the incidents it RESOLVED (stored text, as the verdict ranks it)."""

    action: str
    resolved: frozenset[str]
    # (incident id, action id) of each RESOLVED action, so only a family's own are cited.
    actions: tuple[tuple[str, str], ...]


def recurrence(recall: Recall, matches: Mapping[str, Match], fixes: list[ClosingFix],
               lead_incident: str | None, now: datetime | None) -> Recurrence | None:
    """The earlier occurrences of this failure (see the module docstring); None when fewer
    than two strongly matching incidents on one service were recalled."""
    strong = [i for i in recall.incidents if matches.get(i.incident_id) == "strong"]
    if len(strong) < 2:
        return None
    service = _family_service(strong, lead_incident)
    family = [i for i in strong if i.service.lower() == service.lower()]
    if len(family) < 2:
        return None
    dated = sorted((i for i in family if moment(i.started_at) is not None),
                   key=lambda i: moment(i.started_at))  # type: ignore[arg-type, return-value]
    ids = {i.incident_id for i in family}
    closing = max(fixes, key=lambda f: len(f.resolved & ids), default=None)
    closed = len(closing.resolved & ids) if closing is not None else 0
    first = moment(dated[0].started_at) if dated else None
    last = moment(dated[-1].started_at) if dated else None
    gaps = [(moment(b.started_at) - moment(a.started_at)).total_seconds() / 86400  # type: ignore[operator]
            for a, b in zip(dated, dated[1:], strict=False)]
    causes = list(dict.fromkeys(i.root_cause.strip() for i in [*dated, *family]
                                if i.root_cause.strip()))
    return Recurrence(
        count=len(family),
        first=first.isoformat() if first else None,
        last=last.isoformat() if last else None,
        last_incident_id=dated[-1].incident_id if dated else None,
        days_since_last=max(0, (clock(now) - last).days) if last else None,
        median_interval_days=round(statistics.median(gaps), 1) if gaps else None,
        same_fix=closing is not None and closed == len(family),
        fix=closing.action if closing is not None and closed else None,
        root_causes=causes,
        service=service,
        incident_ids=[i.incident_id for i in dated]
        + [i.incident_id for i in family if moment(i.started_at) is None],
        undated=len(family) - len(dated),
        fix_resolved=closed,
        fix_action_ids=[action for incident, action in closing.actions if incident in ids]
        if closing is not None else [])


def _family_service(strong: list[RecalledIncident], lead_incident: str | None) -> str:
    """The service whose occurrences are counted: the lead's incident's, else the service most
    of the strong incidents are on (the best recalled first among equals)."""
    for incident in strong:
        if incident.incident_id == lead_incident:
            return incident.service
    counts: dict[str, int] = {}
    for incident in strong:
        counts[incident.service.lower()] = counts.get(incident.service.lower(), 0) + 1
    best = max(counts.values())
    return next(i.service for i in strong if counts[i.service.lower()] == best)


def recurrence_sentence(found: Recurrence) -> str:
    """The recurrence in a few short sentences, from the memory's own figures."""
    first, last = moment(found.first), moment(found.last)
    seen = f"Seen {found.count} times before"
    if first is not None and last is not None:
        seen += f", {month(first)} to {month(last)}"
    if found.median_interval_days is not None:
        seen += f" (about every {_days(found.median_interval_days)})"
    parts = [seen + "."]
    if found.last_incident_id and last is not None:
        ago = f", {_ago(found.days_since_last)}" if found.days_since_last is not None else ""
        parts.append(f"Last time: {found.last_incident_id} on {day(last)}{ago}.")
    if found.undated:
        parts.append(f"{found.undated} of them undated.")
    if found.same_fix and found.fix:
        parts.append(f"“{found.fix}” resolved it every time ({found.fix_resolved} of "
                     f"{found.count}) — it resolves it, does not keep it away: the recorded "
                     "root causes show what was never fixed.")
    elif found.fix:
        others = found.count - found.fix_resolved
        parts.append(f"“{found.fix}” resolved {found.fix_resolved} of the {found.count}; "
                     f"{'the other was' if others == 1 else 'the others were'} closed "
                     "differently.")
    else:
        parts.append("No recorded fix resolved them.")
    return " ".join(parts)


def root_cause_lines(found: Recurrence) -> list[str]:
    """The recorded root causes, each cut to ROOT_CAUSE_SHOWN characters for one line."""
    lines = []
    for cause in found.root_causes:
        flat = " ".join(cause.split())
        lines.append(flat if len(flat) <= ROOT_CAUSE_SHOWN
                     else flat[:ROOT_CAUSE_SHOWN - 1].rstrip() + "…")
    return lines


def _days(value: float) -> str:
    whole = round(value)
    return "day" if whole <= 1 else f"{whole} days"


def _ago(days: int) -> str:
    return "today" if days == 0 else "yesterday" if days == 1 else f"{days} days ago"


# --- fix history ----------------------------------------------------------------------------

def old_words(last_worked: datetime, now: datetime | None) -> str:
    """"old evidence: last worked 2025-09-16, over a year ago"."""
    return f"old evidence: last worked {day(last_worked)}, {age(last_worked, now)}"


def fix_history(resolved: Iterable[tuple[str, str]], failed: Iterable[tuple[str, str, str]],
                now: datetime | None) -> FixHistory | None:
    """A fix's evidence in time order: ``resolved`` (incident id, started_at) where it RESOLVED
    the failure, ``failed`` (incident id, started_at, outcome) strong incidents where it did not.
    None when none of its evidence is dated."""
    wins = sorted(((moment(when), i) for i, when in resolved if moment(when) is not None),
                  key=lambda pair: pair[0])  # type: ignore[arg-type, return-value]
    losses = sorted(((moment(when), i, outcome) for i, when, outcome in failed
                     if moment(when) is not None),
                    key=lambda triple: triple[0])  # type: ignore[arg-type, return-value]
    if not wins and not losses:
        return None
    last_win = wins[-1][0] if wins else None
    last_loss = losses[-1] if losses else None
    decayed = (last_win is not None and last_loss is not None
               and last_loss[0] > last_win)  # type: ignore[operator]
    old = last_win is not None and clock(now) - last_win > STALE_AFTER
    words = []
    if decayed:
        assert last_win is not None and last_loss is not None
        times = "once" if len(wins) == 1 else f"{len(wins)}×"
        words.append(f"worked {times} until {month(last_win)}, failed on "
                     f"{day(last_loss[0])} in {last_loss[1]}")  # type: ignore[arg-type]
    if old:
        assert last_win is not None
        words.append(old_words(last_win, now))
    return FixHistory(
        worked=len(wins),
        first_worked=wins[0][0].isoformat() if wins else None,  # type: ignore[union-attr]
        last_worked=last_win.isoformat() if last_win else None,
        failed_last=decayed,
        failed_on=last_loss[0].isoformat() if decayed and last_loss else None,  # type: ignore[union-attr]
        failed_incident_id=last_loss[1] if decayed and last_loss else None,
        failed_outcome=last_loss[2] if decayed and last_loss else None,
        old_evidence=old, text="; ".join(words))


__all__ = ["ROOT_CAUSE_SHOWN", "STALE_AFTER", "ClosingFix", "age", "clock", "day", "fix_history",
           "moment", "month", "recurrence", "recurrence_sentence",
           "root_cause_lines"]
