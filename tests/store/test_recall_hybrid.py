"""Hybrid recall over one document per incident: what an engineer sees in the briefing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from store.embedder import EmbeddingCache
from store.index import MemoryIndex
from store.loader import load_incidents
from store.minilm import MiniLMEmbedder
from store.recall import recall
from store.terms import terms

KEYERROR = "payments service KeyError: 'amount' after deploy"


class CountingEmbedder:
    """The real MiniLM, counting the texts it is asked to embed."""

    def __init__(self) -> None:
        self.inner = MiniLMEmbedder()
        self.texts: list[str] = []

    @property
    def id(self) -> str:
        return self.inner.id

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.mark.parametrize("text, expected", [
    ("PaymentsErrorRate", {"paymentserrorrate", "payment", "error", "rate"}),
    ("KeyError", {"keyerror", "key", "error"}),
    ("max_connections", {"max", "connection"}),
    ("db-3.prod.example.com", {"database", "prod", "example", "com"}),
    ("OOMKilled", {"oom", "kill"}),
    ("HTTPServerError", {"http", "server", "error"}),
    ('alertname="OrdersDBDiskUsageHigh"', {"ordersdbdiskusagehigh", "order", "disk", "usage"}),
])
def test_alert_names_and_labels_are_split_into_words(text: str, expected: set[str]) -> None:
    assert expected <= set(terms(text))


def test_camel_case_alert_name_finds_the_incident_it_names(tmp_path: Path, write_incidents,
                                                           incident) -> None:
    path = write_incidents([
        incident("INC-1", service="ledger", title="Ledger reconciliation lag",
                 symptoms="Reconciliation lag on the ledger grew past an hour"),
        incident("INC-2", service="payments-api", title="Payments error rate high",
                 symptoms="Payments error rate climbed to 9% on card captures"),
    ])
    index = MemoryIndex(tmp_path / "data", MiniLMEmbedder())
    index.open(load_incidents(path))
    found = recall(index, "[FIRING:1] PaymentsErrorRate severity=page")
    assert [i.incident_id for i in found.incidents] == ["INC-2"]
    # The lexical layer found it too, through the split name.
    assert found.ranked[0].bm25 is not None and found.ranked[0].shared_terms >= 3


def test_incident_with_no_actions_is_recalled_as_seen_before_nothing_proven(
        tmp_path: Path, write_incidents, incident) -> None:
    path = write_incidents([
        incident("INC-7", service="search-api", title="Search shards unassigned after node loss",
                 symptoms="Cluster health red, 20% of search queries failing with shard errors "
                          "after a data node disappeared", actions=[]),
        incident("INC-8", service="billing", title="Invoice PDFs blank",
                 symptoms="Invoice PDFs rendered with empty totals"),
    ])
    engine = TriageEngine(Settings(incidents_path=path, data_dir=tmp_path / "data"))
    briefing = engine.brief(parse_alert("search cluster went red after we lost a data node; "
                                        "queries failing with shard failures")).briefing
    assert briefing.state == "unproven"
    assert [(r.incident_id, r.action_id, r.outcome) for r in briefing.recalled] == [
        ("INC-7", None, None)]
    assert briefing.recommendations == [] and briefing.warnings == []
    assert briefing.confidence.value == 0
    assert "no actions were recorded" in briefing.summary


def test_every_recalled_record_carries_its_evidence_components(engine: TriageEngine) -> None:
    briefing = engine.brief(parse_alert(KEYERROR)).briefing
    assert briefing.recalled
    for record in briefing.recalled:
        assert record.cosine is not None and 0.0 < record.cosine <= 1.0
        assert record.bm25 is not None and record.bm25 > 0
        assert record.score >= record.cosine  # fused = cosine + weighted lexical evidence


def test_no_prior_incident_says_how_close_the_best_match_came(engine: TriageEngine) -> None:
    briefing = engine.brief(parse_alert("TLS certificate expired on internal gRPC mesh")).briefing
    assert briefing.state == "no_prior_incident"
    assert briefing.search is not None
    gate = briefing.search.gate
    assert "cosine" in gate and "below the floor" in gate
    assert f"{briefing.search.floor:g}" in gate  # (in --json and the details view, F12) …
    assert "cosine" not in briefing.summary  # … not in the words an engineer reads (issue 23)
    assert "none of the 58 incidents in memory resembles this alert" in briefing.summary


def test_paraphrase_without_shared_words_is_found_by_meaning(tmp_path: Path, write_incidents,
                                                             incident) -> None:
    # No word of the alert (beyond stop words) is in the record: only the dense layer can match.
    path = write_incidents([
        incident("INC-1", service="storage", title="Disk full on primary database host",
                 symptoms="The database server ran out of free disk space and writes failed"),
        incident("INC-2", service="web", title="Homepage banner typo",
                 symptoms="Marketing banner on the homepage shows a misspelled product name"),
    ])
    engine = TriageEngine(Settings(incidents_path=path, data_dir=tmp_path / "data"))
    engine.load()
    assert engine.index is not None
    alert = "postgres volume at 100% capacity, inserts rejected"
    assert not set(terms(alert)) & set(terms("Disk full on primary database host storage The "
                                             "database server ran out of free disk space and "
                                             "writes failed"))
    found = recall(engine.index, alert)
    assert found.mode == "hybrid"
    assert found.ranked[0].incident_id == "INC-1"


def test_missing_weights_fall_back_to_lexical_with_a_notice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_EMBEDDER_WEIGHTS", str(tmp_path / "nowhere" / "model.zip"))
    engine = TriageEngine(Settings.from_env())
    status = engine.load()
    assert any("recall is lexical only" in n and "pip install" in n for n in status.notices), (
        status.notices)
    briefing = engine.brief(parse_alert(KEYERROR)).briefing
    assert briefing.search is not None and briefing.search.mode == "lexical"
    assert briefing.state == "proven"
    embeddings = next(u for u in briefing.coverage if u.source.startswith("embeddings"))
    assert embeddings.status == "unavailable"


def test_a_save_re_embeds_only_the_changed_incident(tmp_path: Path, write_incidents,
                                                    incident) -> None:
    path = write_incidents([incident(f"INC-{n}", symptoms=f"Symptom number {n} of the widget")
                            for n in range(1, 6)])
    memory = load_incidents(path)
    embedder = CountingEmbedder()
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    index = MemoryIndex(tmp_path / "data", embedder, cache)
    index.open(memory)
    assert len(embedder.texts) == 5
    # A rebuild (e.g. after a schema change) takes every vector from the cache.
    index.build(memory)
    assert len(embedder.texts) == 5
    previous = memory.incidents[2]
    edited = previous.model_copy(update={"symptoms": "The widget froze solid"})
    changed = memory.__class__([*memory.incidents[:2], edited, *memory.incidents[3:]],
                               memory.files, "changed-hash")
    index.update_incident(changed, edited.id, previous)
    assert embedder.texts[5:] == [index_document_of(edited)]
    assert recall(index, "widget froze solid").ranked[0].incident_id == edited.id


def index_document_of(incident_model: Any) -> str:
    from store.index import incident_document

    return incident_document(incident_model)


def test_hidden_incident_is_never_recalled(engine: TriageEngine) -> None:
    assert engine.index is not None and engine.memory is not None
    target = next(i for i in engine.memory.incidents if i.id == "INC-1729")
    alert = f"{target.title}\n{target.symptoms}"
    assert recall(engine.index, alert).ranked[0].incident_id == "INC-1729"
    hidden = recall(engine.index, alert, hidden={"INC-1729"})
    assert "INC-1729" not in [r.incident_id for r in hidden.ranked]


def test_offline_still_runs_the_in_process_embedder(monkeypatch: pytest.MonkeyPatch) -> None:
    # TRIAGE_OFFLINE=1 means "call no server": the Ollama embedding model is not asked, but
    # MiniLM runs in-process, so recall stays hybrid.
    monkeypatch.setenv("TRIAGE_OFFLINE", "1")
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", "nomic-embed-text")
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    engine = TriageEngine(Settings.from_env())
    briefing = engine.brief(parse_alert(KEYERROR)).briefing
    assert briefing.search is not None and briefing.search.mode == "hybrid"
    assert engine.index is not None and engine.index.embedder_id == "all-MiniLM-L6-v2"


def test_a_team_calibration_is_used_for_its_embedder_only(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from store.calibration import HYBRID_MINILM

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    # A team that fitted a very strict floor on its own alerts: the checkout alert now abstains.
    strict = HYBRID_MINILM.model_copy(update={"standing_floor": 50.0, "described": 50.0,
                                              "fitted_on": "our alerts"})
    (data_dir / "calibration.json").write_text(strict.model_dump_json(), encoding="utf-8")
    engine = TriageEngine(Settings.from_env())
    briefing = engine.brief(parse_alert(KEYERROR)).briefing
    assert briefing.state == "no_prior_incident"
    assert briefing.search is not None and "≥ 50 spreads" in briefing.search.gate
    # The same file with another embedder's name is refused, with a notice saying so.
    other = strict.model_copy(update={"embedder": "ollama:nomic-embed-text"})
    (data_dir / "calibration.json").write_text(other.model_dump_json(), encoding="utf-8")
    engine = TriageEngine(Settings.from_env())
    status = engine.load()
    assert any("fitted for embedder ollama:nomic-embed-text" in n for n in status.notices)
    assert engine.brief(parse_alert(KEYERROR)).briefing.state == "proven"


class HashingEmbedder:
    """Deterministic 64-d bag-of-words vectors: plumbing tests at sizes MiniLM would be slow for."""

    id = "test-hashing"

    def embed(self, texts: list[str]) -> np.ndarray:
        import hashlib

        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in terms(text) or ["<empty>"]:
                digest = hashlib.sha256(word.encode()).digest()
                out[row, digest[0] % 64] += 1.0 if digest[1] & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def test_a_large_memory_gets_an_ann_index_with_exact_cosines(
        tmp_path: Path, write_incidents, incident, monkeypatch: pytest.MonkeyPatch) -> None:
    import store.index

    monkeypatch.setattr(store.index, "ANN_MIN_ROWS", 300)
    words = ["queue", "disk", "latency", "cache", "dns", "cert", "pool", "lock", "quota", "gc"]
    path = write_incidents([
        incident(f"INC-{n}", symptoms=f"{words[n % 10]} {words[n // 10 % 10]} {words[n // 100]} "
                                      f"trouble on host {n}") for n in range(320)])
    embedder = HashingEmbedder()
    index = MemoryIndex(tmp_path / "data", embedder)
    index.open(load_incidents(path))
    assert index.meta is not None and index.meta.ann
    alert = "dns latency trouble on host 42"
    found = recall(index, alert)
    assert found.ranked
    query = embedder.embed([alert])[0]
    documents = {c.incident.id: c.document for c in index.search(alert, query, 50)}
    # The gate reads cosines: through the ANN index they must be exact, not quantised.
    for ranked in found.ranked[:10]:
        exact = float(np.dot(embedder.embed([documents[ranked.incident_id]])[0], query))
        assert ranked.cosine == pytest.approx(exact, abs=1e-4)


def test_a_pinned_view_does_not_see_a_save_that_lands_during_its_request(
        tmp_path: Path, write_incidents, incident) -> None:
    path = write_incidents([incident("INC-1", symptoms="Widget queue stopped draining"),
                            incident("INC-2", symptoms="Invoice totals rendered blank")])
    memory = load_incidents(path)
    index = MemoryIndex(tmp_path / "data", HashingEmbedder())
    index.open(memory)
    view = index.pinned()  # what a briefing request reads
    previous = memory.incidents[0]
    edited = previous.model_copy(update={"symptoms": "Zeppelin mooring lines snapped"})
    changed = memory.__class__([edited, memory.incidents[1]], memory.files, "changed")
    index.update_incident(changed, "INC-1", previous)
    assert recall(index, "zeppelin mooring lines snapped").ranked[0].incident_id == "INC-1"
    documents = {c.incident_id: c.document for c in view.search("widget queue draining", None, 5)}
    assert "Widget queue stopped draining" in documents["INC-1"]
    assert view.meta is not None and view.meta.source_hash == memory.source_hash
