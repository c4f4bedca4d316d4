"""Every briefing is a request: a newer alert or Esc cancels the running one, and a stale
answer is dropped, never shown — the engineer never reads advice for the wrong alert."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from textual.widgets import Input, Static

from console.engine.config import Settings
from console.engine.model.client import Progress
from console.engine.pipeline import Hooks
from console.ui.app import TriageApp
from console.ui.messages import BriefingReady
from tests.fake_ollama import ChatReply, FakeOllama

REPO = Path(__file__).resolve().parents[2]
SLOW_ALERT = "checkout-service p99 latency up, intermittent database connection errors"
FAST_ALERT = "payments service KeyError: 'amount' after deploy"
SLOW_DRAFT = {
    "summary": "ZEBRA pool exhaustion as in INC-2041.",
    "recommendations": [{"action": "ZEBRA raise the pool on one instance, drain gradually",
                         "evidence": [{"incident_id": "INC-2041", "action_id": "A4"}]}],
    "warnings": [{"text": "ZEBRA do not restart every pod at once",
                  "incident_id": "INC-2041", "action_id": "INC-2041/A1"}],
    "confidence": 60,
}
# ~70 s if streamed to the end: only a cancelled stream lets these tests finish quickly.
SLOW = ChatReply(json.dumps(SLOW_DRAFT), chunk_size=4, chunk_delay=0.5)


def body(app: TriageApp) -> str:
    return str(app.screen.query_one("#briefing-body", Static).content)


def make_app(tmp_path: Path, fake_ollama: FakeOllama) -> TriageApp:
    return TriageApp(Settings(incidents_path=REPO / "incidents.yaml", data_dir=tmp_path / "data",
                              ollama_host=fake_ollama.host, model="qwen2.5:7b",
                              model_timeout=120.0))


async def submit(pilot: Any, app: TriageApp, alert: str) -> None:
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")


async def until(pilot: Any, condition: Any, polls: int = 1500) -> None:
    """Poll the UI until ``condition()`` holds (bounded, so a broken rule fails, not hangs)."""
    for _ in range(polls):
        if condition():
            return
        await pilot.pause(0.02)
    raise AssertionError("condition never held")


def audit_events(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "data" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def test_a_newer_alert_cancels_the_running_briefing_and_wins(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script_chat(SLOW)
    fake_ollama.default_chat = ChatReply("this is not a draft")  # B ends deterministic, fast
    app = make_app(tmp_path, fake_ollama)
    shown: list[BriefingReady] = []
    async with app.run_test(size=(120, 40),
                            message_hook=lambda m: shown.append(m) if isinstance(
                                m, BriefingReady) else None) as pilot:
        await app.workers.wait_for_complete()
        await submit(pilot, app, SLOW_ALERT)
        await until(pilot, lambda: "drafting" in body(app))
        await submit(pilot, app, FAST_ALERT)
        await until(pilot, lambda: "payment-schema cache" in body(app) and not any(
            w.is_running for w in app.workers))
        await pilot.pause()
        assert app.screen.query_one("#alert-input", Input).value == FAST_ALERT
        assert "ZEBRA" not in body(app) and "INC-2041" not in body(app)
        # A's stream was abandoned, not read to its end (it would take ~70 s).
        await until(pilot, lambda: fake_ollama.abandoned >= 1)
        assert [m.request_id for m in shown] == [2]
    events = audit_events(tmp_path)
    assert {"event": "briefing_cancelled", "request": 1}.items() <= next(
        e for e in events if e.get("event") == "briefing_cancelled").items()
    assert any(e.get("result") == "cancelled" for e in events)  # the attempt, audited


async def test_a_stale_answer_is_dropped_and_the_audit_says_so(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.default_chat = ChatReply("this is not a draft")
    app = make_app(tmp_path, fake_ollama)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await submit(pilot, app, SLOW_ALERT)
        await until(pilot, lambda: "INC-2041" in body(app) and not any(
            w.is_running for w in app.workers))
        # Request 1's briefing, as if its worker had finished late.
        stale = BriefingReady(app.engine.brief(_request(SLOW_ALERT)).briefing, 1)
        await submit(pilot, app, FAST_ALERT)
        await until(pilot, lambda: "payment-schema cache" in body(app) and not any(
            w.is_running for w in app.workers))
        app.post_message(stale)  # request 1's answer arrives after request 2's
        await pilot.pause()
        await pilot.pause()
        assert "INC-2041" not in body(app) and "payment-schema cache" in body(app)
    assert any(e.get("event") == "stale_result_dropped" and e.get("request") == 1
               for e in audit_events(tmp_path))


def _request(alert: str) -> Any:
    from console.engine.briefing.alert import parse_alert
    from console.engine.briefing.request import BriefingRequest

    return BriefingRequest(parse_alert(alert), 1)


async def test_escape_in_the_alert_box_cancels_and_shows_nothing_of_the_draft(
        tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script_chat(SLOW)
    app = make_app(tmp_path, fake_ollama)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await submit(pilot, app, SLOW_ALERT)
        await until(pilot, lambda: "drafting" in body(app))
        assert app.focused is app.screen.query_one("#alert-input", Input)
        await pilot.press("escape")
        await pilot.pause()
        assert "cancelled" in body(app)
        await until(pilot, lambda: not any(w.is_running for w in app.workers))
        await until(pilot, lambda: fake_ollama.abandoned >= 1)
        await pilot.pause()
        assert "cancelled" in body(app) and "ZEBRA" not in body(app)
        assert app.state.request is None


def test_draft_progress_is_rate_limited() -> None:
    forwarded: list[Progress] = []
    ticks = iter(range(10_000))
    hooks = Hooks(on_progress=forwarded.append, interval=0.1,
                  clock=lambda: next(ticks) / 1000)  # one chunk per millisecond
    for n in range(1000):
        hooks.progress(Progress(1, n, n / 1000))
    assert 9 <= len(forwarded) <= 11  # one second of stream → about ten redraws, not 1000
    assert forwarded[0].characters == 0
