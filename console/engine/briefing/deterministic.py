"""The deterministic briefing: built from the recall alone, grounded by construction."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from console.engine.briefing.applicability import Applicability, ServiceRead
from console.engine.briefing.models import (
    Attempt,
    Briefing,
    FixHistory,
    GuardEntry,
    Match,
    RecalledRecord,
    SearchInfo,
)
from console.engine.briefing.timeline import age, moment
from console.engine.briefing.verdict import Verdict, verdict
from store.recall import Recall

NO_SERVICE = ServiceRead()

def shown_score(fused: float) -> float:
    """The relevance a record shows, 0–1: the fused score, capped at 1 (a long alert's BM25
    can lift it past 1; ``cosine`` and ``bm25`` beside it keep the components)."""
    return min(1.0, max(0.0, fused))


def recalled_records(recall: Recall, matches: Mapping[str, Applicability] | None = None,
                     now: datetime | None = None) -> list[RecalledRecord]:
    """The recall as the sidebar and the JSON show it: every action, or the bare incident,
    each with its incident's match class and applicability (the same for all of its records),
    when it started and how long before ``now``."""
    records = []
    for incident in recall.incidents:
        found = (matches or {}).get(incident.incident_id)
        match: Match = found.match if found else "weak"
        applies = found.score if found else 0.0
        started, ago = incident.started_at, age(moment(incident.started_at), now)
        if not incident.actions:
            records.append(RecalledRecord(
                incident_id=incident.incident_id, action_id=None, service=incident.service,
                outcome=None, score=shown_score(incident.score), text=incident.document,
                title=incident.title, cosine=incident.cosine, bm25=incident.bm25, match=match,
                applicability=applies, started_at=started, age=ago,
                runbook=incident.runbook or None))
        records.extend(RecalledRecord(
            incident_id=a.incident_id, action_id=a.action_id, service=a.service,
            outcome=a.outcome, score=shown_score(a.score), text=a.text, title=a.title,
            action=a.action,
            explanation=a.explanation, kind=a.kind, confirmed=a.confirmed,
            cosine=incident.cosine, bm25=incident.bm25, match=match, applicability=applies,
            started_at=started, age=ago, runbook=incident.runbook or None)
            for a in incident.actions)
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
                           guard_log: list[GuardEntry] | None = None,
                           service: ServiceRead = NO_SERVICE,
                           judged: Verdict | None = None,
                           now: datetime | None = None) -> Briefing:
    """The briefing from the recall alone: the memory's verdict (verdict.py), worded.

    ``records`` (the recall as shown, e.g. with quarantine flags), ``attempts`` and
    ``guard_log`` (of rejected model drafts) are carried into the result as given; ``now``
    is the day the briefing is read on (ages, old evidence).
    """
    judged = judged or verdict(recall, service, now)
    return Briefing(
        state=judged.state, source="deterministic", model=None, degraded=degraded,
        recalled=(records if records is not None
                  else recalled_records(recall, judged.matches, now)),
        attempts=attempts or [], guard_log=guard_log or [],
        summary=summary(recall, judged, memory_incidents),
        recommendations=judged.recommendations, warnings=judged.warnings,
        confidence=judged.confidence, search=search_info(recall, memory_incidents, notices or []),
        tried_without_effect=judged.tried_without_effect, runner_up=judged.runner_up,
        alert_service=judged.service.named, recurrence=judged.recurrence,
    )


def summary(recall: Recall, judged: Verdict, memory_incidents: int) -> str:
    """The briefing's first sentences, in the words of its state."""
    if judged.state == "no_prior_incident":
        # What was searched for (stemmed terms) and the gate's arithmetic are in ``search``
        # (the JSON, the console's details view), not in the sentence.
        closest = ("the alert has no searchable words" if not recall.query_terms
                   else "none came close enough to count")
        return (f"No prior incident: none of the {memory_incidents} incidents in memory "
                f"resembles this alert ({closest}). Treat it as new — follow the runbook, and "
                "record a postmortem afterwards.")
    ids = ", ".join(f"{i.incident_id} ({i.service})" for i in recall.incidents)
    count = len(recall.incidents)
    parts = [f"Recalled {count} similar past incident{'s' if count != 1 else ''}: {ids}."]
    if judged.warnings:
        parts.append(f"{len(judged.warnings)} recorded action"
                     f"{'s' if len(judged.warnings) != 1 else ''} made things worse — read the "
                     "warnings before acting.")
    lead = judged.lead
    here = judged.service.named
    if judged.state == "proven" and lead is not None:
        resolved = len(lead.resolved_strong)
        history = lead.recommendation.history
        parts.append(f"Best proven fix: “{lead.recommendation.action}” resolved {resolved} "
                     f"past incident{'s' if resolved != 1 else ''} of this failure"
                     + (f"; it failed in {len(lead.failed_strong)}" if lead.failed_strong
                        else "")
                     + _in_time(history) + ".")
    elif lead is not None and lead.applies == "elsewhere":
        where = ", ".join(lead.recommendation.proven_on) or "other services"
        # (The state itself is the briefing's banner: these sentences say what to do with it.)
        parts.append(f"Check that the fix marked ~ applies here before acting: it is proven on "
                     f"{where}, not yet on {here or 'this alert’s service'}.")
    elif lead is not None and lead.applies == "strong":
        # (No "above" or "below": the console shows the fixes above this sentence, the CLI's
        # plain text below it.)
        parts.append("What helped in them only mitigated it or was offset by failures — the "
                     "fixes marked ~.")
    elif lead is not None:
        parts.append("The recalled incidents match only loosely — treat their fixes (marked ?) "
                     "as leads to check, not proof.")
    elif not recall.actions:
        parts.append("Seen before, but no actions were recorded for "
                     f"{'it' if count == 1 else 'them'}: nothing proven to try — read the "
                     "recalled incidents for context.")
    else:
        parts.append("No recorded action resolved or mitigated these incidents.")
    return " ".join(parts)


def _in_time(history: FixHistory | None) -> str:
    """The lead's history in the summary's sentence: it stopped working, or is old evidence."""
    if history is None or not history.text:
        return ""
    if history.failed_last:
        assert history.failed_on is not None
        said = (f" — and it did not work the most recent time, on {history.failed_on[:10]} in "
                f"{history.failed_incident_id}")
        return said + (" (its successes are old evidence)" if history.old_evidence else "")
    return f" — {history.text}"


__all__ = ["deterministic_briefing", "recalled_records", "search_info", "shown_score", "summary"]
