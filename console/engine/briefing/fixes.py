"""The same fix across incidents: recalled actions grouped by what was done."""

from __future__ import annotations

from dataclasses import dataclass, field

from store.recall import RecalledAction
from store.terms import SAME_FIX_OVERLAP, overlap, same_fix_words, terms

__all__ = ["SAME_FIX_OVERLAP", "FixGroup", "group_fixes", "overlap", "same_fix", "same_fix_words"]


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


def same_fix(left: str, right: str) -> bool:
    """:func:`same_fix_words` on two actions as written."""
    return same_fix_words(set(terms(left)), set(terms(right)))


def group_fixes(actions: list[RecalledAction]) -> list[FixGroup]:
    """Group recalled actions by what was done, so "resolved 5 of 5" can be counted.

    Two actions are the same fix when their wording overlaps ≥ SAME_FIX_OVERLAP; groups are
    the connected sets of that relation, so the grouping does not depend on the order the
    actions were recalled in (a chain A~B~C is one fix even when A and C overlap less).
    Groups keep the order of their first member."""
    words = [set(terms(action.action)) for action in actions]
    parent = list(range(len(actions)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for left in range(len(actions)):
        for right in range(left + 1, len(actions)):
            if same_fix_words(words[left], words[right]):
                parent[root(right)] = root(left)
    groups: dict[int, FixGroup] = {}
    for n, action in enumerate(actions):
        group = groups.setdefault(root(n), FixGroup(words[n]))
        group.members.append(action)
    return list(groups.values())
