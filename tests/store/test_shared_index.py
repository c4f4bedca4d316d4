# ruff: noqa: F811  (the S3 fixtures are imported by name, as conftest imports fake_ollama)
"""The shared index on a real S3 protocol server (moto's server mode on 127.0.0.1, started by
tests/s3_server.py) with real LanceDB: publish, read from another data dir, the local
overlay, pull and offline, concurrent publishers, a store that dies, another embedder."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.engine.briefing.alert import parse_alert
from console.engine.config import Settings
from console.engine.engine import TriageEngine, read_memory
from store import minilm
from store.index import IndexUnavailable, MemoryIndex
from store.minilm import MiniLMEmbedder
from store.pulled import pull
from store.recall import recall
from store.shared import (
    PublishResult,
    SharedMismatch,
    SharedStale,
    SharedUnavailable,
    connect,
    current,
    prune,
    publish,
    read_manifest,
)
from tests.conftest import BUNDLED_INCIDENTS
from tests.s3_server import S3Server, free_port, s3_bucket, s3_env, s3_server  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
ALERTS = [
    "payments-api connection timeouts to postgres after deploy, HikariPool exhausted",
    "consumer lag on warehouse-events topic, inventory freshness SLO burning",
    "certificate expired on the edge load balancer, TLS handshake failures",
]
OLD = "2026-01-01T00:00:00+00:00"
NEW = "2026-06-01T00:00:00+00:00"


class _RememberingMiniLM(MiniLMEmbedder):
    """The bundled MiniLM, remembering every text's vector for this module (in this process).

    These tests build the bundled memory's index afresh several times each (a CI publish, a
    laptop's overlay, a local build to compare with): the same ~60 texts, embedded to the same
    vectors each time (~2 s a build). What they test is publishing, layering and falling back,
    not the embedder (tests/store/test_minilm*.py), so each text is embedded once. Still a
    MiniLMEmbedder (its id, its availability check), so every code path that asks is unchanged.
    Subprocesses (the publishers racing, the script exiting) embed for themselves."""

    _vectors: dict[tuple[str, int, str], Any] = {}

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        keys = [(self.id, self.max_tokens, text) for text in texts]
        missing = list(dict.fromkeys(key for key in keys if key not in self._vectors))
        if not keys or missing or self.available() is not None:  # unavailable: raises as ever
            fresh = super().embed([key[2] for key in missing])
            self._vectors.update(zip(missing, fresh, strict=True))
        if not keys:
            return super().embed([])
        return np.stack([self._vectors[key] for key in keys])


@pytest.fixture(autouse=True, scope="module")
def _one_embedding_per_text() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(minilm, "MiniLMEmbedder", _RememberingMiniLM)
        yield


def incidents_copy(tmp_path: Path, name: str = "incidents.yaml") -> Path:
    target = tmp_path / name
    target.write_text(BUNDLED_INCIDENTS.read_text(encoding="utf-8"), encoding="utf-8")
    return target


def settings(env: dict[str, str], data_dir: Path, incidents: Path, **extra: str) -> Settings:
    return Settings.from_env({**env, "TRIAGE_DATA_DIR": str(data_dir),
                              "TRIAGE_INCIDENTS": str(incidents), **extra})


def publish_from(config: Settings, when: str | None = None, force: bool = False) -> PublishResult:
    memory = read_memory(config.incidents_path)
    builder = MemoryIndex(config.data_dir, TriageEngine(config).embedder())
    return publish(config.shared_store(), memory, builder, when, force)


def recalled(engine: TriageEngine, alert: str) -> list[tuple[str, float]]:
    found = recall(engine.snapshot().index, alert)
    return [(i.incident_id, i.score) for i in found.incidents]


def edit(path: Path, change: Any) -> None:
    items = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(items)
    path.write_text(yaml.safe_dump(items, sort_keys=False), encoding="utf-8")


def test_publish_then_another_data_dir_recalls_what_a_local_index_recalls(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    ci = settings(s3_env, tmp_path / "ci", incidents)
    result = publish_from(ci, when=NEW)
    assert result.published is not None and result.published.label == "v1"
    assert result.published.incidents == len(read_memory(incidents).incidents)

    laptop = TriageEngine(settings(s3_env, tmp_path / "laptop", incidents))
    status = laptop.load()
    assert status.shared == "shared v1" and status.overlaid == 0
    assert not (tmp_path / "laptop" / "index").exists()  # nothing re-embedded or built here
    local = TriageEngine(settings({}, tmp_path / "local", incidents))
    local.load()
    for alert in ALERTS:
        assert recalled(laptop, alert) == recalled(local, alert)
    assert recalled(laptop, ALERTS[0])  # and it does recall something


def test_publishing_the_same_content_again_makes_no_new_version(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    ci = settings(s3_env, tmp_path / "ci", incidents_copy(tmp_path))
    publish_from(ci, when=NEW)
    again = publish_from(ci, when=NEW)
    assert again.published is None and "already published as shared v1" in again.notices[0]
    assert len(read_manifest(ci.shared_store())) == 1


def test_an_older_publish_is_refused_as_stale_unless_forced(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    newer = incidents_copy(tmp_path, "newer.yaml")
    edit(newer, lambda items: items.pop())
    older = incidents_copy(tmp_path, "older.yaml")
    publish_from(settings(s3_env, tmp_path / "a", newer), when=NEW)
    stale = settings(s3_env, tmp_path / "b", older)
    with pytest.raises(SharedStale, match="stale"):
        publish_from(stale, when=OLD)
    assert len(read_manifest(stale.shared_store())) == 1
    forced = publish_from(stale, when=OLD, force=True)
    assert forced.published is not None and forced.current.publish_id == forced.published.publish_id
    assert forced.current.source_hash == read_memory(older).source_hash


def _overlay_memory(tmp_path: Path) -> tuple[Path, str, str, str]:
    """An incidents file with one incident added, one edited and one deleted."""
    path = incidents_copy(tmp_path)
    items = yaml.safe_load(path.read_text(encoding="utf-8"))
    edited, deleted = items[0]["id"], items[1]["id"]
    new = {"id": "INC-9001", "title": "Zanzibar ledger reconciliation drift", "service":
           "ledger-reconciler", "symptoms": "Zanzibar ledger reconciliation drift: nightly "
           "batch totals disagree with the bank statement by exactly one cent per row",
           "actions": [{"id": "A1", "action": "Re-ran the reconciler with banker's rounding",
                        "outcome": "RESOLVED", "explanation": "The drift was a rounding mode "
                        "change; rounding half-even matched the bank."}]}

    def change(items: list[dict[str, Any]]) -> None:
        items[0]["symptoms"] = ("Quasar cache stampede: every quasar-cache node evicted its keys "
                                "at once and origin QPS tripled")
        del items[1]
        items.append(new)
    edit(path, change)
    return path, "INC-9001", edited, deleted


def test_local_overlay_new_edited_and_deleted_incidents(s3_env: dict[str, str],
                                                        tmp_path: Path) -> None:
    shared_file = incidents_copy(tmp_path, "shared.yaml")
    publish_from(settings(s3_env, tmp_path / "ci", shared_file), when=OLD)
    # This laptop held every incident once: a deletion is one only of an incident held here.
    TriageEngine(settings(s3_env, tmp_path / "laptop", incidents_copy(tmp_path))).load()
    local_file, new_id, edited, deleted = _overlay_memory(tmp_path)  # written now: newer
    laptop = TriageEngine(settings(s3_env, tmp_path / "laptop", local_file))
    status = laptop.load()
    assert status.shared == "shared v1" and status.overlaid == 2
    assert status.index == "shared v1 + 2 local"  # what the status line shows

    # new: recalled at once; and scored on the same scale as a full local build of this file
    full = TriageEngine(settings({}, tmp_path / "full", local_file))
    full.load()
    new_alert = "ledger reconciliation drift, batch totals off by one cent against the bank"
    layered, built = dict(recalled(laptop, new_alert)), dict(recalled(full, new_alert))
    assert new_id in layered and new_id in built
    assert layered[new_id] == pytest.approx(built[new_id], abs=0.01)
    # edited: the local text shadows the shared record
    edited_alert = "quasar cache stampede, every node evicted its keys, origin QPS tripled"
    assert edited in dict(recalled(laptop, edited_alert))
    found = recall(laptop.snapshot().index, edited_alert)
    record = next(i for i in found.incidents if i.incident_id == edited)
    assert "Quasar" in record.symptoms
    # deleted: hidden, whatever the alert
    shared_memory = read_memory(shared_file)
    gone = next(i for i in shared_memory.incidents if i.id == deleted)
    assert deleted not in dict(recalled(laptop, gone.symptoms))


def test_a_laptop_behind_the_shared_content_keeps_the_shared_records(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    shared_file = incidents_copy(tmp_path, "shared.yaml")
    publish_from(settings(s3_env, tmp_path / "ci", shared_file), when=NEW)
    behind = incidents_copy(tmp_path, "behind.yaml")
    items = yaml.safe_load(behind.read_text(encoding="utf-8"))
    missing = items[-1]
    edit(behind, lambda items: items.pop())
    old = time.time() - 400 * 86400
    os.utime(behind, (old, old))  # last pulled from git long before the shared version
    laptop = TriageEngine(settings(s3_env, tmp_path / "laptop", behind))
    status = laptop.load()
    assert status.overlaid == 0
    assert any("older than the content of shared v1" in n for n in status.notices)
    assert missing["id"] in dict(recalled(laptop, missing["symptoms"]))


def test_a_save_joins_the_overlay_at_once(s3_env: dict[str, str], tmp_path: Path) -> None:
    from store.models import Incident

    incidents = incidents_copy(tmp_path)
    publish_from(settings(s3_env, tmp_path / "ci", incidents), when=OLD)
    laptop = TriageEngine(settings(s3_env, tmp_path / "laptop", incidents))
    laptop.load()
    incident = Incident.model_validate({
        "id": "INC-9100", "service": "orbital-scheduler", "title": "Orbital scheduler drift",
        "symptoms": "orbital scheduler drift: cron jobs fire eleven minutes late on every node",
        "actions": [{"id": "A1", "action": "Resynced chrony on the scheduler nodes",
                     "outcome": "RESOLVED", "explanation": "The clocks had drifted."}]})
    saved = laptop.save_incident(incident)
    assert saved.status.overlaid == 1 and saved.status.shared == "shared v1"
    assert "INC-9100" in dict(recalled(laptop, "orbital scheduler cron jobs firing late"))


def test_pull_then_offline_still_briefs(s3_env: dict[str, str], tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    publish_from(settings(s3_env, tmp_path / "ci", incidents), when=NEW)
    laptop_dir = tmp_path / "laptop"
    online = TriageEngine(settings(s3_env, laptop_dir, incidents))
    online.load()
    expected = recalled(online, ALERTS[0])
    pulled = pull(online.settings.shared_store(), laptop_dir)
    assert pulled.version.label == "v1"

    dead = {**s3_env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"}
    started = time.monotonic()
    cut_off = TriageEngine(settings(dead, laptop_dir, incidents))
    status = cut_off.load()
    assert time.monotonic() - started < 10
    assert status.shared is not None and status.shared.startswith("pulled v1, ")
    assert any("the store is not reachable" in n and "pulled" in n for n in status.notices), \
        status.notices
    assert recalled(cut_off, ALERTS[0]) == expected
    briefing = cut_off.brief(parse_alert(ALERTS[0])).briefing
    assert briefing.search is not None
    assert any("copy of shared v1 pulled" in n for n in briefing.search.notices)

    offline = TriageEngine(settings(dead, laptop_dir, incidents, TRIAGE_OFFLINE="1"))
    status = offline.load()
    assert any(n.startswith("offline (TRIAGE_OFFLINE)") for n in status.notices)
    assert recalled(offline, ALERTS[0]) == expected


@pytest.fixture(scope="module")
def _gone_mid_session(_one_embedding_per_text: None, tmp_path_factory: pytest.TempPathFactory,
                      ) -> dict[str, tuple[TriageEngine, list[tuple[str, float]]]]:
    """Two consoles on one shared v1 (one laptop also holds a local build), each loaded and
    recalling, then their store stopped: one server started and published to, not two."""
    tmp_path = tmp_path_factory.mktemp("mid")
    server = S3Server(free_port())
    server.start()
    try:
        server.make_bucket("mid")
        env = server.env("mid")
        incidents = incidents_copy(tmp_path)
        publish_from(settings(env, tmp_path / "ci", incidents), when=NEW)
        consoles = {}
        for fallback in ("none", "local"):
            laptop_dir = tmp_path / fallback
            if fallback == "local":
                TriageEngine(settings({}, laptop_dir, incidents)).load()  # a local build exists
            engine = TriageEngine(settings(env, laptop_dir, incidents))
            assert engine.load().shared == "shared v1"
            consoles[fallback] = (engine, recalled(engine, ALERTS[0]))
    finally:
        server.stop()
    return consoles


@pytest.mark.parametrize("fallback", ["none", "local"])
def test_store_down_mid_session(
        _gone_mid_session: dict[str, tuple[TriageEngine, list[tuple[str, float]]]],
        fallback: str) -> None:
    engine, before = _gone_mid_session[fallback]
    started = time.monotonic()
    if fallback == "none":
        with pytest.raises(IndexUnavailable, match="not searched"):
            engine.brief(parse_alert(ALERTS[0]))
    else:
        briefing = engine.brief(parse_alert(ALERTS[0])).briefing
        assert briefing.search is not None
        assert any("stopped answering" in n and "built on this laptop" in n
                   for n in briefing.search.notices)
        assert [(r.incident_id) for r in briefing.recalled][:1] == [before[0][0]]
        status = engine.status()  # the status line no longer claims the shared index
        assert status is not None and status.shared == "local (shared index not used)"
        assert status.index == "local (shared index not used)"
        again = engine.brief(parse_alert(ALERTS[1])).briefing  # no second wait on the dead store
        assert again.search is not None and any("stopped answering" in n
                                                for n in again.search.notices)
    assert time.monotonic() - started < 10


def test_a_console_on_a_version_pruned_under_it_falls_back_and_says_so(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    ci = settings(s3_env, tmp_path / "ci", incidents)
    publish_from(ci, when=OLD)
    laptop_dir = tmp_path / "laptop"
    TriageEngine(settings({}, laptop_dir, incidents)).load()  # a local build exists
    engine = TriageEngine(settings(s3_env, laptop_dir, incidents))
    assert engine.load().shared == "shared v1"
    expected = recalled(engine, ALERTS[0])
    edit(incidents, lambda items: items[0].update(title=items[0]["title"] + " (edited)"))
    publish_from(ci, when=NEW)
    result = prune(ci.shared_store(), keep=1)
    assert [v.label for v in result.removed] == ["v1"] and [v.label for v in result.kept] == ["v2"]

    briefing = engine.brief(parse_alert(ALERTS[0])).briefing  # v1's tables are gone from the bucket
    assert briefing.search is not None
    assert any("stopped answering" in n and "built on this laptop" in n
               for n in briefing.search.notices)
    assert [r.incident_id for r in briefing.recalled][:1] == [expected[0][0]]


def test_wrong_embedder_is_reported_with_what_to_run(s3_env: dict[str, str],
                                                     tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    publish_from(settings(s3_env, tmp_path / "ci", incidents, TRIAGE_EMBED_MODEL="none"),
                 when=NEW)
    laptop = TriageEngine(settings(s3_env, tmp_path / "laptop", incidents))
    with pytest.raises(SharedMismatch) as raised:
        laptop.load()
    text = raised.value.render()
    assert "built with embedder none" in text and "uses all-MiniLM-L6-v2" in text
    assert "TRIAGE_EMBED_MODEL=none" in text and "triage index --publish" in text
    # with a local index to fall back on, the console still briefs, and says why
    TriageEngine(settings({}, tmp_path / "laptop", incidents)).load()
    status = TriageEngine(settings(s3_env, tmp_path / "laptop", incidents)).load()
    assert status.shared == "local (shared index not used)"
    assert any("built with embedder none" in n and "built on this laptop" in n
               for n in status.notices)


def test_missing_bucket_and_dead_endpoint_are_named_quickly(s3_env: dict[str, str],
                                                            tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    for env, words in (({**s3_env, "TRIAGE_INDEX_URI": "s3://no-such-bucket/team"},
                        "bucket does not exist"),
                       ({**s3_env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}"},
                        "not reachable")):
        started = time.monotonic()
        with pytest.raises(SharedUnavailable) as raised:
            TriageEngine(settings(env, tmp_path / "laptop", incidents)).load()
        assert time.monotonic() - started < 10
        assert words in raised.value.title and "not searched" in raised.value.title


def test_wrong_credentials_are_named_and_the_pulled_copy_used(s3_env: dict[str, str],
                                                              tmp_path: Path) -> None:
    incidents = incidents_copy(tmp_path)
    laptop = tmp_path / "laptop"
    publish_from(settings(s3_env, laptop, incidents), when=NEW)
    pull(Settings.from_env(s3_env).shared_store(), laptop)
    checking = S3Server(free_port(), auth=True)  # a store that checks keys: ours are unknown
    checking.start()
    try:
        env = {**s3_env, "AWS_ENDPOINT_URL": checking.endpoint}
        started = time.monotonic()
        with pytest.raises(SharedUnavailable) as raised:
            TriageEngine(settings(env, tmp_path / "elsewhere", incidents)).load()
        assert "the store refused the credentials" in raised.value.title
        status = TriageEngine(settings(env, laptop, incidents)).load()
        assert time.monotonic() - started < 20  # two loads, each bounded
        assert any("refused the credentials" in n and "copy of shared v1" in n
                   for n in status.notices)
    finally:
        checking.stop()


def test_a_store_that_accepts_but_never_answers_is_reported_within_10_s(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections (the kernel does), never answers a request
    try:
        # A 2 s request timeout: given up after 4 s. Unbounded, LanceDB's own retries on this
        # silent store would take ~15 s (measured), so a lost bound still fails the 10 s.
        env = {**s3_env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
               "TRIAGE_S3_TIMEOUT": "2"}
        started = time.monotonic()
        with pytest.raises(SharedUnavailable) as raised:
            TriageEngine(settings(env, tmp_path / "laptop", incidents_copy(tmp_path))).load()
        assert time.monotonic() - started < 10
        assert "did not answer in time" in raised.value.title
    finally:
        silent.close()


def test_a_briefing_after_a_store_given_up_on_is_printed_whole(
        s3_env: dict[str, str], bundled_data_dir: Path) -> None:
    # The read is given up after 2 s (TRIAGE_S3_TIMEOUT=1; LanceDB's own retries on a silent
    # store take ~8 s at that timeout) and may still be running when the briefing is done;
    # `python -m console` (the script's `run`) then leaves at once, after flushing: either way
    # the whole briefing and its notice reach the pipe.
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    try:
        env = {**s3_env, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent.getsockname()[1]}",
               "TRIAGE_S3_TIMEOUT": "1", "TRIAGE_DATA_DIR": str(bundled_data_dir),
               "TRIAGE_INCIDENTS": str(BUNDLED_INCIDENTS), "PATH": os.environ["PATH"]}
        result = subprocess.run([sys.executable, "-m", "console", "brief", ALERTS[0]],
                                capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("[")  # the state line, first
        assert "Recalled" in result.stdout and "Confidence" in result.stdout
        assert result.stdout.rstrip().endswith("the index built on this laptop from "
                                               f"{len(read_memory(BUNDLED_INCIDENTS).incidents)}"
                                               " incidents")
    finally:
        silent.close()


_STUCK_AT_EXIT = """
import atexit, sys, threading, time
from store.shared import CALL_THREAD
# What LanceDB's abandoned Rust call does to a normal exit (~5 s measured), made endless: the
# interpreter's shutdown waits. `run` must not.
atexit.register(time.sleep, 3600)
threading.Thread(target=time.sleep, args=(3600,), name=CALL_THREAD, daemon=True).start()
sys.argv = ["triage", "check"]
from console.__main__ import run
run()
"""


def test_the_triage_script_does_not_wait_at_exit_for_a_store_call_it_gave_up_on(
        tmp_path: Path) -> None:
    env = {"PATH": os.environ["PATH"], "TRIAGE_DATA_DIR": str(tmp_path),
           "TRIAGE_INCIDENTS": str(BUNDLED_INCIDENTS)}
    result = subprocess.run([sys.executable, "-c", _STUCK_AT_EXIT], capture_output=True,
                            text=True, env=env, cwd=REPO, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "incidents" in result.stdout  # check's report, flushed before the exit


_PUBLISHER = """
import sys, time
from pathlib import Path
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from tests.store.test_shared_index import publish_from
TriageEngine(Settings.from_env()).embedder().embed(["warm up"])  # the weights, loaded now
ready, go = Path(sys.argv[2]), Path(sys.argv[3])
ready.touch()
while not go.exists():  # both imported and loaded: publish together
    time.sleep(0.005)
result = publish_from(Settings.from_env(), when=sys.argv[1])
print(result.published.publish_id if result.published else "none")
"""


def test_two_processes_publishing_at_once_lose_nothing_and_never_mix(
        s3_env: dict[str, str], tmp_path: Path) -> None:
    one = incidents_copy(tmp_path, "one.yaml")
    two = incidents_copy(tmp_path, "two.yaml")
    edit(two, lambda items: items.pop())
    go = tmp_path / "go"  # a barrier, not a clock: released once both processes are ready
    processes, ready = [], []
    for name, path, when in (("one", one, OLD), ("two", two, NEW)):
        env = {**s3_env, "TRIAGE_DATA_DIR": str(tmp_path / name),
               "TRIAGE_INCIDENTS": str(path), "PYTHONPATH": str(REPO)}
        ready.append(tmp_path / f"{name}.ready")
        processes.append(subprocess.Popen(
            [sys.executable, "-c", _PUBLISHER, when, str(ready[-1]), str(go)], cwd=REPO,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 120
    while not all(r.exists() for r in ready) and time.monotonic() < deadline:
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.01)
    go.touch()
    outputs = [p.communicate(timeout=120) for p in processes]
    assert all(p.returncode == 0 for p in processes), outputs
    store = Settings.from_env(s3_env).shared_store()
    manifest = read_manifest(store)
    assert sorted(p.number for p in manifest) == [1, 2]
    assert {p.publish_id for p in manifest} == {out.strip() for out, _ in outputs}
    for version, path in zip(sorted(manifest, key=lambda p: p.source_time), (one, two),
                             strict=True):
        memory = read_memory(path)
        assert version.source_hash == memory.source_hash
        db = connect(store, version.prefix)
        ids = sorted(r["incident_id"] for r in db.open_table("hashes").to_arrow().to_pylist())
        assert ids == sorted(i.id for i in memory.incidents)
        assert db.open_table("incidents").count_rows() == len(memory.incidents)
    newest = current(manifest)
    assert newest is not None and newest.source_hash == read_memory(two).source_hash


def test_game_day_incidents_are_never_published(s3_env: dict[str, str], tmp_path: Path) -> None:
    """A postmortem saved in a drill (``drill: true``) stays on the laptop: the shared version
    neither holds nor recalls it, even for a reader that includes drills."""
    incidents = incidents_copy(tmp_path)
    edit(incidents, lambda items: items.append({
        "id": "INC-9001", "service": "ledger-api", "drill": True,
        "symptoms": "zebra-unicorn errors on every ledger post during the game day",
        "actions": [{"id": "A1", "action": "Flipped the zebra-unicorn switch",
                     "outcome": "RESOLVED", "explanation": "practice"}]}))
    ci = settings(s3_env, tmp_path / "ci", incidents)
    result = publish_from(ci, when=NEW)
    assert result.published is not None
    assert result.published.incidents == len(read_memory(incidents).incidents) - 1
    reader = settings(s3_env, tmp_path / "reader", incidents_copy(tmp_path, "other.yaml"),
                      TRIAGE_OFFLINE="")
    engine = TriageEngine(reader.replace(include_drills=True))
    engine.load()
    assert "INC-9001" not in {i for i, _ in recalled(engine, "zebra-unicorn errors ledger post")}
