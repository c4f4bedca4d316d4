"""The data message a model reads lists the memory's fixes first, lead first, and keeps what did
not help under its own heading (make model-check: a 1.5B model led with whatever came first —
often the first thing tried, which did not help)."""

from __future__ import annotations

import json
import re

from tests.fake_ollama import ChatReply, FakeOllama
from tests.model.conftest import (
    C_ALERT,
    C_FIX,
    C_NO_EFFECT,
    C_WORSENED,
    K_ALERT,
    K_FIXES,
    K_MITIGATED,
    K_NO_EFFECT,
    Brief,
    k_good,
)

FIXES = "FIXES — RESOLVED or MITIGATED"
FAILED = "DID NOT HELP — NO_EFFECT or WORSENED"


def entries(fake: FakeOllama) -> tuple[list[list[str]], list[list[str]]]:
    """The action_ids of each ACTIONS entry under FIXES, and under DID NOT HELP, as sent."""
    data = fake.chat_requests()[0]["messages"][1]["content"]
    assert data.count(FIXES) == 1 and data.count(FAILED) == 1
    fixes, failed = data.split(FIXES, 1)[1].split(FAILED, 1)
    ids = re.compile(r'^\{"action_ids": (\[[^\]]*\])', re.M)
    return ([json.loads(m) for m in ids.findall(fixes)],
            [json.loads(m) for m in ids.findall(failed)])


def test_the_memorys_lead_fix_is_the_first_entry_a_model_reads(model_env: FakeOllama,
                                                               brief: Brief) -> None:
    model_env.default_chat = ChatReply(k_good())
    rc, out = brief(K_ALERT)
    assert rc == 0 and out["source"] == "model"
    fixes, failed = entries(model_env)
    # The fix RESOLVED in all five KeyError incidents leads, ahead of the mitigation (restarted
    # the pods) that recall meets first in INC-1745.
    assert sorted(fixes[0]) == sorted(K_FIXES)
    assert any(K_MITIGATED in entry for entry in fixes[1:])
    assert any(K_NO_EFFECT in entry for entry in failed)
    assert not any(K_NO_EFFECT in entry for entry in fixes)
    # Every recalled record is still there, once.
    sent = [a for entry in fixes + failed for a in entry]
    assert len(sent) == len(set(sent)) == len(out["recalled"])


def test_what_made_things_worse_is_never_listed_among_the_fixes(model_env: FakeOllama,
                                                                 brief: Brief) -> None:
    model_env.default_chat = ChatReply(k_good())
    rc, _ = brief(C_ALERT)
    assert rc == 0
    fixes, failed = entries(model_env)
    assert fixes[0] == [C_FIX]
    flat_failed = {a for entry in failed for a in entry}
    assert {C_WORSENED, *C_NO_EFFECT} <= flat_failed
    assert not {C_WORSENED, *C_NO_EFFECT} & {a for entry in fixes for a in entry}
