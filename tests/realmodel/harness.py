"""A small server speaking Ollama's HTTP API over a real local model (llama-cpp-python).

    ~/.cache/triage-model-check/venv/bin/python tests/realmodel/harness.py PORT \
        --model-file MODEL.gguf [--name qwen2.5-coder:1.5b] [--log requests.jsonl]

A test harness for `make model-check` and the ``realmodel`` tests, not part of the product
(users run Ollama). It follows Ollama's documented REST API (docs/api.md upstream), the
reference the fake server in tests/fake_ollama.py follows too:

* ``GET /`` → ``Ollama is running``; ``GET /api/version`` → ``{"version": …}``;
* ``GET /api/tags`` → ``{"models": [{name, model, modified_at, size, digest, details}]}``;
* ``POST /api/show`` → details of the served model, or 404
  ``{"error": "model \"x\" not found, try pulling it first"}`` for any other name;
* ``POST /api/chat`` → NDJSON (chunked) when ``stream`` is true or absent: one chunk per piece
  of ``message.content`` with ``done: false``, then a final chunk with ``done: true``,
  ``done_reason`` (``stop`` / ``length``), ``total_duration``, ``load_duration``,
  ``prompt_eval_count``, ``prompt_eval_duration``, ``eval_count``, ``eval_duration`` (ns).
  ``stream: false`` answers one JSON object with the same fields. ``format`` may be
  ``"json"`` or a JSON schema (→ llama-cpp-python ``response_format`` json_object + schema, a
  grammar). ``options``: temperature, top_p, top_k, seed, num_predict, stop.
  An unknown model → 404 as above.

One llama context is not thread-safe: generations are serialised by a lock (requests queue).
When the client closes the stream, generation stops (the next write fails; the token
generator is closed). Every chat request is logged as one JSON line to ``--log``: start/end
time, token counts, durations, done_reason, whether the client left, the output.

Binds 127.0.0.1:PORT; prints ``READY <port>`` on stdout once the model is loaded.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import select
import socket
import sys
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

EVAL_SLICE = 128  # prompt tokens evaluated between two checks for a departed client
VERSION = "0.6.8"  # the Ollama API version this harness answers as (docs/api.md of that era)


def _now_iso() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class ClientGone(Exception):
    """The client closed the connection: stop generating for it."""


class Model:
    """The loaded llama.cpp model, one generation at a time, with token counts per request."""

    def __init__(self, path: Path, name: str, threads: int, n_ctx: int) -> None:
        import llama_cpp

        started = time.monotonic_ns()
        model = self

        class Counting(llama_cpp.Llama):  # type: ignore[misc, name-defined]
            """Counts the prompt's tokens and each generated token (Ollama reports both)."""

            def eval(self, tokens: Any) -> None:
                """The prompt in slices, checking between them whether the client left (a
                2,000-token prompt takes ~35 s on one thread: not spent on nobody)."""
                for start in range(0, len(tokens), EVAL_SLICE):
                    if model.cancelled():
                        raise ClientGone()
                    super().eval(tokens[start:start + EVAL_SLICE])

            def generate(self, tokens: Any, *args: Any, **kwargs: Any) -> Any:
                model.prompt_tokens = len(tokens)
                for token in super().generate(tokens, *args, **kwargs):
                    if model.cancelled():
                        raise ClientGone()
                    if model.first_token_ns is None:
                        model.first_token_ns = time.monotonic_ns()
                    model.generated += 1
                    yield token

        self.prompt_tokens = 0
        self.generated = 0
        self.first_token_ns: int | None = None
        self.cancelled: Any = lambda: False  # set per request: has its client gone?
        self.llm = Counting(model_path=str(path), n_ctx=n_ctx, n_threads=threads,
                            n_threads_batch=threads, verbose=False, seed=0)
        self.load_ns = time.monotonic_ns() - started
        self.name = name
        self.path = path
        self.size = path.stat().st_size
        self.digest = hashlib.sha256(f"{path.name}:{self.size}".encode()).hexdigest()
        self.lock = threading.Lock()
        self._grammar_checked: dict[str, bool] = {}

    def schema_compiles(self, schema: dict[str, Any]) -> bool:
        """llama-cpp-python silently falls back to free JSON when a schema does not convert;
        the log says which grammar a request really got."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammar_checked:
            from llama_cpp import llama_grammar

            try:
                llama_grammar.LlamaGrammar.from_json_schema(key, verbose=False)
                self._grammar_checked[key] = True
            except Exception:  # noqa: BLE001 - any conversion failure means the fallback
                self._grammar_checked[key] = False
        return self._grammar_checked[key]

    def stream(self, body: dict[str, Any]) -> Any:
        """Yields content pieces; ``self`` holds the counts once the generator is exhausted."""
        options = body.get("options") or {}
        kwargs: dict[str, Any] = {
            "messages": [{"role": m.get("role", "user"), "content": m.get("content") or ""}
                         for m in body.get("messages") or []],
            "stream": True,
            "temperature": float(options.get("temperature", 0.8)),
            "top_p": float(options.get("top_p", 0.9)),
            "top_k": int(options.get("top_k", 40)),
            "seed": int(options.get("seed", 0)),
        }
        if options.get("num_predict") not in (None, -1):
            kwargs["max_tokens"] = int(options["num_predict"])
        else:
            kwargs["max_tokens"] = None  # until the context is full (Ollama's -1)
        if options.get("stop"):
            kwargs["stop"] = options["stop"]
        fmt = body.get("format")
        if isinstance(fmt, dict):
            kwargs["response_format"] = {"type": "json_object", "schema": fmt}
        elif fmt == "json":
            kwargs["response_format"] = {"type": "json_object"}
        self.prompt_tokens = 0
        self.generated = 0
        self.first_token_ns = None
        self.done_reason = "stop"
        for chunk in self.llm.create_chat_completion(**kwargs):
            choice = chunk["choices"][0]
            piece = (choice.get("delta") or {}).get("content") or ""
            if choice.get("finish_reason"):
                self.done_reason = choice["finish_reason"]
            if piece:
                yield piece


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    model: Model
    log_path: Path | None

    def log_message(self, *args: object) -> None:
        pass

    # --------------------------------------------------------------------------- helpers
    def _send_json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, {"error": "invalid JSON body"})
            return None
        if not isinstance(body, dict):
            self._send_json(400, {"error": "request body must be a JSON object"})
            return None
        return body

    def _known(self, name: str | None) -> bool:
        if not name:
            return False
        served = self.model.name
        return name == served or (":" not in served and name == f"{served}:latest")

    def _not_found(self, name: str | None) -> None:
        self._send_json(404, {"error": f'model "{name}" not found, try pulling it first'})

    def _client_gone(self) -> bool:
        """The peer closed its end (readable with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _chunk(self, payload: dict[str, Any]) -> None:
        line = json.dumps(payload).encode() + b"\n"
        try:
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError) as exc:
            raise ClientGone() from exc

    def _details(self) -> dict[str, Any]:
        return {"parent_model": "", "format": "gguf", "family": "qwen2",
                "families": ["qwen2"], "parameter_size": "1.5B",
                "quantization_level": "Q4_K_M"}

    # --------------------------------------------------------------------------- routes
    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:  # noqa: N802
        if self.path in ("/", ""):
            data = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data)
            self.close_connection = True
        elif self.path == "/api/version":
            self._send_json(200, {"version": VERSION})
        elif self.path == "/api/tags":
            modified = datetime.fromtimestamp(self.model.path.stat().st_mtime, UTC).isoformat()
            self._send_json(200, {"models": [{
                "name": self.model.name, "model": self.model.name, "modified_at": modified,
                "size": self.model.size, "digest": self.model.digest,
                "details": self._details()}]})
        elif self.path == "/api/ps":
            self._send_json(200, {"models": [{
                "name": self.model.name, "model": self.model.name, "size": self.model.size,
                "digest": self.model.digest, "details": self._details(),
                "expires_at": "2318-01-01T00:00:00Z", "size_vram": 0}]})
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802
        if self.path == "/api/show":
            body = self._body()
            if body is None:
                return
            name = body.get("model") or body.get("name")
            if not self._known(name):
                self._not_found(name)
                return
            self._send_json(200, {
                "modelfile": f"FROM {self.model.path}\n", "parameters": "temperature 0",
                "template": "{{ .Prompt }}", "details": self._details(),
                "model_info": {"general.architecture": "qwen2",
                               "general.file_type": 15,
                               "qwen2.context_length": self.model.llm.n_ctx()},
                "capabilities": ["completion"], "modified_at": _now_iso()})
        elif self.path == "/api/chat":
            self._chat()
        else:
            self._send_json(404, {"error": "not found"})

    def _chat(self) -> None:
        body = self._body()
        if body is None:
            return
        name = body.get("model")
        if not self._known(name):
            self._not_found(name)
            return
        if not body.get("messages"):
            # Ollama loads the model and answers done with no content ("load" request).
            self._send_json(200, {"model": name, "created_at": _now_iso(),
                                  "message": {"role": "assistant", "content": ""},
                                  "done_reason": "load", "done": True})
            return
        streaming = body.get("stream", True) is not False
        fmt = body.get("format")
        entry: dict[str, Any] = {
            "received": time.time(), "model": name, "stream": streaming,
            "messages": len(body["messages"]),
            "prompt_chars": sum(len(m.get("content") or "") for m in body["messages"]),
            "format": "schema" if isinstance(fmt, dict) else fmt,
            "options": body.get("options") or {}}
        if isinstance(fmt, dict):
            entry["grammar"] = "schema" if self.model.schema_compiles(fmt) else "json-fallback"
        model = self.model
        with model.lock:
            entry["started"] = time.time()
            if self._client_gone():  # gave up while queued: do not spend the model on it
                entry.update(result="client-gone-before-start", finished=time.time())
                self._log(entry)
                return
            t0 = time.monotonic_ns()
            pieces: list[str] = []
            result = "done"
            headers_sent = False
            model.cancelled = self._client_gone
            generator = model.stream(body)
            try:
                if streaming:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-ndjson")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    headers_sent = True
                for piece in generator:
                    pieces.append(piece)
                    if streaming:
                        self._chunk({"model": name, "created_at": _now_iso(),
                                     "message": {"role": "assistant", "content": piece},
                                     "done": False})
            except ClientGone:
                result = "client-gone"
            except Exception as exc:  # noqa: BLE001 - reported to the client as Ollama does
                result = f"error: {type(exc).__name__}: {str(exc)[:300]}"
            finally:
                generator.close()  # stops llama.cpp generating
            t1 = time.monotonic_ns()
            first = model.first_token_ns or t1
            final = {
                "model": name, "created_at": _now_iso(),
                "message": {"role": "assistant", "content": "" if streaming else "".join(pieces)},
                "done_reason": getattr(model, "done_reason", "stop"), "done": True,
                "total_duration": t1 - t0, "load_duration": 0,
                "prompt_eval_count": model.prompt_tokens,
                "prompt_eval_duration": first - t0,
                "eval_count": model.generated, "eval_duration": t1 - first}
            entry.update(result=result, finished=time.time(),
                         **{k: final[k] for k in ("done_reason", "total_duration",
                                                   "prompt_eval_count", "prompt_eval_duration",
                                                   "eval_count", "eval_duration")},
                         output="".join(pieces))
            self._log(entry)
            try:
                if result.startswith("error"):
                    if headers_sent:
                        self._chunk({"error": result[7:]})
                    else:
                        self._send_json(500, {"error": result[7:]})
                elif result == "done":
                    if streaming:
                        self._chunk(final)
                    else:
                        self._send_json(200, final)
                if headers_sent:
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
            except (ClientGone, BrokenPipeError, ConnectionResetError, OSError):
                pass
            self.close_connection = True

    def _log(self, entry: dict[str, Any]) -> None:
        if self.log_path is None:
            return
        with open(self.log_path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("port", type=int, help="port on 127.0.0.1 (0: any free port)")
    parser.add_argument("--model-file", type=Path, required=True)
    parser.add_argument("--name", default="qwen2.5-coder:1.5b", help="model name served")
    parser.add_argument("--log", type=Path, default=None, help="JSONL of chat requests")
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads (1: see ../shared/REAL_MODEL.md)")
    parser.add_argument("--ctx", type=int, default=4096, help="context length (num_ctx)")
    args = parser.parse_args(argv)
    if not args.model_file.exists():
        print(f"model file {args.model_file} not found — run: python tests/realmodel/install.py",
              file=sys.stderr)
        return 2
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    model = Model(args.model_file, args.name, args.threads, args.ctx)

    class Bound(Handler):
        pass

    Bound.model = model
    Bound.log_path = args.log
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Bound)
    server.daemon_threads = True
    print(f"READY {server.server_address[1]} load_ms={model.load_ns // 1_000_000}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
