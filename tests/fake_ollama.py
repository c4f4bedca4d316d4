"""Scriptable fake Ollama HTTP server for tests (stdlib only).

Tests drive the REAL ``ollama`` client (``ollama.Client`` / ``ollama.AsyncClient``)
over HTTP against this server on 127.0.0.1; nothing is patched.

    def test_x(fake_ollama):
        fake_ollama.script_chat(ChatReply('{"title": "x"}'), ChatReply(fault=Fault.HANG))
        client = ollama.Client(host=fake_ollama.host, timeout=0.5)

Endpoints: POST /api/chat, POST /api/embed, GET /api/tags, GET /api/version.
Anything else -> 404 {"error": "not found"}.

* /api/chat pops the next scripted ``ChatReply`` (FIFO); when the queue is empty
  ``default_chat`` is used, and if that is None -> 500 {"error": "no scripted reply"}.
  An unknown model -> 404 like real Ollama, checked BEFORE popping (no reply consumed).
  ``stream`` defaults to True when absent (Ollama API semantics). Streams are NDJSON
  sent with chunked transfer encoding, as real Ollama (Go net/http) does.
* /api/embed: deterministic hashed bag-of-words vectors (see ``embed_text``).
* Every response carries ``Connection: close`` so no idle keep-alive threads linger.

Faults (``Fault``):
  HANG             block (until stop()) without answering; the client's timeout fires.
  SLOW             wait ``FakeOllama.slow_delay`` seconds (default 1.0), then answer normally.
  MODEL_MISSING    404 {"error": "model \\"NAME\\" not found, try pulling it first"}.
  SERVER_ERROR     500 {"error": "fake server error"}.
  MALFORMED_JSON   200 whose body is not JSON; streamed: one valid chunk, then a non-JSON line.
  TRUNCATED_STREAM streamed: about half the chunks (>= 1), then the connection is closed
                   without the terminating chunk and without the done:true line.
                   Non-stream: Content-Length larger than the body sent, then close.
A slow / stalled *mid-stream* is ``ChatReply(chunk_delay=...)`` (ignored when not streaming).
A reply held until the test says so is ``ChatReply(..., gate=threading.Event())``: the request
is received (and logged) at once, the answer sent only once ``gate.set()`` (a model that is
"still thinking" for exactly as long as the test needs, whatever the machine's load).

What the real ollama 0.6.3 client (httpx 0.28.1) raises -- verified by tests/test_fake_ollama.py;
identical for Client and AsyncClient. Streaming calls are lazy generators: nothing is sent and
nothing is raised until the first iteration (``next`` / ``async for``).

  fault / condition      non-stream (chat, embed, list)   stream=True (chat)
  ---------------------  -------------------------------  -------------------------------------
  MODEL_MISSING (404)    ollama.ResponseError .status_code=404 (.error = message text)  same
  SERVER_ERROR (500)     ollama.ResponseError 500         ollama.ResponseError 500
  HANG + timeout=0.5     httpx.ReadTimeout                httpx.ReadTimeout (on first iteration)
  chunk_delay > timeout  n/a                              httpx.ReadTimeout after earlier chunks
  connection refused     ConnectionError (builtin; ollama wraps httpx.ConnectError)
                                                          httpx.ConnectError (NOT wrapped!)
  MALFORMED_JSON         json.JSONDecodeError (a ValueError)  json.JSONDecodeError after 1st chunk
  TRUNCATED_STREAM       httpx.RemoteProtocolError        httpx.RemoteProtocolError after chunks
  stop() during HANG     httpx.RemoteProtocolError (server disconnected, no response)
  (httpx.ReadTimeout/ConnectError/RemoteProtocolError are all httpx.TransportError subclasses.)
A FakeOllama is one-shot: after stop() it cannot be started again.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

__all__ = ["ChatReply", "FakeOllama", "Fault", "embed_text", "fake_ollama", "refused_host"]


class Fault(Enum):
    HANG = "hang"
    SLOW = "slow"
    MODEL_MISSING = "model_missing"
    SERVER_ERROR = "server_error"
    MALFORMED_JSON = "malformed_json"
    TRUNCATED_STREAM = "truncated_stream"


@dataclass
class ChatReply:
    content: str = ""  # assistant message content (e.g. a JSON draft string)
    fault: Fault | None = None
    chunk_size: int = 16  # streamed content is split into chunks of this many chars
    chunk_delay: float = 0.0  # seconds slept between streamed chunks (slow stream)
    gate: threading.Event | None = None  # answer only once this is set (or the server stops)


_TOKEN = re.compile(r"[a-z0-9]+")


def embed_text(text: str, dim: int = 64) -> list[float]:
    """Hashed bag-of-words: lowercase alphanumeric tokens, each sha256-hashed to a bucket
    with a +-1 sign, then L2-normalised. Texts sharing words get a higher cosine.
    A text without tokens embeds as the (non-zero) vector of the sentinel token "<empty>"."""
    vec = [0.0] * dim
    for tok in _TOKEN.findall(text.lower()) or ["<empty>"]:
        h = hashlib.sha256(tok.encode()).digest()
        vec[int.from_bytes(h[:4], "big") % dim] += 1.0 if h[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    # Rare: every token cancelled out. Fall back to a fixed unit vector, never a zero vector.
    return [v / norm for v in vec] if norm else [1.0] + [0.0] * (dim - 1)


def refused_host() -> str:
    """A host URL on which nothing listens (port bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class FakeOllama:
    """Scriptable fake Ollama server on 127.0.0.1:<ephemeral port>."""

    def __init__(self, models: list[str] | tuple[str, ...] = ("qwen2.5:7b", "nomic-embed-text")):
        self.models = list(models)
        self.default_chat: ChatReply | None = None
        self.embed_dim = 64
        self.embed_fault: Fault | None = None  # applies to /api/embed
        self.tags_fault: Fault | None = None  # applies to /api/tags and /api/version
        self.slow_delay = 1.0  # seconds Fault.SLOW waits before answering
        # answer this many /api/embed requests, then hang every later one (None: never):
        # a deterministic point to interrupt a build at, whatever the machine's load
        self.embed_hang_after: int | None = None
        self._embeds = 0
        self.requests: list[dict] = []
        self.abandoned = 0  # responses the client hung up on before they were complete
        self._queue: deque[ChatReply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        fake = self

        class Handler(_Handler):
            server_ref = fake

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.host = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread: threading.Thread | None = None

    def start(self) -> FakeOllama:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases HANG handlers and delays
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script_chat(self, *replies: ChatReply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def chat_requests(self) -> list[dict]:
        with self._lock:
            return [r["body"] for r in self.requests if r["path"] == "/api/chat"]

    def _log(self, entry: dict) -> None:
        with self._lock:
            self.requests.append(entry)

    def _next_chat(self) -> ChatReply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default_chat


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # needed for chunked transfer encoding
    server_ref: FakeOllama

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def handle(self) -> None:
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            # The client gave up (timeout, or a cancelled briefing closed its stream).
            with self.server_ref._lock:
                self.server_ref.abandoned += 1

    # -- plumbing ---------------------------------------------------------
    def _head(self, status: int, ctype: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        if length is None:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def _send(self, status: int, obj: object = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(obj).encode()
        self._head(status, "application/json; charset=utf-8", len(data))
        self.wfile.write(data)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _fault(self, fault: Fault | None, model: str) -> bool:
        """Apply a fault to a non-streamed answer; True if the request was fully handled."""
        fake = self.server_ref
        if fault is Fault.HANG:
            fake._stopping.wait()
            self.close_connection = True
            return True
        if fault is Fault.SLOW:
            fake._stopping.wait(fake.slow_delay)
            return False
        if fault is Fault.MODEL_MISSING:
            msg = f'model "{model}" not found, try pulling it first'
            self._send(404, {"error": msg})
        elif fault is Fault.SERVER_ERROR:
            self._send(500, {"error": "fake server error"})
        elif fault is Fault.MALFORMED_JSON:
            self._send(200, raw=b"<html>this is not json")
        elif fault is Fault.TRUNCATED_STREAM:
            self._head(200, "application/json; charset=utf-8", 1000)
            self.wfile.write(b'{"model": "trunc')
        return fault is not None

    # -- routing ----------------------------------------------------------
    def do_GET(self) -> None:
        self._route(None)

    def do_POST(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        self._route(body)

    def _route(self, body: dict | None) -> None:
        fake, path = self.server_ref, self.path.split("?")[0]
        fake._log({"path": path, "method": self.command, "body": body})
        body = body if isinstance(body, dict) else {}
        model = body.get("model", "")
        if path in ("/api/tags", "/api/version"):
            if not self._fault(fake.tags_fault, model):
                self._send(200, self._tags() if path == "/api/tags" else {"version": "0.12.0"})
        elif path in ("/api/chat", "/api/embed") and model not in fake.models:
            self._fault(Fault.MODEL_MISSING, model)
        elif path == "/api/embed":
            fault = fake.embed_fault
            with fake._lock:
                fake._embeds += 1
                if fake.embed_hang_after is not None and fake._embeds > fake.embed_hang_after:
                    fault = Fault.HANG
            if not self._fault(fault, model):
                inp = body.get("input", "")
                texts = [inp] if isinstance(inp, str) else list(inp)
                vecs = [embed_text(t, fake.embed_dim) for t in texts]
                self._send(200, {"model": model, "embeddings": vecs, "total_duration": 1000})
        elif path == "/api/chat":
            self._chat(model, body.get("stream", True))
        else:
            self._send(404, {"error": "not found"})

    def _tags(self) -> dict:
        models = self.server_ref.models
        return {
            "models": [{"name": m, "model": m, **_TAG_FIELDS, "digest": _digest(m)} for m in models]
        }

    def _chat(self, model: str, stream: bool) -> None:
        fake = self.server_ref
        reply = fake._next_chat()
        if reply is None:
            self._send(500, {"error": "no scripted reply"})
            return
        while reply.gate is not None and not reply.gate.wait(0.05):
            if fake._stopping.is_set():
                self.close_connection = True
                return
        size = max(1, reply.chunk_size)
        chunks = [reply.content[i : i + size] for i in range(0, len(reply.content), size)]
        final = _chat_obj(model, "" if stream else reply.content, True)
        final.update(done_reason="stop", total_duration=1_000_000, eval_count=len(chunks))
        streamed_fault = stream and reply.fault in (Fault.MALFORMED_JSON, Fault.TRUNCATED_STREAM)
        if not streamed_fault and self._fault(reply.fault, model):
            return
        if not stream:
            self._send(200, final)
            return
        self._head(200, "application/x-ndjson", None)
        lines = [json.dumps(_chat_obj(model, c, False)).encode() for c in chunks]
        if reply.fault is Fault.MALFORMED_JSON:
            lines = lines[:1] + [b"this is not json"]
        elif reply.fault is Fault.TRUNCATED_STREAM:
            lines = lines[: max(1, len(lines) // 2)]
        for i, line in enumerate(lines):
            if i and reply.chunk_delay and fake._stopping.wait(reply.chunk_delay):
                return
            self._chunk(line + b"\n")
        if reply.fault is Fault.TRUNCATED_STREAM:
            return  # connection closes without the done line or the terminating 0-chunk
        self._chunk(json.dumps(final).encode() + b"\n")
        self.wfile.write(b"0\r\n\r\n")


_TAG_FIELDS = {
    "modified_at": "2026-01-01T00:00:00Z",
    "size": 1,
    "details": {"format": "gguf", "family": "fake", "families": ["fake"], "parameter_size": "1B"},
}


def _digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def _chat_obj(model: str, content: str, done: bool) -> dict:
    msg = {"role": "assistant", "content": content}
    return {"model": model, "created_at": _now(), "message": msg, "done": done}


@pytest.fixture(name="fake_ollama")
def fake_ollama_fixture() -> Iterator[FakeOllama]:
    """Fixture `fake_ollama`: a started FakeOllama, stopped after the test."""
    with FakeOllama() as server:
        yield server


# `from tests.fake_ollama import fake_ollama` (conftest) and importing `fake_ollama_fixture`
# both register the fixture named "fake_ollama". Test modules should import the latter so
# that ruff does not flag the `fake_ollama` test argument as F811.
fake_ollama = fake_ollama_fixture
