"""A multi-alert payload: every alert group's recall, and which group to brief.

Each group of an Alertmanager payload (see console/engine/briefing/alert.py) is recalled on its own,
so one alert that matches memory is not diluted by ninety-nine that do not. The briefing is
for the group whose recall is strongest — proven over unproven over no prior incident, then
the higher fused score, then the group listed first — unless the engineer chose one. Only
that group goes to the model; the others keep the state the memory alone gives them.
"""

from __future__ import annotations

from dataclasses import dataclass

from console.engine.briefing.alert import PayloadGroup
from console.engine.briefing.deterministic import shown_score
from console.engine.briefing.models import AlertGroup, Match, State
from store.recall import Recall

STATE_RANK: dict[State, int] = {"proven": 2, "unproven": 1, "no_prior_incident": 0}


@dataclass(frozen=True)
class GroupRecall:
    """One alert group, what its recall returned, and the state the memory alone gives it."""

    group: PayloadGroup
    recall: Recall
    state: State
    match: Match | None = None

    @property
    def top_incident_id(self) -> str | None:
        return self.recall.incidents[0].incident_id if self.recall.incidents else None

    @property
    def score(self) -> float | None:
        return self.recall.incidents[0].score if self.recall.incidents else None

    @property
    def strength(self) -> tuple[int, float]:
        return STATE_RANK[self.state], self.score if self.score is not None else float("-inf")


def strongest(groups: list[GroupRecall]) -> int:
    """The index of the group to brief: best state, then best score; ties go to the first."""
    return max(range(len(groups)), key=lambda i: (groups[i].strength, -i))


def batch_entries(groups: list[GroupRecall], chosen: int | None,
                  chosen_state: State) -> list[AlertGroup]:
    """Every group with its own state and top incident; the briefed one carries the
    briefing's own state (a model draft may prove less than the memory alone)."""
    return [AlertGroup(key=g.group.key, alerts=g.group.alerts, alert=g.group.label,
                       state=chosen_state if i == chosen else g.state,
                       top_incident_id=g.top_incident_id,
                       score=None if g.score is None else shown_score(g.score),
                       selected=i == chosen, match=g.match)
            for i, g in enumerate(groups)]
