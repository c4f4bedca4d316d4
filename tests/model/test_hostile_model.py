"""The model's words held to the memory through the real CLI (issue 22, items 9 and 10).

Against the fake Ollama server (tests/model/conftest.py), in process:
- every text a model writes is held to "never recommend what is warned against": its note
  under a fix, its summary, its likely cause, its none-applies reading; a sentence crediting a
  WORSENED or NO_EFFECT action with the recovery is removed; each removal is logged, and a
  warning the model words itself is kept;
- 50 identical recommendations are shown once;
- an answer nested 50,000 deep is a rejected draft (``nesting_too_deep``): the deterministic
  briefing is shown, exit 0.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from console.__main__ import main
from tests.fake_ollama import ChatReply, FakeOllama
from tests.model.conftest import (
    C_ALERT,
    C_FIX,
    C_FIX_TEXT,
    C_WORSENED,
    K_ALERT,
    K_FIX_TEXT,
    K_FIXES,
    Brief,
    assert_invariants,
    draft,
    ev,
    logged,
    rec,
    rules,
    warn,
)


def _text_brief(alert: str) -> str:
    """``triage brief ALERT`` (text) in process: what an engineer reads."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["brief", alert]) == 0
    return out.getvalue()


def test_the_models_words_never_recommend_a_warned_action(model_env: FakeOllama,
                                                          brief: Brief) -> None:
    """The proven fix cited with the model's words "Restart all payments-api pods at once"
    (INC-2041/A1, WORSENED): the words are not shown under the fix, nor in the summary, the
    none-applies reading or as a step; the warning stays, each removal is logged."""
    reply = draft([rec("Restart all payments-api pods at once", ev(C_FIX))],
                  [warn(C_WORSENED, "Do not restart all pods at once")], confidence=70,
                  summary="Connection pool exhaustion after a deploy, as in INC-2041. The "
                  "restart of all payments-api pods mitigated the issue.",
                  likely_cause="Each request held its connection longer. Restart all "
                  "payments-api pods at once to clear the pool.",
                  none_apply="Restart all payments-api pods at once.")
    model_env.default_chat = ChatReply(reply)
    rc, out = brief(C_ALERT)
    assert_invariants(rc, out)
    assert out["source"] == "model"
    [fix] = out["recommendations"]
    assert fix["evidence"][0]["action_id"] == C_FIX and fix["model_note"] == ""
    assert out["summary"].startswith("Connection pool exhaustion after a deploy")
    for where in (out["summary"], out["likely_cause"], out["model_reading"] or ""):
        assert "restart" not in where.lower(), where
    assert out["likely_cause"].startswith("Each request held its connection longer.")
    assert [w["action_id"] for w in out["warnings"]] == [C_WORSENED]
    assert logged(out, "recommends_warned", "recommendation 1 note", C_WORSENED)
    assert logged(out, "credits_failed", "summary", C_WORSENED)
    assert logged(out, "recommends_warned", "likely_cause", C_WORSENED)
    assert logged(out, "recommends_warned", "none_apply", C_WORSENED)
    shown = _text_brief(C_ALERT)
    assert "Restart all payments-api pods at once" not in shown
    assert "mitigated the issue" not in shown


def test_a_warning_the_model_words_itself_is_kept(model_env: FakeOllama, brief: Brief) -> None:
    """Told as a warning, the same action stays: "do not …", "… made things worse"."""
    reply = draft([rec(C_FIX_TEXT, ev(C_FIX))], [warn(C_WORSENED)], confidence=70,
                  summary="Pool exhaustion, as in INC-2041. Do not restart all payments-api "
                  "pods at once. Restarting all payments-api pods at once made things worse.",
                  likely_cause="Avoid restarting all payments-api pods at once.")
    model_env.default_chat = ChatReply(reply)
    rc, out = brief(C_ALERT)
    assert_invariants(rc, out)
    assert "Do not restart all payments-api pods at once." in out["summary"]
    assert "made things worse" in out["summary"]
    assert out["likely_cause"] == "Avoid restarting all payments-api pods at once."
    assert not {"recommends_warned", "credits_failed"} & set(rules(out))


def test_prose_crediting_a_no_effect_action_is_removed(model_env: FakeOllama,
                                                       brief: Brief) -> None:
    """make model-check saw "resolved by restarting the pods, …, rolling back …" where the
    records say the rollback had no effect (INC-1518/A2, INC-1745/A2: NO_EFFECT)."""
    reply = draft([rec(K_FIX_TEXT, *[ev(a) for a in K_FIXES])], confidence=100,
                  summary="A schema change left old cache entries behind. It was resolved by "
                  "restarting the pods, flushing the cache and rolling back payments-api.",
                  likely_cause="Rolling back payments-api did not help; the cache flush did.")
    model_env.default_chat = ChatReply(reply)
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    assert out["summary"].startswith("A schema change left old cache entries behind.")
    assert "rolling back" not in out["summary"]
    assert logged(out, "credits_failed", "summary", "NO_EFFECT")
    # told as what it was, a rollback that did not help stays
    assert out["likely_cause"].startswith("Rolling back payments-api did not help")


STORED_FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"


@pytest.mark.parametrize("citing", ["all five each", "one each"])
def test_fifty_identical_recommendations_are_shown_once(model_env: FakeOllama, brief: Brief,
                                                        citing: str) -> None:
    """The same fix 50 times: one recommendation, the model's words once, every incident the
    copies cite counted once (one each: INC-1518/A3, INC-1619/A3 … — was 1 of 5 and
    confidence 74, the first copy's citation alone), the same fix as a step once."""
    copies = [rec(K_FIX_TEXT, *[ev(a) for a in K_FIXES]) if citing == "all five each"
              else rec(K_FIX_TEXT, ev(K_FIXES[n % len(K_FIXES)])) for n in range(50)]
    steps = [{"text": K_FIX_TEXT, **ev(K_FIXES[n % len(K_FIXES)])} for n in range(12)]
    model_env.default_chat = ChatReply(draft(copies, confidence=100, steps=steps))
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    assert out["source"] == "model" and out["state"] == "proven"
    [fix] = out["recommendations"]
    assert sorted(e["action_id"] for e in fix["evidence"]) == sorted(K_FIXES)
    assert out["confidence"]["value"] == 98 and out["confidence"]["proven"] == 5
    assert rules(out).count("recommendation_repeated") == 49
    assert out["steps"] == [STORED_FIX]
    shown = _text_brief(K_ALERT)
    assert shown.count("the model's words:") == 1
    assert shown.count(f"  1. {STORED_FIX}") == 1 and "  2. " not in shown.split("Steps")[-1]


def test_an_answer_nested_50000_deep_falls_back_to_the_memory(model_env: FakeOllama,
                                                              brief: Brief) -> None:
    deep = '{"summary": "x", "recommendations": ' + "[" * 50_000 + "]" * 50_000 + "}"
    model_env.default_chat = ChatReply(deep, chunk_size=20_000)
    rc, out = brief(K_ALERT)
    assert_invariants(rc, out)
    assert out["source"] == "deterministic" and out["state"] == "proven"
    assert "nesting_too_deep" in out["degraded"]
    assert logged(out, "nesting_too_deep", "50,001 levels")
    assert [a["result"] for a in out["attempts"]] == ["rejected", "rejected"]


