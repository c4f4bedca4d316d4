"""The LanceDB index: derived, rebuilt when stale or damaged, optional vectors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from store.embedder import OllamaEmbedder
from store.index import TABLE, MemoryIndex, freshness
from store.loader import LoadedMemory, load_incidents
from store.minilm import MiniLMEmbedder
from store.recall import recall
from tests.conftest import BUNDLED_INCIDENTS
from tests.fake_ollama import FakeOllama, refused_host

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}
QUERIES = [CHECKOUT, KEYERROR, "TLS certificate expired on internal gRPC mesh",
           "orders postgres primary disk almost full, pg_wal growing fast"]


def answers(index: MemoryIndex) -> dict[str, list[tuple[str, float]]]:
    """What recall returns for QUERIES: incident ids and scores, best first."""
    return {q: [(i.incident_id, i.score) for i in recall(index, q).incidents] for q in QUERIES}


@pytest.fixture(scope="module")
def bundled_memory() -> LoadedMemory:
    """Loaded once per module: parsing the bundled file costs ~0.2 s."""
    return load_incidents(BUNDLED_INCIDENTS)


def small_memory(write_incidents, incident, explanation: str = "queue drained",
                 symptoms: str = "Widget queue stopped draining and frobnicator latency rose",
                 ) -> LoadedMemory:
    path = write_incidents([
        incident("INC-1", symptoms=symptoms,
                 actions=[{"id": "A1", "action": "Restarted the frobnicator",
                           "outcome": "RESOLVED", "explanation": explanation}]),
        incident("INC-2", service="billing-api", symptoms="Invoices rendered with a blank total",
                 actions=[{"id": "A1", "action": "Reverted the invoice template",
                           "outcome": "RESOLVED", "explanation": "totals came back"}]),
    ])
    return load_incidents(path)


# --- freshness ----------------------------------------------------------------------------

def test_build_makes_a_fresh_index(tmp_path: Path, write_incidents, incident) -> None:
    memory = small_memory(write_incidents, incident)
    index = MemoryIndex(tmp_path / "data")
    assert freshness(index.index_dir, memory.source_hash, None) == "missing"
    notices = index.open(memory)
    assert any("index built: 2 incidents, 2 actions" in n for n in notices), notices
    assert freshness(index.index_dir, memory.source_hash, None) == "fresh"
    assert [i.incident_id for i in recall(index, "widget queue stopped draining").incidents] == [
        "INC-1"]


def test_content_edit_makes_it_stale_and_open_rebuilds(tmp_path: Path, write_incidents,
                                                       incident) -> None:
    data = tmp_path / "data"
    before = small_memory(write_incidents, incident)
    MemoryIndex(data).open(before)
    after = small_memory(write_incidents, incident,
                         symptoms="Widget queue stopped draining; zeppelin lock never released")
    assert after.source_hash != before.source_hash
    assert freshness(data / "index", after.source_hash, None) == "stale"

    index = MemoryIndex(data)
    notices = index.open(after)
    assert any("index built" in n for n in notices), notices
    assert freshness(data / "index", after.source_hash, None) == "fresh"
    # The rebuilt index answers from the edited content.
    found = recall(index, "zeppelin lock never released").incidents
    assert [i.incident_id for i in found] == ["INC-1"]
    assert "zeppelin" in found[0].symptoms


def test_comment_and_whitespace_edit_keeps_it_fresh(tmp_path: Path, write_incidents,
                                                    incident) -> None:
    data = tmp_path / "data"
    memory = small_memory(write_incidents, incident)
    MemoryIndex(data).open(memory)
    path = memory.files[0]
    text = path.read_text(encoding="utf-8")
    path.write_text("# reviewed in the March postmortem\n\n"
                    + text.replace("\n- id:", "\n\n# next incident\n- id:") + "\n\n",
                    encoding="utf-8")
    edited = load_incidents(path)
    assert freshness(data / "index", edited.source_hash, None) == "fresh"
    notices = MemoryIndex(data).open(edited)
    assert not any("built" in n for n in notices), notices


def test_deleted_index_is_rebuilt_with_same_answers(bundled_data_dir: Path,
                                                    bundled_memory: LoadedMemory) -> None:
    index = MemoryIndex(bundled_data_dir, MiniLMEmbedder())
    assert index.open(bundled_memory) == []
    before = answers(index)
    shutil.rmtree(bundled_data_dir / "index")

    rebuilt = MemoryIndex(bundled_data_dir, MiniLMEmbedder())
    notices = rebuilt.open(bundled_memory)
    built = f"index built: {len(bundled_memory.incidents)} incidents"
    assert any(built in n for n in notices), notices
    assert answers(rebuilt) == before
    assert before[CHECKOUT][0][0] == "INC-2041"


def _delete_data_files(index_dir: Path) -> None:
    for path in (index_dir / f"{TABLE}.lance" / "data").iterdir():
        path.unlink()


def _truncate_data_files(index_dir: Path) -> None:
    for path in (index_dir / f"{TABLE}.lance" / "data").iterdir():
        path.write_bytes(path.read_bytes()[:16])


def _garbage_meta(index_dir: Path) -> None:
    (index_dir / "meta.json").write_text("{\x00 this is not json", encoding="utf-8")


def _delete_meta(index_dir: Path) -> None:
    (index_dir / "meta.json").unlink()


def _delete_fulltext_index(index_dir: Path) -> None:
    shutil.rmtree(index_dir / f"{TABLE}.lance" / "_indices")


def _garbage_manifests(index_dir: Path) -> None:
    for path in (index_dir / f"{TABLE}.lance" / "_versions").iterdir():
        path.write_bytes(b"garbage")


def _index_dir_is_a_file(index_dir: Path) -> None:
    shutil.rmtree(index_dir)
    index_dir.write_text("not a directory", encoding="utf-8")


@pytest.mark.parametrize("damage", [
    _delete_data_files, _truncate_data_files, _garbage_meta, _delete_meta,
    _delete_fulltext_index, _garbage_manifests, _index_dir_is_a_file,
], ids=lambda f: f.__name__.strip("_"))
def test_damaged_index_is_rebuilt_and_says_so(damage, bundled_data_dir: Path,
                                              bundled_memory: LoadedMemory) -> None:
    """The index is derived from the incidents file: every kind of damage is rebuilt from it
    (a refusal would pass a weaker test, but leaves the engineer without recall)."""
    damage(bundled_data_dir / "index")
    index = MemoryIndex(bundled_data_dir, MiniLMEmbedder())
    notices = index.open(bundled_memory)
    found = recall(index, KEYERROR)
    assert {i.incident_id for i in found.incidents} == KEYERROR_INCIDENTS
    said = [*notices, *found.notices]
    assert any("rebuilt" in notice for notice in said), said


# --- vectors ------------------------------------------------------------------------------

def test_embedder_gives_a_table_with_vectors(tmp_path: Path, fake_ollama: FakeOllama,
                                             bundled_memory: LoadedMemory) -> None:
    index = MemoryIndex(tmp_path / "data", OllamaEmbedder(fake_ollama.host, "nomic-embed-text"))
    notices = index.open(bundled_memory)
    assert any("with vectors" in n for n in notices), notices
    assert not any("lexical only" in n for n in notices), notices
    assert index.has_vectors and index.meta is not None
    assert index.meta.vector_dim == fake_ollama.embed_dim
    assert index.meta.embedder == "ollama:nomic-embed-text"
    embedded = [r for r in fake_ollama.requests if r["path"] == "/api/embed"]
    # One document per incident is embedded, not one per action.
    assert sum(len(r["body"]["input"]) for r in embedded) == len(bundled_memory.incidents)
    found = recall(index, CHECKOUT)
    assert found.mode == "hybrid" and found.ranked
    assert all(r.cosine is not None for r in found.ranked)


def test_hybrid_recall_with_an_embedder(tmp_path: Path, fake_ollama: FakeOllama,
                                        bundled_memory: LoadedMemory) -> None:
    index = MemoryIndex(tmp_path / "data", OllamaEmbedder(fake_ollama.host, "nomic-embed-text"))
    index.open(bundled_memory)

    # The fake server's vectors are hashed bags of words, so only the plumbing is checked: the
    # query was embedded and both layers scored the incidents (the quality is MiniLM's, below).
    checkout = recall(index, CHECKOUT)
    assert checkout.mode == "hybrid"
    assert checkout.ranked[0].cosine is not None and checkout.ranked[0].bm25 is not None
    assert fake_ollama.requests[-1]["path"] == "/api/embed"
    assert index.meta is not None and "not refitted" in index.calibration.fitted_on


def test_changing_the_embedder_makes_the_index_stale(tmp_path: Path, fake_ollama: FakeOllama,
                                                     write_incidents, incident) -> None:
    memory = small_memory(write_incidents, incident)
    data = tmp_path / "data"
    MemoryIndex(data, OllamaEmbedder(fake_ollama.host, "nomic-embed-text")).open(memory)
    assert freshness(data / "index", memory.source_hash, "ollama:nomic-embed-text") == "fresh"
    assert freshness(data / "index", memory.source_hash, "ollama:mxbai-embed-large") == "stale"
    assert freshness(data / "index", memory.source_hash, None) == "stale"

    fake_ollama.models.append("mxbai-embed-large")
    index = MemoryIndex(data, OllamaEmbedder(fake_ollama.host, "mxbai-embed-large"))
    notices = index.open(memory)
    assert any("index built" in n and "with vectors" in n for n in notices), notices
    assert index.meta is not None and index.meta.embedder == "ollama:mxbai-embed-large"
    assert [r["body"]["model"] for r in fake_ollama.requests if r["path"] == "/api/embed"][-1] == (
        "mxbai-embed-large")


def test_adding_an_embedder_to_a_lexical_index_makes_it_stale(tmp_path: Path,
                                                              write_incidents,
                                                              incident) -> None:
    memory = small_memory(write_incidents, incident)
    data = tmp_path / "data"
    MemoryIndex(data).open(memory)
    assert freshness(data / "index", memory.source_hash, "ollama:nomic-embed-text") == "stale"


def test_unreachable_embedder_builds_lexical_only_and_says_why(
        tmp_path: Path, bundled_memory: LoadedMemory) -> None:
    host = refused_host()
    index = MemoryIndex(tmp_path / "data", OllamaEmbedder(host, "nomic-embed-text"))
    notices = index.open(bundled_memory)
    assert any("lexical only" in n for n in notices), notices
    why = " ".join(notices)
    assert "not reachable" in why and host in why
    assert not index.has_vectors
    found = recall(index, KEYERROR)
    assert found.mode == "lexical"
    assert {i.incident_id for i in found.incidents} == KEYERROR_INCIDENTS


def test_lexical_fallback_is_retried_once_the_embedder_is_back(
        tmp_path: Path, fake_ollama: FakeOllama, write_incidents, incident) -> None:
    # Ollama was down when the index was built; the notice told the user to start it. Once it
    # is up, the next open must use it, not stay lexical-only until a manual --rebuild.
    memory = small_memory(write_incidents, incident)
    data = tmp_path / "data"
    MemoryIndex(data, OllamaEmbedder(refused_host(), "nomic-embed-text")).open(memory)

    index = MemoryIndex(data, OllamaEmbedder(fake_ollama.host, "nomic-embed-text"))
    notices = index.open(memory)
    assert index.has_vectors, notices
    assert not any("not reachable" in n for n in notices), notices
    assert recall(index, "widget queue stopped draining").mode == "hybrid"


def test_missing_embedding_model_builds_lexical_only_and_says_how_to_fix(
        tmp_path: Path, fake_ollama: FakeOllama, write_incidents, incident) -> None:
    memory = small_memory(write_incidents, incident)
    index = MemoryIndex(tmp_path / "data", OllamaEmbedder(fake_ollama.host, "not-pulled-embed"))
    notices = index.open(memory)
    assert any("lexical only" in n and "ollama pull not-pulled-embed" in n for n in notices), (
        notices)
    assert [i.incident_id for i in recall(index, "widget queue stopped draining").incidents] == [
        "INC-1"]


def test_incremental_update_keeps_term_statistics_equal_to_a_rebuild(tmp_path: Path) -> None:
    """Saving one incident adjusts the gate's statistics exactly as a full rebuild would."""
    from store.index import document_frequency
    from store.writer import file_sha256, save_incident

    incidents = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    memory = load_incidents(incidents)
    index = MemoryIndex(tmp_path / "data")
    index.open(memory)
    previous = next(i for i in memory.incidents if i.id == "INC-2041")
    edited = previous.model_copy(update={"symptoms": "mesh sidecar flapping, quorum lost"})
    save_incident(incidents, edited, file_sha256(incidents))
    after = load_incidents(incidents)
    index.update_incident(after, "INC-2041", previous)
    assert index.meta is not None
    assert index.meta.document_frequency == dict(document_frequency(after.incidents))
    assert index.meta.source_hash == after.source_hash
