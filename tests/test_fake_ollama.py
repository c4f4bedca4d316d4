"""The real ollama client (sync and async) against tests/fake_ollama.py.

These tests also pin down which exception the real client raises for each fault;
the table lives in the fake_ollama module docstring.
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

import httpx
import ollama
import pytest

from tests.fake_ollama import (  # noqa: F401  (fake_ollama_fixture registers "fake_ollama")
    ChatReply,
    FakeOllama,
    Fault,
    embed_text,
    fake_ollama_fixture,
    refused_host,
)

MODEL = "qwen2.5:7b"
EMBED = "nomic-embed-text"
MSGS = [{"role": "user", "content": "draft the incident"}]
SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "severity": {"type": "integer"}},
    "required": ["title", "severity"],
}
DRAFT = json.dumps({"title": "disk full on db-1", "severity": 2})


class Caller:
    """One real client (sync or async) per test; `await call(stream, parts)` runs a chat.
    Streamed parts are appended to `parts` as they arrive (so a test can see what came before
    an exception). Returns the non-stream reply. Clients are not closed explicitly: the fake
    answers with `Connection: close`, so no pooled sockets outlive a request."""

    def __init__(self, mode: str, host: str, timeout: float | None = 2.0):
        self.mode = mode
        cls = ollama.Client if mode == "sync" else ollama.AsyncClient
        self.client: Any = cls(host=host, timeout=timeout)

    async def __call__(self, stream: bool, parts: list | None = None, model: str = MODEL):
        parts = [] if parts is None else parts
        r = self.client.chat(model=model, messages=MSGS, stream=stream)
        if self.mode == "async":
            r = await r
        if not stream:
            return r
        if self.mode == "sync":
            for p in r:
                parts.append(p)
        else:
            async for p in r:
                parts.append(p)
        return None


BOTH = pytest.mark.parametrize("mode", ["sync", "async"])
STREAM = pytest.mark.parametrize("stream", [False, True], ids=["nonstream", "stream"])


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


# -- happy paths ------------------------------------------------------------------


def test_sync_chat_nonstream_with_schema(fake_ollama):
    fake_ollama.script_chat(ChatReply(DRAFT))
    with ollama.Client(host=fake_ollama.host, timeout=2) as c:
        r = c.chat(model=MODEL, messages=MSGS, format=SCHEMA, options={"temperature": 0})
    assert r.message.role == "assistant"
    assert json.loads(r.message.content) == {"title": "disk full on db-1", "severity": 2}
    assert r.done is True and r.done_reason == "stop" and r.model == MODEL
    (body,) = fake_ollama.chat_requests()
    assert body["format"] == SCHEMA and body["stream"] is False
    assert body["options"]["temperature"] == 0 and body["messages"] == MSGS


async def test_async_stream_yields_chunks_then_done(fake_ollama):
    fake_ollama.script_chat(ChatReply(DRAFT, chunk_size=7))
    parts: list = []
    await Caller("async", fake_ollama.host)(True, parts)
    assert len(parts) == math.ceil(len(DRAFT) / 7) + 1
    assert [p.done for p in parts] == [False] * (len(parts) - 1) + [True]
    assert all(len(p.message.content) <= 7 for p in parts)
    assert "".join(p.message.content for p in parts) == DRAFT
    assert parts[-1].message.content == "" and parts[-1].done_reason == "stop"
    assert fake_ollama.chat_requests()[0]["stream"] is True


@BOTH
async def test_fifo_queue_then_default_then_500(fake_ollama, mode):
    fake_ollama.script_chat(ChatReply("one"), ChatReply("two"))
    call = Caller(mode, fake_ollama.host)
    assert (await call(False)).message.content == "one"
    assert (await call(False)).message.content == "two"
    with pytest.raises(ollama.ResponseError) as ei:
        await call(False)
    assert ei.value.status_code == 500 and ei.value.error == "no scripted reply"
    fake_ollama.default_chat = ChatReply("fallback")
    assert (await call(False)).message.content == "fallback"
    assert (await call(False)).message.content == "fallback"


async def test_embed_sync_and_async(fake_ollama):
    texts = ["disk full on db-1", "db-1 disk is full again", "TLS certificate expired"]
    r = ollama.Client(host=fake_ollama.host).embed(model=EMBED, input=texts)
    assert len(r.embeddings) == 3 and all(len(v) == 64 for v in r.embeddings)
    assert all(abs(math.hypot(*v) - 1) < 1e-9 for v in r.embeddings)
    a, b, c = r.embeddings
    assert cosine(a, b) > cosine(a, c) and cosine(a, b) > 0.5
    fake_ollama.embed_dim = 32
    r2 = await ollama.AsyncClient(host=fake_ollama.host).embed(model=EMBED, input=texts[0])
    assert len(r2.embeddings) == 1 and r2.embeddings[0] == pytest.approx(embed_text(texts[0], 32))
    assert embed_text("Disk FULL!") == embed_text("disk full")  # deterministic, normalised tokens
    assert math.hypot(*embed_text("")) == pytest.approx(1.0)  # never a zero vector


async def test_list_tags_and_version(fake_ollama):
    r = ollama.Client(host=fake_ollama.host).list()
    assert [m.model for m in r.models] == [MODEL, EMBED]
    assert r.models[0].modified_at.year == 2026 and r.models[0].details.family == "fake"
    r2 = await ollama.AsyncClient(host=fake_ollama.host).list()
    assert r2.models[1].digest.startswith("sha256:")
    assert httpx.get(fake_ollama.host + "/api/version").json() == {"version": "0.12.0"}
    assert [(q["method"], q["path"]) for q in fake_ollama.requests] == [
        ("GET", "/api/tags"),
        ("GET", "/api/tags"),
        ("GET", "/api/version"),
    ]


# -- HTTP error faults -> ollama.ResponseError ----------------------------------------


@BOTH
@STREAM
async def test_unknown_model_404(fake_ollama, mode, stream):
    fake_ollama.script_chat(ChatReply("kept"))
    call = Caller(mode, fake_ollama.host)
    with pytest.raises(ollama.ResponseError) as ei:
        await call(stream, model="llama9:70b")
    assert ei.value.status_code == 404
    assert ei.value.error == 'model "llama9:70b" not found, try pulling it first'
    assert (await call(False)).message.content == "kept"  # not popped


@BOTH
@STREAM
@pytest.mark.parametrize("fault,status", [(Fault.MODEL_MISSING, 404), (Fault.SERVER_ERROR, 500)])
async def test_scripted_http_errors(fake_ollama, mode, stream, fault, status):
    fake_ollama.script_chat(ChatReply(DRAFT, fault=fault))
    call = Caller(mode, fake_ollama.host)
    with pytest.raises(ollama.ResponseError) as ei:
        await call(stream)
    assert ei.value.status_code == status


def test_embed_and_tags_faults(fake_ollama):
    c = ollama.Client(host=fake_ollama.host, timeout=2)
    with pytest.raises(ollama.ResponseError) as ei:
        c.embed(model="no-such-embedder", input="x")
    assert ei.value.status_code == 404
    fake_ollama.embed_fault = Fault.SERVER_ERROR
    with pytest.raises(ollama.ResponseError) as ei:
        c.embed(model=EMBED, input="x")
    assert ei.value.status_code == 500
    fake_ollama.embed_fault = Fault.MALFORMED_JSON
    with pytest.raises(json.JSONDecodeError):
        c.embed(model=EMBED, input="x")
    fake_ollama.tags_fault = Fault.SERVER_ERROR
    with pytest.raises(ollama.ResponseError) as ei:
        c.list()
    assert ei.value.status_code == 500


# -- transport faults ------------------------------------------------------------------


@BOTH
@STREAM
async def test_hang_hits_client_timeout(fake_ollama, mode, stream):
    fake_ollama.script_chat(ChatReply(DRAFT, fault=Fault.HANG))
    call = Caller(mode, fake_ollama.host, timeout=0.5)
    t0 = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        await call(stream)
    assert time.monotonic() - t0 < 2


def test_embed_hang_times_out(fake_ollama):
    fake_ollama.embed_fault = Fault.HANG
    with pytest.raises(httpx.ReadTimeout):
        ollama.Client(host=fake_ollama.host, timeout=0.5).embed(model=EMBED, input="x")


@BOTH
async def test_stall_mid_stream_times_out_after_first_chunk(fake_ollama, mode):
    fake_ollama.script_chat(ChatReply(DRAFT, chunk_size=8, chunk_delay=5))
    call = Caller(mode, fake_ollama.host, timeout=0.5)
    parts: list = []
    with pytest.raises(httpx.ReadTimeout):
        await call(True, parts)
    assert [p.message.content for p in parts] == [DRAFT[:8]]


@BOTH
async def test_slow_answers_after_delay(fake_ollama, mode):
    fake_ollama.slow_delay = 0.2
    fake_ollama.script_chat(ChatReply("late", fault=Fault.SLOW))
    call = Caller(mode, fake_ollama.host, timeout=2)
    t0 = time.monotonic()
    assert (await call(False)).message.content == "late"
    assert 0.2 <= time.monotonic() - t0 < 1.5


@BOTH
async def test_refused(mode):
    call = Caller(mode, refused_host())
    with pytest.raises(ConnectionError):  # builtin; ollama wraps httpx.ConnectError
        await call(False)
    with pytest.raises(httpx.ConnectError):  # streaming path is NOT wrapped by ollama 0.6.3
        await call(True)


@BOTH
async def test_malformed_json(fake_ollama, mode):
    fake_ollama.script_chat(ChatReply(DRAFT, fault=Fault.MALFORMED_JSON))
    call = Caller(mode, fake_ollama.host)
    with pytest.raises(json.JSONDecodeError):
        await call(False)
    fake_ollama.script_chat(ChatReply(DRAFT, chunk_size=8, fault=Fault.MALFORMED_JSON))
    parts: list = []
    with pytest.raises(json.JSONDecodeError):
        await call(True, parts)
    assert [p.message.content for p in parts] == [DRAFT[:8]]


@BOTH
async def test_truncated(fake_ollama, mode):
    fake_ollama.script_chat(ChatReply(DRAFT, fault=Fault.TRUNCATED_STREAM))
    call = Caller(mode, fake_ollama.host)
    with pytest.raises(httpx.RemoteProtocolError):
        await call(False)
    fake_ollama.script_chat(ChatReply(DRAFT, chunk_size=8, fault=Fault.TRUNCATED_STREAM))
    parts: list = []
    with pytest.raises(httpx.RemoteProtocolError):
        await call(True, parts)
    assert parts and not any(p.done for p in parts)
    assert DRAFT.startswith("".join(p.message.content for p in parts))


# -- lifecycle --------------------------------------------------------------------------


def test_stop_releases_hanging_request_quickly():
    server = FakeOllama().start()
    server.default_chat = ChatReply(fault=Fault.HANG)
    errors: list = []

    def call():
        try:
            ollama.Client(host=server.host, timeout=10).chat(model=MODEL, messages=MSGS)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    t = threading.Thread(target=call)
    t.start()
    deadline = time.monotonic() + 2
    while not server.requests and time.monotonic() < deadline:
        time.sleep(0.01)
    t0 = time.monotonic()
    server.stop()
    t.join(timeout=3)
    assert not t.is_alive() and time.monotonic() - t0 < 1
    assert isinstance(errors[0], httpx.RemoteProtocolError)  # server disconnected, no reply


def test_a_gated_reply_is_received_at_once_and_answered_only_once_released(fake_ollama):
    gate = threading.Event()
    reply = ChatReply("placeholder", gate=gate)
    fake_ollama.script_chat(reply)
    client = ollama.Client(host=fake_ollama.host, timeout=10)
    answers: list[str] = []
    caller = threading.Thread(target=lambda: answers.append(client.chat(
        model="qwen2.5:7b", messages=[{"role": "user", "content": "hi"}],
        stream=False).message.content or ""))
    caller.start()
    for _ in range(500):
        if fake_ollama.chat_requests():
            break
        time.sleep(0.01)
    caller.join(timeout=0.3)
    assert fake_ollama.chat_requests() and caller.is_alive() and not answers  # held
    reply.content = DRAFT  # what it answers is read when released
    gate.set()
    caller.join(timeout=10)
    assert answers == [DRAFT]
