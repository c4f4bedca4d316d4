"""How each recalled incident applies to this alert: the same failure, elsewhere, or weak.

A recalled similar record is not yet an applicable fix. Each recalled incident's
*applicability* is how far it stands out from the memory's typical match for this alert
(store/recall.py ``standing``: in spreads, whatever the alert's length), with its *margin*
over the best rival that is not the same failure (``related``, either direction, or resolved
or mitigated by the same fix). A family of recurrences, declared or not, does not compete with
itself; a look-alike with another fix does: the margin is required, not added. The class:

- ``strong``    standing reaches the calibrated ``strong`` bar *and* its margin reaches
                ``margin`` (or the incident is a known recurrence of one that does), and the
                service fits: the same failure;
- ``elsewhere`` as strong, but on another service than the one the alert names (or the alert
                names a service the memory does not know);
- ``weak``      recalled above the floor, not proof of anything.

When the alert names no service the memory knows (nor any unknown one), there is no
cross-service demotion. The bar and the margin are fitted on third-party alerts, prose and
machine (bench/verdict_fit.py), and travel in the index's calibration.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from console.engine.briefing.fixes import same_fix_words
from console.engine.briefing.models import Match
from console.engine.briefing.services import ServiceRead, known_service_in, read_service
from store.recall import Recall, RecalledIncident
from store.terms import terms

__all__ = ["MATCH_RANK", "MATCH_WORDS", "Applicability", "ServiceRead", "applicability",
           "known_service_in", "read_service"]

MATCH_RANK: Mapping[Match, int] = {"strong": 2, "elsewhere": 1, "weak": 0}
MATCH_WORDS: Mapping[Match, str] = {
    "strong": "same failure",
    "elsewhere": "same failure, other service",
    "weak": "similar, not proof",
}

def _families(incidents: tuple[RecalledIncident, ...]) -> dict[str, set[str]]:
    """Who is the same failure as whom: declared recurrences, and recalled incidents that the
    same fix resolved or mitigated (a team that never filled ``related`` still has families)."""
    family: dict[str, set[str]] = {i.incident_id: set() for i in incidents}
    for incident in incidents:
        for other in incident.related:
            family[incident.incident_id].add(other)
            family.setdefault(other, set()).add(incident.incident_id)
    fixes = {i.incident_id: [set(terms(a.action)) for a in i.actions if a.outcome.is_fix]
             for i in incidents}
    for n, left in enumerate(incidents):
        for right in incidents[n + 1:]:
            if any(same_fix_words(a, b)
                   for a in fixes[left.incident_id] for b in fixes[right.incident_id]):
                family[left.incident_id].add(right.incident_id)
                family[right.incident_id].add(left.incident_id)
    return family


@dataclass(frozen=True)
class Applicability:
    """One recalled incident's applicability to the alert, and its class."""

    incident_id: str
    service: str
    score: float
    margin: float
    match: Match


def applicability(recall: Recall, service: ServiceRead) -> dict[str, Applicability]:
    """Every recalled incident's applicability and match class (see the module docstring)."""
    related = _families(recall.incidents)
    # A recall built by hand (tests, a stored recall) carries scores only: the score stands for
    # the standing, and the margin is over the best other candidate.
    fused = {r.incident_id: r.score for r in recall.ranked}
    for incident in recall.incidents:
        fused.setdefault(incident.incident_id, incident.score)
    scores: dict[str, tuple[float, float]] = {}
    for incident in recall.incidents:
        if incident.standing is not None and incident.margin is not None:
            scores[incident.incident_id] = (incident.standing, incident.margin)
            continue
        own = fused[incident.incident_id]
        family = related.get(incident.incident_id, set())
        rivals = [s for i, s in fused.items() if i != incident.incident_id and i not in family]
        # Rounded before the bar is applied: the class always agrees with the figure shown.
        scores[incident.incident_id] = (round(own, 4),
                                        round(own - max(rivals, default=0.0), 4))
    alike = {i for i, (score, margin) in scores.items()
             if score >= recall.strong and margin >= recall.margin}
    # A known recurrence of an incident that clears the bar is the same failure too.
    alike |= {i for i in scores if related.get(i, set()) & alike}
    result = {}
    for incident in recall.incidents:
        score, margin = scores[incident.incident_id]
        match: Match = "weak"
        if incident.incident_id in alike:
            here = not service.demotes or (
                service.known and incident.service.lower() == (service.named or "").lower())
            match = "strong" if here else "elsewhere"
        result[incident.incident_id] = Applicability(
            incident.incident_id, incident.service, score, margin, match)
    return result
