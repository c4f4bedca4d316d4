"""Verification (issue 10, engine core): audit → questions → probes → synthesis, table-driven
on recalls built straight from incidents (tests/recalls.py) and the deterministic briefing."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from console.engine.briefing.deterministic import deterministic_briefing
from console.engine.briefing.models import Attempt, Briefing, SourceUse
from console.engine.verification.method import (
    NEEDS_ENGINEER,
    Context,
    Question,
    audit,
    probe_engineer,
    probe_memory,
    questions,
    split_claim,
    verify,
)
from store.models import Incident
from store.recall import Recall
from tests.recalls import act, recall_of

NOW = datetime(2026, 12, 1, tzinfo=UTC)
FLUSH = "Flushed the payment-schema cache"
RESTART = "Restarted all checkout pods at once"
DRAIN = "Drained traffic one zone at a time"
HEX64 = re.compile(r"^[0-9a-f]{64}$")


def inc(incident_id: str, *actions: dict[str, Any], service: str = "payments-api",
        started_at: str | None = None, root_cause: str | None = None) -> Incident:
    data: dict[str, Any] = {"id": incident_id, "title": "Payments API errors after deploy",
                            "service": service, "symptoms": "KeyError 'amount' after deploy",
                            "actions": list(actions)}
    if started_at:
        data["started_at"] = started_at
    if root_cause:
        data["root_cause"] = root_cause
    return Incident.model_validate(data)


def flushed(incident_id: str, **kwargs: Any) -> Incident:
    return inc(incident_id, act("A1", FLUSH, "RESOLVED", "Old-shaped entries were gone"),
               root_cause="Stale schema cache after the migration", **kwargs)


def hybrid(recall: Recall) -> Recall:
    """The same recall as if the vector layer had found every incident too."""
    return dataclasses.replace(recall, mode="hybrid", incidents=tuple(
        dataclasses.replace(i, cosine=0.8, bm25=6.0) for i in recall.incidents))


def briefed(recall: Recall, **kwargs: Any) -> Briefing:
    return deterministic_briefing(recall, memory_incidents=len(recall.incidents),
                                  degraded=None, **kwargs)


def run(recall: Recall, answers: dict[str, str] | None = None, briefing: Briefing | None = None,
        service: str | None = "payments-api", coverage: list[SourceUse] | None = None,
        ) -> dict[str, Any]:
    return verify(briefing or briefed(recall), recall, answers, alert_service=service,
                  coverage=coverage, now=NOW)


def by_check(result: dict[str, Any], fragment: str) -> dict[str, Any]:
    found = [q for q in result["questions"] if fragment in q["text"]]
    assert len(found) == 1, (fragment, [q["text"] for q in result["questions"]])
    return found[0]


# Three incidents of the alert's own service, each resolved by the same fix.
PROVEN = hybrid(recall_of(flushed("INC-1"), flushed("INC-2"), flushed("INC-3")))
# The bundled F6 pair (INC-2321 / INC-2324) in small: a fix that resolved a close (strong)
# match, INC-7, and made things worse in a looser (weak) one, INC-8, whose own fix is another.
# The bar sits between their scores (0.90 and 0.89), so the verdict still leads with the fix,
# proven, and names INC-8's failure beside it: only verification can doubt it.
WRONG_DIRECTION = dataclasses.replace(recall_of(
    inc("INC-7", act("A1", RESTART, "RESOLVED", "Pods came back clean"), service="payments-api"),
    inc("INC-8", act("A1", RESTART, "WORSENED", "Every pod reconnected and exhausted the pool"),
        act("A2", DRAIN, "RESOLVED", "No reconnect storm"), service="checkout")), strong=0.895)
# The re-recall of WRONG_DIRECTION without INC-7: INC-8's own record points to another fix.
WITHOUT_INC_7 = dataclasses.replace(WRONG_DIRECTION, incidents=WRONG_DIRECTION.incidents[1:])
# Two incidents behind the fix, lexical recall only.
LEXICAL_TWO = recall_of(flushed("INC-1"), flushed("INC-2"))


# --- splitting -------------------------------------------------------------------------------

@pytest.mark.parametrize(("claim", "expected"), [
    ("did the burst happen and did QPS drop and did it self-heal",
     ["Did the burst happen", "Did QPS drop", "Did it self-heal"]),
    ("Did the burst happen, did QPS drop and did it self-heal?",
     ["Did the burst happen?", "Did QPS drop?", "Did it self-heal?"]),
    ("errors rose; latency dropped", ["Errors rose", "Latency dropped"]),
    ("the pool filled and requests timed out", ["The pool filled", "Requests timed out"]),
    ("read and write latency is high", ["read and write latency is high"]),
    ("Is read and write latency above 2s?", ["Is read and write latency above 2s?"]),
    ("Restart and drain the pods", ["Restart and drain the pods"]),
    # a quote holding a parenthesis, inside a parenthesis: one object (was split at "and")
    ("Does the cause (“A release (amount renamed) and old and new pods shared a cache”) "
     "fit?", ["Does the cause (“A release (amount renamed) and old and new pods shared a "
              "cache”) fit?"]),
    ("Is (a (b) and c) fine and did x drop?", ["Is (a (b) and c) fine?", "Did x drop?"]),
    ("Did INC-1 get resolved by “Raised the pool and drained traffic”?",
     ["Did INC-1 get resolved by “Raised the pool and drained traffic”?"]),
])
def test_split_claim_only_at_clause_boundaries(claim: str, expected: list[str]) -> None:
    assert split_claim(claim) == expected


def test_question_refuses_a_bundled_claim() -> None:
    with pytest.raises(ValueError, match="bundled"):
        Question("thin_evidence", "did the burst happen and did QPS drop", "engineer", "ask")
    Question("thin_evidence", "Is read and write latency above 2s?", "engineer", "ask")


# --- ids -------------------------------------------------------------------------------------

def test_question_id_is_sha256_of_its_content() -> None:
    question = Question("tool_gap", "Is the pool full?", "engineer", "ask")
    expected = hashlib.sha256(b"tool_gap\x1fIs the pool full?\x1fengineer").hexdigest()
    assert question.id == expected[:12]
    assert Question("tool_gap", "Is the pool full?", "memory", "ask").id != question.id
    assert Question("thin_evidence", "Is the pool full?", "engineer", "ask").id != question.id
    assert Question("tool_gap", "Is the queue full?", "engineer", "ask").id != question.id


def test_same_briefing_yields_same_ids_and_other_content_other_ids() -> None:
    first = [q["id"] for q in run(LEXICAL_TWO)["questions"]]
    again = [q["id"] for q in run(recall_of(flushed("INC-1"), flushed("INC-2")))["questions"]]
    other = [q["id"] for q in run(WRONG_DIRECTION)["questions"]]
    assert first == again
    assert len(set(first)) == len(first)
    assert not set(first) & set(other)


# --- audit → questions -----------------------------------------------------------------------

def _briefing_with(recall: Recall, **update: Any) -> Briefing:
    return briefed(recall).model_copy(update=update)


@pytest.mark.parametrize(("name", "recall", "coverage", "update", "category", "probe", "fragment"), [
    ("lexical only → second layer", LEXICAL_TWO, [], {}, "thin_evidence", "memory",
     "found by meaning"),
    ("lexical only → symptoms to the engineer", LEXICAL_TWO, [], {}, "tool_gap", "engineer",
     "match what you see"),
    ("embeddings down", PROVEN,
     [SourceUse(source="embeddings nomic", status="unavailable", detail="connection refused")],
     {}, "tool_gap", "engineer", "match what you see"),
    ("model offline", PROVEN,
     [SourceUse(source="model llama3", status="unavailable", detail="offline")],
     {}, "tool_gap", "engineer", "recorded cause of INC-1"),
    ("alert truncated", PROVEN, [SourceUse(source="alert", status="truncated")],
     {}, "tool_gap", "engineer", "cut-off part of the alert"),
    ("quarantined", PROVEN,
     [SourceUse(source="quarantined records", status="excluded", detail="INC-9")],
     {}, "tool_gap", "engineer", "quarantined records (INC-9)"),
    ("other service", WRONG_DIRECTION, [], {}, "suspicious_direction", "memory",
     "Is the service of INC-7 (payments-api)"),
    ("worsened", WRONG_DIRECTION, [], {}, "suspicious_direction", "memory",
     "free of a recorded WORSENED"),
    ("rejected drafts", PROVEN, [],
     {"attempts": [Attempt(n=1, result="rejected", reason="citation", output_sha256="0" * 64)]},
     "degraded_fallback", "memory", ""),
])
def test_each_doubt_yields_its_questions(name: str, recall: Recall, coverage: list[SourceUse],
                                         update: dict[str, Any], category: str, probe: str,
                                         fragment: str) -> None:
    result = run(recall, briefing=_briefing_with(recall, **update), coverage=coverage)
    if category == "degraded_fallback":
        fallback = [q for q in result["questions"] if q["category"] == "degraded_fallback"]
        assert [(q["probe"], q["result"]) for q in fallback] == [("memory", "confirmed")]
        return
    question = by_check(result, fragment)
    assert (question["category"], question["probe"]) == (category, probe)


@pytest.mark.parametrize("fragment", ["match what you see", "recorded cause", "cut-off part",
                                      "quarantined records", "start within"])
def test_no_doubt_no_extra_question(fragment: str) -> None:
    """A well-supported hybrid briefing with nothing missing asks only the memory baseline."""
    result = run(PROVEN)
    assert not [q for q in result["questions"] if fragment in q["text"]]
    assert {q["category"] for q in result["questions"]} == {"thin_evidence",
                                                           "suspicious_direction"}


def test_stale_evidence_is_asked_and_refuted() -> None:
    recall = hybrid(recall_of(flushed("INC-1", started_at="2020-01-05T10:00:00+00:00"),
                              flushed("INC-2"), flushed("INC-3")))
    result = run(recall)
    question = by_check(result, "start within the last 365 days")
    assert (question["category"], question["result"]) == ("thin_evidence", "refuted")
    # Old evidence is thin, not a wrong direction: it caps the confidence, it does not revise.
    assert result["disposition"] == "maintain"
    assert result["confidence"]["value"] == 60
    assert "the newest evidence over a year old 60" in result["confidence"]["derivation"]


# --- memory probes ---------------------------------------------------------------------------

def _probe(recall: Recall, fragment: str, service: str | None = "payments-api",
           ) -> tuple[str, str, str]:
    briefing = briefed(recall)
    ctx = Context(briefing, recall, service, NOW, [])
    question = next(q for q in questions(ctx, []) if fragment in q.text
                    ) if fragment != "start within" else Question(
        "thin_evidence", "Did the lead incident start within the last 365 days?", "memory",
        "evidence_age", (("incident", ctx.anchor.incident_id if ctx.anchor else ""),
                         ("action", ctx.anchor.action_id if ctx.anchor else ""),
                         ("now", NOW.isoformat())))
    result = probe_memory(question, ctx)
    assert HEX64.match(result.evidence_sha256), result
    assert bool(result.missing) == (result.result == "unknown")
    return result.result, result.missing, result.evidence_sha256


@pytest.mark.parametrize(("name", "recall", "fragment", "service", "expected"), [
    ("second incident resolved", LEXICAL_TWO, "second recalled incident", None, "confirmed"),
    ("second incident only failed", recall_of(
        flushed("INC-1"), inc("INC-2", act("A1", FLUSH, "NO_EFFECT", "Nothing changed"))),
     "second recalled incident", None, "refuted"),
    ("no second incident", recall_of(flushed("INC-1")), "second recalled incident", None,
     "unknown"),
    ("same service", PROVEN, "Is the service", "payments-api", "confirmed"),
    ("other service", PROVEN, "Is the service", "checkout", "refuted"),
    ("no worsened record", PROVEN, "WORSENED", None, "confirmed"),
    ("worsened contradicts", WRONG_DIRECTION, "WORSENED", None, "refuted"),
    ("recent evidence", recall_of(flushed("INC-1", started_at="2026-06-01T00:00:00+00:00")),
     "start within", None, "confirmed"),
    ("stale evidence", recall_of(flushed("INC-1", started_at="2024-06-01T00:00:00")),
     "start within", None, "refuted"),
    ("undated evidence", recall_of(flushed("INC-1")), "start within", None, "unknown"),
    ("second layer found it", PROVEN, "found by meaning", None, "confirmed"),
    ("lexical recall", LEXICAL_TWO, "found by meaning", None, "unknown"),
])
def test_memory_probe(name: str, recall: Recall, fragment: str, service: str | None,
                      expected: str) -> None:
    assert _probe(recall, fragment, service)[0] == expected


def test_memory_probe_evidence_hash_follows_the_evidence() -> None:
    one = _probe(LEXICAL_TWO, "second recalled incident")[2]
    other = recall_of(flushed("INC-1"), inc("INC-2", act("A1", FLUSH, "RESOLVED", "Other why")))
    assert _probe(other, "second recalled incident")[2] != one
    assert _probe(recall_of(flushed("INC-1"), flushed("INC-2")), "second recalled incident")[2] == one


# --- engineer probes -------------------------------------------------------------------------

@pytest.mark.parametrize(("answer", "expected", "missing"), [
    (None, "unknown", NEEDS_ENGINEER),
    ("yes", "confirmed", ""),
    ("no", "refuted", ""),
    ("unknown", "unknown", "the engineer does not know"),
])
def test_engineer_probe(answer: str | None, expected: str, missing: str) -> None:
    question = Question("tool_gap", "Is the pool full?", "engineer", "ask")
    answers = {} if answer is None else {question.id: answer}
    result = probe_engineer(question, answers)
    assert (result.result, result.missing) == (expected, missing)
    assert bool(result.evidence_sha256) == (answer is not None)


def test_engineer_probe_refuses_another_answer() -> None:
    question = Question("tool_gap", "Is the pool full?", "engineer", "ask")
    with pytest.raises(ValueError):
        probe_engineer(question, {question.id: "maybe"})


def _symptom_qid() -> str:
    return by_check(run(LEXICAL_TWO), "match what you see")["id"]


@pytest.mark.parametrize(("answer", "disposition"), [
    (None, "undetermined"), ("unknown", "undetermined"), ("yes", "maintain"), ("no", "revise")])
def test_engineer_answers_change_the_disposition(answer: str | None, disposition: str) -> None:
    answers = {} if answer is None else {_symptom_qid(): answer}
    result = run(LEXICAL_TWO, answers)
    assert result["disposition"] == disposition
    assert by_check(result, "match what you see")["result"] == {
        None: "unknown", "unknown": "unknown", "yes": "confirmed", "no": "refuted"}[answer]


# --- synthesis -------------------------------------------------------------------------------

def test_the_wrong_direction_premise_is_a_proven_lead_with_a_failure_elsewhere() -> None:
    """What the verdict gives for WRONG_DIRECTION: the lead stands, proven; the WORSENED of
    the weak match is named beside it, not a warning — the doubt is verification's to raise."""
    briefing = briefed(WRONG_DIRECTION)
    assert briefing.state == "proven" and briefing.confidence.value == 55
    lead = briefing.recommendations[0]
    assert lead.action == RESTART and lead.applies == "strong"
    assert [e.action_id for e in lead.evidence] == ["INC-7/A1"]
    assert [e.action_id for e in lead.failed_elsewhere] == ["INC-8/A1"]
    assert briefing.warnings == []


def test_a_close_fix_that_made_things_worse_in_a_looser_match_is_overturned() -> None:
    """The alert names no service: the WORSENED record and an independent re-recall without
    INC-7 that leads to INC-8's own fix are two key facts refuted, whatever the engineer says
    of the service."""
    recall = hybrid(WRONG_DIRECTION)  # found by meaning too, as the bundled pair is
    result = verify(briefed(recall), recall, alert_service=None, now=NOW,
                    rerecall=lambda hidden: WITHOUT_INC_7)
    assert result["disposition"] == "overturn"
    assert result["confidence"]["value"] == 30  # one layer (meaning) 50, overturn caps at 30
    refuted = {q["check"] for q in result["questions"] if q["result"] == "refuted" and q["key"]}
    assert refuted == {"no_worsened", "rerecall"}
    assert result["conclusion"].count(" → ") == 2
    assert f"do not apply “{RESTART}” (INC-7/A1)" in result["conclusion"]
    assert f"consider “{DRAIN}” (INC-8/A2 RESOLVED)" in result["conclusion"]
    yes = {q["id"]: "yes" for q in result["questions"] if q["probe"] == "engineer"}
    assert any("Is this alert about payments-api" in q["text"] for q in result["questions"]
               if q["id"] in yes)
    answered = verify(briefed(recall), recall, yes, alert_service=None, now=NOW,
                      rerecall=lambda hidden: WITHOUT_INC_7)
    assert (answered["disposition"], answered["confidence"]["value"]) == ("overturn", 30)


def test_only_one_refuted_direction_is_revise_not_overturn() -> None:
    result = run(PROVEN, service="checkout")
    assert result["disposition"] == "revise"
    assert result["confidence"]["value"] <= 50


def test_well_supported_proven_fix_is_maintained() -> None:
    result = run(PROVEN)
    assert result["disposition"] == "maintain"
    assert all(q["result"] == "confirmed" for q in result["questions"])
    assert result["confidence"]["layers"] == 2
    assert result["confidence"]["value"] == 70
    assert result["conclusion"] == ("Stale schema cache after the migration → KeyError 'amount' "
                                    f"after deploy → apply “{FLUSH}” (INC-1/A1)")
    assert {"disposition", "conclusion", "confidence", "questions", "artifact"} <= set(result)
    assert result["artifact"] is None
    assert set(result["confidence"]) == {"value", "layers", "gaps", "cap", "derivation"}
    assert {"id", "text", "category", "probe", "result", "missing",
            "evidence_sha256"} <= set(result["questions"][0])


def test_restating_old_evidence_never_raises_confidence() -> None:
    """Memory probes only re-read what the briefing read: its own value caps verification."""
    low = briefed(PROVEN).model_copy(update={"confidence": briefed(PROVEN).confidence.model_copy(
        update={"value": 40})})
    result = run(PROVEN, briefing=low)
    assert result["disposition"] == "maintain"
    assert result["confidence"]["value"] == 40
    assert "briefing's own" in result["confidence"]["derivation"]


def test_engineer_confirmation_is_new_evidence_above_the_briefing() -> None:
    briefing = briefed(LEXICAL_TWO)
    low = briefing.model_copy(update={"confidence": briefing.confidence.model_copy(
        update={"value": 40})})
    qid = by_check(run(LEXICAL_TWO, briefing=low), "match what you see")["id"]
    assert run(LEXICAL_TWO, {qid: "yes"}, briefing=low)["confidence"]["value"] == 70


def test_no_lead_fix_is_undetermined_with_no_questions() -> None:
    recall = recall_of(inc("INC-5", act("A1", RESTART, "WORSENED", "Pool exhausted")))
    result = run(recall)
    assert result["disposition"] == "undetermined"
    assert result["questions"] == []


SCENARIOS: list[tuple[Recall, str | None, list[SourceUse]]] = [
    (PROVEN, "payments-api", []),
    (PROVEN, None, []),
    (PROVEN, "checkout", []),
    (LEXICAL_TWO, "payments-api", []),
    (LEXICAL_TWO, None, [SourceUse(source="model m", status="unavailable")]),
    (WRONG_DIRECTION, "checkout", [SourceUse(source="alert", status="truncated")]),
    (recall_of(flushed("INC-1")), "payments-api", []),
    (PROVEN, "payments-api", [SourceUse(source="model m", status="unavailable"),
                              SourceUse(source="alert", status="truncated")]),
]


@pytest.mark.parametrize(("recall", "service", "coverage"), SCENARIOS)
@pytest.mark.parametrize("reply", [None, "yes", "no", "unknown"])
def test_confidence_never_exceeds_its_caps(recall: Recall, service: str | None,
                                           coverage: list[SourceUse], reply: str | None) -> None:
    base = run(recall, service=service, coverage=coverage)
    answers = {} if reply is None else {q["id"]: reply for q in base["questions"]
                                        if q["probe"] == "engineer"}
    result = run(recall, answers, service=service, coverage=coverage)
    conf, asked = result["confidence"], result["questions"]
    unknown = [q for q in asked if q["result"] == "unknown"]
    assert conf["value"] <= conf["cap"]
    assert conf["value"] <= {0: 20, 1: 50, 2: 70, 3: 85}[conf["layers"]]
    assert len(conf["gaps"]) == len(unknown)
    if any(q["category"] == "tool_gap" for q in unknown):
        assert conf["value"] <= 80
    if any(q["category"] == "suspicious_direction" or q["probe"] == "engineer" for q in unknown):
        assert conf["value"] <= 60
    if not any(q["probe"] == "engineer" and q["result"] == "confirmed" for q in asked):
        assert conf["value"] <= briefed(recall).confidence.value
    assert conf["value"] <= {"maintain": 100, "undetermined": 100, "revise": 50,
                             "overturn": 30}[result["disposition"]]
    assert str(conf["value"]) in conf["derivation"]


def test_a_needed_source_not_checked_keeps_three_layers_at_80() -> None:
    coverage = [SourceUse(source="model m", status="unavailable"),
                SourceUse(source="alert", status="truncated")]
    base = run(PROVEN, coverage=coverage)
    cause = by_check(base, "recorded cause")["id"]
    cut = by_check(base, "cut-off part")["id"]
    one = run(PROVEN, {cause: "yes"}, coverage=coverage)["confidence"]
    assert (one["layers"], one["value"]) == (3, 80)
    both = run(PROVEN, {cause: "yes", cut: "yes"}, coverage=coverage)["confidence"]
    assert (both["layers"], both["value"]) == (3, 85)


def test_a_key_question_left_open_is_not_maintained() -> None:
    """Two layers agree, nothing refuted, but the alert names no service: undetermined."""
    result = run(PROVEN, service=None)
    assert result["confidence"]["layers"] == 2
    assert result["disposition"] == "undetermined"
    assert result["confidence"]["value"] <= 60


def test_a_single_layer_is_not_maintained() -> None:
    recall = hybrid(recall_of(flushed("INC-1")))
    result = run(recall)
    assert not [q for q in result["questions"] if q["result"] == "refuted"]
    assert result["confidence"]["layers"] == 1
    assert result["disposition"] == "undetermined"
    assert 40 <= result["confidence"]["value"] <= 60


@pytest.mark.parametrize(("recall", "service", "coverage", "update", "expected"), [
    (PROVEN, "payments-api", [], {}, set()),
    (recall_of(flushed("INC-1")), None, [], {}, {("thin_evidence", "single_incident"),
                                                 ("thin_evidence", "lexical_only")}),
    (hybrid(recall_of(flushed("INC-1", started_at="2020-01-01T00:00:00+00:00"), flushed("INC-2"),
                      flushed("INC-3"))), None, [], {}, {("thin_evidence", "stale")}),
    (PROVEN, "checkout", [], {}, {("suspicious_direction", "other_service")}),
    (hybrid(WRONG_DIRECTION), None, [], {}, {("thin_evidence", "single_incident"),
                                             ("suspicious_direction", "worsened")}),
    (PROVEN, None, [SourceUse(source="embeddings e", status="not_configured"),
                    SourceUse(source="model", status="not_configured"),
                    SourceUse(source="alert", status="truncated"),
                    SourceUse(source="quarantined records", status="excluded", detail="INC-9")],
     {}, {("tool_gap", "embeddings"), ("tool_gap", "model"), ("tool_gap", "alert_truncated"),
          ("tool_gap", "quarantined")}),
    (PROVEN, None, [], {"attempts": [Attempt(n=1, result="rejected", reason="r",
                                             output_sha256="0" * 64)]},
     {("degraded_fallback", "rejected_drafts")}),
])
def test_audit_classifies_each_doubt(recall: Recall, service: str | None,
                                     coverage: list[SourceUse], update: dict[str, Any],
                                     expected: set[tuple[str, str]]) -> None:
    ctx = Context(_briefing_with(recall, **update), recall, service, NOW, coverage)
    assert {(d.category, d.kind) for d in audit(ctx)} == expected


def test_an_alert_naming_no_service_asks_the_engineer_whose_service_it_is() -> None:
    """No memory probe can compare services the alert does not name: the key question goes to
    the one who knows, and their answer decides it."""
    briefing = briefed(WRONG_DIRECTION)
    open_ = run(WRONG_DIRECTION, briefing=briefing, service=None)
    asked = by_check(open_, "Is this alert about payments-api, the service of INC-7?")
    assert asked["probe"] == "engineer" and asked["key"] and asked["result"] == "unknown"
    assert not [q for q in open_["questions"] if q["check"] == "same_service"]
    no = run(WRONG_DIRECTION, {asked["id"]: "no"}, briefing=briefing, service=None)
    assert by_check(no, "Is this alert about")["result"] == "refuted"
    assert no["disposition"] == "overturn"  # with the WORSENED record: two key facts refuted
