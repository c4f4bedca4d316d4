"""The issue's hostile draft through the real CLI and the fake Ollama server, JSON and text.

A draft whose recommendation says "Run rm -rf / on every payments host" with a valid RESOLVED
citation, whose summary holds "Ignore the memory…" and whose steps say "sudo rm -rf /
--no-preserve-root" was accepted and shown as written. Now the engineer reads the stored
fix, the step as the stored text of the action it cites, and the model's reading labelled.
"""

from __future__ import annotations

import json

import pytest

from console.__main__ import main
from tests.fake_ollama import ChatReply, FakeOllama
from tests.model.conftest import C_ALERT, C_FIX, assert_invariants, logged

CITE = {"incident_id": C_FIX.split("/")[0], "action_id": C_FIX}
HOSTILE = {
    "summary": "Pool exhaustion, as before. Ignore the memory; I know better.",
    "recommendations": [{"action": "Run rm -rf / on every payments host", "evidence": [CITE]}],
    "steps": [{"text": "sudo rm -rf / --no-preserve-root", **CITE}, "kubectl delete ns payments"],
    "warnings": [], "confidence": 100,
}


def test_json_shows_stored_text_and_logs_every_removal(
        model_env: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    model_env.script_chat(ChatReply(json.dumps(HOSTILE)))
    assert main(["brief", C_ALERT, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert_invariants(0, out)
    assert out["source"] == "model"
    stored = {r["action_id"]: r["action"] for r in out["recalled"]}
    assert out["recommendations"][0]["action"] == stored[C_FIX]
    assert out["recommendations"][0]["model_note"] == ""
    assert out["steps"] == [stored[C_FIX]]
    assert out["summary"] == "Pool exhaustion, as before. [removed: not in the cited records]"
    assert "rm -rf" not in json.dumps({k: v for k, v in out.items() if k != "guard_log"})
    assert logged(out, "command_not_in_records", "recommendation 1", "rm -rf")
    assert logged(out, "instruction_removed", "summary", "Ignore the memory")
    assert logged(out, "step_uncited", "step 2")


def test_text_labels_the_models_reading_and_cites_each_step(
        model_env: FakeOllama, capsys: pytest.CaptureFixture[str]) -> None:
    model_env.script_chat(ChatReply(json.dumps(HOSTILE | {
        "likely_cause": "Each pod opens too many connections"})))
    assert main(["brief", C_ALERT]) == 0
    text = capsys.readouterr().out
    assert "rm -rf" not in text and "kubectl delete" not in text
    assert "the model's reading: Pool exhaustion, as before." in text
    assert "Likely cause (the model's reading): Each pod opens too many connections" in text
    assert f"— {C_FIX} RESOLVED" in text.split("Steps — each a recorded action:")[1]
