"""The same fix across incidents: recalled actions grouped by what was done."""

from __future__ import annotations

from dataclasses import dataclass, field

from store.recall import RecalledAction
from store.terms import terms

# Two recorded actions are "the same fix" when their wording overlaps this much.
SAME_FIX_OVERLAP = 0.6


@dataclass
class FixGroup:
    """Recalled actions that are the same fix, across incidents."""

    terms: set[str]
    members: list[RecalledAction] = field(default_factory=list)

    def best_per_incident(self) -> dict[str, RecalledAction]:
        best: dict[str, RecalledAction] = {}
        for member in self.members:
            current = best.get(member.incident_id)
            if current is None or member.outcome.rank < current.outcome.rank:
                best[member.incident_id] = member
        return best


def overlap(left: set[str], right: set[str]) -> float:
    return len(left & right) / len(left | right) if left | right else 0.0


def group_fixes(actions: list[RecalledAction]) -> list[FixGroup]:
    """Group recalled actions by what was done, so "resolved 5 of 5" can be counted."""
    groups: list[FixGroup] = []
    for action in actions:
        action_terms = set(terms(action.action))
        match = next((g for g in groups if overlap(g.terms, action_terms) >= SAME_FIX_OVERLAP),
                     None)
        if match is None:
            match = FixGroup(action_terms)
            groups.append(match)
        match.members.append(action)
    return groups
