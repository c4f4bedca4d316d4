"""A live receiver: webhooks posted to the laptop while the console runs (issue 24 item 3).

In a staging drill an Alertmanager ``webhook_configs`` entry or a Grafana contact point is
pointed at ``http://HOST:PORT/`` (or ``/alerts``). Each POST is read under bounds, parsed as an
alert (console/engine/briefing/alert.py: every format it knows, plain text too) and handed to
``on_alert`` — the console lists it; nothing here touches the screen.

Answers, so a sender knows what to do (Alertmanager retries a 5xx, never a 4xx):

- 202 accepted (the alert is queued for the console);
- 400 the body is not an alert (empty, binary, not UTF-8, unreadable JSON);
- 401 a token is set (``TRIAGE_LISTEN_TOKEN``) and the request does not carry it;
- 404 / 405 another path or method; 411 no Content-Length (a chunked body is not read);
- 413 the body is over MAX_BODY_BYTES (not read);
- 503 the console's queue is full, too many requests at once, or over the rate: a page is
  delayed (the sender retries), never dropped silently.

Nothing refused reaches ``on_alert``. Every request that reaches the handler is written to the
audit log (its body redacted and bounded), refused or not. Only loopback by default.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any

from console.engine.briefing.alert import Alert, AlertError, decode_alert, parse_alert
from console.engine.briefing.audit import AuditLog
from store.errors import TriageError
from store.redact import redact
from store.text import clean

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 9095
MAX_BODY_BYTES = 1_048_576
MAX_CONCURRENT = 4  # requests read at once; the rest answer 503 at once
MAX_CONNECTIONS = 32  # connections open at once; beyond, closed unread
READ_TIMEOUT = 5.0  # seconds a client may take to send its body (a slow client: 408)
RATE_PER_SECOND = 10.0  # sustained requests a second …
RATE_BURST = 20  # … with bursts up to this
MAX_QUEUED = 100  # alerts received and not yet taken by the console
AUDIT_BODY_CHARS = 4_000
PATHS = frozenset({"/", "/alerts"})


def is_loopback(host: str) -> bool:
    """``host`` reaches this machine only (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ListenError(TriageError):
    """``--listen`` cannot be used as given (a bad HOST:PORT, a port in use)."""


def parse_listen(value: str | None) -> tuple[str, int]:
    """``HOST:PORT``, ``HOST`` (port 9095), ``:PORT`` (127.0.0.1) or nothing (both defaults);
    ``[::1]:PORT`` for IPv6."""
    text = (value or "").strip()
    if not text:
        return DEFAULT_HOST, DEFAULT_PORT
    host, port_text = text, ""
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ListenError(f"--listen {value!r}: an IPv6 address needs its closing ']'")
        host, rest = text[1:end], text[end + 1:]
        if rest and not rest.startswith(":"):
            raise ListenError(f"--listen {value!r}: expected [HOST]:PORT")
        port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    elif ":" in text:
        raise ListenError(f"--listen {value!r}: write an IPv6 address as [HOST]:PORT")
    host = host or DEFAULT_HOST
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ListenError(f"--listen {value!r}: the port must be a number from 1 to 65535")
    return host, int(port_text)


@dataclass(frozen=True)
class ReceivedAlert:
    """One accepted webhook: its sequence number, when it came, the parsed alert, who sent it,
    and its body as text (``raw``: what the console briefs, as if it had been pasted)."""

    number: int
    received_at: str
    alert: Alert
    peer: str
    raw: str = ""


@dataclass
class _Bucket:
    """A token bucket: ``rate`` a second, at most ``burst`` saved up."""

    rate: float
    burst: float
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.burst

    def take(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


class Receiver:
    """The HTTP server on its own threads. ``on_alert`` is called on a server thread with each
    accepted alert and returns False when the console cannot take more (the sender gets 503).
    Start with :meth:`start`, stop with :meth:`stop` (both idempotent)."""

    def __init__(self, host: str, port: int, on_alert: Callable[[ReceivedAlert], bool],
                 audit: AuditLog | None = None, token: str | None = None,
                 rate: float = RATE_PER_SECOND, burst: int = RATE_BURST,
                 max_concurrent: int = MAX_CONCURRENT,
                 read_timeout: float = READ_TIMEOUT) -> None:
        self.on_alert = on_alert
        self.audit = audit
        self.token = token or None
        self.read_timeout = read_timeout
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._bucket = _Bucket(rate, float(burst))
        self._bucket_lock = threading.Lock()
        self._numbers = count(1)
        self._thread: threading.Thread | None = None
        receiver = self

        class Handler(_Handler):
            owner = receiver
            timeout = read_timeout  # a client that sends nothing is dropped after this

        try:
            self.server = _Server((host, port), Handler)
        except OSError as exc:
            raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}", [],
                              "pick another port (`--listen 127.0.0.1:9096`) or stop what uses "
                              "it") from None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self.server.serve_forever,
                                            name="triage-listen", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is not None:
            self.server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.server.server_close()

    # -- called by the handler --------------------------------------------------------------

    def limit(self, rate: float, burst: int) -> None:
        """Take at most ``rate`` requests a second from now on, with bursts up to ``burst``."""
        with self._bucket_lock:
            self._bucket = _Bucket(rate, float(burst))

    def allowed(self) -> bool:
        with self._bucket_lock:
            return self._bucket.take()

    def number(self) -> int:
        return next(self._numbers)

    def log(self, peer: str, path: str, status: int, why: str, body: bytes | None = None,
            alert: Alert | None = None) -> None:
        if self.audit is None:
            return
        entry: dict[str, Any] = {"event": "webhook_received", "peer": peer, "path": path[:200],
                                 "status": status, "result": why}
        if body is not None:
            text = clean(body[:AUDIT_BODY_CHARS * 4].decode("utf-8", "replace"))
            entry["body"] = redact(text[:AUDIT_BODY_CHARS]).text
            entry["bytes"] = len(body)
        if alert is not None:
            entry["alert"] = redact(alert.text[:500]).text
        self.audit.append(entry)


class _Server(ThreadingHTTPServer):
    """At most MAX_CONNECTIONS connections at once (a thread each): a flood of connections
    beyond that is closed unread, so it never grows threads without bound."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._open = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(*args, **kwargs)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._open.acquire(blocking=False):
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except Exception:
            self._open.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._open.release()


class _Handler(BaseHTTPRequestHandler):
    owner: Receiver
    server_version = "triage-listen"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (the base's name)
        pass  # never on the console's terminal: the audit log has it

    def do_GET(self) -> None:  # noqa: N802  (http.server's naming)
        self._answer(405, "only POST is accepted", allow="POST")

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET  # noqa: N815

    def do_POST(self) -> None:  # noqa: N802
        owner = self.owner
        if not owner._slots.acquire(blocking=False):
            self._answer(503, "too many requests at once: retry", retry=True)
            return
        try:
            self._post(owner)
        finally:
            owner._slots.release()

    def _post(self, owner: Receiver) -> None:
        peer = self.client_address[0]
        path = self.path.split("?", 1)[0]
        if path not in PATHS:
            owner.log(peer, path, 404, "unknown path")
            self._answer(404, "post alerts to / or /alerts")
            return
        if owner.token is not None and not _token_ok(self.headers.get("Authorization"),
                                                     owner.token):
            owner.log(peer, path, 401, "wrong or missing token")
            self._answer(401, "wrong or missing bearer token (TRIAGE_LISTEN_TOKEN)",
                         authenticate=True)
            return
        if not owner.allowed():
            owner.log(peer, path, 503, "over the rate limit")
            self._answer(503, "too many alerts a second: retry", retry=True)
            return
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            owner.log(peer, path, 411, "no Content-Length")
            self._answer(411, "send a Content-Length (a chunked body is not read)")
            return
        size = int(length)
        if size > MAX_BODY_BYTES:
            owner.log(peer, path, 413, f"body of {size} bytes over {MAX_BODY_BYTES}")
            self._answer(413, f"the body is over {MAX_BODY_BYTES:,} bytes: send fewer alerts a "
                         "notification (max_alerts)")
            return
        self.connection.settimeout(owner.read_timeout)
        try:
            body = self.rfile.read(size)
        except TimeoutError:
            owner.log(peer, path, 408, "the body was not sent in time")
            self._answer(408, "the body was not sent in time")
            return
        if len(body) < size:
            owner.log(peer, path, 400, "the body ended early", body)
            self._answer(400, "the body ended before its Content-Length")
            return
        try:
            text = decode_alert(body, "the webhook")
            _well_formed(text)
            alert = parse_alert(text)
        except AlertError as exc:
            owner.log(peer, path, 400, f"not an alert: {exc.title}", body)
            self._answer(400, exc.title)
            return
        received = ReceivedAlert(owner.number(), datetime.now(UTC).isoformat(timespec="seconds"),
                                 alert, peer, text)
        if not owner.on_alert(received):
            owner.log(peer, path, 503, "the console's queue is full", body, alert)
            self._answer(503, "the console has too many alerts waiting: retry", retry=True)
            return
        owner.log(peer, path, 202, f"accepted as #{received.number}", body, alert)
        self._answer(202, f"accepted as #{received.number}")

    def _answer(self, status: int, message: str, retry: bool = False,
                authenticate: bool = False, allow: str | None = None) -> None:
        data = (json.dumps({"status": status, "message": message}) + "\n").encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if retry:
                self.send_header("Retry-After", "1")
            if authenticate:
                self.send_header("WWW-Authenticate", 'Bearer realm="triage"')
            if allow:
                self.send_header("Allow", allow)
            if status >= 400:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client went away: nothing to tell it


def _well_formed(text: str) -> None:
    """A posted body that starts as JSON must be JSON: a sender's broken payload is refused
    (400, not retried), where a paste of one is briefed as text (briefing/alert.py)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return
    try:
        json.loads(stripped)
    except RecursionError:
        raise AlertError("the webhook's JSON is nested too deeply") from None
    except ValueError as exc:
        raise AlertError(f"the webhook is malformed JSON ({str(exc)[:120]})") from None


def _token_ok(header: str | None, token: str) -> bool:
    if not header or not header.startswith("Bearer "):
        return False
    return hmac.compare_digest(header.removeprefix("Bearer ").strip().encode(), token.encode())


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "MAX_BODY_BYTES", "ListenError", "ReceivedAlert",
           "Receiver", "is_loopback", "parse_listen"]
