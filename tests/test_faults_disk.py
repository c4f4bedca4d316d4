"""A full disk and a read-only one, for real: what `triage add`, `index` and `brief` say and do.

Each test puts the data dir (index, embedding cache) or the incidents file on a tiny tmpfs
that is then filled (ENOSPC) or remounted read-only (EROFS) — see tests/disk_faults.py, which
injects the same faults at the OS-call level where mount is not permitted. Every test checks
the message the user reads, the exit code, and the incidents file: unchanged when nothing was
saved, exactly the old bytes plus the new incident's block when it was.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from store.index import META_FILE, freshness, read_meta
from store.loader import load_incidents, parse_incidents_text
from store.writer import incident_block
from tests.conftest import BUNDLED_INCIDENTS
from tests.disk_faults import Disk, Disks, copy_tree, disks_fixture, run_triage  # noqa: F401

NEW = """\
- id: INC-3001
  service: ledger-service
  symptoms: ledger totals drift between shards after failover
  actions:
    - id: A1
      action: Replayed the shard journal on every shard
      outcome: WORSENED
      explanation: Replay doubled entries on the primary
    - id: A2
      action: Reconciled from the audit stream
      outcome: RESOLVED
      explanation: The audit stream is authoritative
"""
LEDGER_ALERT = "ledger totals drift between shards after failover"
CHECKOUT_ALERT = "checkout-service p99 latency up, intermittent database connection errors"
FULL = "No space left on device"
READ_ONLY = "Read-only file system"


@pytest.fixture
def new_file(tmp_path: Path) -> Path:
    path = tmp_path / "new.yaml"
    path.write_text(NEW, encoding="utf-8")
    return path


def incidents_in(directory: Path) -> Path:
    path = directory / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, path)
    return path


def appended(old: bytes) -> bytes:
    """The incidents file after a good `triage add` of NEW: old bytes, one blank line, block."""
    incident = parse_incidents_text(NEW, "new.yaml")[0]
    separator = b"" if old.endswith(b"\n\n") else (b"\n" if old.endswith(b"\n") else b"\n\n")
    return old + separator + incident_block(incident).encode("utf-8")


def env_for(incidents: Path, data: Path) -> dict[str, str]:
    return {"TRIAGE_INCIDENTS": str(incidents), "TRIAGE_DATA_DIR": str(data)}


def data_disk(disks: Disks, bundled_index_dir: Path) -> Disk:
    """A data dir on its own small disk, holding a fresh index of the bundled memory."""
    disk = disks.make("data", size="2m")
    copy_tree(bundled_index_dir, disk.path)
    return disk


def no_temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- triage add ---------------------------------------------------------------------------

def test_add_with_the_data_dir_full_saves_the_file_and_says_the_index_is_behind(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path, new_file: Path) -> None:
    data = data_disk(disks, bundled_index_dir)
    incidents = incidents_in(tmp_path)
    old = incidents.read_bytes()
    meta_before = (data.path / "index" / META_FILE).read_bytes()
    data.fill()

    result = run_triage(disks, "add", str(new_file), env=env_for(incidents, data.path))

    assert result.returncode == 1, result.stderr
    assert f"saved INC-3001 to {incidents}" in result.stdout
    assert (f"triage: saved INC-3001 to {incidents}; the index could not be updated "
            f"({FULL} at {data.path / 'index'})") in result.stderr
    assert "rebuilds the index when it next starts" in result.stderr
    assert "nothing stored was changed" not in result.stderr
    assert "Traceback" not in result.stderr
    assert incidents.read_bytes() == appended(old)
    assert no_temp_files(tmp_path) == []
    # The index on disk still says what it was built from: the next start sees it stale.
    assert (data.path / "index" / META_FILE).read_bytes() == meta_before
    meta = read_meta(data.path / "index")
    assert meta is not None
    assert freshness(data.path / "index", load_incidents(incidents).source_hash,
                     meta.embedder) == "stale"

    data.free()
    brief = run_triage(disks, "brief", LEDGER_ALERT, "--json", env=env_for(incidents, data.path))
    assert brief.returncode == 0, brief.stderr
    out = json.loads(brief.stdout)
    assert [r["incident_id"] for r in out["recalled"]][:1] == ["INC-3001"]
    # once space is free the stale index is rebuilt on disk (and said so), not held in memory
    assert [n.split(":")[0] for n in out["search"]["notices"]] == ["index built"], \
        out["search"]["notices"]


def test_add_with_the_incidents_disk_full_saves_nothing_and_leaves_no_temp_file(
        disks: Disks, bundled_data_dir: Path, new_file: Path) -> None:
    memory = disks.make("memory", size="256k")
    incidents = incidents_in(memory.path)
    old = incidents.read_bytes()
    memory.fill()

    result = run_triage(disks, "add", str(new_file), env=env_for(incidents, bundled_data_dir))

    assert result.returncode == 1, result.stderr
    assert f"triage: nothing was saved: {FULL}" in result.stderr
    assert f"{incidents} is unchanged; no temporary file was left behind" in result.stderr
    assert "saved INC-3001" not in result.stdout
    assert "Traceback" not in result.stderr
    assert incidents.read_bytes() == old
    assert no_temp_files(memory.path) == []


def test_add_with_a_read_only_data_dir_saves_the_file_and_says_the_index_is_behind(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path, new_file: Path) -> None:
    data = data_disk(disks, bundled_index_dir)
    incidents = incidents_in(tmp_path)
    old = incidents.read_bytes()
    data.read_only()

    result = run_triage(disks, "add", str(new_file), env=env_for(incidents, data.path))

    assert result.returncode == 1, result.stderr
    assert f"saved INC-3001 to {incidents}" in result.stdout
    assert (f"the index could not be updated ({READ_ONLY} at {data.path / 'index'})"
            in result.stderr)
    assert "Traceback" not in result.stderr
    assert incidents.read_bytes() == appended(old)


def test_add_with_a_read_only_incidents_dir_saves_nothing(
        disks: Disks, bundled_data_dir: Path, new_file: Path) -> None:
    memory = disks.make("memory", size="256k")
    incidents = incidents_in(memory.path)
    old = incidents.read_bytes()
    memory.read_only()

    result = run_triage(disks, "add", str(new_file), env=env_for(incidents, bundled_data_dir))

    assert result.returncode == 1, result.stderr
    assert f"triage: nothing was saved: {READ_ONLY}" in result.stderr
    assert "TRIAGE_INCIDENTS" in result.stderr  # what to do: a writable place
    assert "saved INC-3001" not in result.stdout
    assert "Traceback" not in result.stderr
    assert incidents.read_bytes() == old


# --- triage index -------------------------------------------------------------------------

def test_index_rebuild_with_the_data_dir_full_names_the_fault_and_keeps_the_old_index(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path) -> None:
    data = data_disk(disks, bundled_index_dir)
    incidents = incidents_in(tmp_path)
    old = incidents.read_bytes()
    data.fill()

    result = run_triage(disks, "index", "--rebuild", env=env_for(incidents, data.path))

    assert result.returncode == 1, result.stderr
    assert (f"triage: the index could not be written: {FULL} at {data.path / 'index'}"
            in result.stderr)
    assert f"free some space on the disk holding {data.path}" in result.stderr
    assert "Traceback" not in result.stderr
    assert incidents.read_bytes() == old
    assert [p.name for p in data.path.glob(".index-*")] == []  # no half-built index left
    memory = load_incidents(incidents)
    meta = read_meta(data.path / "index")
    assert meta is not None
    assert freshness(data.path / "index", memory.source_hash, meta.embedder) == "fresh"

    brief = run_triage(disks, "brief", CHECKOUT_ALERT, "--json",
                       env=env_for(incidents, data.path))
    assert brief.returncode == 0, brief.stderr
    out = json.loads(brief.stdout)
    assert out["recalled"][0]["incident_id"] == "INC-2041"
    assert out["search"]["notices"] == []  # the old index was whole and used as it was


def test_index_with_a_read_only_data_dir_names_the_fault(disks: Disks, tmp_path: Path) -> None:
    data = disks.make("data", size="256k")
    incidents = incidents_in(tmp_path)
    data.read_only()

    result = run_triage(disks, "index", env=env_for(incidents, data.path))

    assert result.returncode == 1, result.stderr
    assert (f"triage: the index could not be written: {READ_ONLY} at {data.path / 'index'}"
            in result.stderr)
    assert "TRIAGE_DATA_DIR" in result.stderr
    assert "Traceback" not in result.stderr


# --- triage brief -------------------------------------------------------------------------

@pytest.mark.parametrize("fault", ["full", "read-only"])
def test_brief_without_a_writable_index_briefs_from_an_index_held_in_memory(
        fault: str, disks: Disks, tmp_path: Path) -> None:
    data = disks.make("data", size="256k")
    incidents = incidents_in(tmp_path)
    if fault == "full":
        data.fill()
    else:
        data.read_only()

    result = run_triage(disks, "brief", CHECKOUT_ALERT, "--json",
                        env=env_for(incidents, data.path))

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    out = json.loads(result.stdout)
    assert out["state"] != "no_prior_incident"
    assert out["recalled"][0]["incident_id"] == "INC-2041"
    said = " ".join(out["search"]["notices"])
    reason = FULL if fault == "full" else READ_ONLY
    assert (f"the index could not be written ({reason} at {data.path / 'index'}): this recall "
            "searched an index held in memory") in said
    assert "run `triage index`" in said


def test_brief_with_the_index_stale_and_the_data_dir_full_still_finds_the_new_incident(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path) -> None:
    """The incidents file gained an incident the index on disk lacks, and the disk is full:
    the briefing must come from the file as it is, never 'no prior incident'."""
    data = data_disk(disks, bundled_index_dir)
    incidents = incidents_in(tmp_path)
    incidents.write_bytes(appended(incidents.read_bytes()))
    data.fill()

    result = run_triage(disks, "brief", LEDGER_ALERT, "--json", env=env_for(incidents, data.path))

    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["recalled"][0]["incident_id"] == "INC-3001"
    assert [w["action_id"] for w in out["warnings"]] == ["INC-3001/A1"]
    assert any(f"{FULL} at {data.path / 'index'}" in n for n in out["search"]["notices"])


# --- the embedding cache ------------------------------------------------------------------

def test_a_full_embedding_cache_is_skipped_and_said_so(disks: Disks, tmp_path: Path) -> None:
    """The cache (SQLite: 'database or disk is full') sits on a full disk, the index does not:
    the index is built with vectors, and the user learns the vectors were not kept."""
    cache_disk = disks.make("cache", size="256k")
    data = tmp_path / "data"
    data.mkdir()
    (data / "embeddings.sqlite").symlink_to(cache_disk.path / "embeddings.sqlite")
    incidents = incidents_in(tmp_path)
    cache_disk.fill()

    result = run_triage(disks, "index", env=env_for(incidents, data))

    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    built = f"index built: {len(load_incidents(incidents).incidents)} incidents"
    assert built in result.stdout and "with vectors" in result.stdout
    assert (f"the embedding cache could not be written ({FULL} at {data / 'embeddings.sqlite'}):"
            " the vectors were not kept, so the next build embeds them again") in result.stdout


# --- triage doctor ------------------------------------------------------------------------

def test_doctor_names_a_data_dir_it_cannot_write_and_an_index_that_lies(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path) -> None:
    data = data_disk(disks, bundled_index_dir)
    incidents = incidents_in(tmp_path)
    meta = json.loads((data.path / "index" / META_FILE).read_text(encoding="utf-8"))
    (data.path / "index" / META_FILE).write_text(json.dumps({**meta, "rows": 0}),
                                                 encoding="utf-8")
    data.fill()

    result = run_triage(disks, "doctor", env=env_for(incidents, data.path))

    assert result.returncode == 2, result.stdout
    n = len(load_incidents(incidents).incidents)
    assert (f"FIX  index does not match itself: index metadata claims 0 rows but its table "
            f"holds {n} ({data.path / 'index'})") in result.stdout
    assert f"FIX  {data.path} (TRIAGE_DATA_DIR) cannot be written: {FULL}" in result.stdout
    assert f"ok   {tmp_path} (TRIAGE_INCIDENTS) is writable" in result.stdout
    assert "Traceback" not in result.stderr
