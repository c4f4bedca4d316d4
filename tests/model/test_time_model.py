"""Time is the memory's, whoever words the briefing: a model's accepted draft shows the same
recurrence line and the same "stopped working" history next to the lead as the deterministic
briefing, and a draft that leaves them out or claims the opposite cannot remove them.

Through the real `triage brief --json` against the fake Ollama server; "now" is the suite's
fixed day (tests/conftest.py, TRIAGE_NOW 2026-12-02T12:00Z).
"""

from __future__ import annotations

import pytest

from tests.fake_ollama import ChatReply, FakeOllama
from tests.model.conftest import (
    K_ALERT,
    K_FIXES,
    Brief,
    assert_invariants,
    draft,
    ev,
    k_good,
    rec,
)

FRAUD = "payments-api charges timing out: the fraud-scoring vendor is degraded, calls hang"
# "Set the vendor timeout to 1.5s and routed calls to their secondary region": RESOLVED
# INC-1712 (2025-08) and INC-1784 (2025-11), NO_EFFECT in the newest, INC-2233 (2026-07-24).
FRAUD_OLD_FIX = ["INC-1712/A4", "INC-1784/A2"]
FRAUD_OLD_TEXT = "Set the vendor timeout to 1.5s and routed calls to their secondary region"


def accepted(out: dict) -> None:
    assert out["source"] == "model", (out["degraded"], out["guard_log"])
    assert out["attempts"][-1]["result"] == "accepted"


def test_a_models_keyerror_briefing_keeps_the_memorys_recurrence_line(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    # The model says nothing about recurrence, and claims the cause is fixed.
    model_env.default_chat = ChatReply(k_good(
        summary="A one-off schema change; the cache flush fixed the cause for good."))
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    accepted(out)
    found = out["recurrence"]
    assert found is not None and found["count"] == 5 and found["same_fix"] is True
    assert found["last_incident_id"] == "INC-2077" and found["days_since_last"] == 237
    assert sorted(found["fix_action_ids"]) == sorted(K_FIXES)
    # The same line the memory alone shows.
    monkeypatch.setenv("TRIAGE_OFFLINE", "1")
    rc, plain = brief(K_ALERT)
    assert rc == 0 and plain["source"] == "deterministic"
    assert plain["recurrence"] == found


def test_a_model_leading_with_the_fix_that_stopped_working_shows_that_it_did(
        model_env: FakeOllama, brief: Brief) -> None:
    model_env.default_chat = ChatReply(draft(
        [rec("Set the vendor timeout to 1.5s and fail over", *[ev(a) for a in FRAUD_OLD_FIX])],
        confidence=90, summary="The timeout and failover always work for this."))
    rc, out = brief(FRAUD)
    assert_invariants(rc, out)
    accepted(out)
    lead = out["recommendations"][0]
    assert lead["action"] == FRAUD_OLD_TEXT
    history = lead["history"]
    assert history["failed_last"] is True and history["failed_incident_id"] == "INC-2233"
    assert "failed on 2026-07-24 in INC-2233" in history["text"]
    # One failure lowered the count once (2 resolved − 1 failed = tier 1), not twice.
    assert out["confidence"]["tier"] == "1" and out["confidence"]["value"] <= 74
