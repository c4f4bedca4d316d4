"""A model's accepted draft as a briefing: it may lower the memory's verdict, never raise it.

The memory's verdict (verdict.py) is the ceiling. The model chooses which of the memory's
fixes to show and in what order — each recommendation it makes must be one of the fixes the
memory offers (a fix that made things worse here is not one), and shows only the evidence the
model cited of it. Its confidence is the lower of two figures: the tier rule on what the model
cited (failures of that fix in strong incidents always count), and the memory's own, both with
the model's claim clamped inside the tier. PROVEN stays only if the memory said so and the
model's lead is a strong fix still above tier 0. ``none_apply`` is an explicit demotion, shown
as the model's reading. A draft that recommends nothing usable changes nothing: the memory's
verdict stands, and the guard log says so. The model's prose is held to the memory first: no
claim the records do not back (claims.py), no recommending what the memory warns against and
no crediting what failed (warned.py).
"""

from __future__ import annotations

from console.engine.briefing.confidence import verdict_confidence
from console.engine.briefing.deterministic import search_info, summary
from console.engine.briefing.instructions import normalise
from console.engine.briefing.models import (
    Briefing,
    Confidence,
    GuardEntry,
    RecalledRecord,
    Recommendation,
    State,
)
from console.engine.briefing.verdict import Ranked, Verdict
from console.engine.model.claims import checked_draft
from console.engine.model.steer import SteerResult
from console.engine.model.warned import warned_checked
from store.recall import Recall


def model_briefing(judged: Verdict, steered: SteerResult, recalled: Recall,
                   records: list[RecalledRecord], notices: list[str], size: int,
                   model: str) -> Briefing:
    """The briefing from an accepted draft, bounded by ``judged`` (see the module docstring)."""
    accepted = steered.accepted
    assert accepted is not None
    log = list(steered.guard_log)
    accepted = checked_draft(accepted, recalled, log)  # unbacked claims out of its prose
    accepted = warned_checked(accepted, judged, recalled, log)  # nor what the memory warns of
    claim = accepted.confidence.model_claim
    kept = _kept(judged, accepted.recommendations, log)
    state: State = judged.state
    if kept:
        recommendations = [rec for rec, _ in kept]
        confidence = _lower(judged, kept[0], claim)
        lead = kept[0][1]
        if state == "proven" and (lead.applies != "strong" or confidence.tier == "0"):
            state = "unproven"
    else:
        if judged.recommendations:
            log.append(GuardEntry(rule="recommendation_missing", detail=(
                "the draft recommended nothing usable; the memory's verdict stands")))
        recommendations = judged.recommendations
        confidence = judged.with_claim(claim)
    if confidence.value != accepted.confidence.value:
        log.append(GuardEntry(rule="confidence_bounded", detail=(
            f"the draft's figure {accepted.confidence.value} is held to what the memory "
            f"proves: {confidence.derivation}")))
    reading = accepted.none_apply
    if reading and state == "proven":
        state = "unproven"
        confidence = confidence.model_copy(update={
            "value": min(confidence.value, 30), "cap": min(confidence.cap, 30),
            "derivation": f"{confidence.derivation}; the model read that none applies → ≤ 30"})
        log.append(GuardEntry(rule="model_demoted", detail=(
            f"the model read that none of the recalled fixes applies: {reading}")))
    worded = {w.action_id: w for w in accepted.warnings}
    conflicted = set(judged.conflicts)
    warnings = [worded[w.action_id].model_copy(update={"match": w.match})
                if w.action_id in worded and w.action_id not in conflicted else w
                for w in judged.warnings]
    return Briefing(
        state=state, source="model", model=model, degraded=None, recalled=records,
        summary=accepted.summary or summary(recalled, judged, size),
        recommendations=recommendations, warnings=warnings, confidence=confidence,
        guard_log=log, attempts=steered.attempts, search=search_info(recalled, size, notices),
        likely_cause=accepted.likely_cause, steps=[s.text for s in accepted.steps],
        step_citations=accepted.steps, tried_without_effect=judged.tried_without_effect,
        runner_up=judged.runner_up, alert_service=judged.service.named, model_reading=reading)


def _kept(judged: Verdict, proposed: list[Recommendation], log: list[GuardEntry],
          ) -> list[tuple[Recommendation, Ranked]]:
    """The model's recommendations that are fixes the memory offers, each once, with the
    evidence the model cited of that fix (the fix most of its citations belong to). A repeat
    of a fix already kept adds only the evidence of that fix it cites and the earlier one did
    not (50 copies citing one incident each are one recommendation citing all); a note the
    model wrote under an earlier fix is not shown again."""
    kept: list[tuple[Recommendation, Ranked]] = []
    numbers: list[int] = []
    for number, rec in enumerate(proposed, 1):
        cited = {e.action_id for e in rec.evidence}
        scored = [(len(cited & {e.action_id for e in r.recommendation.evidence}), -n, r)
                  for n, r in enumerate(judged.ranked)]
        best = max(scored, key=lambda s: (s[0], s[1]), default=None)
        if best is None or best[0] == 0:
            log.append(GuardEntry(rule="recommendation_contradicts_memory", detail=(
                f"recommendation {number} ({', '.join(sorted(cited))}) is not a fix the memory "
                "offers for this alert (it made things worse here, or its evidence is not a "
                "fix); dropped")))
            continue
        target = best[2]
        of_fix = {e.action_id for e in target.recommendation.evidence}
        evidence = [e for e in rec.evidence if e.action_id in of_fix]
        earlier = next((n for n, (_, t) in enumerate(kept) if t is target), None)
        if earlier is not None:
            shown, _ = kept[earlier]
            have = {e.action_id for e in shown.evidence}
            added = [e for e in evidence if e.action_id not in have]
            if added:
                merged = [*shown.evidence, *added]
                kept[earlier] = (shown.model_copy(update={
                    "evidence": merged,
                    "resolved": sum(1 for e in merged if e.outcome.is_proof)}), target)
            log.append(GuardEntry(rule="recommendation_repeated", detail=(
                f"recommendation {number} repeats the fix of recommendation {numbers[earlier]}; "
                "shown once" + (f", with its citations {', '.join(e.action_id for e in added)}"
                                if added else "; dropped"))))
            continue
        if len(evidence) < len(rec.evidence):
            log.append(GuardEntry(rule="evidence_other_fix", detail=(
                f"recommendation {number} cites {', '.join(sorted(cited - of_fix))}: another "
                "fix than the one it recommends; not counted")))
        note = rec.model_note
        if note and any(normalise(note) == normalise(r.model_note) for r, _ in kept):
            log.append(GuardEntry(rule="note_repeated", detail=(
                f"recommendation {number}: the model's words repeat an earlier note; shown "
                "once")))
            note = ""
        kept.append((target.recommendation.model_copy(update={
            "evidence": evidence, "resolved": sum(1 for e in evidence if e.outcome.is_proof),
            "model_note": note}), target))
        numbers.append(number)
    return kept


def _lower(judged: Verdict, lead: tuple[Recommendation, Ranked], claim: object) -> Confidence:
    """The lower of the tier rule on the model's cited evidence and the memory's own figure."""
    rec, ranked = lead
    proofs = {e.incident_id for e in rec.evidence if e.outcome.is_proof}
    strong = ranked.applies == "strong"
    own = verdict_confidence(
        claim, [i for i in ranked.resolved_strong if i in proofs] if strong else (),
        ranked.failed_strong if strong else (),
        [i for i in ranked.resolved_elsewhere if i in proofs], claim_given=True,
        cited=[e.incident_id for e in rec.evidence], weak=ranked.applies == "weak")
    memory = judged.with_claim(claim)
    return own if own.value <= memory.value else memory
