"""Headless commands load only what they use, and a freshness stamp is never trusted stale.

Issue 23: `triage index` on a fresh index took 4.4 s and `triage doctor` 3.2 s, nearly all of it
importing LanceDB (~1.3 s), the briefing pipeline and the embedder — to read a metadata file.
Now a fresh index is vouched for by its stamp (store/index.py, table_stamp: the table's files
and the metadata as they were when last checked) and LanceDB is opened only to search.
bench/headless_bench.py has the times; these tests hold what makes them, by the modules a run
leaves in ``sys.modules`` (no clock), and that every way the stamp can go stale is caught.

Only a run whose imports are asserted is a fresh interpreter (``triage``); the stamping before
a test and the runs that assert only what a user reads run in this process (``here``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from store import minilm
from store.index import META_FILE, TABLE, read_meta, vouched
from store.minilm import MiniLMEmbedder
from tests.conftest import BUNDLED_INCIDENTS

REPO = Path(__file__).resolve().parent.parent
# Runs `triage ARGS` as the script does, then writes what the process imported (and whether the
# MiniLM weights were loaded) to the file named first.
WRAPPER = """
import json, runpy, sys
report = sys.argv.pop(1)
sys.argv[0] = "triage"
code = 0
try:
    runpy.run_module("console", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
minilm = sys.modules.get("store.minilm")
with open(report, "w", encoding="utf-8") as out:
    json.dump({"modules": sorted(sys.modules),
               "weights_loaded": minilm._load.cache_info().currsize if minilm else 0}, out)
sys.exit(code)
"""
# Nothing `index` or `doctor` on a fresh index uses: the table (LanceDB, Arrow), the embedder
# (numpy, tokenizers, the weights; torch and onnxruntime never), the model client, the pipeline.
NOT_NEEDED = ("lancedb", "pyarrow", "numpy", "tokenizers", "safetensors", "torch", "onnxruntime",
              "ollama", "httpx", "textual", "console.engine.pipeline",
              "console.engine.briefing.models", "console.engine.model.client", "store.recall")
NEW_INCIDENT = """
- id: INC-9301
  title: Tile renderer drew every map upside down
  service: maps-tiles
  symptoms: Every rendered map tile was upside down after the projection library upgrade
  actions:
    - id: A1
      action: Pinned the projection library to the previous release
      outcome: RESOLVED
      explanation: The upgrade flipped the y axis of the tile projection
"""


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    modules: frozenset[str]
    weights_loaded: bool

    def imported(self, *names: str) -> list[str]:
        """Which of ``names`` (packages: their submodules count) the run imported."""
        return [n for n in names if any(m == n or m.startswith(n + ".") for m in self.modules)]


def triage(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Run:
    """`triage ARGS` in a fresh interpreter: what it printed and what it imported."""
    report = tmp_path / f"run-{len(list(tmp_path.glob('run-*.json')))}.json"
    done = subprocess.run([sys.executable, "-c", WRAPPER, str(report), *args], cwd=REPO,
                          env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=300, check=False)
    seen: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return Run(done.returncode, done.stdout, done.stderr, frozenset(seen["modules"]),
               bool(seen["weights_loaded"]))


@dataclass(frozen=True)
class Said:
    """What an in-process run printed (its imports are this process's: never asserted)."""

    code: int
    stdout: str
    stderr: str


def here(capsys: pytest.CaptureFixture[str], *args: str) -> Said:
    """`triage ARGS` run by ``main`` in this process, under the test's (monkeypatched) env."""
    from console.__main__ import main

    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return Said(code, out, err)


@pytest.fixture
def data_dir(bundled_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The prebuilt bundled index, checked once (a copied table is not the one its stamp
    names: the first open self-checks it and stamps it)."""
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    return bundled_data_dir


def stamped(capsys: pytest.CaptureFixture[str]) -> Said:
    """The copied index checked and stamped by a first `triage index`."""
    first = here(capsys, "index")
    assert first.code == 0, first.stderr
    return first


def a_table_file(data_dir: Path) -> Path:
    data = sorted((data_dir / "index" / f"{TABLE}.lance" / "data").iterdir())
    assert data, "the table holds no data file"
    return data[0]


# --- what a fresh index's `triage index` and `triage doctor` do not load ----------------------

def test_index_on_a_fresh_index_imports_neither_lancedb_nor_the_embedder(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamped(capsys)

    run = triage(tmp_path, "index")

    assert run.code == 0, run.stderr
    assert run.stdout.startswith("index fresh: 58 incidents, 187 actions"), run.stdout
    assert run.imported(*NOT_NEEDED) == []
    assert not run.weights_loaded


def test_doctor_on_a_fresh_index_imports_neither_lancedb_nor_the_embedder_nor_ollama(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamped(capsys)

    run = triage(tmp_path, "doctor")

    assert run.code == 0, run.stdout + run.stderr
    assert f"ok   index fresh ({data_dir / 'index'})" in run.stdout
    assert "ok   embedder all-MiniLM-L6-v2 (in-process, bundled weights)" in run.stdout
    assert run.imported(*NOT_NEEDED) == []
    assert not run.weights_loaded


def test_doctor_asks_ollama_only_when_a_model_is_configured(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The model client is imported where it is used: with TRIAGE_MODEL set, doctor asks
    (here nobody answers on the port, and it says so)."""
    stamped(capsys)

    run = triage(tmp_path, "doctor", env={"TRIAGE_MODEL": "qwen2.5:7b",
                                          "OLLAMA_HOST": "http://127.0.0.1:9"})

    assert run.code == 2
    assert "FIX  Ollama at http://127.0.0.1:9" in run.stdout, run.stdout
    assert run.imported("console.engine.model.client", "ollama") == [
        "console.engine.model.client", "ollama"]
    assert run.imported("lancedb") == []


def test_brief_loads_the_table_and_the_embedder_it_searches_with(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamped(capsys)

    run = triage(tmp_path, "brief", "--json", "payments service KeyError: 'amount' after deploy")

    assert run.code == 0, run.stderr
    assert json.loads(run.stdout)["state"] == "proven"
    assert run.imported("lancedb", "console.engine.pipeline") == ["lancedb",
                                                                   "console.engine.pipeline"]
    assert run.weights_loaded
    assert run.imported("torch", "onnxruntime", "textual") == []


# --- a stamp that no longer holds is never trusted --------------------------------------------

def test_the_first_open_of_a_copied_index_checks_it_and_the_next_trusts_the_stamp(
        data_dir: Path, tmp_path: Path) -> None:
    meta = read_meta(data_dir / "index")
    assert meta is not None and not vouched(data_dir / "index", meta)  # a copy: other inodes

    first = triage(tmp_path, "index")
    second = triage(tmp_path, "index")

    assert first.imported("lancedb") == ["lancedb"]  # the self-check read the table
    assert vouched(data_dir / "index", read_meta(data_dir / "index"))
    assert second.imported("lancedb") == []
    assert first.stdout == second.stdout


def test_a_table_file_touched_since_its_stamp_is_checked_again(
        data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamped(capsys)
    table_file = a_table_file(data_dir)
    held = table_file.stat()
    os.utime(table_file, ns=(held.st_atime_ns, held.st_mtime_ns + 1_000_000_000))

    run = triage(tmp_path, "index")

    assert run.code == 0, run.stderr
    assert run.imported("lancedb") == ["lancedb"]
    assert run.stdout.startswith("index fresh: 58 incidents"), run.stdout  # it still matches
    assert triage(tmp_path, "index").imported("lancedb") == []  # and is stamped again


def test_a_truncated_table_file_with_its_times_put_back_is_rebuilt(
        data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stamped(capsys)
    table_file = a_table_file(data_dir)
    held = table_file.stat()
    with table_file.open("r+b") as handle:
        handle.truncate(held.st_size // 2)
    os.utime(table_file, ns=(held.st_atime_ns, held.st_mtime_ns))

    doctor = here(capsys, "doctor")
    run = here(capsys, "index")

    assert "FIX  index does not match itself: index unreadable" in doctor.stdout, doctor.stdout
    assert run.code == 0, run.stderr
    assert "rebuilt from the incidents file" in run.stdout, run.stdout
    assert "index built: 58 incidents, 187 actions, with vectors" in run.stdout
    briefed = here(capsys, "brief", "--json", "payments service KeyError: 'amount' after deploy")
    assert json.loads(briefed.stdout)["state"] == "proven", briefed.stderr


def test_metadata_edited_under_its_stamp_is_checked_and_rebuilt(
        data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The stamp covers the metadata too: a file claiming 0 rows is not believed."""
    stamped(capsys)
    path = data_dir / "index" / META_FILE
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["rows"] = 0
    path.write_text(json.dumps(meta), encoding="utf-8")

    run = here(capsys, "index")

    assert "index metadata claims 0 rows but its table holds 58; rebuilt" in run.stdout, run.stdout


def test_an_index_copied_over_another_with_its_stamp_is_not_trusted(
        tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Same metadata, same file names and sizes, another table: the inodes differ."""
    stamped(capsys)
    other = tmp_path / "other"
    shutil.copytree(data_dir, other)
    shutil.copy2(data_dir / "index" / META_FILE, other / "index" / META_FILE)

    assert vouched(data_dir / "index", read_meta(data_dir / "index"))
    assert not vouched(other / "index", read_meta(other / "index"))


@pytest.fixture
def own_incidents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, path)
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    return path


def test_an_incidents_file_changed_under_the_same_modification_time_is_seen(
        data_dir: Path, tmp_path: Path, own_incidents: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Freshness is the content's hash, never the file's times: an incident added with the
    file's mtime put back makes the index stale — doctor says so, brief finds the incident."""
    stamped(capsys)
    held = own_incidents.stat()
    with own_incidents.open("a", encoding="utf-8") as out:
        out.write(NEW_INCIDENT)
    os.utime(own_incidents, ns=(held.st_atime_ns, held.st_mtime_ns))
    assert yaml.safe_load(own_incidents.read_text(encoding="utf-8"))[-1]["id"] == "INC-9301"

    doctor = here(capsys, "doctor")
    briefed = here(capsys, "brief", "--json",
                   "maps-tiles: every rendered map tile is upside down after an upgrade")
    again = triage(tmp_path, "index")

    assert doctor.code == 2 and "FIX  index stale" in doctor.stdout, doctor.stdout
    assert "incidents file incidents.yaml: 59 incidents" in doctor.stdout.replace(
        str(own_incidents), "incidents.yaml")
    assert briefed.code == 0, briefed.stderr
    recalled = {r["incident_id"] for r in json.loads(briefed.stdout)["recalled"]}
    assert "INC-9301" in recalled
    assert again.stdout.startswith("index fresh: 59 incidents"), again.stdout
    assert again.imported("lancedb") == []  # the brief's rebuild stamped it


# --- the embedder's weights: laid out once, mapped by every later process ----------------------

TEXTS = ["payments-api 5xx error rate above 5% after deploy",
         "queue backlog on the notification service", "disk " * 400]


@pytest.fixture
def fresh_loads() -> Iterator[None]:
    """Each load below reads from disk (the model is otherwise kept once per process)."""
    minilm._load.cache_clear()
    yield
    minilm._load.cache_clear()


@pytest.fixture(scope="module")
def from_the_zip() -> np.ndarray:
    return MiniLMEmbedder(cache_dir=False).embed(TEXTS)


@dataclass(frozen=True)
class LaidOut:
    copy: Path  # the file the embedder wrote to its empty cache dir
    written: np.ndarray  # TEXTS embedded by that process, the one that wrote it


@pytest.fixture(scope="module")
def written_once(tmp_path_factory: pytest.TempPathFactory) -> LaidOut:
    """The weights laid out by an embedder whose cache dir was empty, once per module (~0.8 s:
    inflating the zip and writing ~90 MB); ``a_copy_in`` puts the copy in a test's cache dir."""
    cache_dir = tmp_path_factory.mktemp("minilm-cache")
    minilm._load.cache_clear()
    written = MiniLMEmbedder(cache_dir=cache_dir).embed(TEXTS)
    minilm._load.cache_clear()
    [copy] = cache_dir.glob("minilm-*.bin")
    return LaidOut(copy, written)


@pytest.fixture
def laid_out(written_once: LaidOut) -> Path:
    return written_once.copy


def a_copy_in(cache_dir: Path, laid_out: Path) -> Path:
    """``cache_dir`` as an earlier process left it: holding the laid-out copy (its own file)."""
    return Path(shutil.copy2(laid_out, cache_dir / laid_out.name))


def test_the_mapped_weights_give_the_very_vectors_of_the_zip(
        tmp_path: Path, fresh_loads: None, from_the_zip: np.ndarray,
        written_once: LaidOut) -> None:
    copy = a_copy_in(tmp_path, written_once.copy)

    mapped = MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS)

    assert np.array_equal(written_once.written, from_the_zip)
    assert np.array_equal(mapped, from_the_zip)  # bit for bit, not merely close
    assert copy.stat().st_size > 80_000_000


def test_a_mapped_copy_is_read_without_inflating_the_zip(
        tmp_path: Path, fresh_loads: None, from_the_zip: np.ndarray,
        monkeypatch: pytest.MonkeyPatch, laid_out: Path) -> None:
    a_copy_in(tmp_path, laid_out)

    def inflate(*args: Any) -> Any:
        raise AssertionError("model.safetensors was read from the zip")

    monkeypatch.setattr("safetensors.numpy.load", inflate)
    assert np.array_equal(MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS), from_the_zip)


@pytest.mark.parametrize("damage", ["truncated", "another zip's", "not a layout"])
def test_a_damaged_copy_is_ignored_and_written_again(
        damage: str, tmp_path: Path, fresh_loads: None, from_the_zip: np.ndarray,
        laid_out: Path) -> None:
    copy = a_copy_in(tmp_path, laid_out)
    size = copy.stat().st_size
    if damage == "truncated":
        with copy.open("r+b") as handle:
            handle.truncate(size // 2)
    elif damage == "another zip's":
        data = copy.read_bytes()
        assert data.count(b'"key": "v1-') == 1
        with copy.open("r+b") as handle:  # the one key rewritten in place: same length
            handle.seek(data.index(b'"key": "v1-'))
            handle.write(b'"key": "v0-')
    else:
        copy.write_bytes(b"\0" * 64)

    assert np.array_equal(MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS), from_the_zip)
    assert copy.stat().st_size == size  # the good copy is back
    minilm._load.cache_clear()
    assert np.array_equal(MiniLMEmbedder(cache_dir=tmp_path).embed(TEXTS), from_the_zip)


def test_a_cache_dir_that_cannot_be_written_only_costs_time(
        tmp_path: Path, fresh_loads: None, from_the_zip: np.ndarray) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("in the way", encoding="utf-8")

    assert np.array_equal(MiniLMEmbedder(cache_dir=not_a_dir / "cache").embed(TEXTS),
                          from_the_zip)
    assert not_a_dir.read_text(encoding="utf-8") == "in the way"
    assert list(tmp_path.glob("**/*.tmp")) == []


# --- the cyclic GC, paused for a one-shot command, is back on for whoever called main ---------

@pytest.mark.parametrize("argv", [["index"], ["brief", "--json", "disk full on db-01"],
                                  ["eval", "--queries", "nowhere.yaml"]])
def test_main_leaves_the_collector_on_as_it_found_it(argv: list[str], data_dir: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import gc

    from console.__main__ import main

    assert gc.isenabled()
    main(argv)
    assert gc.isenabled()
    capsys.readouterr()
