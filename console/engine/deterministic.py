"""The deterministic briefing: built from the recall alone, grounded by construction."""

from __future__ import annotations

from dataclasses import dataclass, field

from console.engine.briefing import (
    Attempt,
    Briefing,
    BriefingWarning,
    Evidence,
    GuardEntry,
    RecalledRecord,
    Recommendation,
    SearchInfo,
    State,
)
from console.engine.confidence import Cited, compute_confidence
from console.engine.worsened import warnings_from
from store.recall import Recall, RecalledAction
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


def _overlap(left: set[str], right: set[str]) -> float:
    return len(left & right) / len(left | right) if left | right else 0.0


def group_fixes(actions: list[RecalledAction]) -> list[FixGroup]:
    """Group recalled actions by what was done, so "resolved 5 of 5" can be counted."""
    groups: list[FixGroup] = []
    for action in actions:
        action_terms = set(terms(action.action))
        match = next((g for g in groups if _overlap(g.terms, action_terms) >= SAME_FIX_OVERLAP),
                     None)
        if match is None:
            match = FixGroup(action_terms)
            groups.append(match)
        match.members.append(action)
    return groups


def recommendations_from(recall: Recall) -> list[tuple[Recommendation, list[Cited]]]:
    """Fixes that worked in recalled incidents, most incidents resolved first."""
    scores = {incident.incident_id: incident.score for incident in recall.incidents}
    ranked: list[tuple[tuple[int, int, float], Recommendation, list[Cited]]] = []
    for group in group_fixes(recall.actions):
        best = group.best_per_incident()
        fixes = [a for a in best.values() if a.outcome.is_fix]
        if not fixes:
            continue
        failed = [a for a in best.values() if a.outcome.is_failure]
        fixes.sort(key=lambda a: (not a.outcome.is_proof, -scores.get(a.incident_id, 0.0)))
        resolved = sum(1 for a in fixes if a.outcome.is_proof)
        recommendation = Recommendation(
            action=fixes[0].action,
            evidence=[Evidence(incident_id=a.incident_id, action_id=a.action_id,
                               outcome=a.outcome) for a in fixes],
            resolved=resolved, tried=len(best),
            failed_elsewhere=[Evidence(incident_id=a.incident_id, action_id=a.action_id,
                                       outcome=a.outcome) for a in failed],
        )
        cited = [Cited(a.incident_id, a.outcome) for a in best.values()]
        key = (resolved, len(fixes) - resolved, max(scores.get(a.incident_id, 0.0) for a in fixes))
        ranked.append((key, recommendation, cited))
    ranked.sort(key=lambda item: item[0], reverse=True)
    return [(recommendation, cited) for _, recommendation, cited in ranked]


def shown_score(fused: float) -> float:
    """The relevance a record shows, 0–1: the fused score, capped at 1 (a long alert's BM25
    can lift it past 1; ``cosine`` and ``bm25`` beside it keep the components)."""
    return min(1.0, max(0.0, fused))


def recalled_records(recall: Recall) -> list[RecalledRecord]:
    """The recall as the sidebar and the JSON show it: every action, or the bare incident."""
    records = []
    for incident in recall.incidents:
        if not incident.actions:
            records.append(RecalledRecord(
                incident_id=incident.incident_id, action_id=None, service=incident.service,
                outcome=None, score=shown_score(incident.score), text=incident.document,
                title=incident.title, cosine=incident.cosine, bm25=incident.bm25))
        records.extend(RecalledRecord(
            incident_id=a.incident_id, action_id=a.action_id, service=a.service,
            outcome=a.outcome, score=shown_score(a.score), text=a.text, title=a.title,
            action=a.action,
            explanation=a.explanation, kind=a.kind, confirmed=a.confirmed,
            cosine=incident.cosine, bm25=incident.bm25,
        ) for a in incident.actions)
    return records


def search_info(recall: Recall, memory_incidents: int, notices: list[str]) -> SearchInfo:
    return SearchInfo(query=recall.query, terms=list(recall.query_terms), mode=recall.mode,
                      floor=recall.floor, best_rejected=recall.best_rejected,
                      memory_incidents=memory_incidents, gate=recall.gate, redacted=list(recall.redacted),
                      notices=[*notices, *recall.notices])


def deterministic_briefing(recall: Recall, memory_incidents: int, degraded: str | None,
                           notices: list[str] | None = None,
                           records: list[RecalledRecord] | None = None,
                           attempts: list[Attempt] | None = None,
                           guard_log: list[GuardEntry] | None = None) -> Briefing:
    """The briefing from the recall alone; confidence is that of the lead recommendation.

    ``records`` (the recall as shown, e.g. with quarantine flags), ``attempts`` and
    ``guard_log`` (of rejected model drafts) are carried into the result as given.
    """
    ranked = recommendations_from(recall)
    warnings = warnings_from(recall)
    lead_cited = ranked[0][1] if ranked else []
    confidence = compute_confidence(None, lead_cited, claim_given=False)
    state: State
    if not recall.incidents:
        state = "no_prior_incident"
        confidence = confidence.model_copy(update={
            "explanation": "no prior incident matched this alert — nothing to be confident in"})
    elif confidence.proven:
        state = "proven"
    else:
        state = "unproven"
    return Briefing(
        state=state, source="deterministic", model=None, degraded=degraded,
        recalled=records if records is not None else recalled_records(recall),
        attempts=attempts or [], guard_log=guard_log or [],
        summary=_summary(recall, state, [r for r, _ in ranked], warnings, memory_incidents),
        recommendations=[r for r, _ in ranked], warnings=warnings, confidence=confidence,
        search=search_info(recall, memory_incidents, notices or []),
    )


def _summary(recall: Recall, state: State, recommendations: list[Recommendation],
             warnings: list[BriefingWarning], memory_incidents: int) -> str:
    if state == "no_prior_incident":
        searched = ", ".join(recall.query_terms) or "(no searchable words)"
        return (f"No prior incident: none of the {memory_incidents} incidents in memory "
                f"resembles this alert (searched for: {searched}; {recall.gate or 'no match'}). "
                "Treat it as new — follow the runbook, and record a postmortem afterwards.")
    ids = ", ".join(f"{i.incident_id} ({i.service})" for i in recall.incidents)
    count = len(recall.incidents)
    parts = [f"Recalled {count} similar past incident{'s' if count != 1 else ''}: {ids}."]
    if warnings:
        parts.append(f"{len(warnings)} recorded action{'s' if len(warnings) != 1 else ''} "
                     "made things worse — see the warnings before acting.")
    if state == "proven":
        lead = recommendations[0]
        parts.append(f"Best proven fix: “{lead.action}” resolved {lead.resolved} of "
                     f"{lead.tried} incidents where it was tried.")
    elif recommendations:
        parts.append("No recorded action resolved these incidents; the mitigations below "
                     "helped but are unproven as fixes.")
    elif not recall.actions:
        parts.append("Seen before, but no actions were recorded for "
                     f"{'it' if count == 1 else 'them'}: nothing proven to try — read the "
                     "recalled incidents for context.")
    else:
        parts.append("No recorded action resolved or mitigated these incidents.")
    return " ".join(parts)
