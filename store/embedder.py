"""Embedders for the dense half of hybrid recall, and the content-hash cache in front of them.

Default: all-MiniLM-L6-v2 run in-process (store/minilm.py; no server, no torch). An Ollama
embedding model when ``TRIAGE_EMBED_MODEL`` names one; ``TRIAGE_EMBED_MODEL=none`` means lexical
recall only. Every embedder returns float32 rows, L2-normalised, so a dot product is a cosine.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from store.faults import fault_name

if TYPE_CHECKING:
    import numpy as np

# Progress of a long embedding run: (texts done, texts in all).
EmbedProgress = Callable[[int, int], None]
NO_EMBEDDER = "none"


class EmbedderUnavailable(Exception):
    """The embedder could not produce vectors; the message says why and what to do."""


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors. ``id`` names the model for the index."""

    @property
    def id(self) -> str: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    import numpy as np

    array = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms == 0, 1.0, norms)


class OllamaEmbedder:
    """Embeddings from a local Ollama server, called with explicit timeouts.

    LanceDB's own Ollama embedding function contacts the server at import and retries an
    unreachable host for minutes, so the client is called directly here.
    """

    def __init__(self, host: str | None, model: str, timeout: float = 10.0,
                 batch_size: int = 32) -> None:
        self.host = host
        self.model = model
        self.timeout = timeout
        self.batch_size = batch_size

    @property
    def id(self) -> str:
        return f"ollama:{self.model}"

    def embed(self, texts: list[str]) -> np.ndarray:
        import httpx
        import numpy as np
        import ollama

        client = ollama.Client(host=self.host, timeout=httpx.Timeout(self.timeout, connect=2.0))
        vectors: list[list[float]] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = texts[start:start + self.batch_size]
                response = client.embed(model=self.model, input=batch)
                vectors.extend([list(map(float, v)) for v in response.embeddings])
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise EmbedderUnavailable(
                    f"embedding model {self.model!r} is not pulled — run: ollama pull {self.model}"
                ) from exc
            raise EmbedderUnavailable(f"Ollama embed failed ({exc.status_code}): {exc.error}") from exc
        except (ConnectionError, httpx.HTTPError, OSError) as exc:
            raise EmbedderUnavailable(
                f"Ollama not reachable at {self.host or 'default host'} "
                f"({type(exc).__name__}) — start it with `ollama serve` or unset TRIAGE_EMBED_MODEL"
            ) from exc
        if len(vectors) != len(texts) or any(len(v) != len(vectors[0]) for v in vectors):
            raise EmbedderUnavailable("Ollama returned embeddings of inconsistent shape")
        if not vectors:
            return np.zeros((0, 0), dtype=np.float32)
        return normalised(np.array(vectors, dtype=np.float32))


def text_key(text: str) -> str:
    """The cache key of one text: its sha256 (the embedder id is the other half of the key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class EmbeddingCache:
    """Vectors by (embedder id, text sha256) in SQLite, so a save re-embeds only what changed.

    SQLite does the locking, so two consoles (or a console and ``triage index``) may share it.
    A cache that cannot be opened or written (full disk, read-only data dir) is skipped: it only
    ever saves time. ``write_error`` then says why ("<fault> at <path>"), for a notice: vectors
    that were not kept are embedded again by the next build.

    Every batch is committed as soon as it is embedded, so a build that is interrupted (Ctrl-C,
    kill) is resumed by the next one: what was embedded is read back, not embedded again.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.write_error: str | None = None
        self.hits = 0  # texts answered from the cache
        self.misses = 0  # texts it did not hold (embedded, then offered to put)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0)
        try:
            connection.execute("CREATE TABLE IF NOT EXISTS vectors (embedder TEXT NOT NULL, "
                               "sha256 TEXT NOT NULL, vector BLOB NOT NULL, "
                               "PRIMARY KEY (embedder, sha256))")
        except sqlite3.Error:
            connection.close()
            raise
        return connection

    def get(self, embedder_id: str, keys: list[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        try:
            with closing(self._connect()) as connection:
                for start in range(0, len(keys), 500):
                    chunk = keys[start:start + 500]
                    marks = ",".join("?" * len(chunk))
                    found.update(connection.execute(
                        f"SELECT sha256, vector FROM vectors WHERE embedder = ? AND sha256 IN ({marks})",
                        [embedder_id, *chunk]).fetchall())
        except (sqlite3.Error, OSError):
            return {}
        self.hits += len(found)
        self.misses += len(keys) - len(found)
        return found

    def forget_other_dimensions(self, embedder_id: str, dim: int) -> None:
        """Drop this embedder's vectors whose dimension is not ``dim``: the model changed
        under its name (an Ollama tag re-pulled), so the next build embeds them afresh."""
        try:
            with closing(self._connect()) as connection, connection:
                connection.execute("DELETE FROM vectors WHERE embedder = ? AND length(vector) != ?",
                                   (embedder_id, dim * 4))
        except (sqlite3.Error, OSError) as exc:
            self.write_error = f"{fault_name(exc)} at {self.path}"

    def put(self, embedder_id: str, items: dict[str, bytes]) -> None:
        try:
            with closing(self._connect()) as connection, connection:
                connection.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                                       [(embedder_id, key, blob) for key, blob in items.items()])
        except (sqlite3.Error, OSError) as exc:
            self.write_error = f"{fault_name(exc)} at {self.path}"


def embed_cached(embedder: Embedder, texts: list[str], cache: EmbeddingCache | None,
                 progress: EmbedProgress | None = None, chunk: int = 256) -> np.ndarray:
    """Embed ``texts`` (rows in the same order), taking what it can from ``cache``.

    A model can change under the same name (an Ollama tag re-pulled): vectors cached from it
    then have another dimension than the ones it makes now. Cached vectors of another
    dimension than this call's fresh ones are embedded again (recall, which meets the change
    first, drops the stale ones: EmbeddingCache.forget_other_dimensions)."""
    import numpy as np

    keys = [text_key(text) for text in texts]
    cached = cache.get(embedder.id, list(dict.fromkeys(keys))) if cache else {}
    text_of = dict(zip(keys, texts, strict=True))
    fresh: dict[str, bytes] = {}

    def embed(batch: list[str]) -> None:
        vectors = embedder.embed([text_of[k] for k in batch])
        blobs = {k: np.asarray(v, dtype=np.float32).tobytes() for k, v in zip(batch, vectors,
                                                                            strict=True)}
        fresh.update(blobs)
        if cache:
            cache.put(embedder.id, blobs)

    missing = list(dict.fromkeys(k for k in keys if k not in cached))
    done = len(texts) - sum(1 for k in keys if k not in cached)
    if progress:
        progress(done, len(texts))
    position = 0
    while position < len(missing):
        batch = missing[position:position + chunk]
        position += len(batch)
        embed(batch)
        embedded = set(batch)
        done += sum(1 for k in keys if k in embedded)
        stale = _other_dimension(cached, fresh)  # cached before the model changed: redo them
        if stale:
            cached = {k: v for k, v in cached.items() if k not in stale}
            missing.extend(stale)
            done -= sum(1 for k in keys if k in stale)
        if progress:
            progress(done, len(texts))
    every = {**cached, **fresh}
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([np.frombuffer(every[k], dtype=np.float32) for k in keys])


def _other_dimension(cached: dict[str, bytes], fresh: dict[str, bytes]) -> set[str]:
    """Cached vectors whose size differs from the fresh ones' (none when nothing is fresh)."""
    if not fresh:
        return set()
    size = len(next(iter(fresh.values())))
    return {k for k, v in cached.items() if len(v) != size}
