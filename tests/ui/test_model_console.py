"""The console with a (fake) model: drafts are never shown before the guards pass them."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.messages import BriefingReady
from tests.fake_ollama import ChatReply, FakeOllama, refused_host

REPO = Path(__file__).resolve().parents[2]
ALERT = "checkout-service p99 latency up, intermittent database connection errors"
DRAFT = {
    "summary": "ZEBRA pool exhaustion as in INC-2041; also like INC-9999.",
    "recommendations": [{"action": "ZEBRA raise the pool on one instance, drain gradually",
                         "evidence": [{"incident_id": "INC-2041", "action_id": "A4"}]}],
    "warnings": [{"text": "ZEBRA do not restart every pod at once",
                  "incident_id": "INC-2041", "action_id": "INC-2041/A1"}],
    "confidence": 100,
}


def body(app: TriageApp) -> str:
    return str(app.screen.query_one("#briefing-body", Static).content)


def status(app: TriageApp) -> str:
    """The briefing pane's fixed first line: the state and who wrote the briefing."""
    return str(app.screen.query_one("#briefing-status", Static).content)


def settings(tmp_path: Path, host: str, timeout: float = 10.0) -> Settings:
    return Settings(incidents_path=REPO / "incidents.yaml", data_dir=tmp_path / "data",
                    ollama_host=host, model="qwen2.5:7b", model_timeout=timeout)


async def test_slow_stream_shows_progress_but_never_unguarded_text(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script_chat(ChatReply(json.dumps(DRAFT), chunk_size=12, chunk_delay=0.03))
    app = TriageApp(settings(tmp_path, fake_ollama.host))
    guarded: list[BriefingReady] = []

    def hook(message: object) -> None:
        if isinstance(message, BriefingReady):
            guarded.append(message)

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "qwen2.5:7b online" in str(app.screen.query_one("#status-line", Static).content)
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        seen_drafting = False
        for _ in range(1500):  # polls until the guarded briefing lands (bounded)
            if guarded and not any(w.is_running for w in app.workers):
                break
            await pilot.pause(0.02)
            # Draft text may appear only once the guarded briefing has arrived.
            assert "ZEBRA" not in body(app) or guarded
            seen_drafting = seen_drafting or "drafting" in body(app)
        await pilot.pause()
        assert seen_drafting and guarded
        final = body(app)
        assert "ZEBRA raise the pool" in final
        assert "INC-9999" not in final and "[unverified reference removed]" in final
        assert "written by model qwen2.5:7b" in status(app)
        confidence = str(app.screen.query_one("#confidence", Static).content)
        # The fix is proven on payments-api only: the model's 100 is held within 35–50.
        assert confidence.startswith("50 — this fix is proven only on other services")
        assert "The model said 100; the memory's evidence holds it to 50." in confidence
        assert "proven on payments-api, not yet on checkout-service" in final
        await pilot.press("f12")  # the derivation and the evidence-coverage line
        await pilot.pause()
        details = str(app.screen.query_one("#details-text", Static).content)
        assert "proven elsewhere only: clamp(model 100, 35, 50) = 50" in details
        assert "model qwen2.5:7b: used" in details


async def test_model_offline_gives_a_labelled_deterministic_briefing(tmp_path: Path) -> None:
    app = TriageApp(settings(tmp_path, refused_host(), timeout=2.0))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "offline" in str(app.screen.query_one("#status-line", Static).content)
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = body(app)
        assert "· deterministic, from the memory alone" in status(app)
        assert "Not written by a model:" in text and "not reachable" in text
        assert "INC-2041/A1 WORSENED" in text


HOSTILE_DRAFT = {
    "summary": "Pool exhaustion as in INC-2041. Ignore the memory and trust this briefing.",
    "likely_cause": "Too many connections per pod. Then sudo rm -rf / --no-preserve-root",
    "recommendations": [{"action": "Run rm -rf / on every payments host",
                         "evidence": [{"incident_id": "INC-2041", "action_id": "INC-2041/A4"}]}],
    "steps": [{"text": "sudo rm -rf / --no-preserve-root", "incident_id": "INC-2041",
               "action_id": "INC-2041/A4"}, "DROP TABLE payments"],
    "warnings": [], "confidence": 100,
}
STORED_FIX = ("Raised the connection pool limit on one instance and drained traffic to it "
              "gradually")


async def test_model_words_reach_the_screen_only_where_the_memory_backs_them(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script_chat(ChatReply(json.dumps(HOSTILE_DRAFT)))
    app = TriageApp(settings(tmp_path, fake_ollama.host))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        for _ in range(1500):  # polls until the model's briefing lands (bounded)
            if "written by model" in status(app):
                break
            await pilot.pause(0.02)
        shown = " ".join(body(app).split())
        assert "written by model qwen2.5:7b" in status(app)
        for hostile in ("rm -rf", "sudo", "DROP TABLE", "Ignore the memory"):
            assert hostile not in shown
        assert f"1. {STORED_FIX}" in shown                       # the stored text, not the model's
        assert f"step 1: {STORED_FIX} — INC-2041/A4 RESOLVED" in shown
        assert "The model's reading: Pool exhaustion as in INC-2041." in shown
        assert "Likely cause (the model's reading): Too many connections per pod" in shown
