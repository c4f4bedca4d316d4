"""What the memory knew on the day an incident started: the "as of" rule of replays.

A **time-ordered** replay (the default of ``triage drill`` and ``triage eval --replay``) meets the
memory as it was when the replayed incident started: only incidents with an earlier
``started_at`` (a tie is not earlier), each with its ``related`` ids less the ones not yet known
(store/recall.py strips hidden ids from a recalled incident's ``related``), judged on that day
(``now`` = the incident's start). A **leave-one-out** replay meets today's memory less itself.

Undated incidents (no ``started_at``) count as known from the start, before every dated one:
every dated replay sees them. An undated incident has no day of its own; by the same rule it
came before every dated incident, so it is replayed against the other undated incidents only
(:data:`UNDATED_RULE`, also in the reports' JSON). In a memory with no dated incident at all the
two modes are therefore the same replays.

Game-day drills that are hidden (not included) are out of the memory in both modes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from store.models import Incident

Mode = Literal["time-ordered", "leave-one-out"]
MODES: tuple[Mode, ...] = ("time-ordered", "leave-one-out")
TIME_ORDERED: Mode = "time-ordered"
LEAVE_ONE_OUT: Mode = "leave-one-out"
UNDATED_RULE = ("an incident without started_at is known from the start (before every dated "
                "incident); an undated incident is replayed against the other undated ones")


def instant(when: datetime | None) -> datetime | None:
    """``when`` as an aware UTC time (a time without a zone is read as UTC); None stays None."""
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


@dataclass(frozen=True)
class AsOf:
    """One replay's memory: the ids out of it, the day it is judged on, how many were known."""

    hidden: frozenset[str]
    # The replayed incident's start (time-ordered, dated); None: no day of its own — the caller
    # judges on its clock (Settings.now()).
    now: datetime | None
    known: int


class History:
    """The incidents of one memory in the order they started, for :meth:`as_of` per replay."""

    def __init__(self, incidents: Sequence[Incident], drills: frozenset[str] = frozenset()
                 ) -> None:
        self.drills = drills
        self.ids = frozenset(i.id for i in incidents)
        self.size = len(self.ids)
        dated = sorted((when, i.id) for i in incidents if i.id not in drills
                       and (when := instant(i.started_at)) is not None)
        self._times = [when for when, _ in dated]
        self._dated = [iid for _, iid in dated]
        self.undated = sum(1 for i in incidents if i.id not in drills and i.started_at is None)

    def as_of(self, incident: Incident, mode: Mode = TIME_ORDERED) -> AsOf:
        """The memory ``incident``'s replay meets in ``mode`` (see the module docstring)."""
        hidden = set(self.drills)
        hidden.add(incident.id)
        when = instant(incident.started_at) if mode == TIME_ORDERED else None
        if mode == TIME_ORDERED:
            # Dated incidents started at or after it (all of them for an undated one).
            start = 0 if when is None else bisect_left(self._times, when)
            hidden.update(self._dated[start:])
        out = frozenset(hidden)
        return AsOf(out, when, self.size - len(out & self.ids))

    def known_related(self, incident: Incident, as_of: AsOf) -> list[str]:
        """``incident``'s related ids that were in the memory it is replayed against."""
        return [r for r in incident.related if r in self.ids and r not in as_of.hidden]

    def same_in_both(self) -> bool:
        """Whether both modes give every replay the same memory: no dated incident is in it
        (then an undated replay is a leave-one-out one)."""
        return not self._dated
