"""Shared fixtures: isolated env, no network, one prebuilt index of the bundled memory."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from tests.fake_ollama import fake_ollama  # noqa: F401  (registers the "fake_ollama" fixture)

REPO_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_INCIDENTS = REPO_ROOT / "incidents.yaml"

# Variables that would let a developer's machine leak into a test.
_MACHINE_ENV = (
    "OLLAMA_HOST", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL", "TRIAGE_OFFLINE", "TRIAGE_MODEL_TIMEOUT",
    "TRIAGE_EMBEDDER_WEIGHTS", "TRIAGE_LISTEN_TOKEN", "TRIAGE_INDEX_URI",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


# A month after the bundled memory's newest incident (2026-11-03).
TEST_NOW = "2026-12-02T12:00:00Z"


@pytest.fixture(autouse=True, scope="session")
def one_day() -> Iterator[None]:
    """The suite's clock: every Settings without TRIAGE_NOW reads TEST_NOW too (engines built
    directly and in module-scoped fixtures), so ages, "old evidence" and snapshots never move
    with the calendar. tests/engine/test_now.py puts the wall clock back to test it."""
    from console.engine import config

    moment = datetime.fromisoformat(TEST_NOW)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(config, "clock", lambda: moment)
        yield


@pytest.fixture(autouse=True, scope="session")
def own_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's user cache dir is its own (the laid-out MiniLM weights, store/minilm.py):
    no test writes into the developer's ~/.cache. One per worker, laid out once each."""
    cache = tmp_path_factory.mktemp("user-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(cache))
        yield cache


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Data dir under tmp_path, the bundled memory, and no model/host from the machine."""
    data_dir = tmp_path / "data"
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(data_dir))
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(BUNDLED_INCIDENTS))
    # One fixed day for every test, so ages, "old evidence" and snapshots never move with the
    # calendar (a test of the clock itself sets or clears it).
    monkeypatch.setenv("TRIAGE_NOW", TEST_NOW)
    for name in _MACHINE_ENV:
        monkeypatch.delenv(name, raising=False)
    return data_dir


# --- the air gap -----------------------------------------------------------------------

def is_loopback(host: object) -> bool:
    """True for 127.0.0.0/8, ::1 and localhost; anything else is the outside world."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    name = host.strip("[]").split("%")[0].lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _check_address(family: int | None, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", object()) or isinstance(address, str | bytes):
        return  # a filesystem socket, not the network
    host = address[0] if isinstance(address, tuple) and address else address
    if not is_loopback(host):
        raise OSError(f"network blocked in tests: {address!r}")


@pytest.fixture(autouse=True)
def block_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection that is not loopback (or AF_UNIX) raises OSError: nothing phones home."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_create_connection = socket.create_connection

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self.family, address)
        return real_connect_ex(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> socket.socket:
        _check_address(None, address)
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "create_connection", create_connection)


# --- one TLS context per worker ----------------------------------------------------------

@pytest.fixture(autouse=True, scope="session")
def one_tls_context() -> Iterator[None]:
    """httpx builds a TLS context (certifi's CA bundle: ~30 ms of CPU) for every Client, even
    one that only speaks http:// to the fake Ollama on 127.0.0.1, and the model client makes
    a Client per call (console/engine/model/client.py): ~500 briefings in
    test_injection_corpus alone spent 14 s there. The same context is handed out again for the
    same arguments and environment; nothing in the suite speaks TLS (see block_network)."""
    import httpx._transports.default as transport

    made: dict[tuple[Any, ...], Any] = {}
    create = transport.create_ssl_context

    def create_once(verify: Any = True, cert: Any = None, trust_env: bool = True) -> Any:
        key = (verify, cert, trust_env, os.environ.get("SSL_CERT_FILE"),
               os.environ.get("SSL_CERT_DIR"))
        try:
            hash(key)
        except TypeError:
            return create(verify=verify, cert=cert, trust_env=trust_env)
        if key not in made:
            made[key] = create(verify=verify, cert=cert, trust_env=trust_env)
        return made[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transport, "create_ssl_context", create_once)
        yield


# --- the bundled memory, indexed once ---------------------------------------------------

@pytest.fixture(scope="session")
def bundled_index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data dir holding the index of the bundled memory, built once per session (~1-2 s)."""
    data_dir = tmp_path_factory.mktemp("bundled") / "data"
    engine = TriageEngine(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir))
    status = engine.load()
    assert status.incidents > 0, "the bundled memory did not load"
    return data_dir


@pytest.fixture
def bundled_data_dir(bundled_index_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the prebuilt data dir, safe to modify or corrupt."""
    copy = tmp_path / "bundled-data"
    shutil.copytree(bundled_index_dir, copy)
    return copy


@pytest.fixture
def engine(bundled_data_dir: Path) -> TriageEngine:
    """A loaded engine over the bundled memory, on its own copy of the prebuilt index."""
    triage = TriageEngine(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    triage.load()
    return triage


@pytest.fixture(scope="module")
def readonly_engine(bundled_index_dir: Path, tmp_path_factory: pytest.TempPathFactory
                    ) -> TriageEngine:
    """One loaded engine per module, for tests that only recall and brief (saves ~0.2 s each).

    Tests that edit, delete or corrupt anything use ``engine`` instead.
    """
    data_dir = tmp_path_factory.mktemp("readonly") / "data"
    shutil.copytree(bundled_index_dir, data_dir)
    triage = TriageEngine(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir))
    triage.load()
    return triage


# --- small incidents files ----------------------------------------------------------------

def make_incident(incident_id: str = "INC-1", **fields: Any) -> dict[str, Any]:
    """A valid incident as a dict; keyword arguments replace (or, if None, remove) fields."""
    incident: dict[str, Any] = {
        "id": incident_id,
        "title": "Widget queue stuck",
        "service": "widget-api",
        "symptoms": "Widget queue stopped draining and frobnicator latency rose",
        "actions": [{"id": "A1", "action": "Restarted the frobnicator", "outcome": "RESOLVED",
                     "explanation": "The frobnicator came back with an empty queue"}],
    }
    for name, value in fields.items():
        if value is None:
            incident.pop(name, None)
        else:
            incident[name] = value
    return incident


WriteIncidents = Callable[..., Path]


@pytest.fixture
def write_incidents(tmp_path: Path) -> WriteIncidents:
    """``write_incidents([dict, …], name="incidents.yaml", directory=None)`` → the file's path."""

    def write(incidents: list[dict[str, Any]], name: str = "incidents.yaml",
              directory: Path | None = None) -> Path:
        folder = directory or tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_text(yaml.safe_dump(incidents, sort_keys=False, allow_unicode=True),
                        encoding="utf-8")
        return path

    return write


@pytest.fixture
def incident() -> Callable[..., dict[str, Any]]:
    """The ``make_incident`` builder as a fixture."""
    return make_incident

