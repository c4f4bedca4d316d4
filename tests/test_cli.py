"""The real `triage` CLI: the acceptance commands, bad input, and the air gap.

Most tests call the entry point in process (``call_cli``: ``console.__main__.main`` with the
same environment, its exit code and what it wrote): a subprocess costs ~2-3 s (interpreter
start, LanceDB/numpy import, MiniLM load) and showed nothing more for them. Subprocesses
(``run_cli``) stay where only a process shows the point: the air gap (a sitecustomize guard in
a fresh interpreter, which also builds the index end to end), an alert read from the real
stdin, and one end-to-end run each of `check` and `index`.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from store.calibration import MINILM_ID
from store.index import freshness
from store.loader import load_incidents
from tests.conftest import BUNDLED_INCIDENTS, REPO_ROOT, TEST_NOW

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}
NOVEL = "TLS certificate expired on internal gRPC mesh"
OUTCOMES = {"RESOLVED", "MITIGATED", "NO_EFFECT", "WORSENED"}
_MACHINE_ENV = ("OLLAMA_HOST", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL", "TRIAGE_OFFLINE",
                "TRIAGE_MODEL_TIMEOUT", "PYTHONPATH")


def run_cli(*args: str, data_dir: Path, incidents: Path = BUNDLED_INCIDENTS,
            stdin: bytes | None = None, extra_env: dict[str, str] | None = None
            ) -> subprocess.CompletedProcess[str]:
    """``python -m console ARGS`` from the repo root with its own data dir and memory."""
    env = {k: v for k, v in os.environ.items() if k not in _MACHINE_ENV}
    env.update(TRIAGE_DATA_DIR=str(data_dir), TRIAGE_INCIDENTS=str(incidents),
               TRIAGE_NOW=TEST_NOW)  # the suite's one day, also from module-scoped fixtures
    env.update(extra_env or {})
    completed = subprocess.run(
        [sys.executable, "-m", "console", *args], cwd=REPO_ROOT, env=env, input=stdin,
        capture_output=True, timeout=180, check=False)
    return subprocess.CompletedProcess(completed.args, completed.returncode,
                                       completed.stdout.decode(), completed.stderr.decode())


def call_cli(*args: str, data_dir: Path, incidents: Path = BUNDLED_INCIDENTS,
             extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``triage ARGS`` in process, as ``run_cli`` runs it: the same environment (restored
    afterwards), the code the script exits with (``main``'s return, or argparse's
    ``SystemExit``) and what it wrote to stdout and stderr, UTF-8 encoded and decoded as
    through a pipe. An exception escaping ``main`` fails the test (the script would print a
    Traceback). Safe in module-scoped fixtures (no function-scoped fixture needed)."""
    from console.__main__ import main

    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    with pytest.MonkeyPatch.context() as env:
        for name in _MACHINE_ENV:
            env.delenv(name, raising=False)
        env.setenv("TRIAGE_DATA_DIR", str(data_dir))
        env.setenv("TRIAGE_INCIDENTS", str(incidents))
        env.setenv("TRIAGE_NOW", TEST_NOW)
        for name, value in (extra_env or {}).items():
            env.setenv(name, value)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse's refusals, as the script exits with them
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    text = [stream.buffer.getvalue().decode()  # type: ignore[attr-defined]
            for stream in (out, err)]
    return subprocess.CompletedProcess(["triage", *args], code, text[0], text[1])


def brief_json(*args: str, data_dir: Path, in_process: bool = True,
               **kwargs: Any) -> dict[str, Any]:
    result = (call_cli if in_process else run_cli)("brief", *args, "--json", data_dir=data_dir,
                                                    **kwargs)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)


def recalled_incidents(doc: dict[str, Any]) -> list[str]:
    """Recalled incident ids, best first, each once."""
    return list(dict.fromkeys(r["incident_id"] for r in doc["recalled"]))


@pytest.fixture(scope="module")
def shared_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cli") / "data"


@pytest.fixture(scope="module")
def checkout_brief(shared_data_dir: Path) -> dict[str, Any]:
    """Acceptance (a), run once: the first brief in the module also builds the index."""
    return brief_json(CHECKOUT, data_dir=shared_data_dir)


# --- the three acceptance commands ---------------------------------------------------------

def test_checkout_alert_recalls_inc_2041_and_warns_with_why(
        checkout_brief: dict[str, Any]) -> None:
    assert recalled_incidents(checkout_brief)[0] == "INC-2041"
    warning = next(w for w in checkout_brief["warnings"] if w["action_id"] == "INC-2041/A1")
    assert warning["incident_id"] == "INC-2041"
    assert "max_connections" in warning["text"]


def test_keyerror_alert_is_proven_at_98(shared_data_dir: Path) -> None:
    doc = brief_json(KEYERROR, data_dir=shared_data_dir)
    assert doc["state"] == "proven"
    assert set(recalled_incidents(doc)) == KEYERROR_INCIDENTS
    confidence = doc["confidence"]
    assert confidence["proven"] == 5
    assert confidence["value"] == 98
    assert "5 of 5" in confidence["explanation"]
    assert {e["incident_id"] for e in doc["recommendations"][0]["evidence"]} == KEYERROR_INCIDENTS


def test_novel_alert_is_no_prior_incident(shared_data_dir: Path) -> None:
    doc = brief_json(NOVEL, data_dir=shared_data_dir)
    assert doc["state"] == "no_prior_incident"
    assert doc["confidence"]["value"] == 0
    assert doc["recommendations"] == []
    assert doc["recalled"] == []
    assert_contract(doc)


def assert_contract(doc: dict[str, Any]) -> None:
    """Every key of the `triage brief --json` contract in DESIGN.md, with its type."""
    for key in ("state", "source", "model", "degraded", "recalled", "summary",
                "recommendations", "warnings", "confidence", "guard_log", "attempts",
                "verification"):
        assert key in doc, key
    assert doc["state"] in {"proven", "unproven", "no_prior_incident"}
    assert doc["source"] in {"model", "deterministic"}
    assert doc["model"] is None or isinstance(doc["model"], str)
    assert doc["degraded"] is None or isinstance(doc["degraded"], str)
    assert isinstance(doc["summary"], str) and doc["summary"]
    assert doc["verification"] is None  # only --verify fills it
    for record in doc["recalled"]:
        for key in ("incident_id", "action_id", "service", "text"):
            assert isinstance(record[key], str) and record[key], key
        assert record["action_id"].startswith(record["incident_id"] + "/")
        assert record["outcome"] in OUTCOMES
        assert isinstance(record["score"], int | float) and not isinstance(record["score"], bool)
        assert 0 <= record["score"] <= 1
    for recommendation in doc["recommendations"]:
        assert isinstance(recommendation["action"], str) and recommendation["action"]
        assert isinstance(recommendation["evidence"], list) and recommendation["evidence"]
        for evidence in recommendation["evidence"]:
            assert isinstance(evidence["incident_id"], str)
            assert isinstance(evidence["action_id"], str)
            assert evidence["outcome"] in OUTCOMES
    for warning in doc["warnings"]:
        for key in ("text", "incident_id", "action_id"):
            assert isinstance(warning[key], str) and warning[key], key
    confidence = doc["confidence"]
    for key in ("value", "proven", "failed", "floor", "cap"):
        assert isinstance(confidence[key], int) and not isinstance(confidence[key], bool), key
    assert confidence["model_claim"] is None or isinstance(confidence["model_claim"], int)
    assert confidence["tier"] in {"3+", "2", "1", "0"}
    assert isinstance(confidence["explanation"], str) and confidence["explanation"]
    assert 0 <= confidence["value"] <= 98
    assert isinstance(doc["guard_log"], list)
    for entry in doc["guard_log"]:
        assert isinstance(entry["rule"], str) and isinstance(entry["detail"], str)
    assert isinstance(doc["attempts"], list)
    for attempt in doc["attempts"]:
        assert isinstance(attempt["n"], int)
        for key in ("result", "reason", "output_sha256"):
            assert isinstance(attempt[key], str)


def test_json_output_follows_the_contract(checkout_brief: dict[str, Any]) -> None:
    assert checkout_brief["recalled"] and checkout_brief["warnings"]
    assert checkout_brief["recommendations"]
    assert_contract(checkout_brief)
    assert checkout_brief["source"] == "deterministic"
    assert checkout_brief["model"] is None
    assert "TRIAGE_MODEL" in checkout_brief["degraded"]


# --- other ways to give the alert -------------------------------------------------------------

def test_alert_file_with_an_alertmanager_webhook(shared_data_dir: Path, tmp_path: Path) -> None:
    payload = {
        "version": "4", "status": "firing", "receiver": "triage",
        "commonLabels": {"severity": "page"},
        "alerts": [{
            "status": "firing",
            "labels": {"alertname": "CheckoutLatencyHigh", "service": "checkout-service"},
            "annotations": {"summary": "p99 latency up",
                            "description": "intermittent database connection errors"},
        }],
    }
    path = tmp_path / "alert.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    doc = brief_json("--alert-file", str(path), data_dir=shared_data_dir)
    assert recalled_incidents(doc)[0] == "INC-2041"
    assert any(w["action_id"] == "INC-2041/A1" for w in doc["warnings"])


def test_dash_reads_the_alert_from_stdin(shared_data_dir: Path) -> None:
    # a subprocess: the alert comes through the process's real stdin (sys.stdin.buffer)
    doc = brief_json("-", data_dir=shared_data_dir, stdin=KEYERROR.encode(), in_process=False)
    assert doc["state"] == "proven"
    assert set(recalled_incidents(doc)) == KEYERROR_INCIDENTS


def test_unreadable_alert_file_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "untouched"
    alert = tmp_path / "alert.png"
    alert.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01")
    result = call_cli("brief", "--alert-file", str(alert), "--json", data_dir=data_dir)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("triage: ")
    assert str(alert) in result.stderr and "binary" in result.stderr
    assert "Traceback" not in result.stderr
    assert not data_dir.exists()


# --- a broken incidents file ------------------------------------------------------------------

BROKEN = """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  actions:
    - id: A1
      action: Restarted the frobnicator
      outcome: FIXED
      explanation: it came back
- id: INC-1
  service: widget-api
  symptoms: again
- id: INC-2
  service: widget-api
  colour: red
"""


def expected_problem_lines(path: Path) -> list[str]:
    # (an unknown field such as `colour` is a warning, not a problem: a newer build's field
    # must not make an older build reject the file — see tests/store/test_schema_fields.py)
    return [f"{path}:7: INC-1 actions[0].outcome:", f"{path}:9: id:",
            f"{path}:12: INC-2 symptoms:"]


@pytest.fixture
def broken_incidents(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(BROKEN, encoding="utf-8")
    return path


def test_check_lists_every_problem_with_file_and_line(broken_incidents: Path,
                                                      tmp_path: Path) -> None:
    # a subprocess: `triage check` end to end, the script's own exit code 2
    result = run_cli("check", data_dir=tmp_path / "data", incidents=broken_incidents)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    for expected in expected_problem_lines(broken_incidents):
        assert any(line.strip().startswith(expected) for line in lines), (expected, lines)
    assert "3 problems" in result.stderr
    assert f"{broken_incidents}:14: warning: unknown field 'colour' in INC-2" in result.stdout
    assert "Traceback" not in result.stderr


def test_brief_on_a_broken_file_lists_the_same_problems_and_writes_nothing(
        broken_incidents: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = call_cli("brief", KEYERROR, "--json", data_dir=data_dir, incidents=broken_incidents)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    for expected in expected_problem_lines(broken_incidents):
        assert any(line.strip().startswith(expected) for line in lines), (expected, lines)
    assert not data_dir.exists()


# --- the index is derived ---------------------------------------------------------------------

def test_deleted_index_is_rebuilt_and_recalls_the_same(checkout_brief: dict[str, Any],
                                                       tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    indexed = call_cli("index", data_dir=data_dir)
    assert indexed.returncode == 0, indexed.stderr
    memory = load_incidents(BUNDLED_INCIDENTS)
    assert f"{len(memory.incidents)} incidents, {memory.action_count} actions" in indexed.stdout
    assert (data_dir / "index").is_dir()

    shutil.rmtree(data_dir / "index")
    doc = brief_json(CHECKOUT, data_dir=data_dir)
    assert [(r["action_id"], r["score"]) for r in doc["recalled"]] == [
        (r["action_id"], r["score"]) for r in checkout_brief["recalled"]]
    assert (data_dir / "index").is_dir()


def test_index_rebuild(checkout_brief: dict[str, Any], shared_data_dir: Path) -> None:
    memory = load_incidents(BUNDLED_INCIDENTS)
    assert freshness(shared_data_dir / "index", memory.source_hash, MINILM_ID) == "fresh"
    # a subprocess: `triage index` end to end (over the index the in-process briefs built)
    result = run_cli("index", "--rebuild", data_dir=shared_data_dir)
    assert result.returncode == 0, result.stderr
    assert (f"index built: {len(memory.incidents)} incidents, {memory.action_count} actions"
            in result.stdout)
    assert "rebuilt" in result.stdout
    assert freshness(shared_data_dir / "index", memory.source_hash, MINILM_ID) == "fresh"


# --- the air gap --------------------------------------------------------------------------------

SITECUSTOMIZE = textwrap.dedent('''
    """Test-only: record and refuse every non-loopback connection made by this process."""
    import ipaddress
    import os
    import socket

    _LOG = os.environ["TRIAGE_TEST_NET_LOG"]


    def _note(line):
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(line + "\\n")


    def _loopback(address):
        host = address[0] if isinstance(address, tuple) and address else address
        if isinstance(host, bytes):
            host = host.decode(errors="replace")
        if not isinstance(host, str):
            return False
        if host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.strip("[]").split("%")[0]).is_loopback
        except ValueError:
            return False


    def _check(family, address):
        if family == getattr(socket, "AF_UNIX", None) or isinstance(address, (str, bytes)):
            return
        if not _loopback(address):
            _note(f"blocked {address!r}")
            raise OSError(f"network blocked in tests: {address!r}")


    _connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
    _create_connection = socket.create_connection


    def connect(self, address):
        _check(self.family, address)
        return _connect(self, address)


    def connect_ex(self, address):
        _check(self.family, address)
        return _connect_ex(self, address)


    def create_connection(address, *args, **kwargs):
        _check(None, address)
        return _create_connection(address, *args, **kwargs)


    socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
    socket.create_connection = create_connection
    _note("armed")
''')


def test_brief_makes_no_network_connection(tmp_path: Path) -> None:
    guard_dir = tmp_path / "guard"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    log = tmp_path / "net.log"
    # a subprocess: the guard is a sitecustomize armed at interpreter start; also the
    # end-to-end `triage brief` of the module (a fresh dir: the index is built too)
    doc = brief_json(KEYERROR, data_dir=tmp_path / "data", in_process=False,
                     extra_env={"PYTHONPATH": str(guard_dir), "TRIAGE_TEST_NET_LOG": str(log)})
    assert doc["state"] == "proven"
    assert log.read_text(encoding="utf-8").splitlines() == ["armed"]


@pytest.mark.parametrize("address", [("203.0.113.7", 443), ("2001:db8::1", 80),
                                     ("example.com", 80)])
def test_in_process_guard_blocks_create_connection(address: tuple[str, int]) -> None:
    with pytest.raises(OSError, match="network blocked in tests"):
        socket.create_connection(address, timeout=1)


@pytest.mark.parametrize("address", [("203.0.113.7", 443), ("example.com", 80)])
def test_in_process_guard_blocks_socket_connect(address: tuple[str, int]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(OSError, match="network blocked in tests"):
            sock.connect(address)
        with pytest.raises(OSError, match="network blocked in tests"):
            sock.connect_ex(address)


def test_in_process_guard_lets_loopback_and_unix_sockets_through(tmp_path: Path) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        accepted = threading.Thread(target=lambda: server.accept()[0].close())
        accepted.start()
        socket.create_connection(("localhost", port), timeout=5).close()
        accepted.join(timeout=5)
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as unix_server:
        unix_server.bind(path)
        unix_server.listen(1)
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(path)
