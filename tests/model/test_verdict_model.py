"""A model words the memory's verdict; it never raises it.

Through the real `triage brief --json` against the fake Ollama server: whatever a draft
recommends or claims, the state, tier and lead a user reads are at most the memory's own. A
draft may lower the verdict, and ``none_apply`` is the explicit way to say none of it applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fake_ollama import ChatReply, FakeOllama
from tests.model.conftest import (
    K_ALERT,
    K_FIXES,
    K_INCIDENTS,
    Brief,
    assert_invariants,
    cited,
    draft,
    ev,
    k_good,
    logged,
    rec,
    rules,
    warn,
)

QUOKKA = "quokka-queue consumers stalled"
QUOKKA_FIX = "INC-1574/A3"       # resolved INC-1574 (checkout-service): a weak match here
QUOKKA_WORSENED = "INC-1574/A2"
LEDGER = ("statement timeout errors: queries timing out after 30s, canceling statement due to "
          "statement timeout (service ledger-api)")
LEDGER_LEAD = "INC-2318/A2"      # ledger-api's own mitigation
TIMEOUT_RESOLVED_ELSEWHERE = "INC-2305/A2"   # resolved on reporting-api
TIMEOUT_WORSENED_HERE = "INC-2318/A1"        # made things worse on ledger-api
TIMEOUT_RAISE = "Raised the database statement timeout"
ORDERS = "orders-db disk filling up, pg_wal growing, disk-full forecast 100% in 60 minutes"
ORDERS_LEAD = "INC-1729/A4"
ORDERS_OTHER_FIX = "INC-2294/A3"
ORDERS_WORSENED = "INC-1729/A1"  # VACUUM FULL: worded by the model here

K_STORED_FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"

Out = dict[str, Any]


def accepted(out: Out) -> None:
    """The draft was accepted: what is shown is the model's wording of the verdict."""
    assert out["source"] == "model", (out["degraded"], out["guard_log"], out["attempts"])
    assert out["attempts"][-1]["result"] == "accepted"


def memory_verdict(brief: Brief, alert: str, monkeypatch: pytest.MonkeyPatch) -> Out:
    """The same alert without a model: the memory's own verdict, to compare against."""
    monkeypatch.setenv("TRIAGE_OFFLINE", "1")
    rc, out = brief(alert)
    monkeypatch.delenv("TRIAGE_OFFLINE")
    assert rc == 0 and out["source"] == "deterministic", out
    return out


def never_above(out: Out, memory: Out) -> None:
    """State, tier and figure at most the memory's; the lead one of the memory's fixes."""
    order = {"no_prior_incident": 0, "unproven": 1, "proven": 2}
    tiers = ["0", "1", "2", "3+"]
    assert order[out["state"]] <= order[memory["state"]], (out["state"], memory["state"])
    assert tiers.index(out["confidence"]["tier"]) <= tiers.index(memory["confidence"]["tier"])
    assert out["confidence"]["cap"] <= memory["confidence"]["cap"]
    offered = {e["action_id"] for r in memory["recommendations"] for e in r["evidence"]}
    assert set(cited(out)) <= offered, (cited(out), offered)


# --- a weak incident's fix, claimed at 100 ---------------------------------------------------

def test_a_weak_incidents_fix_claimed_at_100_stays_unproven_at_most_30(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_verdict(brief, QUOKKA, monkeypatch)
    assert memory["state"] == "unproven" and memory["recommendations"]
    model_env.default_chat = ChatReply(draft(
        [rec("Acknowledge webhooks immediately and move the slow call to a background job",
             ev(QUOKKA_FIX))], [warn(QUOKKA_WORSENED, "Do not raise the client timeout")],
        confidence=100, summary="Same failure as before; this fix resolved it."))
    rc, out = brief(QUOKKA)
    assert_invariants(rc, out)
    accepted(out)
    assert out["state"] == "unproven"
    assert out["confidence"]["value"] <= 30 and out["confidence"]["tier"] == "0"
    assert out["confidence"]["model_claim"] == 100
    assert logged(out, "confidence_bounded", "100")
    never_above(out, memory)


def test_a_weak_incidents_worsened_action_recommended_at_100_is_not_advice(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_verdict(brief, QUOKKA, monkeypatch)
    model_env.default_chat = ChatReply(draft(
        [rec("Raise the client timeout to 15s", ev(QUOKKA_WORSENED))], confidence=100))
    rc, out = brief(QUOKKA)
    assert_invariants(rc, out)
    assert QUOKKA_WORSENED not in cited(out)
    assert QUOKKA_WORSENED in [w["action_id"] for w in out["warnings"]]
    assert out["state"] == "unproven" and out["confidence"]["value"] <= 30
    never_above(out, memory)


# --- the ledger alert: the timeout raise made things worse here ------------------------------

def _ledger_timeout_checks(out: Out, memory: Out) -> None:
    recalled = {r["action_id"]: r for r in out["recalled"] if r["action_id"]}
    for recommendation in out["recommendations"]:
        assert TIMEOUT_RAISE not in recommendation["action"], recommendation
        for evidence in recommendation["evidence"]:
            assert TIMEOUT_RAISE not in recalled[evidence["action_id"]]["action"], evidence
    about_timeout = [w for w in out["warnings"] if TIMEOUT_RAISE in w["text"]]
    assert len(about_timeout) == 1, [w["text"] for w in out["warnings"]]
    assert "made things worse here (INC-2318)" in about_timeout[0]["text"]
    assert out["state"] != "proven"
    assert out["confidence"]["value"] <= 30
    assert out["recommendations"][0]["evidence"][0]["action_id"] == LEDGER_LEAD
    never_above(out, memory)


def test_a_draft_recommending_the_timeout_raise_resolved_elsewhere_cannot_make_it_advice(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_verdict(brief, LEDGER, monkeypatch)
    model_env.default_chat = ChatReply(draft(
        [rec("Raise the database statement timeout from 30s to 120s",
             ev(TIMEOUT_RESOLVED_ELSEWHERE))],
        confidence=100, summary="Long statements hit the 30s limit; raise it as INC-2305 did."))
    rc, out = brief(LEDGER)
    assert_invariants(rc, out)
    accepted(out)
    assert logged(out, "recommendation_contradicts_memory", TIMEOUT_RESOLVED_ELSEWHERE)
    _ledger_timeout_checks(out, memory)


def test_a_draft_citing_the_worsened_timeout_raise_and_its_elsewhere_proof_is_no_advice(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_verdict(brief, LEDGER, monkeypatch)
    model_env.default_chat = ChatReply(draft(
        [rec("Raise the database statement timeout to 120s",
             ev(TIMEOUT_RESOLVED_ELSEWHERE), ev(TIMEOUT_WORSENED_HERE)),
         rec("Move the reconciliation queries to the read replica", ev(LEDGER_LEAD))],
        confidence=100))
    rc, out = brief(LEDGER)
    assert_invariants(rc, out)
    accepted(out)
    _ledger_timeout_checks(out, memory)
    assert cited(out) == [LEDGER_LEAD]


# --- a draft cannot raise the tier by pooling two fixes --------------------------------------

def test_a_draft_pooling_two_fixes_evidence_cannot_raise_the_tier(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = memory_verdict(brief, ORDERS, monkeypatch)
    assert memory["state"] == "proven" and memory["confidence"]["tier"] == "1"
    model_env.default_chat = ChatReply(draft(
        [rec("Cap WAL kept for slots and let the archiver catch up",
             ev(ORDERS_LEAD), ev(ORDERS_OTHER_FIX))],
        [warn(ORDERS_WORSENED, "Do not rewrite the big tables while the disk fills")],
        confidence=100))
    rc, out = brief(ORDERS)
    assert_invariants(rc, out)
    accepted(out)
    assert out["confidence"]["tier"] == "1" and out["confidence"]["value"] <= 74
    assert out["confidence"]["proven"] == 1
    assert cited(out) == [ORDERS_LEAD]
    assert "evidence_other_fix" in rules(out)
    never_above(out, memory)


# --- a draft cannot lift the figure with a fix the memory ranks lower ---------------------------

# ledger-api's own incident was only mitigated; a recurrence on reporting-api was resolved by
# another fix. The memory's verdict: its own mitigation, unproven, at most 30 — and the
# reporting-api fix, proven elsewhere only, below it.
SMALL_MEMORY = """\
- id: INC-1
  title: Ledger writes stalled behind long-running statements
  service: ledger-api
  symptoms: >-
    ledger-api logged "canceling statement due to statement timeout"; queries timing out
    against the ledger database and posting latency climbing past 5s.
  related: [INC-2]
  actions:
    - id: A1
      action: Moved the reconciliation queries to the read replica
      outcome: MITIGATED
      explanation: With the scan off the primary the row locks went away.
- id: INC-2
  title: Ledger reports stalled behind long-running statements
  service: reporting-api
  symptoms: >-
    reporting-api logged "canceling statement due to statement timeout"; ledger report queries
    timing out against the ledger database and export latency climbing past 5s.
  related: [INC-1]
  actions:
    - id: A1
      action: Added an index on the reconciliation date column
      outcome: RESOLVED
      explanation: The scan became an index lookup and finished in milliseconds.
- id: INC-3
  title: Notification emails stuck in the outbound queue
  service: notifications
  symptoms: Outbound email queue growing, SMTP relay refusing connections.
  actions:
    - id: A1
      action: Failed over to the secondary SMTP relay
      outcome: RESOLVED
      explanation: The secondary relay accepted mail.
- id: INC-4
  title: Orders database disk filling up
  service: orders-db
  symptoms: pg_wal growing, disk-full forecast within the hour.
  actions:
    - id: A1
      action: Dropped the stuck replication slot
      outcome: RESOLVED
      explanation: WAL could be recycled again.
"""
SMALL_ALERT = "ledger-api canceling statement due to statement timeout, queries timing out"


def test_a_draft_leading_with_a_fix_proven_elsewhere_cannot_lift_the_memorys_figure(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    incidents = tmp_path / "small.yaml"
    incidents.write_text(SMALL_MEMORY, encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(incidents))
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(tmp_path / "small-data"))
    memory = memory_verdict(brief, SMALL_ALERT, monkeypatch)
    offered = {r["evidence"][0]["action_id"]: r["applies"] for r in memory["recommendations"]}
    assert offered == {"INC-1/A1": "strong", "INC-2/A1": "elsewhere"}, "the premise"
    assert memory["state"] == "unproven" and memory["confidence"]["cap"] <= 30
    model_env.default_chat = ChatReply(draft(
        [rec("Add an index on the reconciliation date column", ev("INC-2/A1"))],
        confidence=100, summary="The same long statements; the index fixed it before."))
    rc, out = brief(SMALL_ALERT)
    assert_invariants(rc, out)
    accepted(out)
    assert out["state"] == "unproven"
    assert out["confidence"]["value"] <= 30 and out["confidence"]["cap"] <= 30, out["confidence"]
    never_above(out, memory)


def test_a_draft_leading_with_a_strong_fix_that_failed_as_often_as_it_worked_stays_unproven(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """The index fix resolved a ledger-api recurrence (INC-5) and did nothing in INC-1: it
    counts 1 − 1 = 0 here, so a draft leading with it at 100 proves nothing."""
    items = yaml.safe_load(SMALL_MEMORY)
    items[0]["related"] = ["INC-2", "INC-5"]
    items[0]["actions"].append({
        "id": "A2", "action": "Added an index on the reconciliation date column",
        "outcome": "NO_EFFECT", "explanation": "The planner kept the sequential scan."})
    items.append({
        "id": "INC-5", "title": "Ledger writes stalled behind long-running statements again",
        "service": "ledger-api", "related": ["INC-1"],
        "symptoms": 'ledger-api logged "canceling statement due to statement timeout"; queries '
                    "timing out against the ledger database and posting latency past 5s.",
        "actions": [{"id": "A1", "action": "Added an index on the reconciliation date column",
                     "outcome": "RESOLVED", "explanation": "The scan became an index lookup."}]})
    incidents = tmp_path / "recurrence.yaml"
    incidents.write_text(yaml.safe_dump(items, sort_keys=False), encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(incidents))
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(tmp_path / "recurrence-data"))
    memory = memory_verdict(brief, SMALL_ALERT, monkeypatch)
    index_fix = next(r for r in memory["recommendations"]
                     if r["evidence"][0]["action_id"] == "INC-5/A1")
    assert index_fix["applies"] == "strong", "the premise"
    assert [e["action_id"] for e in index_fix["failed_strong"]] == ["INC-1/A2"], "the premise"
    assert memory["state"] == "unproven"
    model_env.default_chat = ChatReply(draft(
        [rec("Add an index on the reconciliation date column", ev("INC-5/A1"))],
        confidence=100, summary="Same failure as INC-5; the index resolved it."))
    rc, out = brief(SMALL_ALERT)
    assert_invariants(rc, out)
    accepted(out)
    assert cited(out)[0] == "INC-5/A1"
    assert out["state"] == "unproven"
    assert out["confidence"]["value"] <= 30
    never_above(out, memory)


# --- the KeyError alert: no recommendation, or none applies -----------------------------------

def test_a_draft_with_no_recommendations_keeps_the_memorys_proven_verdict(
        model_env: FakeOllama, brief: Brief) -> None:
    model_env.default_chat = ChatReply(draft([], confidence=40))
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    accepted(out)
    assert out["state"] == "proven"
    assert "recommendation_missing" in rules(out)
    lead = out["recommendations"][0]
    assert {e["incident_id"] for e in lead["evidence"]} == K_INCIDENTS
    assert sorted(e["action_id"] for e in lead["evidence"]) == sorted(K_FIXES)
    assert out["confidence"]["value"] == 98 and out["confidence"]["proven"] == 5
    assert out["model_reading"] == ""


def test_none_apply_demotes_the_proven_keyerror_verdict(model_env: FakeOllama,
                                                        brief: Brief) -> None:
    model_env.default_chat = ChatReply(k_good(confidence=100))
    rc, plain = brief(K_ALERT)
    assert_invariants(rc, plain)
    assert plain["state"] == "proven" and plain["confidence"]["value"] == 98  # the control

    reading = "the alert is about refunds, the recalled fixes about captures"
    model_env.default_chat = ChatReply(k_good(confidence=100, none_apply=reading))
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    accepted(out)
    assert out["state"] == "unproven"
    assert out["confidence"]["value"] <= 30 and out["confidence"]["cap"] <= 30
    assert out["model_reading"] == reading
    assert logged(out, "model_demoted", "refunds")
    # The memory's evidence is still shown (its stored text) for the engineer to judge.
    assert out["recommendations"][0]["action"] == K_STORED_FIX
    assert plain["model_reading"] == ""
