"""An index that lies about itself is caught when it is opened, rebuilt, and the user told why.

Before, a metadata file claiming 0 rows (or any count, dimension or content other than the
table's) was taken at its word: every briefing said "no prior incident" without a sign.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from store.index import META_FILE, SCHEMA_VERSION, IndexUnavailable, MemoryIndex
from store.loader import LoadedMemory, load_incidents
from store.minilm import MiniLMEmbedder
from store.recall import recall
from tests.conftest import BUNDLED_INCIDENTS

KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}


@pytest.fixture(scope="module")
def bundled_memory() -> LoadedMemory:
    return load_incidents(BUNDLED_INCIDENTS)


def edit_meta(index_dir: Path, **changes: Any) -> None:
    path = index_dir / META_FILE
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta.update(changes)
    path.write_text(json.dumps(meta), encoding="utf-8")


def lie(**changes: Any) -> Callable[[Path, int], None]:
    def damage(index_dir: Path, incidents: int) -> None:
        edit_meta(index_dir, **{k: (v(incidents) if callable(v) else v)
                                for k, v in changes.items()})
    return damage


# (what the metadata claims, what the notice must say)
LIES = {
    "zero-rows": (lie(rows=0), "index metadata claims 0 rows but its table holds {n}"),
    "one-row-too-many": (lie(rows=lambda n: n + 1),
                         "index metadata claims {n1} rows but its table holds {n}"),
    "incidents-count": (lie(incidents=lambda n: n - 1, rows=lambda n: n),
                        "index holds {n} rows for {n} incidents"),
    "vector-dim": (lie(vector_dim=128), "index metadata says 128 vector dimensions but its "
                                        "table holds 384"),
    "no-vectors-claimed": (lie(vector_dim=None), "index metadata says no vector dimensions "
                                                 "but its table holds 384"),
}


@pytest.mark.parametrize("name", list(LIES))
def test_metadata_that_contradicts_the_table_is_rebuilt_with_the_reason(
        name: str, bundled_data_dir: Path, bundled_memory: LoadedMemory) -> None:
    damage, said = LIES[name]
    n = len(bundled_memory.incidents)
    damage(bundled_data_dir / "index", n)
    index = MemoryIndex(bundled_data_dir, MiniLMEmbedder())

    notices = index.open(bundled_memory)

    expected = said.format(n=n, n1=n + 1)
    assert any(expected in notice and "rebuilt from the incidents file" in notice
               for notice in notices), notices
    assert index.state == "rebuilt"
    assert index.meta is not None and index.meta.rows == n
    found = recall(index, KEYERROR)
    assert {i.incident_id for i in found.incidents} == KEYERROR_INCIDENTS


def test_a_table_holding_other_incidents_than_its_metadata_claims_is_rebuilt(
        tmp_path: Path, write_incidents: Any, incident: Any) -> None:
    """Same count, same hash in the metadata — but the rows are another memory's."""
    ours = load_incidents(write_incidents([
        incident("INC-1", symptoms="Widget queue stopped draining"),
        incident("INC-2", service="billing-api", symptoms="Invoices rendered with a blank total"),
    ], name="ours.yaml"))
    theirs = load_incidents(write_incidents([
        incident("INC-1", symptoms="Gadget cache evicted everything"),
        incident("INC-7", service="auth-api", symptoms="Login tokens expired early"),
    ], name="theirs.yaml"))
    MemoryIndex(tmp_path / "ours").open(ours)
    MemoryIndex(tmp_path / "theirs").open(theirs)
    # Their table under our metadata: every count and hash the metadata holds is ours.
    shutil.copy(tmp_path / "ours" / "index" / META_FILE, tmp_path / "theirs" / "index")

    index = MemoryIndex(tmp_path / "theirs")
    notices = index.open(ours)

    assert any("index rows do not match the incidents file (3 incident(s) differ, first "
               "INC-1)" in n for n in notices), notices
    assert [i.incident_id for i in recall(index, "widget queue stopped draining").incidents] == [
        "INC-1"]
    assert recall(index, "login tokens expired early").incidents == ()


def test_an_index_of_another_schema_version_is_rebuilt_and_says_so(
        bundled_data_dir: Path, bundled_memory: LoadedMemory) -> None:
    edit_meta(bundled_data_dir / "index", schema_version=SCHEMA_VERSION - 1)
    notices = MemoryIndex(bundled_data_dir, MiniLMEmbedder()).open(bundled_memory)
    assert any(f"index was written by another version (schema {SCHEMA_VERSION - 1}, this one "
               f"reads {SCHEMA_VERSION}); rebuilt" in n for n in notices), notices


def test_an_index_of_another_embedder_is_rebuilt_and_says_so(
        bundled_data_dir: Path, bundled_memory: LoadedMemory) -> None:
    notices = MemoryIndex(bundled_data_dir, None).open(bundled_memory)
    assert any(f"index was built with embedder {MiniLMEmbedder().id}, the console now uses "
               "none; rebuilt" in n for n in notices), notices


def test_a_sound_index_opens_without_a_word(bundled_data_dir: Path,
                                            bundled_memory: LoadedMemory) -> None:
    index = MemoryIndex(bundled_data_dir, MiniLMEmbedder())
    assert index.open(bundled_memory) == []
    assert index.state == "fresh"


def test_the_engine_status_says_rebuilt_when_the_self_check_rebuilt(
        bundled_data_dir: Path) -> None:
    edit_meta(bundled_data_dir / "index", rows=0)
    engine = TriageEngine(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    status = engine.load()
    assert status.index == "fresh (rebuilt)"
    assert any("claims 0 rows" in n for n in status.notices), status.notices
    briefing = engine.brief(parse_alert(KEYERROR)).briefing
    assert briefing.state != "no_prior_incident"
    assert {r.incident_id for r in briefing.recalled} == KEYERROR_INCIDENTS


def test_an_index_never_opened_refuses_to_search_instead_of_finding_nothing(
        tmp_path: Path) -> None:
    with pytest.raises(IndexUnavailable, match="the memory was not searched"):
        recall(MemoryIndex(tmp_path / "data"), KEYERROR)
