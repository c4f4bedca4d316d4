"""A hung server and a slow model are different faults: a stall (no byte for
TRIAGE_MODEL_STALL seconds) ends the attempt at once; a model that keeps streaming, slowly, is
given its whole attempt (TRIAGE_MODEL_TIMEOUT) within the draft's budget (TRIAGE_MODEL_BUDGET).

Through the real `triage brief --json` against the fake Ollama server.
"""

from __future__ import annotations

import time

import pytest

from console.engine.config import Settings
from console.engine.model.client import MAX_OUTPUT_TOKENS
from tests.fake_ollama import ChatReply, FakeOllama, Fault
from tests.model.conftest import C_ALERT, Brief, c_good


def test_a_hung_server_ends_the_attempt_after_the_stall_not_the_timeout(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_MODEL_TIMEOUT", "30")
    monkeypatch.setenv("TRIAGE_MODEL_STALL", "1")
    model_env.default_chat = ChatReply(fault=Fault.HANG)
    started = time.monotonic()
    rc, out = brief(C_ALERT)
    elapsed = time.monotonic() - started
    assert rc == 0 and out["source"] == "deterministic"
    assert "timed out after 1s without a token — the server looks hung" in out["degraded"]
    assert "TRIAGE_MODEL_STALL" in out["degraded"]
    assert elapsed < 10  # not the 30 s attempt, nor the 60 s budget
    assert out["state"] == "proven" and out["recommendations"]  # the memory's own briefing


def test_a_slow_model_that_keeps_streaming_is_not_a_stall(
        model_env: FakeOllama, brief: Brief, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_MODEL_TIMEOUT", "20")
    monkeypatch.setenv("TRIAGE_MODEL_STALL", "1")
    content = c_good()
    # Each chunk within the stall, the whole answer well past it (> 2 s).
    model_env.default_chat = ChatReply(content, chunk_size=max(1, len(content) // 8),
                                       chunk_delay=0.3)
    rc, out = brief(C_ALERT)
    assert rc == 0 and out["source"] == "model", (out.get("degraded"), out.get("attempts"))
    assert out["attempts"][-1]["result"] == "accepted"


def test_the_budget_covers_every_attempt(model_env: FakeOllama, brief: Brief,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_MODEL_TIMEOUT", "20")
    monkeypatch.setenv("TRIAGE_MODEL_BUDGET", "1.5")
    content = c_good()
    model_env.default_chat = ChatReply(content, chunk_size=max(1, len(content) // 20),
                                       chunk_delay=0.2)
    started = time.monotonic()
    rc, out = brief(C_ALERT)
    assert rc == 0 and out["source"] == "deterministic"
    assert time.monotonic() - started < 10
    assert "too slow" in out["degraded"] or "budget" in out["degraded"], out["degraded"]


def test_stall_and_budget_default_from_the_timeout_and_refuse_nonsense() -> None:
    plain = Settings.from_env({"TRIAGE_MODEL_TIMEOUT": "45"})
    assert (plain.stall_seconds, plain.budget_seconds) == (45.0, 90.0)
    cpu = Settings.from_env({"TRIAGE_MODEL_TIMEOUT": "300", "TRIAGE_MODEL_STALL": "120",
                             "TRIAGE_MODEL_BUDGET": "600"})
    assert (cpu.model_timeout, cpu.stall_seconds, cpu.budget_seconds) == (300.0, 120.0, 600.0)
    for bad in ("soon", "0", "-5", "nan", "inf"):
        with pytest.raises(ValueError, match="TRIAGE_MODEL_STALL=.* is not a number of seconds"):
            Settings.from_env({"TRIAGE_MODEL_STALL": bad})


def test_a_draft_is_capped_in_tokens_so_a_rambling_model_cannot_eat_the_attempt(
        model_env: FakeOllama, brief: Brief) -> None:
    model_env.default_chat = ChatReply(c_good())
    rc, out = brief(C_ALERT)
    assert rc == 0 and out["source"] == "model"
    (request,) = model_env.chat_requests()
    assert request["options"]["num_predict"] == MAX_OUTPUT_TOKENS
    assert 400 < MAX_OUTPUT_TOKENS <= 1000  # above a measured draft (≤ 472), well under 2,780
