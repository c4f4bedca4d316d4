"""`triage doctor` (and the console's model state) against a host where something that is not
Ollama answers: a web server's 404 or an HTML page is "not an Ollama server", never "the model
is not pulled" or "start it with ollama serve" alone."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from console.__main__ import main
from console.engine.config import Settings
from console.engine.engine import TriageEngine


class _WebServer(BaseHTTPRequestHandler):
    """A plain web server: 404 (an HTML error page) for everything, or 200 HTML for all."""

    status = 404

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self) -> None:
        body = b"<html><body><h1>Not Found</h1></body></html>"
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _answer


def _serve(status: int) -> Iterator[str]:
    handler = type("Handler", (_WebServer,), {"status": status})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def web_404() -> Iterator[str]:
    yield from _serve(404)


@pytest.fixture
def web_200_html() -> Iterator[str]:
    yield from _serve(200)


def _doctor(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
            host: str) -> tuple[int, str]:
    monkeypatch.setenv("OLLAMA_HOST", host)
    monkeypatch.setenv("TRIAGE_MODEL", "qwen2.5:7b")
    rc = main(["doctor"])
    return rc, capsys.readouterr().out


def test_doctor_says_a_host_answering_404_is_not_an_ollama_server(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        web_404: str) -> None:
    rc, out = _doctor(capsys, monkeypatch, web_404)
    assert rc == 2
    assert f"FIX  not an Ollama server at {web_404} (HTTP 404)" in out
    assert "set OLLAMA_HOST to where Ollama runs" in out
    assert "not pulled" not in out and "server error 404" not in out


def test_doctor_says_a_host_answering_html_is_not_an_ollama_server(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        web_200_html: str) -> None:
    rc, out = _doctor(capsys, monkeypatch, web_200_html)
    assert rc == 2
    assert f"FIX  not an Ollama server at {web_200_html}" in out
    assert "not pulled" not in out


def test_doctor_still_says_start_it_when_nothing_listens(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_ollama import refused_host

    host = refused_host()
    rc, out = _doctor(capsys, monkeypatch, host)
    assert rc == 2
    assert f"FIX  Ollama at {host}" in out and "ollama serve" in out
    assert "not an Ollama server" not in out


def test_the_consoles_model_state_names_a_web_server_too(monkeypatch: pytest.MonkeyPatch,
                                                         web_404: str) -> None:
    monkeypatch.setenv("OLLAMA_HOST", web_404)
    monkeypatch.setenv("TRIAGE_MODEL", "qwen2.5:7b")
    state = TriageEngine(Settings.from_env()).model_state()
    assert state == f"qwen2.5:7b offline (not an Ollama server at {web_404}, HTTP 404)"


def test_a_briefing_against_a_web_server_says_it_is_not_ollama_not_that_a_model_is_missing(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, web_404: str,
        bundled_data_dir: object) -> None:
    import json

    monkeypatch.setenv("OLLAMA_HOST", web_404)
    monkeypatch.setenv("TRIAGE_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    assert main(["brief", "payments-api 5xx error rate above 5% after deploy", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"] == "deterministic"
    said = json.dumps(out)
    assert f"not an Ollama server at {web_404} (HTTP 404" in said
    assert "not pulled" not in said
