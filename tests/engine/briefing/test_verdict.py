"""The verdict's rules, table by table: what proves a fix, what only suggests one, what warns.

Each row builds a recall straight from incidents (tests/recalls.py) and sets how each recalled
incident applies to the alert by its applicability figure and service:

- ``STRONG`` clears the strong bar; on the alert's own service (or when the alert names none)
  the incident is the same failure (strong); on another service it is "elsewhere";
- ``WEAK`` is recalled above the floor but below the bar: similar, not proof.

The margin weight is 0 in these tables, so an incident's applicability is its fused score and
its class is set by the score alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from console.engine.briefing.applicability import ServiceRead
from console.engine.briefing.fixes import SAME_FIX_OVERLAP, overlap
from console.engine.briefing.verdict import Verdict, verdict
from store.models import Incident
from store.recall import Recall
from store.terms import terms
from tests.recalls import act, incident, recall_of

BAR = 0.8
STRONG = 0.9
WEAK = 0.6

HERE = "payments-api"
OTHER = "reporting-api"
ALERT_HERE = ServiceRead(HERE, True)   # the alert names payments-api, which memory knows
NO_SERVICE = ServiceRead()             # the alert names no service

FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"
OTHER_FIX = "Rolled the feature flag for the new checkout flow back to off"
THIRD_FIX = "Scaled the payments-api deployment from 6 to 12 replicas"
RESTART = "Restarted all payments-api pods at once"


def recall(*rows: tuple[Incident, float], strong: float = BAR,
           margin: float = float("-inf")) -> Recall:
    """A recall of ``rows`` (incident, applicability), best first as given."""
    base = recall_of(*[item for item, _ in rows])
    incidents = tuple(dataclasses.replace(recalled, score=score)
                      for recalled, (_, score) in zip(base.incidents, rows, strict=True))
    return dataclasses.replace(base, incidents=incidents, strong=strong,
                               margin=margin)


def inc(number: int, *actions: dict[str, Any], service: str = HERE) -> Incident:
    return incident(f"INC-{number}", *actions, service=service)


def fixed(number: int, text: str = FIX, outcome: str = "RESOLVED", service: str = HERE,
          ) -> Incident:
    """An incident whose one action was ``text`` with ``outcome``."""
    return inc(number, act("A1", text, outcome, f"{outcome.lower()} in INC-{number}"),
               service=service)


def lead_ids(judged: Verdict) -> list[str]:
    assert judged.lead is not None, "no lead fix"
    return [e.action_id for e in judged.lead.recommendation.evidence]


def recommended_ids(judged: Verdict) -> set[str]:
    return {e.action_id for r in judged.recommendations for e in r.evidence}


def texts_by_id(recalled: Recall) -> dict[str, str]:
    return {a.action_id: a.action for a in recalled.actions}


# --- 1. PROVEN needs a RESOLVED lead in a strong incident -----------------------------------

PROVEN_TABLE = [
    # (id, recall, service, expected state, confidence bounds)
    ("resolved-strong", recall((fixed(1), STRONG)), ALERT_HERE, "proven", (55, 55)),
    ("resolved-strong-no-service", recall((fixed(1), STRONG)), NO_SERVICE, "proven", (55, 55)),
    ("mitigated-strong-only", recall((fixed(1, outcome="MITIGATED"), STRONG)), ALERT_HERE,
     "unproven", (0, 30)),
    ("resolved-weak", recall((fixed(1), WEAK)), ALERT_HERE, "unproven", (0, 30)),
    ("resolved-elsewhere", recall((fixed(1, service=OTHER), STRONG)), ALERT_HERE,
     "unproven", (35, 50)),
    # mitigated here, resolved elsewhere: the fix applies strongly but is proven nowhere here
    ("mitigated-strong-resolved-elsewhere",
     recall((fixed(1, outcome="MITIGATED"), STRONG), (fixed(2, service=OTHER), STRONG)),
     ALERT_HERE, "unproven", (35, 50)),
]


@pytest.mark.parametrize(("recalled", "service", "state", "bounds"),
                         [row[1:] for row in PROVEN_TABLE], ids=[row[0] for row in PROVEN_TABLE])
def test_proven_needs_a_resolved_lead_in_a_strong_incident(
        recalled: Recall, service: ServiceRead, state: str, bounds: tuple[int, int]) -> None:
    judged = verdict(recalled, service)
    assert judged.state == state
    low, high = bounds
    assert low <= judged.confidence.value <= high, judged.confidence
    # A model's claim moves the figure inside the tier (1: 55–74), never across the state's.
    claimed_high = 74 if state == "proven" else high
    for claim in (0, 100):
        assert low <= judged.with_claim(claim).value <= claimed_high
    if state == "proven":
        assert judged.lead is not None and judged.lead.applies == "strong"
        assert judged.lead.resolved_strong
        assert judged.confidence.value >= 55
    else:
        assert judged.confidence.value < 55 and judged.with_claim(100).value < 55


def test_proven_elsewhere_only_is_unproven_between_35_and_50_and_says_so() -> None:
    recalled = recall((fixed(1, service=OTHER), STRONG), (fixed(2, service=OTHER), STRONG),
                      (fixed(3, service=OTHER), STRONG))
    judged = verdict(recalled, ALERT_HERE)
    assert judged.state == "unproven"
    assert 35 <= judged.confidence.value <= 50
    assert 35 <= judged.with_claim(0).value <= judged.with_claim(100).value <= 50
    assert {a.match for a in judged.matches.values()} == {"elsewhere"}
    assert "proven on other services only" in judged.confidence.explanation
    assert "not yet proven for this alert" in judged.confidence.explanation
    assert judged.confidence.proven == 0
    assert judged.confidence.proven_elsewhere == 3
    lead = judged.recommendations[0]
    assert lead.applies == "elsewhere"
    assert lead.proven_on == [OTHER]
    assert judged.lead_match == "elsewhere"


def test_weak_only_is_unproven_at_most_30() -> None:
    recalled = recall((fixed(1), WEAK), (fixed(2), WEAK), (fixed(3), WEAK), (fixed(4), WEAK))
    judged = verdict(recalled, ALERT_HERE)
    assert judged.state == "unproven"
    assert judged.confidence.value <= 30 and judged.with_claim(100).value <= 30
    assert judged.confidence.proven == 0 and judged.confidence.tier == "0"
    assert "only similar" in judged.confidence.explanation
    assert judged.recommendations[0].applies == "weak"


# --- 2. each strong failure of the same fix lowers the count by one -------------------------

@pytest.mark.parametrize(("failures", "tier", "value", "state"), [
    (0, "3+", 94, "proven"), (1, "2", 75, "proven"), (2, "1", 55, "proven"),
    (3, "0", 0, "unproven")])
def test_each_strong_failure_lowers_the_count_by_one(failures: int, tier: str, value: int,
                                                     state: str) -> None:
    resolved = [(fixed(n), STRONG) for n in (1, 2, 3)]
    failed = [(fixed(n, outcome="NO_EFFECT"), STRONG) for n in range(4, 4 + failures)]
    judged = verdict(recall(*resolved, *failed), ALERT_HERE)
    confidence = judged.confidence
    assert judged.state == state
    assert (confidence.tier, confidence.value) == (tier, value), confidence.derivation
    assert confidence.failed_strong == failures
    assert confidence.proven == 3
    count = 3 - failures
    if failures:
        failed_ids = ", ".join(f"INC-{n}" for n in range(4, 4 + failures))
        assert f"− {failures} where the same fix failed ({failed_ids})" in confidence.derivation
        assert f"failed in {failures}" in confidence.explanation
        assert {e.incident_id for e in judged.recommendations[0].failed_strong} == {
            f"INC-{n}" for n in range(4, 4 + failures)}
    else:
        assert "failed" not in confidence.derivation
    assert f"= {count} → tier {tier}" in confidence.derivation


def test_a_failure_in_a_weak_incident_does_not_lower_the_count() -> None:
    judged = verdict(recall((fixed(1), STRONG), (fixed(2), STRONG),
                            (fixed(3, outcome="NO_EFFECT"), WEAK)), ALERT_HERE)
    assert judged.state == "proven"
    assert (judged.confidence.tier, judged.confidence.failed_strong) == ("2", 0)
    assert [e.action_id for e in judged.recommendations[0].failed_elsewhere] == ["INC-3/A1"]


# --- 3. a fix that made things worse here is one warning, never a recommendation -----------

WORSE_HERE_TABLE = [
    # (id, recall, service, the worsened action ids, where it resolved)
    ("worsened-in-a-strong-incident",
     recall((fixed(1), STRONG), (fixed(2), STRONG), (fixed(3, outcome="WORSENED"), STRONG),
            (fixed(4, OTHER_FIX), STRONG)),
     NO_SERVICE, ["INC-3/A1"], "resolved on payments-api (INC-1), payments-api (INC-2)"),
    # the ledger case: resolved on another service, made things worse (weakly matched) on the
    # alert's own service
    ("worsened-on-the-alerts-service",
     recall((fixed(1, service=OTHER), STRONG), (fixed(2, outcome="WORSENED"), WEAK),
            (fixed(3, OTHER_FIX), STRONG)),
     ALERT_HERE, ["INC-2/A1"], "resolved on reporting-api (INC-1)"),
    ("worsened-in-two-strong-incidents",
     recall((fixed(1, outcome="WORSENED"), STRONG), (fixed(2), STRONG),
            (fixed(3, outcome="WORSENED"), STRONG), (fixed(4, OTHER_FIX), STRONG)),
     ALERT_HERE, ["INC-1/A1", "INC-3/A1"], "resolved on payments-api (INC-2)"),
]


@pytest.mark.parametrize(("recalled", "service", "worsened", "resolved_on"),
                         [row[1:] for row in WORSE_HERE_TABLE],
                         ids=[row[0] for row in WORSE_HERE_TABLE])
def test_a_fix_that_made_things_worse_here_is_one_warning_never_a_recommendation(
        recalled: Recall, service: ServiceRead, worsened: list[str], resolved_on: str) -> None:
    judged = verdict(recalled, service)
    texts = texts_by_id(recalled)
    assert all(r.action != FIX for r in judged.recommendations), judged.recommendations
    assert not recommended_ids(judged) & {a for a, t in texts.items() if t == FIX}
    worse_here = [w for w in judged.warnings if "made things worse here" in w.text]
    assert len(worse_here) == 1, [w.text for w in judged.warnings]
    assert len([w for w in judged.warnings if FIX in w.text]) == 1
    warning = worse_here[0]
    assert warning.action_id == worsened[0]
    assert resolved_on in warning.text
    assert f"made things worse here ({', '.join(i.split('/')[0] for i in worsened)})" in warning.text
    # The other fix is still what the memory offers.
    assert judged.recommendations[0].action == OTHER_FIX


def test_a_fix_that_made_things_worse_only_elsewhere_is_still_recommended() -> None:
    """The control of the rule above: WORSENED weakly, on another service, is not "here"."""
    recalled = recall((fixed(1), STRONG), (fixed(2), STRONG),
                      (fixed(3, outcome="WORSENED", service=OTHER), WEAK))
    judged = verdict(recalled, ALERT_HERE)
    assert judged.state == "proven"
    assert judged.recommendations[0].action == FIX
    assert [e.action_id for e in judged.recommendations[0].failed_elsewhere] == ["INC-3/A1"]
    assert not any("made things worse here" in w.text for w in judged.warnings)


# Memories in which a fix and its near-rewordings resolved or made things worse; whatever the
# order the recall returns them in, nothing recommended may be the same fix as a warning.
POOL_ONE = "Raised the connection pool limit on one instance"
POOL_ALL = "Raised the connection pool limit on every instance at once"
POOL_ALL_SHORT = "Raised the pool limit on every instance at once"

SAME_FIX_TABLE = [
    ("restart-worsened-strong",
     recall((inc(1, act("A1", RESTART, "WORSENED", "stampede"),
                 act("A2", FIX, "RESOLVED", "gone")), STRONG),
            (inc(2, act("A1", RESTART, "RESOLVED", "came back")), STRONG)), ALERT_HERE),
    ("fix-worsened-on-own-service-weak",
     recall((fixed(1, service=OTHER), STRONG), (fixed(2, outcome="WORSENED"), WEAK)),
     ALERT_HERE),
    ("reworded-fix-recalled-worsened-first",
     recall((fixed(1, POOL_ALL_SHORT, "WORSENED"), STRONG), (fixed(2, POOL_ONE), STRONG),
            (fixed(3, POOL_ALL), STRONG)), ALERT_HERE),
    ("reworded-fix-recalled-resolved-first",
     recall((fixed(1, POOL_ONE), STRONG), (fixed(2, POOL_ALL_SHORT, "WORSENED"), STRONG),
            (fixed(3, POOL_ALL), STRONG)), ALERT_HERE),
]


def test_the_reworded_pool_fixes_are_the_same_fix_by_the_rule() -> None:
    """The premise of the last two rows: the WORSENED wording and the resolved 'every
    instance' wording are the same fix by the same-fix rule."""
    assert overlap(set(terms(POOL_ALL)), set(terms(POOL_ALL_SHORT))) >= SAME_FIX_OVERLAP


@pytest.mark.parametrize(("recalled", "service"), [row[1:] for row in SAME_FIX_TABLE],
                         ids=[row[0] for row in SAME_FIX_TABLE])
def test_no_recommendation_is_the_same_fix_as_a_warning(recalled: Recall,
                                                        service: ServiceRead) -> None:
    judged = verdict(recalled, service)
    texts = texts_by_id(recalled)
    assert judged.warnings, "every row recalls a WORSENED action"
    for recommendation in judged.recommendations:
        for evidence in recommendation.evidence:
            for warning in judged.warnings:
                shared = overlap(set(terms(texts[evidence.action_id])),
                                 set(terms(texts[warning.action_id])))
                assert shared < SAME_FIX_OVERLAP, (
                    f"{evidence.action_id} ({texts[evidence.action_id]!r}) is recommended and is "
                    f"the same fix ({shared:.2f}) as warned {warning.action_id} "
                    f"({texts[warning.action_id]!r})")


# --- 4. tried without effect ------------------------------------------------------------------

def test_no_effect_actions_of_strong_incidents_are_tried_without_effect() -> None:
    recalled = recall(
        (inc(1, act("A1", "Rolled back payments-api to the previous release", "NO_EFFECT",
                    "The cache still held new-shaped entries"),
             act("A2", FIX, "RESOLVED", "Old entries gone")), STRONG),
        (inc(2, act("A1", "Paused the rolling deploy at 50%", "NO_EFFECT",
                    "Old pods still read the new entries"),
             act("A2", FIX, "RESOLVED", "Old entries gone")), STRONG),
        (inc(3, act("A1", "Drained the renewal queue by hand", "NO_EFFECT", "Refilled at once"),
             act("A2", OTHER_FIX, "RESOLVED", "Flag off")), WEAK))
    judged = verdict(recalled, ALERT_HERE)
    tried = {t.action_id: t for t in judged.tried_without_effect}
    assert set(tried) == {"INC-1/A1", "INC-2/A1"}  # the weak incident's is not shown as tried
    assert tried["INC-1/A1"].text == "Rolled back payments-api to the previous release"
    assert tried["INC-1/A1"].incident_id == "INC-1"
    assert tried["INC-1/A1"].explanation == "The cache still held new-shaped entries"
    assert not {t.action_id for t in judged.tried_without_effect} & recommended_ids(judged)


# --- 5. lead ordering ---------------------------------------------------------------------

def test_a_fix_proven_in_the_strong_class_leads_a_fix_proven_more_often_elsewhere() -> None:
    recalled = recall((fixed(1, OTHER_FIX, service=OTHER), 0.99),
                      (fixed(2, OTHER_FIX, service=OTHER), 0.98),
                      (fixed(3, OTHER_FIX, service=OTHER), 0.97), (fixed(4), 0.85))
    judged = verdict(recalled, ALERT_HERE)
    assert lead_ids(judged) == ["INC-4/A1"]
    assert judged.lead is not None and judged.lead.applies == "strong"
    assert judged.state == "proven"
    assert [r.action for r in judged.recommendations] == [FIX, OTHER_FIX]


def test_a_fix_resolved_in_three_strong_incidents_leads_one_resolved_in_the_top_incident_once(
        ) -> None:
    recalled = recall((fixed(1, OTHER_FIX), 0.99), (fixed(2), 0.9), (fixed(3), 0.89),
                      (fixed(4), 0.88))
    judged = verdict(recalled, ALERT_HERE)
    assert sorted(lead_ids(judged)) == ["INC-2/A1", "INC-3/A1", "INC-4/A1"]
    assert judged.state == "proven"
    assert (judged.confidence.tier, judged.confidence.value) == ("3+", 94)
    assert judged.recommendations[1].action == OTHER_FIX


def test_the_net_count_after_strong_failures_orders_the_leads() -> None:
    # OTHER_FIX: resolved 3, failed 2 (net 1); FIX: resolved 2 (net 2).
    recalled = recall(*[(fixed(n, OTHER_FIX), 0.99 - n / 100) for n in (1, 2, 3)],
                      *[(fixed(n, OTHER_FIX, "NO_EFFECT"), 0.99 - n / 100) for n in (4, 5)],
                      (fixed(6), 0.85), (fixed(7), 0.84))
    judged = verdict(recalled, ALERT_HERE)
    assert sorted(lead_ids(judged)) == ["INC-6/A1", "INC-7/A1"]
    assert judged.confidence.tier == "2"
    assert judged.recommendations[1].action == OTHER_FIX
    assert len(judged.recommendations[1].failed_strong) == 2


# --- 6. runner-up -------------------------------------------------------------------------

def test_runner_up_when_two_leads_are_close() -> None:
    judged = verdict(recall((fixed(1), 0.9), (fixed(2, OTHER_FIX), 0.85)), ALERT_HERE)
    assert judged.runner_up is not None
    assert (judged.runner_up.action, judged.runner_up.incident_id, judged.runner_up.action_id,
            judged.runner_up.applies) == (OTHER_FIX, "INC-2", "INC-2/A1", "strong")
    assert lead_ids(judged) == ["INC-1/A1"]


@pytest.mark.parametrize(("second", "bar"), [(0.7, 0.5), (0.82, 0.95)],
                         ids=["far-apart", "both-weak"])
def test_no_runner_up_when_the_leads_are_far_apart_or_weak(second: float, bar: float) -> None:
    judged = verdict(recall((fixed(1), 0.9), (fixed(2, OTHER_FIX), second), strong=bar),
                     ALERT_HERE)
    assert len(judged.recommendations) == 2
    assert judged.runner_up is None


# --- 7. nothing recalled ----------------------------------------------------------------------

def test_no_recall_is_no_prior_incident() -> None:
    judged = verdict(recall_of(), ALERT_HERE)
    assert judged.state == "no_prior_incident"
    assert judged.recommendations == [] and judged.warnings == []
    assert judged.tried_without_effect == [] and judged.runner_up is None
    assert judged.confidence.value == 0 and judged.with_claim(100).value <= 30
    assert "no prior incident" in judged.confidence.explanation
    assert judged.lead_match is None
