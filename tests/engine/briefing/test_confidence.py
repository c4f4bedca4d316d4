"""The confidence rule (README "What the state and the figure claim"), branch by branch and boundary
by boundary."""

from __future__ import annotations

import math

import pytest

from console.engine.briefing.confidence import (
    HARD_CAP,
    Cited,
    claim_is_valid,
    compute_confidence,
    model_claim_value,
)


def resolved(n: int) -> list[Cited]:
    """``n`` distinct incidents whose cited action RESOLVED them."""
    return [Cited(f"INC-{100 + i}", "RESOLVED") for i in range(n)]


# (proven, model claim, expected value, expected tier)
RULE = [
    # tier 0: min(model, 30)
    (0, 0, 0, "0"), (0, 15, 15, "0"), (0, 29, 29, "0"), (0, 30, 30, "0"), (0, 31, 30, "0"),
    (0, 100, 30, "0"),
    # tier 1: clamp(model, 55, 74)
    (1, 0, 55, "1"), (1, 54, 55, "1"), (1, 55, 55, "1"), (1, 60, 60, "1"), (1, 74, 74, "1"),
    (1, 75, 74, "1"), (1, 100, 74, "1"),
    # tier 2: clamp(model, 75, 89)
    (2, 0, 75, "2"), (2, 74, 75, "2"), (2, 75, 75, "2"), (2, 80, 80, "2"), (2, 89, 89, "2"),
    (2, 90, 89, "2"), (2, 100, 89, "2"),
    # tier 3+: min(98, max(model, 88 + 2·proven))
    (3, 0, 94, "3+"), (3, 93, 94, "3+"), (3, 94, 94, "3+"), (3, 96, 96, "3+"), (3, 98, 98, "3+"),
    (3, 99, 98, "3+"), (3, 100, 98, "3+"),
    (4, 0, 96, "3+"), (4, 95, 96, "3+"), (4, 97, 97, "3+"), (4, 99, 98, "3+"),
    (5, 0, 98, "3+"), (5, 50, 98, "3+"), (5, 100, 98, "3+"),
    (6, 0, 98, "3+"), (6, 100, 98, "3+"),
    # a float claim is rounded, then the same rule applies
    (2, 80.4, 80, "2"), (1, 73.6, 74, "1"),
]


@pytest.mark.parametrize(("proven", "claim", "value", "tier"), RULE,
                         ids=[f"proven{p}-claim{c}" for p, c, _, _ in RULE])
def test_rule(proven: int, claim: float, value: int, tier: str) -> None:
    confidence = compute_confidence(claim, resolved(proven))
    assert confidence.value == value
    assert confidence.tier == tier
    assert confidence.proven == proven
    assert confidence.model_claim == round(claim)
    assert confidence.derivation.endswith(f"= {value}")
    assert f"tier {tier}" in confidence.derivation


@pytest.mark.parametrize(("proven", "floor", "cap"), [
    (0, 0, 30), (1, 55, 74), (2, 75, 89), (3, 94, 98), (4, 96, 98), (5, 98, 98), (6, 98, 98)])
def test_floor_and_cap_of_each_tier(proven: int, floor: int, cap: int) -> None:
    confidence = compute_confidence(50, resolved(proven))
    assert (confidence.floor, confidence.cap) == (floor, cap)


# Claims that are missing, non-numeric, NaN, infinite or out of range count as 0. With no
# proven fix the result is min(claim, 30), so any claim that leaked through would show.
INVALID_CLAIMS = [None, "95%", "95", "high", math.nan, math.inf, -math.inf, -5, -0.5, 101,
                  1e9, 10**400, True, False, [90], {"value": 90}]


def _claim_id(claim: object) -> str:
    text = repr(claim)
    return text if len(text) < 20 else f"{text[:8]}...({len(text)} digits)"


@pytest.mark.parametrize("claim", INVALID_CLAIMS, ids=_claim_id)
def test_invalid_model_claim_counts_as_zero(claim: object) -> None:
    confidence = compute_confidence(claim, [])
    assert confidence.value == 0
    assert confidence.model_claim == 0


@pytest.mark.parametrize("claim", [None, "high", math.nan, math.inf, 1e9, 10**400, True],
                         ids=_claim_id)
def test_invalid_model_claim_gets_the_floor_when_fixes_are_proven(claim: object) -> None:
    assert compute_confidence(claim, resolved(2)).value == 75
    assert compute_confidence(claim, resolved(3)).value == 94


def test_a_hundred_with_five_proven_is_98() -> None:
    confidence = compute_confidence(100, resolved(5))
    assert confidence.value == 98
    assert confidence.tier == "3+"
    assert "5 of 5" in confidence.explanation


@pytest.mark.parametrize("proven", range(0, 12))
@pytest.mark.parametrize("claim", [0, 50, 97, 98, 99, 100, 1e9, math.inf, None])
def test_98_is_a_hard_cap(proven: int, claim: object) -> None:
    assert compute_confidence(claim, resolved(proven)).value <= HARD_CAP == 98


def test_derivation_names_inputs_branch_and_result() -> None:
    confidence = compute_confidence(80, resolved(2))
    text = confidence.derivation
    assert "proven 2" in text and "INC-100" in text and "INC-101" in text
    assert "tier 2" in text
    assert "80" in text and "75" in text and "89" in text
    assert text.endswith("= 80")


def test_no_model_claim_is_reported_as_none_but_counts_as_zero() -> None:
    confidence = compute_confidence(None, resolved(1), claim_given=False)
    assert confidence.model_claim is None
    assert confidence.value == 55


def test_k_of_n_sentence_counts_failures_among_the_cited() -> None:
    cited = [Cited("INC-1", "RESOLVED"), Cited("INC-2", "RESOLVED"),
             Cited("INC-3", "WORSENED"), Cited("INC-4", "NO_EFFECT"), Cited("INC-5", "MITIGATED")]
    confidence = compute_confidence(0, cited)
    assert confidence.proven == 2
    assert confidence.failed == 2
    assert confidence.value == 75
    assert "2 of 5" in confidence.explanation
    assert "2 of them" in confidence.explanation
    assert "INC-3" in confidence.explanation and "INC-4" in confidence.explanation
    assert "INC-5" not in confidence.explanation  # mitigated is neither proof nor failure


def test_no_failures_means_no_failure_clause() -> None:
    confidence = compute_confidence(0, resolved(3))
    assert confidence.failed == 0
    assert confidence.explanation == "3 of 3 matching incidents were resolved by this action"


def test_each_incident_counts_once_even_when_cited_twice() -> None:
    cited = [Cited("INC-1", "RESOLVED"), Cited("INC-1", "RESOLVED"), Cited("INC-2", "RESOLVED"),
             Cited("INC-2", "RESOLVED"), Cited("INC-3", "WORSENED"), Cited("INC-3", "WORSENED")]
    confidence = compute_confidence(0, cited)
    assert confidence.proven == 2
    assert confidence.failed == 1
    assert confidence.value == 75  # tier 2, not tier 3+ from double counting
    assert "2 of 3" in confidence.explanation
    assert confidence.cited == ["INC-1", "INC-2", "INC-3"]


def test_the_same_incident_cited_five_times_is_one_proven_fix() -> None:
    confidence = compute_confidence(100, [Cited("INC-1", "RESOLVED")] * 5)
    assert confidence.proven == 1
    assert confidence.value == 74


def test_mitigations_alone_prove_nothing() -> None:
    cited = [Cited(f"INC-{i}", "MITIGATED") for i in range(4)]
    confidence = compute_confidence(90, cited)
    assert confidence.proven == 0
    assert confidence.value == 30
    assert "0 of 4" in confidence.explanation


def test_nothing_cited() -> None:
    confidence = compute_confidence(0, [])
    assert confidence.proven == confidence.failed == 0
    assert confidence.value == 0
    assert confidence.cited == []


# The derivation and the sentence are what the confidence panel shows, word for word.
DERIVATIONS = [
    # (claim, cited, derivation)
    (100, resolved(5), "proven 5 (INC-100, INC-101, INC-102, INC-103, INC-104) → tier 3+: "
                       "min(98, max(model 100, 88+2·5=98)) = 98"),
    (0, resolved(3), "proven 3 (INC-100, INC-101, INC-102) → tier 3+: "
                     "min(98, max(model 0, 88+2·3=94)) = 94"),
    (80, resolved(2), "proven 2 (INC-100, INC-101) → tier 2: clamp(model 80, 75, 89) = 80"),
    (99, resolved(1), "proven 1 (INC-100) → tier 1: clamp(model 99, 55, 74) = 74"),
    (50, [], "proven 0 → tier 0: min(model 50, 30) = 30"),
    ("high", [Cited("INC-7", "MITIGATED")], "proven 0 → tier 0: min(model 0, 30) = 0"),
]


@pytest.mark.parametrize(("claim", "cited", "derivation"), DERIVATIONS,
                         ids=[f"tier-{n}" for n in range(len(DERIVATIONS))])
def test_derivation_reads(claim: object, cited: list[Cited], derivation: str) -> None:
    assert compute_confidence(claim, cited).derivation == derivation


SENTENCES = [
    ([], "no recalled incident backs a recommendation"),
    ([Cited("INC-1", "MITIGATED")], "0 of 1 matching incidents were resolved by this action"),
    (resolved(1), "1 of 1 matching incidents were resolved by this action"),
    ([Cited("INC-1", "RESOLVED"), Cited("INC-2", "WORSENED"), Cited("INC-3", "NO_EFFECT")],
     "1 of 3 matching incidents were resolved by this action; it failed (no effect or worse) "
     "in 2 of them: INC-2, INC-3"),
    # resolved there by the cited fix, whatever else was cited from it: not a failure
    ([Cited("INC-1", "RESOLVED"), Cited("INC-1", "WORSENED")],
     "1 of 1 matching incidents were resolved by this action"),
]


@pytest.mark.parametrize(("cited", "sentence"), SENTENCES,
                         ids=[f"sentence-{n}" for n in range(len(SENTENCES))])
def test_k_of_n_sentence_reads(cited: list[Cited], sentence: str) -> None:
    confidence = compute_confidence(0, cited)
    assert confidence.explanation == sentence
    assert confidence.failed == sentence.count("INC-")


VALID_CLAIMS = [(0, True, 0), (100, True, 100), (55.5, True, 56), (54.5, True, 54), (0.0, True, 0),
                (100.0, True, 100), (-0.1, False, 0), (100.1, False, 0), (math.nan, False, 0),
                (True, False, 0), ("50", False, 0), (None, False, 0)]


@pytest.mark.parametrize(("claim", "valid", "value"), VALID_CLAIMS,
                         ids=[f"claim-{n}" for n in range(len(VALID_CLAIMS))])
def test_a_claim_is_a_number_from_0_to_100(claim: object, valid: bool, value: int) -> None:
    assert claim_is_valid(claim) is valid
    assert model_claim_value(claim) == value
