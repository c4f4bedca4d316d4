"""The memory's verdict on one alert: state, lead fix, warnings and confidence, decided once.

Every path asks this one function — the deterministic briefing, a model's draft (which may
only lower it), each alert group of a batch, ``triage eval`` and the replays — so the state a
user reads is the same wherever it is computed.

The rules, in order:
1. Each recalled incident applies ``strong`` / ``elsewhere`` / ``weak`` (applicability.py).
2. Recalled actions are grouped into fixes (the same-fix rule: word overlap ≥ 0.6). A fix that
   made things worse in a strong incident or on the alert's own service is never recommended:
   it is one warning, saying where it resolved and where it made things worse.
3. The other fixes are ranked: the strongest class they resolved or mitigated in first, then
   resolved strong incidents less strong incidents where the same fix failed, then mitigations,
   then the applicability of their best incident.
4. PROVEN only when the lead fix RESOLVED at least one strong incident and, failures counted,
   still has a count of at least one. A fix resolved only elsewhere is "proven on X, not yet
   on Y" (unproven, 35–50); a weak match proves nothing (unproven, ≤ 30).
5. NO_EFFECT actions of strong incidents that are not the lead's failures are "tried without
   effect"; WORSENED actions that are no fix anywhere are warnings, labelled with their class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from console.engine.briefing.applicability import MATCH_RANK, Applicability, ServiceRead, applicability
from console.engine.briefing.confidence import verdict_confidence
from console.engine.briefing.fixes import FixGroup, group_fixes
from console.engine.briefing.models import (
    BriefingWarning,
    Confidence,
    Evidence,
    FixHistory,
    Match,
    Recommendation,
    Recurrence,
    RunnerUp,
    State,
    TriedWithoutEffect,
)
from console.engine.briefing.timeline import ClosingFix, fix_history, recurrence
from console.engine.briefing.worsened import warning_for
from store.models import ActionOutcome
from store.recall import Recall, RecalledAction

# Two leads this close in applicability are both shown: the runner-up may be the right one.
RUNNER_UP_GAP = 0.1


@dataclass(frozen=True)
class Ranked:
    """One recommended fix with what ranks it and what the confidence rule counts for it."""

    recommendation: Recommendation
    applies: Match
    resolved_strong: tuple[str, ...]
    failed_strong: tuple[str, ...]
    resolved_elsewhere: tuple[str, ...]
    best: float
    lead_incident: str
    fixes_in_class: int

    @property
    def net(self) -> int:
        """Strong incidents resolved, less strong incidents where the same fix failed."""
        return len(self.resolved_strong) - len(self.failed_strong)

    @property
    def key(self) -> tuple[int, float, float, float]:
        """Strongest class first, then the count that proves it there, then mitigations, then
        how well its best incident matched (the last word, never the first)."""
        count = {"strong": self.net, "elsewhere": len(self.resolved_elsewhere),
                 "weak": self.recommendation.resolved}[self.applies]
        if self.applies == "weak":
            # Nothing proven: the best match leads, not the largest family below it.
            return MATCH_RANK[self.applies], self.best, count, self.fixes_in_class
        return MATCH_RANK[self.applies], count, self.fixes_in_class, self.best


@dataclass(frozen=True)
class Verdict:
    """What the memory alone says about an alert; a model may lower it, never raise it."""

    state: State
    service: ServiceRead
    matches: dict[str, Applicability]
    ranked: list[Ranked]
    warnings: list[BriefingWarning]
    tried_without_effect: list[TriedWithoutEffect]
    confidence: Confidence
    runner_up: RunnerUp | None = None
    conflicts: list[str] = field(default_factory=list)
    recurrence: Recurrence | None = None

    @property
    def recommendations(self) -> list[Recommendation]:
        return [r.recommendation for r in self.ranked]

    @property
    def lead(self) -> Ranked | None:
        return self.ranked[0] if self.ranked else None

    @property
    def lead_match(self) -> Match | None:
        """The class of the lead's incident, else of the best recalled one (None: no recall)."""
        if self.lead is not None:
            return self.lead.applies
        best = max(self.matches.values(), key=lambda a: a.score, default=None)
        return best.match if best else None

    def match_of(self, incident_id: str) -> Match:
        found = self.matches.get(incident_id)
        return found.match if found else "weak"

    def with_claim(self, claim: object) -> Confidence:
        """The confidence with a model's claim: clamped within the memory's own tier."""
        return _confidence(self.lead, self.state, claim, claim_given=True)


def verdict(recall: Recall, service: ServiceRead, now: datetime | None = None) -> Verdict:
    """The memory's verdict on ``recall`` (quarantined actions already removed), as of ``now``
    (the settings' clock; a replay's is the replayed incident's start)."""
    matches = applicability(recall, service)
    if not recall.incidents:
        return Verdict("no_prior_incident", service, matches, [], [], [],
                       _confidence(None, "no_prior_incident", None, claim_given=False))

    def match(action: RecalledAction) -> Match:
        return matches[action.incident_id].match

    def here(action: RecalledAction) -> bool:
        named = service.named
        return match(action) == "strong" or (
            named is not None and action.service.lower() == named.lower())

    ranked: list[Ranked] = []
    warnings: list[BriefingWarning] = []
    counted: set[str] = set()
    conflicts: list[str] = []
    for group in group_fixes(recall.actions):
        best = group.best_per_incident()
        members = list(best.values())
        fixes = [a for a in members if a.outcome.is_fix]
        worse_here = [a for a in group.members
                      if a.outcome is ActionOutcome.WORSENED and here(a)]
        if fixes and worse_here:
            warnings.append(_conflict_warning(worse_here, fixes, match(worse_here[0])))
            counted.update(a.action_id for a in group.members)
            conflicts.append(worse_here[0].action_id)
            continue
        if fixes:
            ranked.append(_ranked(fixes, [a for a in members if a.outcome.is_failure], matches,
                                  now))
            counted.update(a.action_id for a in group.members)
    ranked.sort(key=lambda r: r.key, reverse=True)
    for action in recall.actions:
        if action.outcome is ActionOutcome.WORSENED and action.action_id not in counted:
            warnings.append(_labelled(warning_for(action), match(action)))
    tried = [TriedWithoutEffect(text=a.action, incident_id=a.incident_id, action_id=a.action_id,
                                explanation=a.explanation)
             for a in recall.actions
             if a.outcome is ActionOutcome.NO_EFFECT and match(a) == "strong"
             and a.action_id not in counted]
    lead = ranked[0] if ranked else None
    state: State = "proven" if lead is not None and _proves(lead) else "unproven"
    closing = [ClosingFix(r.recommendation.action, frozenset(r.resolved_strong),
                          tuple((e.incident_id, e.action_id) for e in r.recommendation.evidence
                                if e.incident_id in r.resolved_strong and e.outcome.is_proof))
               for r in ranked if r.resolved_strong]
    recurs = recurrence(recall, {i: a.match for i, a in matches.items()}, closing,
                        lead.lead_incident if lead is not None else None, now)
    return Verdict(state, service, matches, ranked, warnings, tried,
                   _confidence(lead, state, None, claim_given=False),
                   _runner_up(ranked), conflicts, recurs)


def _proves(lead: Ranked) -> bool:
    return lead.applies == "strong" and bool(lead.resolved_strong) and lead.net >= 1


def _ranked(fixes: list[RecalledAction], failures: list[RecalledAction],
            matches: dict[str, Applicability], now: datetime | None) -> Ranked:
    def strength(a: RecalledAction) -> tuple[int, bool, float]:
        found = matches[a.incident_id]
        return MATCH_RANK[found.match], a.outcome.is_proof, found.score

    fixes = sorted(fixes, key=strength, reverse=True)
    applies = matches[fixes[0].incident_id].match
    resolved_strong = tuple(a.incident_id for a in fixes
                            if a.outcome.is_proof and matches[a.incident_id].match == "strong")
    resolved_elsewhere = tuple(a.incident_id for a in fixes if a.outcome.is_proof
                               and matches[a.incident_id].match == "elsewhere")
    strong_failures = [a for a in failures if matches[a.incident_id].match == "strong"]
    other_failures = [a for a in failures if matches[a.incident_id].match != "strong"]
    proven_on = sorted({a.service for a in fixes if a.outcome.is_proof})
    recommendation = Recommendation(
        action=fixes[0].action,
        evidence=[_evidence(a) for a in fixes],
        resolved=sum(1 for a in fixes if a.outcome.is_proof), tried=len(fixes) + len(failures),
        failed_elsewhere=[_evidence(a) for a in other_failures],
        failed_strong=[_evidence(a) for a in strong_failures],
        applies=applies, proven_on=proven_on,
        history=_history(fixes, strong_failures if applies == "strong" else failures, applies,
                         matches, now))
    return Ranked(recommendation, applies, resolved_strong,
                  tuple(a.incident_id for a in strong_failures), resolved_elsewhere,
                  matches[fixes[0].incident_id].score, fixes[0].incident_id,
                  sum(1 for a in fixes if matches[a.incident_id].match == applies))


def _history(fixes: list[RecalledAction], failures: list[RecalledAction], applies: Match,
             matches: dict[str, Applicability], now: datetime | None) -> FixHistory | None:
    """The fix's evidence in its own class, in time order (timeline.fix_history)."""
    resolved = [(a.incident_id, a.started_at) for a in fixes
                if a.outcome.is_proof and matches[a.incident_id].match == applies]
    failed = [(a.incident_id, a.started_at, a.outcome.value) for a in failures]
    return fix_history(resolved, failed, now)


def _evidence(action: RecalledAction) -> Evidence:
    return Evidence(incident_id=action.incident_id, action_id=action.action_id,
                    outcome=action.outcome)


def _labelled(warning: BriefingWarning, match: Match) -> BriefingWarning:
    return warning.model_copy(update={"match": match})


def _conflict_warning(worse_here: list[RecalledAction], fixes: list[RecalledAction],
                      match: Match) -> BriefingWarning:
    """One line for a fix that worked elsewhere and made things worse here."""
    worst = worse_here[0]
    resolved = ", ".join(f"{a.service} ({a.incident_id})" for a in fixes)
    hurt = ", ".join(dict.fromkeys(a.incident_id for a in worse_here))
    verb = "resolved" if any(a.outcome.is_proof for a in fixes) else "helped"
    lead = f"Don't repeat: {worst.action} — {verb} on {resolved}, made things worse here ({hurt})"
    return _labelled(warning_for(worst, lead), match)


def _runner_up(ranked: list[Ranked]) -> RunnerUp | None:
    if len(ranked) < 2:
        return None
    lead, second = ranked[0], ranked[1]
    if (second.applies != lead.applies or second.lead_incident == lead.lead_incident
            or lead.best - second.best > RUNNER_UP_GAP or lead.applies == "weak"):
        return None
    evidence = second.recommendation.evidence[0]
    return RunnerUp(action=second.recommendation.action, incident_id=evidence.incident_id,
                    action_id=evidence.action_id, applies=second.applies)


def _confidence(lead: Ranked | None, state: State, claim: object,
                claim_given: bool) -> Confidence:
    if lead is None:
        return verdict_confidence(claim, (), (), (), claim_given=claim_given,
                                  nothing=state == "no_prior_incident")
    cited = [e.incident_id for e in lead.recommendation.evidence]
    cited += [e.incident_id for e in lead.recommendation.failed_strong]
    cited += [e.incident_id for e in lead.recommendation.failed_elsewhere]
    return verdict_confidence(claim, lead.resolved_strong if lead.applies == "strong" else (),
                              lead.failed_strong if lead.applies == "strong" else (),
                              lead.resolved_elsewhere, claim_given=claim_given,
                              cited=cited, weak=lead.applies == "weak")


__all__ = ["FixGroup", "Ranked", "Verdict", "verdict"]
