"""Indexing a big memory is resumable: what was embedded before an interruption (Ctrl-C, kill)
is read back from the embedding cache, never embedded again; a killed build leaves no
half-built index eating the disk.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from store.embedder import EmbeddingCache, normalised
from store.index import MemoryIndex, freshness
from store.loader import LoadedMemory, load_incidents
from store.recall import recall
from tests.fake_ollama import FakeOllama, Fault, fake_ollama_fixture  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
SIZE = 600  # incidents: three embedding chunks of 256, 256 and 88
SERVICES = ["ledger", "billing", "checkout", "search", "auth", "queue"]


def big_memory(write_incidents: Any, incident: Any, size: int = SIZE) -> LoadedMemory:
    return load_incidents(write_incidents([
        incident(f"INC-{n}", service=f"{SERVICES[n % len(SERVICES)]}-api",
                 title=f"Incident number {n}",
                 symptoms=f"symptom {n}: the {SERVICES[n % len(SERVICES)]} queue stalled "
                          f"after change {n * 7}")
        for n in range(size)]))


class CountingEmbedder:
    """Hashed bag-of-words vectors; counts every text it is asked to embed; can be told to
    stop (KeyboardInterrupt, as Ctrl-C) on its n-th call."""

    id = "counting:1"
    dim = 32

    def __init__(self, interrupt_on_call: int | None = None) -> None:
        self.calls = 0
        self.embedded = 0
        self.interrupt_on_call = interrupt_on_call

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        if self.calls == self.interrupt_on_call:
            raise KeyboardInterrupt
        self.embedded += len(texts)
        rows = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in zip(rows, texts, strict=True):
            for word in text.split():
                row[hash(word) % self.dim] += 1.0
        return normalised(rows)


def test_an_interrupted_build_is_resumed_without_embedding_anything_twice(
        tmp_path: Path, write_incidents: Any, incident: Any) -> None:
    memory = big_memory(write_incidents, incident)
    data = tmp_path / "data"
    first = CountingEmbedder(interrupt_on_call=3)  # Ctrl-C during the third chunk
    with pytest.raises(KeyboardInterrupt):
        MemoryIndex(data, first, EmbeddingCache(data / "embeddings.sqlite")).open(memory)
    assert first.embedded == 512
    assert freshness(data / "index", memory.source_hash, first.id) == "missing"
    assert [p.name for p in data.glob(".index-*")] == []

    again = CountingEmbedder()
    cache = EmbeddingCache(data / "embeddings.sqlite")
    heard: list[tuple[int, int]] = []
    notices = MemoryIndex(data, again, cache).open(
        memory, progress=lambda done, total: heard.append((done, total)))

    assert again.embedded == SIZE - 512  # only what the interrupted run had not done
    assert (cache.hits, cache.misses) == (512, SIZE - 512)
    assert heard[0] == (512, SIZE) and heard[-1] == (SIZE, SIZE)
    assert any(f"index built: {SIZE} incidents" in n and "with vectors" in n for n in notices)

    # and a third build embeds nothing at all
    third = CountingEmbedder()
    MemoryIndex(data, third, EmbeddingCache(data / "embeddings.sqlite")).build(memory)
    assert third.embedded == 0


def test_a_killed_triage_index_is_resumed_by_the_next_one(
        tmp_path: Path, write_incidents: Any, incident: Any, fake_ollama: FakeOllama) -> None:
    """`triage index` against an embedding server, SIGKILLed once the cache holds a chunk; the
    next `triage index` asks the server only for the documents the cache lacks."""
    memory = big_memory(write_incidents, incident)
    incidents = memory.files[0]
    data = tmp_path / "data"
    env = {**os.environ, "TRIAGE_INCIDENTS": str(incidents), "TRIAGE_DATA_DIR": str(data),
           "OLLAMA_HOST": fake_ollama.host, "TRIAGE_EMBED_MODEL": "nomic-embed-text"}
    # The first cache chunk (256 texts = 8 requests of the embedder's 32) is answered; the
    # next request hangs, so the build waits there (up to the embedder's 10 s timeout) to be
    # killed — a point fixed by the server, not by how fast this machine is.
    fake_ollama.embed_hang_after = 256 // 32
    process = subprocess.Popen([sys.executable, "-m", "console", "index"], env=env, cwd=REPO,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    cached = 0
    deadline = time.monotonic() + 120  # (a bound for a broken build, not a speed assumption)
    try:
        while cached < 256 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
            cached = cached_rows(data / "embeddings.sqlite")
        assert process.poll() is None, "the build ended instead of waiting on the server"
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait(timeout=30)
    cached = cached_rows(data / "embeddings.sqlite")
    assert cached == 256
    assert freshness(data / "index", memory.source_hash, "ollama:nomic-embed-text") == "missing"

    fake_ollama.embed_hang_after = None
    fake_ollama.requests.clear()
    done = subprocess.run([sys.executable, "-m", "console", "index"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stderr
    assert f"index built: {SIZE} incidents" in done.stdout
    asked = [text for r in fake_ollama.requests if r["path"] == "/api/embed"
             for text in r["body"]["input"]]
    assert len(asked) == SIZE - cached  # nothing the killed run embedded was embedded again
    assert [p.name for p in data.glob(".index-*")] == []


def cached_rows(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with sqlite3.connect(path, timeout=5) as connection:
            return int(connection.execute("SELECT count(*) FROM vectors").fetchone()[0])
    except sqlite3.Error:
        return 0


def test_a_build_removes_what_a_killed_build_left_behind(
        tmp_path: Path, write_incidents: Any, incident: Any) -> None:
    memory = big_memory(write_incidents, incident, size=3)
    data = tmp_path / "data"
    data.mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    abandoned = [data / f".index-build-{dead}-x1y2", data / f".index-old-{dead}"]
    for path in abandoned:
        (path / "incidents.lance").mkdir(parents=True)
        (path / "incidents.lance" / "big.lance").write_bytes(b"\0" * 4096)
    mine = data / f".index-build-{os.getpid()}-busy"  # a build still running: left alone
    mine.mkdir()

    index = MemoryIndex(data, None)
    index.open(memory)

    assert [p.exists() for p in abandoned] == [False, False]
    assert mine.exists()
    found = recall(index, "billing-api queue stalled after change 7")
    assert [i.incident_id for i in found.incidents][:1] == ["INC-1"]
