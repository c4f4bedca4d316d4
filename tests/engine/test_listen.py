"""The live receiver (console/engine/listen.py, issue 24 item 3) through a real HTTP client on
127.0.0.1: what a sender is answered, what reaches the console, what the audit log keeps."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from console.engine.briefing.audit import AuditLog
from console.engine.listen import (
    DEFAULT_PORT,
    MAX_BODY_BYTES,
    ListenError,
    ReceivedAlert,
    Receiver,
    parse_listen,
)

WEBHOOK = {"receiver": "triage", "status": "firing", "alerts": [{
    "status": "firing", "labels": {"alertname": "PaymentsHigh5xx", "service": "payments-api"},
    "annotations": {"summary": "payments-api 5xx error rate above 5% after deploy"}}]}


class Console:
    """What the console would take: every accepted alert, until ``room`` runs out."""

    def __init__(self, room: int = 100) -> None:
        self.room = room
        self.got: list[ReceivedAlert] = []

    def __call__(self, received: ReceivedAlert) -> bool:
        if len(self.got) >= self.room:
            return False
        self.got.append(received)
        return True


@pytest.fixture
def audit(tmp_path: Path) -> AuditLog:
    return AuditLog(tmp_path / "audit.jsonl")


def running(console: Console, audit: AuditLog, **options: object) -> Receiver:
    receiver = Receiver("127.0.0.1", 0, console, audit, **options)  # type: ignore[arg-type]
    receiver.start()
    return receiver


@pytest.fixture
def served(audit: AuditLog) -> Iterator[tuple[Receiver, Console]]:
    console = Console()
    receiver = running(console, audit)
    yield receiver, console
    receiver.stop()


def post(receiver: Receiver, body: bytes | str, path: str = "/",
         headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, str]:
    host, port = receiver.address
    connection = http.client.HTTPConnection(host, port, timeout=10)
    data = body.encode() if isinstance(body, str) else body
    connection.request(method, path, body=data, headers=headers or {})
    response = connection.getresponse()
    text = response.read().decode()
    connection.close()
    return response.status, text


def logged(audit: AuditLog) -> list[dict[str, object]]:
    return [json.loads(line) for line in audit.path.read_text(encoding="utf-8").splitlines()]


def test_an_alertmanager_webhook_is_accepted_and_reaches_the_console(
        served: tuple[Receiver, Console], audit: AuditLog) -> None:
    receiver, console = served
    for path in ("/", "/alerts"):
        status, text = post(receiver, json.dumps(WEBHOOK), path)
        assert status == 202, text
    assert [r.number for r in console.got] == [1, 2]
    assert console.got[0].alert.service == "payments-api"
    assert "5xx error rate above 5%" in console.got[0].alert.text
    assert [e["status"] for e in logged(audit)] == [202, 202]


@pytest.mark.parametrize("body, words", [
    (b"", "empty"),
    (b"\x00\x01\x02binary", "binary"),
    (b"\xff\xfe not utf-8", "UTF-8"),
    (b'{"alerts": [', "malformed JSON"),
])
def test_a_body_that_is_not_an_alert_is_400_and_reaches_nothing(
        served: tuple[Receiver, Console], audit: AuditLog, body: bytes, words: str) -> None:
    receiver, console = served
    status, text = post(receiver, body)
    assert status == 400 and console.got == []
    assert words in json.loads(text)["message"], text
    assert [e["status"] for e in logged(audit)] == [400]


def test_a_token_is_required_when_one_is_set(audit: AuditLog) -> None:
    console = Console()
    receiver = running(console, audit, token="s3cret-token")
    try:
        assert post(receiver, json.dumps(WEBHOOK))[0] == 401
        assert post(receiver, json.dumps(WEBHOOK),
                    headers={"Authorization": "Bearer wrong"})[0] == 401
        assert console.got == []
        status, _ = post(receiver, json.dumps(WEBHOOK),
                         headers={"Authorization": "Bearer s3cret-token"})
        assert status == 202 and len(console.got) == 1
    finally:
        receiver.stop()
    assert "s3cret-token" not in audit.path.read_text(encoding="utf-8")


def test_a_body_over_1_mb_is_413_unread(served: tuple[Receiver, Console]) -> None:
    receiver, console = served
    host, port = receiver.address
    with socket.create_connection((host, port), timeout=10) as sock:
        # Only the headers are sent: the server must answer without waiting for the body.
        sock.sendall(f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n"
                     "\r\n".encode())
        answer = sock.recv(4096).decode()
    assert answer.startswith("HTTP/1.0 413") or answer.startswith("HTTP/1.1 413"), answer
    assert console.got == []


def test_other_paths_and_methods_are_refused(served: tuple[Receiver, Console]) -> None:
    receiver, console = served
    assert post(receiver, json.dumps(WEBHOOK), "/api/v2/alerts")[0] == 404
    assert post(receiver, "", "/", method="GET")[0] == 405
    assert console.got == []


def test_a_full_console_queue_is_503_so_the_sender_retries(audit: AuditLog) -> None:
    console = Console(room=1)
    receiver = running(console, audit)
    try:
        assert post(receiver, json.dumps(WEBHOOK))[0] == 202
        status, _ = post(receiver, json.dumps(WEBHOOK))
        assert status == 503  # Alertmanager retries a 5xx: the page is delayed, not dropped
        assert len(console.got) == 1
    finally:
        receiver.stop()


def test_a_flood_over_the_rate_is_503_and_bounded(audit: AuditLog) -> None:
    console = Console()
    receiver = running(console, audit, rate=0.001, burst=3)
    try:
        answers = [post(receiver, json.dumps(WEBHOOK))[0] for _ in range(10)]
    finally:
        receiver.stop()
    assert answers[:3] == [202, 202, 202] and set(answers[3:]) == {503}
    assert len(console.got) == 3


def test_a_slow_client_does_not_hold_up_another_sender(audit: AuditLog) -> None:
    console = Console()
    receiver = running(console, audit, read_timeout=1.0)
    host, port = receiver.address
    try:
        slow = socket.create_connection((host, port), timeout=10)
        slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{\"alerts\"")
        # … and never sends the rest. Another sender is answered meanwhile:
        assert post(receiver, json.dumps(WEBHOOK))[0] == 202
        answer = slow.recv(4096).decode()  # the slow one is answered when its time is up
        slow.close()
    finally:
        receiver.stop()
    assert " 408 " in answer.splitlines()[0], answer
    assert len(console.got) == 1


def test_secrets_in_a_payload_are_redacted_in_the_audit_log(
        served: tuple[Receiver, Console], audit: AuditLog) -> None:
    receiver, _ = served
    payload = {**WEBHOOK, "commonAnnotations": {"note": "db password=hunter2hunter2 leaked"}}
    assert post(receiver, json.dumps(payload))[0] == 202
    text = audit.path.read_text(encoding="utf-8")
    assert "hunter2hunter2" not in text and "REDACTED" in text


def test_listen_addresses() -> None:
    assert parse_listen(None) == ("127.0.0.1", DEFAULT_PORT)
    assert parse_listen("127.0.0.1") == ("127.0.0.1", DEFAULT_PORT)
    assert parse_listen("127.0.0.1:9200") == ("127.0.0.1", 9200)
    assert parse_listen(":9200") == ("127.0.0.1", 9200)
    assert parse_listen("[::1]:9200") == ("::1", 9200)
    for bad in ("127.0.0.1:http", "127.0.0.1:70000", "::1:9200", "[::1"):
        with pytest.raises(ListenError):
            parse_listen(bad)


def test_a_port_in_use_is_a_named_error(served: tuple[Receiver, Console],
                                        audit: AuditLog) -> None:
    receiver, _ = served
    host, port = receiver.address
    with pytest.raises(ListenError, match=f"cannot listen on 127.0.0.1:{port}"):
        Receiver(host, port, Console(), audit)


def test_many_open_connections_do_not_stop_the_receiver(audit: AuditLog) -> None:
    console = Console()
    receiver = running(console, audit, read_timeout=1.0)
    host, port = receiver.address
    idle = [socket.create_connection((host, port), timeout=10) for _ in range(60)]
    try:
        done = threading.Event()
        answers: list[int] = []

        def send() -> None:
            answers.append(post(receiver, json.dumps(WEBHOOK))[0])
            done.set()

        threading.Thread(target=send, daemon=True).start()
        assert done.wait(30) and answers == [202]  # once the idle ones time out, at worst
    finally:
        for sock in idle:
            sock.close()
        receiver.stop()
