"""Embedders for the vector half of hybrid recall. Optional: recall works lexically without one."""

from __future__ import annotations

from typing import Protocol


class EmbedderUnavailable(Exception):
    """The embedder could not produce vectors; the message says why and what to do."""


class Embedder(Protocol):
    """Turns texts into vectors. ``id`` names the model so the index knows when to rebuild."""

    @property
    def id(self) -> str: ...

    def embed(self, texts: list[str]) -> list[list[float]]: ...


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

    def embed(self, texts: list[str]) -> list[list[float]]:
        import httpx
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
        return vectors
