"""While a (slow, CPU) model drafts, the engineer reads the memory's own briefing; the model's
replaces it only once its draft passed the guards, and a late one for an older alert is dropped.

The real console (Pilot) and the real ollama client against the fake server, whose answer is
held back by a gate until the test has looked at the screen.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.messages import BriefingReady, ProvisionalBriefing
from tests.fake_ollama import ChatReply, FakeOllama

REPO = Path(__file__).resolve().parents[2]
ALERT = "payments-api p99 latency up, intermittent database connection errors"
STORED_FIX = "Raised the connection pool limit on one instance and drained traffic to it gradually"
DRAFT = {
    "summary": "ZEBRA pool exhaustion, as in INC-2041.",
    "recommendations": [{"action": "ZEBRA raise the pool on one instance, drain gradually",
                         "evidence": [{"incident_id": "INC-2041", "action_id": "INC-2041/A4"}]}],
    "warnings": [{"text": "ZEBRA do not restart every pod at once",
                  "incident_id": "INC-2041", "action_id": "INC-2041/A1"}],
    "confidence": 60,
}


def text_of(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


async def test_the_memorys_briefing_is_read_while_the_model_drafts_then_replaced(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    gate = threading.Event()
    fake_ollama.script_chat(ChatReply(json.dumps(DRAFT), gate=gate))
    app = TriageApp(Settings(incidents_path=REPO / "incidents.yaml", data_dir=tmp_path / "data",
                             ollama_host=fake_ollama.host, model="qwen2.5:7b",
                             model_timeout=30.0))
    finals: list[BriefingReady] = []
    early: list[ProvisionalBriefing] = []

    def hook(message: object) -> None:
        if isinstance(message, BriefingReady):
            finals.append(message)
        elif isinstance(message, ProvisionalBriefing):
            early.append(message)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.workers.wait_for_complete()
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        for _ in range(500):  # until the memory's briefing is on screen (bounded)
            if STORED_FIX in text_of(app, "#briefing-body"):
                break
            await pilot.pause(0.02)
        body = text_of(app, "#briefing-body")
        assert early and not finals  # the model has not answered: the gate is closed
        assert STORED_FIX in body and "Don't repeat: Restarted all payments-api" in body
        assert "ZEBRA" not in body and "the model is drafting" in body
        assert "the model is drafting" in text_of(app, "#status-line")
        assert app.screen.check_action("export_briefing", ()) is False  # not the final one
        gate.set()
        for _ in range(500):
            if finals and not any(w.is_running for w in app.workers):
                break
            await pilot.pause(0.02)
        await pilot.pause()
        final = text_of(app, "#briefing-body")
        assert finals[-1].briefing.source == "model"
        assert "ZEBRA raise the pool" in final
        assert "written by model qwen2.5:7b" in text_of(app, "#briefing-status")
        assert "the model is drafting" not in final
        assert app.screen.check_action("export_briefing", ()) is True


async def test_a_provisional_briefing_of_an_older_alert_is_never_shown(
        bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=REPO / "incidents.yaml", data_dir=bundled_data_dir))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = text_of(app, "#briefing-body")
        assert STORED_FIX in shown
        stale = app.state.shown.briefing.model_copy(update={"summary": "STALE DRAFTING"})
        app.post_message(ProvisionalBriefing(stale, app.state.last_request_id - 1))
        app.post_message(ProvisionalBriefing(stale, app.state.last_request_id))  # done already
        await pilot.pause()
        assert "STALE DRAFTING" not in text_of(app, "#briefing-body")
        assert text_of(app, "#briefing-body") == shown
