"""The verdict's rules, table by table: a broken rule names itself."""

from __future__ import annotations

import dataclasses

import pytest

from console.engine.briefing.applicability import ServiceRead, applicability, read_service
from console.engine.briefing.verdict import verdict
from store.recall import Recall
from tests.recalls import act, incident, recall_of

FIX = "Flushed the payment-schema cache"
HERE = ServiceRead("payments-api", True)


def with_bar(recall: Recall, strong: float, margin: float = float("-inf")) -> Recall:
    return dataclasses.replace(recall, strong=strong, margin=margin)


def resolved(incident_id: str, service: str = "payments-api", action: str = FIX) -> object:
    return incident(incident_id, act("A1", action, "RESOLVED", "it worked"), service=service)


@pytest.mark.parametrize(("services", "service", "state", "low", "high"), [
    (["payments-api"] * 3, HERE, "proven", 94, 94),        # 3 strong → 88 + 2·3
    (["payments-api"] * 2, HERE, "proven", 75, 75),
    (["payments-api"], HERE, "proven", 55, 55),
    (["ledger-api"], HERE, "unproven", 35, 50),             # proven elsewhere only
    (["ledger-api"], ServiceRead(), "proven", 55, 55),      # no service named: no demotion
    (["ledger-api"], ServiceRead("quokka-api", False), "unproven", 35, 50),
])
def test_state_and_figure_follow_where_the_fix_was_proven(
        services: list[str], service: ServiceRead, state: str, low: int, high: int) -> None:
    recall = recall_of(*(resolved(f"INC-{n}", s) for n, s in enumerate(services, 1)))
    judged = verdict(recall, service)
    assert judged.state == state
    assert low <= judged.confidence.value <= high


def test_a_weak_match_proves_nothing() -> None:
    judged = verdict(with_bar(recall_of(resolved("INC-1")), strong=5.0), HERE)
    assert judged.state == "unproven" and judged.confidence.value <= 30
    assert judged.recommendations[0].applies == "weak"


def test_each_strong_failure_of_the_same_fix_lowers_the_count_by_one() -> None:
    failed = incident("INC-9", act("A1", FIX, "NO_EFFECT", "did nothing"))
    judged = verdict(recall_of(resolved("INC-1"), resolved("INC-2"), resolved("INC-3"), failed),
                     HERE)
    assert judged.confidence.tier == "2" and judged.confidence.failed_strong == 1
    assert "− 1 where the same fix failed (INC-9)" in judged.confidence.derivation
    assert judged.tried_without_effect == []  # it is on the fix's own line, not repeated


def test_a_fix_that_made_things_worse_here_is_one_warning_and_never_recommended() -> None:
    worse = incident("INC-8", act("A1", FIX, "WORSENED", "it spread"), service="payments-api")
    elsewhere = resolved("INC-1", "reporting-api")
    recall = recall_of(worse, elsewhere)
    judged = verdict(recall, HERE)
    assert all(r.action != FIX for r in judged.recommendations)
    assert len(judged.warnings) == 1
    assert "made things worse here (INC-8)" in judged.warnings[0].text
    assert "resolved on reporting-api (INC-1)" in judged.warnings[0].text


def test_no_effect_in_a_strong_incident_is_tried_without_effect() -> None:
    tried = incident("INC-4", act("A1", "Rolled back the release", "NO_EFFECT", "same errors"),
                     act("A2", FIX, "RESOLVED", "it worked"))
    judged = verdict(recall_of(tried), HERE)
    assert [t.action_id for t in judged.tried_without_effect] == ["INC-4/A1"]


def test_the_lead_is_the_fix_proven_most_often_among_strong_matches_not_the_top_record() -> None:
    top = incident("INC-1", act("A1", "Restarted the callback workers", "RESOLVED", "ok"),
                   act("A2", FIX, "RESOLVED", "ok"))
    judged = verdict(recall_of(top, resolved("INC-2"), resolved("INC-3")), HERE)
    assert judged.recommendations[0].action == FIX
    assert judged.recommendations[0].resolved == 3


def test_nothing_recalled_is_no_prior_incident() -> None:
    judged = verdict(recall_of(), HERE)
    assert judged.state == "no_prior_incident" and judged.confidence.value == 0


@pytest.mark.parametrize(("text", "label", "named", "known"), [
    ("errors on ledger-api", None, "ledger-api", True),
    ("payments service KeyError after deploy", None, "payments-api", True),  # by its words
    ("quokka-api consumers stalled", None, "quokka-api", False),
    ("consumers stalled (service quokka)", None, "quokka", False),
    ("anything", "Ledger-API", "ledger-api", True),
])
def test_the_alerts_service(text: str, label: str | None, named: str | None,
                            known: bool) -> None:
    read = read_service(text, label, ["ledger-api", "payments-api"])
    assert (read.named, read.known) == (named, known)


def test_a_family_of_recurrences_does_not_compete_with_itself() -> None:
    first = incident("INC-1", act("A1", FIX, "RESOLVED", "ok")).model_copy(
        update={"related": ["INC-2"]})
    second = incident("INC-2", act("A1", FIX, "RESOLVED", "ok")).model_copy(
        update={"related": ["INC-1"]})
    recall = with_bar(recall_of(first, second), strong=0.85, margin=0.5)
    matches = applicability(recall, ServiceRead())
    assert {m.match for m in matches.values()} == {"strong"}
    assert matches["INC-1"].margin == pytest.approx(0.9)  # no other incident: no rival


def test_undeclared_recurrences_resolved_by_the_same_fix_do_not_cancel_out() -> None:
    """Three look-alike incidents nobody linked with ``related``: each one's margin over the
    others is zero, yet they are the same failure, fixed the same way — PROVEN at 94."""
    recall = with_bar(recall_of(resolved("INC-1"), resolved("INC-2"), resolved("INC-3")),
                      strong=0.85, margin=0.5)
    recall = dataclasses.replace(recall, incidents=tuple(
        dataclasses.replace(i, score=0.9) for i in recall.incidents), ranked=())
    judged = verdict(recall, HERE)
    assert {m.match for m in judged.matches.values()} == {"strong"}
    assert judged.state == "proven" and judged.confidence.value == 94


def test_a_shared_action_that_failed_in_one_is_no_family() -> None:
    """The same change resolved one and made the other worse: they compete (the F6 pair)."""
    good = resolved("INC-1", action="Raised the worker concurrency from 8 to 32")
    bad = incident("INC-2", act("A1", "Raised the worker concurrency from 8 to 32", "WORSENED",
                                "memory blew up"))
    recall = with_bar(recall_of(good, bad), strong=0.85, margin=0.5)
    matches = applicability(recall, ServiceRead())
    assert matches["INC-1"].margin == pytest.approx(0.01)
