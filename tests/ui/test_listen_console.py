"""`triage --listen` in the running console (issue 24 item 3): a real HTTP client posts pages
to the app Pilot drives. A page is listed (newest first, its state and top incident once
recalled), announced in the list and the status line, and never replaces the briefing being
read; Enter briefs it; nothing refused reaches the screen; a slow sender blocks nothing."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Static

from console.__main__ import main
from console.engine.config import Settings
from console.engine.practice.gameday import EventKind
from console.ui.app import TriageApp
from console.ui.widgets.incoming_list import IncomingList
from console.ui.widgets.status_line import StatusLine
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import settle

SIZE = (120, 40)
PAYMENTS = {"receiver": "triage", "status": "firing", "alerts": [{
    "status": "firing", "labels": {"alertname": "PaymentsHigh5xx", "service": "payments-api"},
    "annotations": {"summary": "payments-api 5xx error rate above 5% after deploy",
                    "runbook_url": "https://wiki.example.internal/runbooks/payments-5xx"}}]}
NOVEL = "lighthouse fog-horn relay humming at 3 kHz on the harbour crane"


def make_app(data_dir: Path, **settings: Any) -> TriageApp:
    return TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir, **settings),
                     listen=("127.0.0.1", 0))


def send(app: TriageApp, body: bytes | str, headers: dict[str, str] | None = None,
         path: str = "/") -> tuple[int, dict[str, str]]:
    """POST ``body`` to the app's receiver as a sender would: (status, response headers)."""
    assert app.receiver is not None
    host, port = app.receiver.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        data = body.encode() if isinstance(body, str) else body
        connection.request("POST", path, body=data, headers=headers or {})
        response = connection.getresponse()
        response.read()
        return response.status, dict(response.getheaders())
    finally:
        connection.close()


async def post(app: TriageApp, body: bytes | str, **options: Any) -> int:
    """Post from another thread (the event loop keeps running, as it does for a real sender)."""
    status, _ = await asyncio.to_thread(send, app, body, **options)
    return status


def rows(app: TriageApp) -> list[str]:
    """The incoming list as shown: one plain line a page (empty while it is hidden)."""
    pages = app.screen.query_one(IncomingList)
    if not pages.display or not pages.has_class("-shown"):
        return []
    return [str(pages.get_option_at_index(i).prompt) for i in range(pages.option_count)]


def status_line(app: TriageApp) -> str:
    return str(app.screen.query_one(StatusLine).content)


def briefing_text(app: TriageApp) -> str:
    return "\n".join(str(app.screen.query_one(part, Static).content)
                     for part in ("#briefing-status", "#briefing-body"))


def toasts(app: TriageApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def brief_typed(pilot: Any, app: TriageApp, alert: str) -> None:
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("f2", "enter")
    await settle(pilot, app)


async def test_a_page_is_listed_and_announced_without_replacing_the_briefing(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert rows(app) == []  # nothing received: the list takes no room
        assert "listening 127.0.0.1:" in status_line(app)
        await brief_typed(pilot, app, NOVEL)
        reading = briefing_text(app)
        assert "NO PRIOR" in reading
        toasts_before = toasts(app)

        assert await post(app, json.dumps(PAYMENTS)) == 202
        await settle(pilot, app)

        listed = rows(app)
        assert len(listed) == 1
        assert listed[0].startswith("● #1")
        # Its state and top incident, once recalled (the memory alone gives it PROVEN).
        assert "PROVEN" in listed[0] and "INC-" in listed[0]
        assert "PaymentsHigh5xx" in listed[0]
        assert "new page #1 (F11)" in status_line(app)
        # The briefing being read is untouched; no toast covers the panels.
        assert briefing_text(app) == reading
        assert toasts(app) == toasts_before
        assert app.screen.query_one("#alert-input", Input).value == NOVEL

        await pilot.press("f11", "enter")
        await settle(pilot, app)
        assert "PROVEN" in briefing_text(app) and briefing_text(app) != reading
        assert rows(app)[0].startswith("▶ #1")
        assert "new page" not in status_line(app)
        # The alert box holds what was briefed, as a paste would (Ctrl+R takes it from there).
        held = app.screen.query_one("#alert-input", Input).value
        assert "PaymentsHigh5xx" in held and "\n" not in held


async def test_newest_first_and_enter_briefs_the_highlighted_page(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for body in (json.dumps(PAYMENTS), NOVEL, "checkout p99 latency high after deploy"):
            assert await post(app, body) == 202
        await settle(pilot, app)
        listed = rows(app)
        assert [line[2:4] for line in listed] == ["#3", "#2", "#1"]
        assert "NO PRIOR" in listed[1] and "PROVEN" in listed[2]
        assert "3 new" in status_line(app)

        await pilot.press("f11", "down", "enter")  # the second newest: #2, the novel one
        await settle(pilot, app)
        assert "NO PRIOR" in briefing_text(app)
        assert app.screen.query_one("#alert-input", Input).value == NOVEL
        listed = rows(app)
        assert listed[1].startswith("▶ #2") and listed[0].startswith("● #3")
        assert "new page #3, 2 new (F11)" in status_line(app)


async def test_refused_posts_never_reach_the_screen_and_are_audited(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir, listen_token="s3cret-token-for-tests")
    good = {"Authorization": "Bearer s3cret-token-for-tests"}
    leaky = {**PAYMENTS, "commonAnnotations": {"note": "db password=hunter2hunter2 leaked"}}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert await post(app, json.dumps(PAYMENTS)) == 401
        assert await post(app, json.dumps(PAYMENTS),
                          headers={"Authorization": "Bearer wrong"}) == 401
        assert await post(app, '{"alerts": [', headers=good) == 400
        assert await post(app, b"\xff\xfe\x00binary", headers=good) == 400
        assert await post(app, json.dumps(PAYMENTS), headers=good, path="/elsewhere") == 404
        await settle(pilot, app)
        assert rows(app) == [] and "new page" not in status_line(app)

        assert await post(app, json.dumps(leaky), headers=good) == 202
        await settle(pilot, app)
        assert len(rows(app)) == 1 and rows(app)[0].startswith("● #1")

    lines = [json.loads(line) for line in
             (bundled_data_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines()]
    received = [line for line in lines if line.get("event") == "webhook_received"]
    assert [line["status"] for line in received] == [401, 401, 400, 400, 404, 202]
    logged = json.dumps(received)
    assert "hunter2hunter2" not in logged and "s3cret-token-for-tests" not in logged


async def test_a_full_console_is_503_so_the_sender_retries_and_nothing_is_shown(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    app.MAX_PAGES_WAITING = 0  # (as if the pages already waiting filled the console's queue)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        status, headers = await asyncio.to_thread(send, app, json.dumps(PAYMENTS))
        assert status == 503 and headers.get("Retry-After") == "1"
        await settle(pilot, app)
        assert rows(app) == []


async def test_a_flood_is_bounded_and_every_page_accepted_is_listed(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    assert app.receiver is not None
    app.receiver.limit(rate=0.001, burst=6)  # (a burst of 6, then next to nothing: no clock)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)

        def flood() -> list[int]:
            return [send(app, f"disk full on node-{n}")[0] for n in range(30)]

        statuses = await asyncio.to_thread(flood)
        await settle(pilot, app)
        assert statuses == [202] * 6 + [503] * 24
        listed = rows(app)
        assert [line[2:4] for line in listed] == [f"#{n}" for n in range(6, 0, -1)]
        assert "new page #6, 6 new (F11)" in status_line(app)


async def test_a_slow_sender_blocks_neither_the_console_nor_other_senders(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.receiver is not None
        slow = socket.create_connection(app.receiver.address, timeout=10)
        try:
            # Headers promising a body, then a trickle that never completes it.
            slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{\"al")
            await asyncio.sleep(0.2)
            assert await post(app, json.dumps(PAYMENTS)) == 202
            await brief_typed(pilot, app, NOVEL)  # the console answers keys meanwhile
            assert "NO PRIOR" in briefing_text(app)
            assert len(rows(app)) == 1 and "PROVEN" in rows(app)[0]
        finally:
            slow.close()


async def test_on_a_game_day_a_page_joins_the_timeline_when_it_comes(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir, game_day=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.timeline is not None
        assert await post(app, json.dumps(PAYMENTS)) == 202
        await settle(pilot, app)
        received = [e for e in app.timeline.events if e.kind is EventKind.ALERT_RECEIVED]
        assert len(received) == 1 and "PaymentsHigh5xx" in received[0].text
        assert received[0].detail["via"] == "webhook #1 from 127.0.0.1"
        assert not [e for e in app.timeline.events if e.kind is EventKind.BRIEFING_SHOWN]

        await pilot.press("f11", "enter")
        await settle(pilot, app)
        kinds = [e.kind for e in app.timeline.events]
        # Briefed once it was picked; not received a second time.
        assert kinds == [EventKind.ALERT_RECEIVED, EventKind.BRIEFING_SHOWN]
    lines = (bundled_data_dir / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    webhook = [json.loads(line) for line in lines if "webhook_received" in line]
    assert webhook and all(line["drill"] is True for line in webhook)


def test_a_port_in_use_is_refused_before_the_console_opens(
        capsys: pytest.CaptureFixture[str]) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        port = taken.getsockname()[1]
        assert main(["--listen", f"127.0.0.1:{port}"]) == 2
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--listen 127.0.0.1:9096" in err


def test_listen_is_refused_for_a_command_and_for_a_bad_address(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--listen", "127.0.0.1:9095", "doctor"]) == 2
    assert "--listen is for the console" in capsys.readouterr().err
    assert main(["--listen", "127.0.0.1:99999"]) == 2
    assert "the port must be a number from 1 to 65535" in capsys.readouterr().err


async def test_every_format_a_tool_posts_is_listed_and_briefed_in_the_console(
        bundled_data_dir: Path) -> None:
    """Each payload of tests/data/payloads (one per format, written from the tools' public
    documentation) posted as its tool would: listed with the payments incident, then briefed."""
    names = ["alertmanager.json", "grafana.json", "pagerduty_events_v2.json",
             "pagerduty_webhook_v3.json", "opsgenie.json"]
    folder = Path(__file__).parents[1] / "data" / "payloads"
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        for name in names:
            assert await post(app, (folder / name).read_bytes()) == 202, name
        await settle(pilot, app)
        listed = rows(app)
        assert len(listed) == len(names)
        for line in listed:
            assert "PROVEN" in line and ("INC-1518" in line or "INC-1619" in line), line
        await pilot.press("f11")
        for number in range(len(names), 0, -1):  # newest first: the list's order
            await pilot.press("enter")
            await settle(pilot, app)
            shown = app.state.shown
            assert shown is not None and app.state.incoming_shown == number
            assert shown.briefing.input is not None
            assert shown.briefing.input.format == ("alertmanager", "grafana",
                                                   "pagerduty-events-v2",
                                                   "pagerduty-webhook-v3",
                                                   "opsgenie")[number - 1]
            assert "PROVEN" in briefing_text(app)
            await pilot.press("f11", "down")
        assert "new page" not in status_line(app)
