"""F6 with a model configured: the memory's results come first, the model's words after.

The real ``ollama`` client talks to the fake server; the model's answer is held (a gate) for
as long as the test needs, so "the model is slow" does not depend on the machine's speed.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.fake_ollama import ChatReply, FakeOllama, Fault
from tests.ui.test_verification_console import (
    OVERTURN,
    SIZE,
    brief,
    detail,
    head,
    highlight,
    panel,
    question,
    settle,
)

NO_DRAFT = ChatReply(fault=Fault.SERVER_ERROR)  # the briefing stays the memory's own


def model_app(data_dir: Path, fake: FakeOllama) -> TriageApp:
    return TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir,
                              ollama_host=fake.host, model="qwen2.5:7b", model_timeout=30))


async def until(pilot: Pilot[None], condition: object, what: str) -> None:
    for _ in range(1000):  # bounded: ~20 s at most, however slow the machine
        if callable(condition) and condition():
            return
        await pilot.pause(0.02)
    raise AssertionError(f"never happened: {what}")


async def test_a_slow_model_does_not_hold_back_the_memorys_results(
        bundled_data_dir: Path, fake_ollama: FakeOllama) -> None:
    gate = threading.Event()
    held = ChatReply(json.dumps({"phrasings": [], "probes": []}), gate=gate)
    fake_ollama.script_chat(NO_DRAFT, held)
    app = model_app(bundled_data_dir, fake_ollama)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        await pilot.press("f6")
        await until(pilot, lambda: panel(app).result is not None, "the memory's results shown")

        # The model is asked (its request may land just after the results, under load) and
        # has not answered: the results are there regardless.
        await until(pilot, lambda: len(fake_ollama.chat_requests()) == 2, "the model asked")
        assert not gate.is_set() and panel(app).result is not None
        assert "OVERTURN" in head(app) and "confidence 0" in head(app)
        assert "the model is phrasing the questions (up to 30 s)" in head(app)
        _, symptoms, cause = [q for q in panel(app).questions if q["probe"] == "engineer"]

        # The engineer answers while the model is still thinking.
        await highlight(pilot, app, symptoms["id"])
        await pilot.press("n")
        await until(pilot, lambda: question(app, symptoms["id"])["result"] == "refuted",
                    "the answer taken while the model is out")
        assert "the model is phrasing" in head(app)

        # The model answers (with a question id it was given): its words join, nothing else
        # changes, and the answer given meanwhile is kept.
        held.content = json.dumps({"phrasings": [
            {"id": cause["id"], "text": "Were the jobs slowed by slow storage reads?"}],
            "probes": []})
        gate.set()
        await until(pilot, lambda: "the model is phrasing" not in head(app), "the model's part")
        await settle(pilot, app)
        await highlight(pilot, app, cause["id"])
        assert "the model's words: Were the jobs slowed by slow storage reads?" in detail(app)
        assert question(app, symptoms["id"])["result"] == "refuted"
        result = panel(app).result
        assert result is not None and result["disposition"] == "overturn"
        assert result["confidence"]["value"] == 0


async def test_a_verification_closed_before_the_model_answers_drops_its_words(
        bundled_data_dir: Path, fake_ollama: FakeOllama) -> None:
    gate = threading.Event()
    fake_ollama.script_chat(NO_DRAFT, ChatReply(json.dumps({"phrasings": [], "probes": []}),
                                                gate=gate), NO_DRAFT)
    app = model_app(bundled_data_dir, fake_ollama)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        await pilot.press("f6")
        await until(pilot, lambda: panel(app).result is not None, "the memory's results shown")
        first = app.state.verifying
        assert first is not None and first.assisting
        # A new briefing replaces the one under verification; then the model answers late.
        await pilot.press("f2")
        app.screen.query_one("#alert-input", Input).value = OVERTURN + " again"
        await pilot.press("enter")
        await until(pilot, lambda: app.state.verifying is None and app.state.request is None,
                    "the new briefing shown")
        gate.set()
        await settle(pilot, app)
        assert app.state.verifying is None and not panel(app).display
        dropped = [json.loads(line) for line in
                   (bundled_data_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
        assert any(e.get("event") == "stale_result_dropped" and e.get("what") == "model assist"
                   for e in dropped)
