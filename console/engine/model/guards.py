"""Guards: everything a model wrote is checked against this recall before it can be shown."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from console.engine.briefing.confidence import Cited, claim_is_valid, compute_confidence
from console.engine.briefing.instructions import normalise
from console.engine.briefing.models import (
    BriefingWarning,
    Confidence,
    Evidence,
    GuardEntry,
    Recommendation,
    Step,
)
from console.engine.briefing.worsened import warning_for, warnings_from
from console.engine.model.citations import CitationIndex, scrub_mentions
from console.engine.model.draft import MAX_ANSWER_CHARS, DraftRejected, extract_json, loose_draft
from console.engine.model.grounding import REMOVED, CitedText, ground
from store.models import ActionOutcome
from store.recall import Recall, RecalledAction


@dataclass
class GuardedDraft:
    """A draft that passed the guards, with every change they made logged."""

    summary: str
    recommendations: list[Recommendation]
    warnings: list[BriefingWarning]
    confidence: Confidence
    likely_cause: str = ""
    steps: list[Step] = field(default_factory=list)
    log: list[GuardEntry] = field(default_factory=list)
    none_apply: str = ""


def guard_draft(raw: str, recall: Recall) -> GuardedDraft:
    """Parse and check ``raw``; raise DraftRejected when it cannot be used at all.

    Model words are shown only where the memory backs them: a recommendation's ``action`` and
    each step are the stored text of the action they cite (the model's phrasing becomes the
    recommendation's ``model_note``); command-like text or words addressed to a model that the
    cited records do not hold are removed from every model field, and each removal is logged.
    """
    draft = _parsed(raw)
    citations = CitationIndex(recall.actions)
    log: list[GuardEntry] = []

    def note(rule: str, detail: str) -> None:
        log.append(GuardEntry(rule=rule, detail=detail))

    def scrub(text: str, where: str, cited: list[RecalledAction]) -> str:
        cleaned, removed = scrub_mentions(text, citations)
        for mention in removed:
            note("citation_not_recalled", f"{mention!r} in {where} removed (not in this recall)")
        grounded = ground(cleaned, CitedText(a.text for a in cited))
        for command in grounded.commands:
            note("command_not_in_records", f"{where}: {command!r} is not in the cited records; "
                 "its sentence was removed")
        for sentence in grounded.instructions:
            note("instruction_removed", f"{where}: {sentence!r} reads like instructions, not "
                 "a reading of the evidence; removed")
        return grounded.text

    cited_anything = False
    cited_records: list[RecalledAction] = []
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
        backing = [a for e in evidence
                   if (a := citations.action(e.incident_id, e.action_id)) is not None]
        stored = backing[0].action
        note_text = scrub(item["action"], f"recommendation {number}", backing)
        if normalise(note_text) == normalise(stored) or _only_removed(note_text):
            note_text = ""
        recommendations.append(Recommendation(
            action=stored, evidence=evidence, resolved=resolved, tried=len(evidence),
            model_note=note_text))
        cited_records.extend(backing)
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
        cited_records.append(action)
        # The lead words are the model's only where the memory backs them; a blank text
        # (or one emptied by grounding) is no text: the stored action is shown instead.
        text = scrub(item["text"], f"warning {number}", [action]).strip()
        warnings.append(warning_for(action, action.action if _only_removed(text) else text))
    for missing in warnings_from(recall):
        if missing.action_id not in warned:
            note("warning_added", f"{missing.action_id} WORSENED was recalled but not warned "
                 "about; added from memory")
            warnings.append(missing)

    if cited_anything and not recommendations and not warnings and recall.actions:
        raise DraftRejected("no_valid_citation", "every citation in the draft was outside this "
                            "recall or had the wrong outcome: " +
                            "; ".join(e.detail for e in log[:6]))

    steps = _steps(draft["steps"], citations, note)
    confidence = _confidence(draft, scored, log)
    summary = scrub(draft["summary"], "summary", cited_records)
    if _only_removed(summary):
        raise DraftRejected("summary_ungrounded", "nothing of the summary was left after "
                            "removing commands and instructions the cited records do not hold")
    return GuardedDraft(
        summary=summary, recommendations=recommendations, warnings=warnings,
        confidence=confidence,
        likely_cause=scrub(draft["likely_cause"], "likely_cause", cited_records),
        steps=steps, log=log,
        none_apply=scrub(draft["none_apply"], "none_apply", cited_records).strip())


# The draft's schema nests four deep (recommendations → evidence → citation); a model answer
# nested far deeper is no draft, and Python's JSON reader raises RecursionError past ~1,000.
MAX_NESTING = 32


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)
_BRACKET = re.compile(r"[\[\]{}]")


def nesting_depth(raw: str) -> int:
    """The deepest ``[``/``{`` nesting of ``raw`` outside JSON strings (linear)."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub("", raw)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def _parsed(raw: str) -> dict[str, Any]:
    """The answer's draft fields, or DraftRejected: ``nesting_too_deep`` for an answer nested
    past MAX_NESTING (read before parsing, so no parser recursion can fail on it)."""
    depth = nesting_depth(raw) if len(raw) <= MAX_ANSWER_CHARS else 0  # (else: "oversized")
    if depth > MAX_NESTING:
        raise DraftRejected("nesting_too_deep", f"the answer nests {depth:,} levels deep (a draft "
                            f"nests 4; limit {MAX_NESTING})")
    try:
        return loose_draft(extract_json(raw))
    except RecursionError:  # (a nesting the scan above mis-read, e.g. inside prose quotes)
        raise DraftRejected("nesting_too_deep", "the answer nests too deep to read") from None


def _only_removed(text: str) -> bool:
    return not text.replace(REMOVED, "").strip()


def _steps(items: list[dict[str, Any]], citations: CitationIndex,
           note: Callable[[str, str], None]) -> list[Step]:
    """Each step cites a recalled action and is shown as its stored text; others are dropped."""
    steps: list[Step] = []
    for number, item in enumerate(items, 1):
        action = None
        for citation in item["citations"]:
            action = citations.action(citation["incident_id"], citation["action_id"])
            if action is not None:
                break
        if action is None:
            note("step_uncited", f"step {number} cites no recalled action; dropped")
            continue
        if action.outcome is ActionOutcome.WORSENED:
            note("step_cites_worsened", f"step {number} cites {action.action_id}, which made "
                 "things worse; dropped (it is a warning)")
            continue
        if any(s.action_id == action.action_id for s in steps):
            note("duplicate_citation", f"step {number} repeats {action.action_id}; dropped")
            continue
        if any(normalise(s.text) == normalise(action.action) for s in steps):
            note("step_repeated", f"step {number} ({action.action_id}) reads as an earlier step "
                 "word for word (the same fix in another incident); shown once")
            continue
        steps.append(Step(text=action.action, incident_id=action.incident_id,
                          action_id=action.action_id, outcome=action.outcome))
    return steps


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
