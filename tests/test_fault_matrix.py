"""The fault matrix of issue 9: the faults no other test covered, each ending in a named state.

Each test drives the real CLI (in process through ``console.__main__.main``, or as a
subprocess where a second process or a real permission fault is the point) or the real console
(Pilot), on a real LanceDB index in a tmp dir, against the fake Ollama server for the model and
the embedder. Each checks what the user reads (the message, the exit code, the state) and that
the incidents file is byte-identical afterwards. docs/RELIABILITY.md maps every fault of the
issue to its test, here or elsewhere.

A fault that ends in a traceback or in an unnamed or misleading message is a defect: its test
is kept as a strict xfail whose reason says what happens today.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from textual.widgets import Input, Static

from console.__main__ import main
from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.error import ErrorScreen
from store.index import freshness, read_meta
from store.loader import load_incidents
from tests.conftest import BUNDLED_INCIDENTS, REPO_ROOT, make_incident
from tests.fake_ollama import ChatReply, FakeOllama, Fault, refused_host
from tests.model.conftest import MODEL, c_good
from tests.store.test_loader_aliases import BOMB
from tests.ui.driving import brief_and_wait

# On INC-2041's own service, so that its fix is proven here (the README's checkout-service
# alert is proven on payments-api only: tests/test_headline_verdict.py).
CHECKOUT = "payments-api p99 latency up, intermittent database connection errors"
EMBED_MODEL = "nomic-embed-text"
SIZE = (120, 40)


# --- running the CLI ------------------------------------------------------------------------

@dataclass
class Ran:
    code: int
    out: str
    err: str
    crashed: bool = False  # an exception escaped main(): the installed script prints a traceback

    def json(self) -> Any:
        return json.loads(self.out)


class TTYBuffer(io.StringIO):
    """stderr as a terminal: the CLI shows its indexing progress only on one."""

    def isatty(self) -> bool:
        return True


def cli(*args: str, stdin: bytes | None = None, tty: bool = False) -> Ran:
    """``triage ARGS`` in process with the environment as set; an escaping exception is what
    the installed script turns into a traceback and exit 1, so it is returned as that."""
    out, err = io.StringIO(), (TTYBuffer() if tty else io.StringIO())
    stream = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch.object(sys, "stdin", stream):
            code = main(list(args))
    except Exception:  # noqa: BLE001 - the CLI crashed: that is the finding
        return Ran(1, out.getvalue(), err.getvalue() + traceback.format_exc(), crashed=True)
    return Ran(code, out.getvalue(), err.getvalue())


def subprocess_env(incidents: Path, data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRIAGE_", "OLLAMA_")) and k != "PYTHONPATH"}
    return {**env, "TRIAGE_INCIDENTS": str(incidents), "TRIAGE_DATA_DIR": str(data), **extra}


def start(*args: str, env: dict[str, str], prefix: tuple[str, ...] = ()) -> subprocess.Popen[str]:
    return subprocess.Popen([*prefix, sys.executable, "-m", "console", *args], cwd=REPO_ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen[str]) -> Ran:
    out, err = process.communicate(timeout=180)
    return Ran(process.returncode, out, err, crashed="Traceback" in err)


@pytest.fixture
def incidents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled memory (same content hash as the prebuilt index), in use."""
    path = tmp_path / "memory" / "incidents.yaml"
    path.parent.mkdir()
    shutil.copyfile(BUNDLED_INCIDENTS, path)
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    return path


@pytest.fixture
def data(bundled_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the prebuilt index of the bundled memory, in use."""
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    return bundled_data_dir


def body(app: TriageApp) -> str:
    return str(app.screen.query_one("#briefing-body", Static).content)


def status(app: TriageApp) -> str:
    return str(app.screen.query_one("#status-line", Static).content)


def notifications(app: TriageApp) -> str:
    return "\n".join(n.message for n in app._notifications)


async def settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


# --- model: refused, 404, 500, hang, garbage, truncated stream ------------------------------
# tests/model/test_model_paths.py checks each in `brief --json` (and the attempt count); here
# the text output, the file, and the console.

MODEL_FAULTS: dict[str, tuple[ChatReply | None, str]] = {
    "refused": (None, "model server not reachable at"),
    "404": (ChatReply(fault=Fault.MODEL_MISSING), f"model {MODEL} is not pulled — run: ollama "
                                                  f"pull {MODEL}"),
    "500": (ChatReply(fault=Fault.SERVER_ERROR), "model server error 500: fake server error"),
    "hang": (ChatReply(fault=Fault.HANG), f"model {MODEL} timed out after 1s"),
    "garbage": (ChatReply("<html>502 Bad Gateway</html>"), "the same failure twice"),
    "malformed-stream": (ChatReply(c_good(), fault=Fault.MALFORMED_JSON),
                         "model server sent malformed data"),
    "truncated-stream": (ChatReply(c_good(), fault=Fault.TRUNCATED_STREAM),
                         "model stream broke off"),
}


@pytest.fixture
def model_fault_env(monkeypatch: pytest.MonkeyPatch, fake_ollama: FakeOllama, incidents: Path,
                    data: Path) -> FakeOllama:
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.host)
    monkeypatch.setenv("TRIAGE_MODEL", MODEL)
    monkeypatch.setenv("TRIAGE_MODEL_TIMEOUT", "1")
    return fake_ollama


@pytest.mark.parametrize("fault", list(MODEL_FAULTS))
def test_model_fault_ends_in_the_labelled_deterministic_briefing(
        fault: str, model_fault_env: FakeOllama, incidents: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    reply, reason = MODEL_FAULTS[fault]
    if reply is None:
        monkeypatch.setenv("OLLAMA_HOST", refused_host())
    else:
        model_fault_env.default_chat = reply
    before = incidents.read_bytes()

    as_json = cli("brief", CHECKOUT, "--json")
    as_text = cli("brief", CHECKOUT)

    assert as_json.code == 0 and not as_json.crashed, as_json.err
    out = as_json.json()
    assert (out["state"], out["source"], out["model"]) == ("proven", "deterministic", None)
    assert reason in out["degraded"], out["degraded"]
    assert [w["action_id"] for w in out["warnings"]] == ["INC-2041/A1"]
    assert as_text.code == 0 and not as_text.crashed, as_text.err
    assert as_text.out.startswith("[PROVEN FIX IN MEMORY] source: deterministic\nnote: ")
    assert reason in as_text.out.splitlines()[1]
    assert incidents.read_bytes() == before


async def test_model_faults_in_the_console_each_say_why_the_briefing_is_deterministic(
        fake_ollama: FakeOllama, incidents: Path, data: Path) -> None:
    """One console, one briefing per fault (refused: tests/ui/test_model_console.py)."""
    before = incidents.read_bytes()
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data,
                             ollama_host=fake_ollama.host, model=MODEL, model_timeout=1.0))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert f"{MODEL} online" in status(app)
        for fault, (reply, reason) in MODEL_FAULTS.items():
            if reply is None:
                continue
            fake_ollama.default_chat = reply
            await brief_and_wait(pilot, CHECKOUT)
            shown = " ".join(body(app).split())
            pane_status = str(app.screen.query_one("#briefing-status", Static).content)
            assert "· deterministic" in pane_status, (fault, pane_status)
            assert "Not written by a model:" in shown and reason in shown, (fault, shown)
            assert "INC-2041/A1 WORSENED" in shown, fault
    assert incidents.read_bytes() == before


# --- embedder: down mid-build, wrong dimension, changed model ---------------------------------

SERVICES = ["ledger", "billing", "checkout", "search", "auth", "queue"]
BIG = 300  # incidents: two embedding chunks (256 + 44), ten requests of 32 texts


def big_memory(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump([
        make_incident(f"INC-{n}", service=f"{SERVICES[n % 6]}-api", title=f"Incident number {n}",
                      symptoms=f"symptom {n}: the {SERVICES[n % 6]} queue stalled after change "
                               f"{n * 7}")
        for n in range(BIG)], sort_keys=False), encoding="utf-8")
    return path


class FlakyOllama(FakeOllama):
    """A fake whose /api/embed answers its first ``good`` requests (each after ``delay``
    seconds), then fails with ``fault`` until ``fault`` is set to None."""

    def __init__(self, good: int, fault: Fault | None, delay: float = 0.0) -> None:
        self.good, self.fault, self.delay, self.embeds = good, fault, delay, 0
        super().__init__()
        self.slow_delay = delay

    @property  # type: ignore[override]
    def embed_fault(self) -> Fault | None:
        self.embeds += 1
        if self.embeds > self.good and self.fault is not None:
            return self.fault
        return Fault.SLOW if self.delay else None

    @embed_fault.setter
    def embed_fault(self, value: Fault | None) -> None:
        pass  # FakeOllama.__init__ sets it; the schedule above decides


def embedded_texts(fake: FakeOllama) -> int:
    return sum(len(r["body"]["input"]) for r in fake.requests if r["path"] == "/api/embed")


def test_embedder_down_mid_build_is_lexical_only_said_so_and_resumed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedding server fails on the 10th request: the first chunk (256 vectors) is kept in
    the cache; the index is built lexical-only and every output says so; once the server is
    back, `triage index` embeds only what the cache lacks."""
    incidents = big_memory(tmp_path / "memory" / "incidents.yaml")
    before = incidents.read_bytes()
    with FlakyOllama(good=9, fault=Fault.SERVER_ERROR) as fake:
        for name, value in {"TRIAGE_INCIDENTS": str(incidents), "OLLAMA_HOST": fake.host,
                            "TRIAGE_EMBED_MODEL": EMBED_MODEL}.items():
            monkeypatch.setenv(name, value)
        built = cli("index", tty=True)
        assert built.code == 0 and not built.crashed, built.err
        assert f"embedding incidents 256/{BIG}" in built.err  # the progress line
        assert f"index built: {BIG} incidents, {BIG} actions, lexical only" in built.out
        assert "recall is lexical only: Ollama embed failed (500): fake server error" in built.out

        briefed = cli("brief", "the billing queue stalled after change 7", "--json")
        assert briefed.code == 0, briefed.err
        out = briefed.json()
        assert out["recalled"][0]["incident_id"] == "INC-1"
        assert out["search"]["notices"] == [
            "recall is lexical only: Ollama embed failed (500): fake server error"]
        embeddings = next(c for c in out["coverage"] if c["source"].startswith("embeddings"))
        assert embeddings["status"] == "unavailable"

        fake.fault = None
        fake.requests.clear()
        resumed = cli("index", tty=True)
        assert resumed.code == 0, resumed.err
        assert f"embedding incidents: 256/{BIG} already embedded (cache), resuming" in resumed.err
        assert "the embedder is available again; index rebuilt with vectors" in resumed.out
        assert f"index built: {BIG} incidents, {BIG} actions, with vectors" in resumed.out
        assert embedded_texts(fake) == 1 + (BIG - 256)  # one probe, then only what was missing
    assert incidents.read_bytes() == before


async def test_embedder_down_mid_build_in_the_console(tmp_path: Path) -> None:
    """The status line shows the build's progress; the notices say lexical only and why."""
    incidents = big_memory(tmp_path / "memory" / "incidents.yaml")
    before = incidents.read_bytes()
    with FlakyOllama(good=9, fault=Fault.SERVER_ERROR, delay=0.05) as fake:
        app = TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data",
                                 ollama_host=fake.host, embed_model=EMBED_MODEL))
        seen: set[str] = set()
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(500):  # polls the status line while the memory loads (bounded)
                await pilot.pause(0.02)
                seen.add(status(app))
                if app.memory_status is not None and not any(w.is_running
                                                             for w in app.workers):
                    break
            assert any(f"indexing the memory · embedding 256/{BIG} incidents" in line
                       for line in seen), seen
            said = notifications(app)
            assert f"index built: {BIG} incidents, {BIG} actions, lexical only" in said
            assert "recall is lexical only: Ollama embed failed (500): fake server error" in said
            assert "Something went wrong" not in said
            await brief_and_wait(pilot, "the billing queue stalled after change 7")
            shown = " ".join(body(app).split())
            assert "INC-1" in shown
            assert "notice: recall is lexical only: Ollama embed failed (500)" in shown
    assert incidents.read_bytes() == before


@pytest.fixture
def ollama_index(tmp_path: Path, incidents: Path, fake_ollama: FakeOllama,
                 monkeypatch: pytest.MonkeyPatch) -> FakeOllama:
    """The bundled memory indexed with vectors from the fake's embedding model (64 dims)."""
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(tmp_path / "ollama-data"))
    monkeypatch.setenv("OLLAMA_HOST", fake_ollama.host)
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", EMBED_MODEL)
    built = cli("index")
    assert built.code == 0 and "with vectors" in built.out, built.err
    return fake_ollama


def test_embedder_answering_another_dimension_is_named(ollama_index: FakeOllama,
                                                      incidents: Path) -> None:
    """The model changed under its name (64 → 32 dims): the brief says so and recalls by
    words; `triage index --rebuild` (what it says to run) re-embeds, and recall is hybrid
    again — the cached 64-dim vectors are not reused."""
    before = incidents.read_bytes()
    ollama_index.embed_dim = 32
    first = cli("brief", CHECKOUT, "--json")
    assert first.code == 0 and not first.crashed, first.err
    said = " ".join(first.json()["search"]["notices"])
    assert ("now answers 32 dimensions but the index holds 64 — run `triage index --rebuild`"
            in said), said
    assert first.json()["search"]["mode"] == "lexical"
    rebuilt = cli("index", "--rebuild")
    assert rebuilt.code == 0, rebuilt.err
    again = cli("brief", CHECKOUT, "--json")
    assert again.code == 0 and again.json()["search"]["mode"] == "hybrid", again.err
    assert not [n for n in again.json()["search"]["notices"] if "dimension" in n]
    assert incidents.read_bytes() == before


def test_embedder_dimension_change_with_an_edited_incident_is_named(
        ollama_index: FakeOllama, incidents: Path) -> None:
    ollama_index.embed_dim = 32
    text = incidents.read_text(encoding="utf-8")
    edited = text.replace("  symptoms: >-\n", "  symptoms: >-\n    Edited after review.\n", 1)
    assert edited != text
    incidents.write_text(edited, encoding="utf-8")
    ran = cli("index")
    assert incidents.read_text(encoding="utf-8") == edited
    assert not ran.crashed, ran.err[-600:]
    assert ran.code == 0, ran.err  # every row re-embedded at the new dimension, none stacked
    out = cli("brief", CHECKOUT, "--json").json()
    assert out["search"]["mode"] == "hybrid" and "INC-2041" in {
        r["incident_id"] for r in out["recalled"]}


def test_changed_embedding_model_is_rebuilt_and_named_by_triage_index(
        ollama_index: FakeOllama, incidents: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = incidents.read_bytes()
    ollama_index.models.append("mxbai-embed-large")
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", "mxbai-embed-large")
    ran = cli("index")
    assert ran.code == 0, ran.err
    assert ("index was built with embedder ollama:nomic-embed-text, the console now uses "
            "ollama:mxbai-embed-large; rebuilt from the incidents file") in ran.out
    out = cli("brief", CHECKOUT, "--json").json()  # (the fake's vectors: plumbing, not quality)
    assert "INC-2041" in {r["incident_id"] for r in out["recalled"]}
    assert {"source": "embeddings ollama:mxbai-embed-large", "status": "used"}.items() <= next(
        c for c in out["coverage"] if c["source"].startswith("embeddings")).items()
    assert incidents.read_bytes() == before


# --- index: deleted, truncated, stale, two processes ------------------------------------------

def data_files(index_dir: Path) -> set[str]:
    return {p.name for p in (index_dir / "incidents.lance" / "data").iterdir()}


def truncate_data_files(index_dir: Path) -> None:
    for path in (index_dir / "incidents.lance" / "data").iterdir():
        path.write_bytes(path.read_bytes()[:16])


def test_truncated_index_is_rebuilt_by_brief_and_named_by_doctor_and_index(
        incidents: Path, data: Path, bundled_index_dir: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of the index, each truncated once (LanceDB caches what a process read)."""
    before = incidents.read_bytes()
    truncate_data_files(data / "index")
    doctor = cli("doctor")
    assert doctor.code == 2
    assert "FIX  index does not match itself: index unreadable (lance error:" in doctor.out
    assert "→ run `triage index` (the console also rebuilds it on start)" in doctor.out
    indexed = cli("index")
    assert indexed.code == 0 and not indexed.crashed, indexed.err
    assert "index unreadable (lance error:" in indexed.out
    assert "; rebuilt from the incidents file" in indexed.out

    other = tmp_path / "other-data"
    shutil.copytree(bundled_index_dir, other)
    truncate_data_files(other / "index")
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(other))
    briefed = cli("brief", CHECKOUT, "--json")
    assert briefed.code == 0 and not briefed.crashed, briefed.err
    out = briefed.json()
    assert out["state"] == "proven" and out["recalled"][0]["incident_id"] == "INC-2041"
    memory = load_incidents(incidents)
    meta = read_meta(other / "index")
    assert meta is not None and freshness(other / "index", memory.source_hash,
                                          meta.embedder) == "fresh"  # rebuilt on disk
    assert incidents.read_bytes() == before


async def test_truncated_index_in_the_console_is_rebuilt_and_said_so(incidents: Path,
                                                                     data: Path) -> None:
    truncate_data_files(data / "index")
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        said = notifications(app)
        assert "index unreadable (lance error:" in said
        assert "rebuilt from the incidents file" in said
        assert "index fresh (rebuilt)" in status(app)
        await brief_and_wait(pilot, CHECKOUT)
        assert "INC-2041/A1 WORSENED" in body(app)


def test_stale_index_is_named_by_doctor_and_brief_reads_the_file_as_it_is(
        incidents: Path, data: Path) -> None:
    with incidents.open("a", encoding="utf-8") as file:
        file.write("\n" + yaml.safe_dump([make_incident(
            "INC-9001", service="ledger-service",
            symptoms="ledger totals drift between shards after failover")], sort_keys=False))
    edited = incidents.read_bytes()
    doctor = cli("doctor")
    assert doctor.code == 2
    assert f"FIX  index stale ({data / 'index'})" in doctor.out
    out = cli("brief", "ledger totals drift between shards after failover", "--json").json()
    assert out["recalled"][0]["incident_id"] == "INC-9001"
    assert incidents.read_bytes() == edited


def _deleted(data: Path, fake: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.rmtree(data / "index")


def _truncated(data: Path, fake: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    truncate_data_files(data / "index")


def _other_embedder(data: Path, fake: FakeOllama, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", fake.host)
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", EMBED_MODEL)


@pytest.mark.parametrize("damage", [_deleted, _truncated, _other_embedder],
                         ids=["deleted", "truncated", "other-embedder"])
def test_brief_json_names_an_index_it_had_to_rebuild(
        damage: Any, incidents: Path, data: Path, fake_ollama: FakeOllama,
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = incidents.read_bytes()
    files = data_files(data / "index")
    damage(data, fake_ollama, monkeypatch)
    ran = cli("brief", CHECKOUT, "--json")
    assert ran.code == 0, ran.err
    out = ran.json()
    assert "INC-2041" in {r["incident_id"] for r in out["recalled"]}
    assert data_files(data / "index") - files, "the index was not rebuilt"
    assert incidents.read_bytes() == before
    assert any("index" in n and ("built" in n or "rebuilt" in n)
               for n in out["search"]["notices"]), out["search"]["notices"]


def test_two_triage_index_processes_at_once_both_build_and_leave_a_fresh_index(
        incidents: Path, data: Path) -> None:
    """Two `triage index --rebuild` on one data dir, started together: both exit 0 (the builds
    take turns on the index lock) and the index afterwards is whole.

    (Before the lock, a stress run of aligned builds failed 2 of 30 with 'the index could not
    be written: No such file or directory at <data>/index': see docs/RELIABILITY.md.)
    """
    before = incidents.read_bytes()
    env = subprocess_env(incidents, data)
    runs = [finish(p) for p in [start("index", "--rebuild", env=env) for _ in range(2)]]
    for ran in runs:
        assert ran.code == 0 and not ran.crashed, ran.err
        assert f"index fresh (rebuilt): {len(load_incidents(incidents).incidents)} incidents" \
            in ran.out
    memory = load_incidents(incidents)
    meta = read_meta(data / "index")
    assert meta is not None
    assert freshness(data / "index", memory.source_hash, meta.embedder) == "fresh"
    assert [p.name for p in data.glob(".index-*")] == []
    out = cli("brief", CHECKOUT, "--json").json()
    assert out["recalled"][0]["incident_id"] == "INC-2041" and out["search"]["notices"] == []
    assert incidents.read_bytes() == before


# --- disk: EACCES (ENOSPC and EROFS: tests/test_faults_disk.py) ------------------------------

def _permission_prefix() -> tuple[str, ...] | None:
    """How to run a process for which a mode-0555 directory is really not writable: as root,
    without the capabilities that override file permissions; None if that is not possible."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search")
    probe = subprocess.run([*prefix, "true"], capture_output=True, check=False)
    return prefix if probe.returncode == 0 else None


@pytest.fixture
def unprivileged() -> tuple[str, ...]:
    prefix = _permission_prefix()
    if prefix is None:
        pytest.skip("cannot drop the capabilities that override file permissions here")
    return prefix


@contextlib.contextmanager
def read_only_mode(*paths: Path) -> Iterator[None]:
    """chmod a-w (directories keep r-x) for the block; the modes are put back after it."""
    modes = {path: stat.S_IMODE(path.stat().st_mode) for path in paths}
    for path in paths:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        for path, mode in modes.items():
            path.chmod(mode)


def test_permission_denied_is_named_by_add_index_and_brief(
        unprivileged: tuple[str, ...], tmp_path: Path, incidents: Path,
        bundled_data_dir: Path) -> None:
    """Real EACCES (mode 0555, the process without CAP_DAC_OVERRIDE): an incidents directory
    `triage add` cannot write, a data dir `triage index` and `triage brief` cannot write."""
    new = tmp_path / "new.yaml"
    new.write_text(yaml.safe_dump([make_incident("INC-3001")]), encoding="utf-8")
    locked_data = tmp_path / "locked-data"
    locked_data.mkdir()
    before = incidents.read_bytes()
    with read_only_mode(incidents.parent, locked_data):
        adding = start("add", str(new), env=subprocess_env(incidents, bundled_data_dir),
                       prefix=unprivileged)
        indexing = start("index", env=subprocess_env(incidents, locked_data),
                         prefix=unprivileged)
        briefing = start("brief", CHECKOUT, "--json", env=subprocess_env(incidents, locked_data),
                         prefix=unprivileged)
        add, index, brief = finish(adding), finish(indexing), finish(briefing)

    assert add.code == 1 and not add.crashed, add.err
    assert add.err.startswith("triage: nothing was saved: Permission denied ")
    assert f"{incidents} is unchanged; no temporary file was left behind" in add.err
    assert f"make {incidents.parent} writable for this user, then save again." in add.err
    assert "saved INC-3001" not in add.out
    assert sorted(p.name for p in incidents.parent.iterdir()) == ["incidents.yaml"]

    assert index.code == 1 and not index.crashed, index.err
    assert index.err.startswith(
        f"triage: the index could not be written: Permission denied at {locked_data / 'index'}")
    assert f"make {locked_data} writable for this user, then run `triage index`" in index.err

    assert brief.code == 0 and not brief.crashed, brief.err
    out = brief.json()
    assert out["recalled"][0]["incident_id"] == "INC-2041"
    assert any(f"the index could not be written (Permission denied at {locked_data / 'index'})"
               in n for n in out["search"]["notices"]), out["search"]["notices"]
    assert list(locked_data.iterdir()) == []
    assert incidents.read_bytes() == before


# --- incidents file: malformed, binary, huge, wrong encoding, unreadable symlink, alias bomb ---
# Malformed: tests/test_cli.py (check, brief) and tests/ui/test_main_screen.py (console).

VALID = "- id: INC-1\n  service: widget-api\n  symptoms: caf\u00e9 widget queue stuck\n"
BROKEN_FILES = {
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01",
               ":1: not UTF-8 text (invalid start byte) — save the file as UTF-8"),
    "latin-1": (VALID.encode("latin-1"),
                ":3: not UTF-8 text (invalid continuation byte) — save the file as UTF-8"),
    "utf-16": (VALID.encode("utf-16"),
               ":1: not UTF-8 text (invalid start byte) — save the file as UTF-8"),
    "alias-bomb": (BOMB.encode(), ":4: YAML aliases (*name) are not accepted in an incidents "
                                  "file — write the value out in full"),
}


@pytest.mark.parametrize("kind", list(BROKEN_FILES))
def test_unusable_incidents_file_is_bad_input_everywhere(
        kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    content, problem = BROKEN_FILES[kind]
    path = tmp_path / "incidents.yaml"
    path.write_bytes(content)
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    data = tmp_path / "data"
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(data))
    for command in (["check"], ["brief", CHECKOUT, "--json"], ["index"]):
        ran = cli(*command)
        assert ran.code == 2 and not ran.crashed, (command, ran.err)
        assert ran.out == ""
        assert ran.err.startswith("triage: the incidents file has 1 problem:\n"), ran.err
        assert f"  {path}{problem}\n" in ran.err
    doctor = cli("doctor")
    assert doctor.code == 2
    assert f"FIX  incidents file {path}: 1 problem(s)" in doctor.out
    assert path.read_bytes() == content
    assert not data.exists()


def test_alias_bomb_given_to_triage_add_is_refused_and_writes_nothing(
        tmp_path: Path, incidents: Path, data: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB, encoding="utf-8")
    before = incidents.read_bytes()
    ran = cli("add", str(bomb))
    assert ran.code == 2 and not ran.crashed
    assert f"{bomb}:4: YAML aliases (*name) are not accepted" in ran.err
    assert incidents.read_bytes() == before


def test_dangling_symlink_is_named_not_found(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    link = tmp_path / "incidents.yaml"
    link.symlink_to(tmp_path / "moved-away.yaml")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(link))
    for command in (["check"], ["brief", CHECKOUT, "--json"]):
        ran = cli(*command)
        assert ran.code == 2 and not ran.crashed, ran.err
        assert (f"{link}: not found — create it or point TRIAGE_INCIDENTS at your incidents "
                "file or directory") in ran.err
    assert link.is_symlink() and not (tmp_path / "moved-away.yaml").exists()


def test_symlink_to_an_unreadable_file_is_named(unprivileged: tuple[str, ...],
                                                tmp_path: Path, data: Path) -> None:
    """Real EACCES: the link's target has mode 0000. `check` and `brief` both name the file and
    the fault, as bad input (exit 2)."""
    target = tmp_path / "team-incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, target)
    link = tmp_path / "incidents.yaml"
    link.symlink_to(target)
    before = target.read_bytes()
    target.chmod(0)
    try:
        env = subprocess_env(link, data)
        check, brief = (finish(p) for p in [start("check", env=env, prefix=unprivileged),
                                            start("brief", CHECKOUT, env=env,
                                                  prefix=unprivileged)])
    finally:
        target.chmod(0o644)
    assert check.code == 2 and not check.crashed, check.err
    assert f"{link}: cannot read: Permission denied" in check.err
    assert brief.code == 2 and not brief.crashed, brief.err
    assert f"{link}: cannot read: Permission denied" in brief.err
    assert target.read_bytes() == before


@pytest.fixture
def symlink_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    link = tmp_path / "incidents.yaml"
    other = tmp_path / "other.yaml"
    link.symlink_to(other)
    other.symlink_to(link)
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(link))
    return link


def test_symlink_loop_is_named_as_such_by_check_and_brief(symlink_loop: Path) -> None:
    check, brief = cli("check"), cli("brief", CHECKOUT, "--json")
    assert "symbolic links" in check.err, check.err
    assert (check.code, brief.code) == (2, 2), (check.err, brief.err)


async def test_symlink_loop_in_the_console_is_named(symlink_loop: Path, tmp_path: Path) -> None:
    app = TriageApp(Settings(incidents_path=symlink_loop, data_dir=tmp_path / "data"))
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(100):  # waits for the memory worker to end (bounded)
            await pilot.pause(0.02)
            if not any(w.is_running for w in app.workers):
                break
        await pilot.pause()
        assert not isinstance(app.screen, ErrorScreen), "the 'Something went wrong' dialog"
        assert "The memory cannot be loaded" in body(app)
        assert str(symlink_loop) in body(app)


# Huge (50 MB in linear time): tests/test_huge_memory.py (no cyclic-GC pass during the read)
# and bench/load_bench.py (the figures); progress and resume: the mid-build tests above and
# tests/store/test_index_resume.py (Ctrl-C and SIGKILL).


# --- alerts: empty, 50 MB, binary, hostile JSON -----------------------------------------------
# Binary --alert-file: tests/test_cli.py; parsing each shape: tests/engine/briefing/test_alert.py.

@pytest.mark.parametrize("how", ["argument", "blank-argument", "file", "stdin"])
def test_empty_alert_is_bad_input_and_nothing_is_written(
        how: str, tmp_path: Path, incidents: Path) -> None:
    empty = tmp_path / "alert.txt"
    empty.write_bytes(b"")
    args = {"argument": [""], "blank-argument": [" \n\t "], "file": ["--alert-file", str(empty)],
            "stdin": ["-"]}[how]
    ran = cli("brief", *args, "--json", stdin=b"  \n")
    assert ran.code == 2 and not ran.crashed and ran.out == ""
    assert ran.err == "triage: the alert is empty — type or paste what the alert says\n"
    assert not (tmp_path / "data").exists()


FIFTY_MB = 50 * 1024 * 1024


def test_fifty_megabyte_alerts_are_briefed_on_their_start_and_say_so(
        tmp_path: Path, incidents: Path, data: Path) -> None:
    text = tmp_path / "alert.txt"
    line = CHECKOUT + "\n"
    text.write_text(line * (FIFTY_MB // len(line) + 1), encoding="utf-8")
    webhook = tmp_path / "alert.json"
    webhook.write_text(json.dumps({"alerts": [{
        "status": "firing", "labels": {"alertname": "CheckoutLatencyHigh",
                                       "service": "checkout-service"},
        "annotations": {"summary": CHECKOUT, "description": "x" * FIFTY_MB}}]}),
        encoding="utf-8")
    before = incidents.read_bytes()
    for alert in (text, webhook):
        assert alert.stat().st_size >= FIFTY_MB
        ran = cli("brief", "--alert-file", str(alert), "--json")
        assert ran.code == 0 and not ran.crashed, ran.err[:400]
        out = ran.json()
        assert out["recalled"][0]["incident_id"] == "INC-2041", alert.name
        assert ("alert was longer than 20,000 characters; only the start was searched"
                in out["search"]["notices"]), alert.name
    assert incidents.read_bytes() == before


@pytest.mark.parametrize(("data_in", "message"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "stdin looks binary, not an alert — pass text or "
                                             "Alertmanager JSON"),
    ("Zahlungsdienst gest\u00f6rt".encode("latin-1"), "stdin is not UTF-8 text — pass text or "
                                                     "Alertmanager JSON"),
], ids=["binary", "latin-1"])
def test_binary_alert_on_stdin_is_bad_input(data_in: bytes, message: str, tmp_path: Path,
                                            incidents: Path) -> None:
    ran = cli("brief", "-", "--json", stdin=data_in)
    assert ran.code == 2 and not ran.crashed and ran.out == ""
    assert ran.err == f"triage: {message}\n"
    assert not (tmp_path / "data").exists()


HOSTILE_JSON = {
    "nested-100k": ('{"alerts": ' + "[" * 100_000 + "]" * 100_000 + "}",
                    "alert JSON is nested too deeply to be an Alertmanager payload"),
    # JSON that is no payload this console reads is briefed as its text (the test below);
    # with no words in it at all there is nothing to search.
    "no-words": ('{"alerts": 3, "labels": null, "values": [1, 2, {"x": []}]}',
                 "JSON alert is not a payload this console reads (Alertmanager, Grafana, "
                 "PagerDuty, Opsgenie) and holds no text to search"),
    # (With Alertmanager's keys it is briefed as text with a notice: test_cli_input_limits.py.)
    "broken": ('{"items": [{"labels": {"alertname": "X"}',
               "alert looks like JSON but does not parse (line 1, column "),
    "nothing-to-search": ('{"alerts": [{"labels": {"instance": "pod-1"}, "annotations": [1]}]}',
                          "Alertmanager payload has no alertname, summary or description"),
}


@pytest.mark.parametrize("kind", list(HOSTILE_JSON))
def test_hostile_json_alert_is_bad_input_with_the_reason(kind: str, tmp_path: Path,
                                                         incidents: Path) -> None:
    payload, message = HOSTILE_JSON[kind]
    path = tmp_path / "alert.json"
    path.write_text(payload, encoding="utf-8")
    ran = cli("brief", "--alert-file", str(path), "--json")
    assert ran.code == 2 and not ran.crashed, ran.err[-400:]
    assert ran.out == "" and ran.err.startswith(f"triage: {message}"), ran.err[:300]
    assert not (tmp_path / "data").exists()


def test_json_that_is_no_payload_this_console_reads_is_briefed_as_its_text(
        tmp_path: Path, incidents: Path, data: Path) -> None:
    """Issue 24: JSON of an unknown tool (here Alertmanager's key holding no list) was exit 2
    "JSON alert is not an Alertmanager webhook"; now it is briefed as what was pasted, and a
    notice says it was not read by its fields."""
    path = tmp_path / "alert.json"
    path.write_text(json.dumps({"alerts": "firing", "labels": None, "check": CHECKOUT}),
                    encoding="utf-8")
    before = incidents.read_bytes()
    ran = cli("brief", "--alert-file", str(path), "--json")
    assert ran.code == 0 and not ran.crashed, ran.err[-400:]
    out = ran.json()
    assert out["input"]["format"] == "text" and out["input"]["service"] is None
    assert out["recalled"][0]["incident_id"] == "INC-2041"
    assert ("the alert is JSON but not a payload this console reads (Alertmanager, Grafana, "
            "PagerDuty Events v2 or webhook v3, Opsgenie): briefed as plain text, not by its "
            "fields") in out["search"]["notices"]
    assert incidents.read_bytes() == before


HUGE_NUMBER = '{"alerts": [{"labels": {"alertname": "CheckoutLatencyHigh", "shard": ' \
    + "9" * 5000 + "}}]}"


def test_json_alert_with_a_huge_number_is_bad_input(tmp_path: Path, incidents: Path) -> None:
    path = tmp_path / "alert.json"
    path.write_text(HUGE_NUMBER, encoding="utf-8")
    ran = cli("brief", "--alert-file", str(path), "--json")
    assert not ran.crashed, ran.err[-400:]
    assert ran.code == 2 and ran.err.startswith("triage: ")


async def test_json_alert_with_a_huge_number_pasted_into_the_console(incidents: Path,
                                                                    data: Path) -> None:
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data))
    with contextlib.suppress(ValueError):  # what escapes run_test when the app crashes
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            app.screen.query_one("#alert-input", Input).value = HUGE_NUMBER
            await pilot.press("enter")
            await settle(pilot)
            assert "JSON" in body(app)
    assert app.return_code is None, "the console exited"


@pytest.mark.parametrize("how", ["webhook-escape", "argument-bytes"])
def test_alert_with_a_lone_surrogate_is_briefed_or_refused(how: str, tmp_path: Path,
                                                           incidents: Path, data: Path) -> None:
    if how == "webhook-escape":
        path = tmp_path / "alert.json"
        path.write_text('{"alerts": [{"labels": {"alertname": "\\ud800 checkout-service p99 '
                        'latency up"}}]}', encoding="utf-8")
        args = ["--alert-file", str(path)]
    else:
        args = [os.fsdecode(CHECKOUT.encode() + b" \xff\xfe")]  # as Python decodes argv
    ran = cli("brief", *args, "--json")
    assert not ran.crashed, ran.err[-400:]
    assert (ran.code == 0 and ran.json()["state"]) or (ran.code == 2 and ran.err)


# --- concurrency: two `triage add` processes ---------------------------------------------------
# Two writers in one process: tests/test_concurrent_saves.py; 50 rounds of two processes:
# bench/concurrent_add_bench.py (figures in docs/RELIABILITY.md).

def test_two_triage_add_processes_at_once_both_save_and_the_index_has_both(
        tmp_path: Path, incidents: Path, data: Path) -> None:
    before = incidents.read_bytes()
    files = []
    for n in range(2):
        path = tmp_path / f"new-{n}.yaml"
        path.write_text(yaml.safe_dump([make_incident(
            f"INC-{9100 + n}", service="airship-api",
            symptoms=f"zeppelin {n} mooring lines snapped at dawn")], sort_keys=False),
            encoding="utf-8")
        files.append(path)
    env = subprocess_env(incidents, data)
    runs = [finish(p) for p in [start("add", str(path), env=env) for path in files]]
    for n, ran in enumerate(runs):
        assert ran.code == 0 and not ran.crashed, ran.err
        assert ran.out.startswith(f"saved INC-{9100 + n} to {incidents}")
    after = incidents.read_bytes()
    assert after.startswith(before)
    assert {i.id for i in load_incidents(incidents).incidents} >= {"INC-9100", "INC-9101"}
    out = cli("brief", "zeppelin mooring lines snapped at dawn", "--json").json()
    assert {"INC-9100", "INC-9101"} <= {r["incident_id"] for r in out["recalled"]}
    assert out["search"]["notices"] == []
