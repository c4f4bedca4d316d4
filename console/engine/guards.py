"""Guards: everything a model wrote is checked against this recall before it can be shown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.engine.briefing import (
    BriefingWarning,
    Confidence,
    Evidence,
    GuardEntry,
    Recommendation,
)
from console.engine.citations import CitationIndex, scrub_mentions
from console.engine.confidence import Cited, claim_is_valid, compute_confidence
from console.engine.draft import DraftRejected, extract_json, loose_draft
from console.engine.worsened import warning_for, warnings_from
from store.models import ActionOutcome
from store.recall import Recall


@dataclass
class GuardedDraft:
    """A draft that passed the guards, with every change they made logged."""

    summary: str
    recommendations: list[Recommendation]
    warnings: list[BriefingWarning]
    confidence: Confidence
    likely_cause: str = ""
    steps: list[str] = field(default_factory=list)
    log: list[GuardEntry] = field(default_factory=list)


def guard_draft(raw: str, recall: Recall) -> GuardedDraft:
    """Parse and check ``raw``; raise DraftRejected when it cannot be used at all."""
    draft = loose_draft(extract_json(raw))
    citations = CitationIndex(recall.actions)
    log: list[GuardEntry] = []

    def note(rule: str, detail: str) -> None:
        log.append(GuardEntry(rule=rule, detail=detail))

    def scrub(text: str, where: str) -> str:
        cleaned, removed = scrub_mentions(text, citations)
        for mention in removed:
            note("citation_not_recalled", f"{mention!r} in {where} removed (not in this recall)")
        return cleaned

    cited_anything = False
    recommendations: list[Recommendation] = []
    scored: list[list[Cited]] = []
    for number, item in enumerate(draft["recommendations"], 1):
        if not item["action"].strip():
            note("recommendation_empty", f"recommendation {number} has no action text; dropped")
            continue
        by_incident: dict[str, Evidence] = {}
        for citation in item["evidence"]:
            cited_anything = True
            label = f"{citation['incident_id']} {citation['action_id']}".strip()
            action = citations.action(citation["incident_id"], citation["action_id"])
            if action is None:
                note("citation_not_recalled", f"{label!r} in recommendation {number} dropped")
                continue
            if not action.outcome.is_fix:
                note("evidence_not_a_fix", f"{action.action_id} is {action.outcome}: evidence for "
                     f"a warning, never for recommendation {number}; dropped")
                continue
            cited = Evidence(incident_id=action.incident_id, action_id=action.action_id,
                             outcome=action.outcome)
            earlier = by_incident.get(action.incident_id)
            if earlier is not None:
                note("duplicate_citation", f"{action.incident_id} cited again in recommendation "
                     f"{number}; counted once")
                if earlier.outcome.is_proof or not cited.outcome.is_proof:
                    continue
            by_incident[action.incident_id] = cited
        evidence = list(by_incident.values())
        if not evidence:
            note("recommendation_unbacked", f"recommendation {number} has no recalled RESOLVED "
                 "or MITIGATED action as evidence; dropped")
            continue
        resolved = sum(1 for e in evidence if e.outcome.is_proof)
        recommendations.append(Recommendation(
            action=scrub(item["action"], f"recommendation {number}"), evidence=evidence,
            resolved=resolved, tried=len(evidence)))
        scored.append([Cited(e.incident_id, e.outcome) for e in evidence])

    warnings: list[BriefingWarning] = []
    warned: set[str] = set()
    for number, item in enumerate(draft["warnings"], 1):
        cited_anything = True
        action = citations.action(item["incident_id"], item["action_id"])
        label = f"{item['incident_id']} {item['action_id']}".strip()
        if action is None:
            note("citation_not_recalled", f"warning {number} cites {label!r}; dropped")
            continue
        if action.outcome is not ActionOutcome.WORSENED:
            note("warning_not_worsened", f"warning {number} cites {action.action_id} which is "
                 f"{action.outcome}, not WORSENED; dropped")
            continue
        if action.action_id in warned:
            note("duplicate_citation", f"warning {number} repeats {action.action_id}; dropped")
            continue
        warned.add(action.action_id)
        # A blank text (or only spaces) is no text: the stored action is shown instead.
        text = scrub(item["text"], f"warning {number}").strip() or action.action
        warnings.append(warning_for(action, text))
    for missing in warnings_from(recall):
        if missing.action_id not in warned:
            note("warning_added", f"{missing.action_id} WORSENED was recalled but not warned "
                 "about; added from memory")
            warnings.append(missing)

    if cited_anything and not recommendations and not warnings and recall.actions:
        raise DraftRejected("no_valid_citation", "every citation in the draft was outside this "
                            "recall or had the wrong outcome: " +
                            "; ".join(e.detail for e in log[:6]))

    confidence = _confidence(draft, scored, log)
    return GuardedDraft(
        summary=scrub(draft["summary"], "summary"), recommendations=recommendations,
        warnings=warnings, confidence=confidence,
        likely_cause=scrub(draft["likely_cause"], "likely_cause"),
        steps=[scrub(s, "steps") for s in draft["steps"]], log=log)


def _confidence(draft: dict[str, Any], scored: list[list[Cited]],
                log: list[GuardEntry]) -> Confidence:
    claim = draft["confidence"]
    best = max(scored, key=lambda cited: sum(ActionOutcome(c.outcome).is_proof for c in cited),
               default=[])
    confidence = compute_confidence(claim, best, claim_given=True)
    if not claim_is_valid(claim):
        log.append(GuardEntry(rule="confidence_invalid",
                              detail=f"model claim {claim!r} is not a number in 0–100; counted as 0"))
    elif confidence.value != round(claim):
        log.append(GuardEntry(rule="confidence_bounded", detail=f"model claimed {claim}; "
                              f"{confidence.derivation}"))
    return confidence
