"""The local Ollama chat model, with explicit timeouts and named failure reasons."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from console.engine.briefing.request import BriefingCancelled


def is_pulled(model: str, pulled: list[str]) -> bool:
    """Ollama lists ``name:latest`` for a model pulled as ``name``."""
    return model in pulled or f"{model}:latest" in pulled


class ModelUnavailable(Exception):
    """An infrastructure failure (refused, timeout, model missing …): never retried into the
    model; the deterministic briefing is shown with this reason."""


@dataclass(frozen=True)
class Progress:
    attempt: int
    characters: int
    elapsed: float


# A draft is 250–470 tokens (make model-check, a 1.5B model); a model that rambles inside one
# string would otherwise stream until the attempt's timeout (2,780 tokens in 300 s, measured)
# and lose the attempt. Cut here, the draft fails to parse and the next attempt is steered.
MAX_OUTPUT_TOKENS = 800


class ModelClient:
    """Streams a chat completion in JSON mode; the text is only returned whole, for guards."""

    def __init__(self, host: str | None, model: str, timeout: float,
                 stall: float | None = None) -> None:
        """``timeout``: one attempt, whole; ``stall``: no byte from the server for this long
        (the first token included: a CPU model reads its prompt first) means it is hung."""
        self.host = host
        self.model = model
        self.timeout = timeout
        self.stall = timeout if stall is None else stall
        self._ollama: Any = None

    def _client(self) -> Any:
        """One ollama.Client per ModelClient (its retries and the listing share it): building
        one loads a TLS context (~30 ms), which every attempt used to pay again."""
        if self._ollama is None:
            import httpx
            import ollama

            self._ollama = ollama.Client(
                host=self.host, timeout=httpx.Timeout(self.stall, connect=min(self.stall, 3.0)))
        return self._ollama

    def chat(self, messages: list[dict[str, str]], schema: dict[str, Any], attempt: int,
             on_progress: Callable[[Progress], None] | None = None,
             deadline: float | None = None,
             cancelled: Callable[[], bool] | None = None) -> str:
        """The model's whole answer, or ModelUnavailable saying why there is none.

        Raises BriefingCancelled as soon as ``cancelled()`` is true between chunks; leaving the
        stream closes the HTTP response, so the server stops generating for us.
        """
        import httpx
        import ollama

        started = time.monotonic()
        limit = started + self.timeout if deadline is None else min(deadline,
                                                                     started + self.timeout)
        pieces: list[str] = []
        size = 0
        try:
            stream = self._client().chat(model=self.model, messages=messages, format=schema,
                                         stream=True, options={"temperature": 0,
                                                               "num_predict": MAX_OUTPUT_TOKENS})
            try:
                for chunk in stream:
                    if cancelled is not None and cancelled():
                        raise BriefingCancelled()
                    piece = chunk.message.content or ""
                    pieces.append(piece)
                    size += len(piece)
                    now = time.monotonic()
                    if on_progress is not None:
                        on_progress(Progress(attempt, size, now - started))
                    if now > limit:
                        raise ModelUnavailable(f"model {self.model} too slow: no complete "
                                               f"answer within {self.timeout:g}s "
                                               "(TRIAGE_MODEL_TIMEOUT)")
                    if chunk.done:
                        break
            finally:
                # Closing the generator closes the HTTP response: the server stops streaming.
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
        except (ModelUnavailable, BriefingCancelled):
            raise
        except ollama.ResponseError as exc:
            if exc.status_code == 404 and "pull" in str(exc.error).lower():
                # (Ollama's own 404: 'model "NAME" not found, try pulling it first')
                raise ModelUnavailable(f"model {self.model} is not pulled — run: "
                                       f"ollama pull {self.model}") from exc
            if exc.status_code == 404:
                raise ModelUnavailable(f"not an Ollama server at {self.host or 'default host'} "
                                       "(HTTP 404 for /api/chat): set OLLAMA_HOST to where "
                                       "Ollama runs (`triage doctor` checks it)") from exc
            raise ModelUnavailable(f"model server error {exc.status_code}: "
                                   f"{str(exc.error)[:200]}") from exc
        except (ConnectionError, httpx.ConnectError) as exc:
            raise ModelUnavailable(f"model server not reachable at {self.host or 'default host'} "
                                   "(connection refused) — start it with `ollama serve`") from exc
        except httpx.ReadTimeout as exc:
            raise ModelUnavailable(f"model {self.model} timed out after {self.stall:g}s without "
                                   "a token — the server looks hung (TRIAGE_MODEL_STALL)") from exc
        except httpx.TimeoutException as exc:
            raise ModelUnavailable(f"model {self.model} timed out after {self.stall:g}s "
                                   f"({type(exc).__name__})") from exc
        except httpx.HTTPError as exc:
            raise ModelUnavailable(f"model stream broke off ({type(exc).__name__}: "
                                   f"{str(exc)[:120]})") from exc
        except ValueError as exc:
            raise ModelUnavailable(f"model server sent malformed data ({str(exc)[:120]})") from exc
        return "".join(pieces)

    def list_models(self) -> list[str]:
        """Names of the models pulled on the server (for `triage doctor`)."""
        import httpx
        import ollama

        try:
            response = self._client().list()
        except ollama.ResponseError as exc:
            raise ModelUnavailable(f"server error {exc.status_code}") from exc
        except (ConnectionError, httpx.HTTPError, ValueError) as exc:
            raise ModelUnavailable(f"Ollama not reachable at {self.host or 'default host'} "
                                   f"({type(exc).__name__})") from exc
        return [m.model or "" for m in response.models]
