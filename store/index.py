"""The LanceDB index: derived from the incidents file, one document per incident, rebuildable.

A document is what an engineer sees when the alert fires — title, service and symptoms — so
an alert written in other words still finds it; the incident's actions travel with the row
(as its stored record) and are attached for citations, never searched on their own.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from store.calibration import TEAM_FILE, Calibration, default_calibration, team_calibration
from store.embedder import EmbedderUnavailable, EmbeddingCache, EmbedProgress, embed_cached, text_key
from store.errors import EXIT_INTERNAL, TriageError
from store.loader import LoadedMemory
from store.models import Incident
from store.terms import search_text, terms

if TYPE_CHECKING:
    import numpy as np

    from store.embedder import Embedder

TABLE = "incidents"
INDEX_DIR = "index"  # under the data dir
SCHEMA_VERSION = 3  # bump when the document text or term rules change
META_FILE = "meta.json"
# Single-incident saves each add a fragment; past this many, compact (plain optimize(): it is
# safe beside readers, unlike cleanup_older_than=0 or delete_unverified).
COMPACT_AFTER_FRAGMENTS = 16
# From this many incidents an ANN index (HNSW-SQ, refined) beats LanceDB's flat scan clearly
# (bench/vector_bench.py: 0.46x the flat scan at 10k, 0.02x at 100k, recall@10 0.98-0.99; the
# crossover is near 3k, where it saves 1-4 ms of a ~55 ms recall). Below it the scan is exact.
ANN_MIN_ROWS = 10_000
ANN_EF = 100
COLUMNS = ["incident_id", "service", "title", "document", "lexical", "terms", "doc_sha256",
           "record"]


class IndexUnavailable(TriageError):
    """The index cannot be used and could not be rebuilt; the message says why."""

    exit_code = EXIT_INTERNAL


class IndexMeta(BaseModel):
    """What the index was built from, so staleness is a file read, not a LanceDB open."""

    schema_version: int = SCHEMA_VERSION
    source_hash: str
    embedder: str | None = None
    vector_dim: int | None = None
    embed_error: str | None = None
    incidents: int
    rows: int
    document_frequency: dict[str, int]
    calibration: Calibration
    ann: bool = False
    built_at: str


@dataclass(frozen=True)
class Candidate:
    """One incident the search turned up, with each layer of evidence that found it."""

    incident_id: str
    record: str  # the incident as stored (JSON); parsed only for the incidents recall keeps
    cosine: float | None
    bm25: float | None
    document: str
    terms: frozenset[str]  # the document's gate terms, computed once when it was indexed

    @cached_property
    def incident(self) -> Incident:
        return Incident.model_validate_json(self.record)


def read_meta(index_dir: Path) -> IndexMeta | None:
    """The index's metadata, or None when there is no usable index."""
    try:
        return IndexMeta.model_validate_json((index_dir / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def freshness(index_dir: Path, source_hash: str, embedder_id: str | None) -> str:
    """``fresh``, ``stale`` (memory or embedder changed) or ``missing`` — without LanceDB."""
    meta = read_meta(index_dir)
    if meta is None or not (index_dir / f"{TABLE}.lance").exists():
        return "missing"
    if (meta.schema_version != SCHEMA_VERSION or meta.source_hash != source_hash
            or meta.embedder != embedder_id):
        return "stale"
    return "fresh"


def incident_document(incident: Incident) -> str:
    """The searchable text of an incident: what was seen, not what was done about it."""
    title = incident.title or ""
    return f"{title}\nService: {incident.service}\n{incident.symptoms}".strip()


def document_frequency(incidents: list[Incident]) -> Counter[str]:
    """In how many incident documents each term appears."""
    counts: Counter[str] = Counter()
    for incident in incidents:
        counts.update(set(terms(incident_document(incident))))
    return counts


def _row(incident: Incident) -> dict[str, Any]:
    document = incident_document(incident)
    return {"incident_id": incident.id, "service": incident.service, "title": incident.title or "",
            "document": document, "lexical": search_text(document),
            "terms": " ".join(terms(document)), "doc_sha256": text_key(document),
            "record": incident.model_dump_json()}


class MemoryIndex:
    """The on-disk LanceDB index of a memory. Opened lazily: ``import lancedb`` costs ~1 s.

    Owned by one thread at a time (the engine's worker); readers of a pinned snapshot go
    through ``search``/``incident`` only.
    """

    def __init__(self, data_dir: Path, embedder: Embedder | None = None,
                 cache: EmbeddingCache | None = None, calibration_file: Path | None = None) -> None:
        self.index_dir = data_dir / INDEX_DIR
        self.embedder = embedder
        self.cache = cache if cache is not None else EmbeddingCache(data_dir / "embeddings.sqlite")
        self.calibration_file = calibration_file or data_dir / TEAM_FILE
        self.meta: IndexMeta | None = None
        self._table: Any = None
        self._memory: LoadedMemory | None = None
        self.repairs: list[str] = []

    @property
    def embedder_id(self) -> str | None:
        return self.embedder.id if self.embedder else None

    @property
    def calibration(self) -> Calibration:
        if self.meta is not None:
            return self.meta.calibration
        return default_calibration(self.embedder_id if self.has_vectors else None)

    def open(self, memory: LoadedMemory, rebuild: bool = False,
             progress: EmbedProgress | None = None) -> list[str]:
        """Make the index match ``memory``, rebuilding when stale; returns notices for the user."""
        self._memory = memory
        state = "stale" if rebuild else freshness(self.index_dir, memory.source_hash,
                                                  self.embedder_id)
        notices: list[str] = []
        if state == "fresh":
            try:
                self._table = self._connect().open_table(TABLE)
                self.meta = read_meta(self.index_dir)
            except (OSError, RuntimeError, ValueError) as exc:
                notices.append(f"index unreadable ({exc}); rebuilt from the incidents file")
                state = "stale"
        elif state == "missing" and self.index_dir.exists():
            notices.append("index incomplete or unreadable; rebuilt from the incidents file")
        if state == "fresh" and self._vectors_missing() and self._embedder_answers():
            notices.append("the embedder is available again; index rebuilt with vectors")
            state = "stale"
        if state != "fresh":
            notices.extend(self.build(memory, progress))
        notices.extend(self._apply_team_calibration())
        if self.meta and self.meta.embed_error:
            notices.append(f"recall is lexical only: {self.meta.embed_error}")
        return notices

    def build(self, memory: LoadedMemory, progress: EmbedProgress | None = None) -> list[str]:
        """Rebuild the whole index from ``memory`` in one batch, then swap it in."""
        rows = [_row(incident) for incident in memory.incidents]
        vectors, embed_error = self._embed([row["document"] for row in rows], progress)
        self.index_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".index-build-", dir=self.index_dir.parent))
        try:
            table = _create_table(staging, rows, vectors)
            ann = vectors is not None and len(rows) >= ANN_MIN_ROWS
            if ann:
                from lancedb.index import HnswSq

                table.create_index("vector", config=HnswSq(distance_type="cosine"))
            del table
            dim = int(vectors.shape[1]) if vectors is not None else None
            meta = IndexMeta(
                source_hash=memory.source_hash, embedder=self.embedder_id, vector_dim=dim,
                embed_error=embed_error, incidents=len(memory.incidents), rows=len(rows),
                document_frequency=dict(document_frequency(memory.incidents)),
                calibration=self._wanted_calibration(self.embedder_id if dim else None)[0], ann=ann,
                built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            _write_meta(staging, meta)
            old = self.index_dir.with_name(f".index-old-{os.getpid()}")
            if self.index_dir.exists():
                os.replace(self.index_dir, old)
            os.replace(staging, self.index_dir)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self.meta = meta
        self._table = self._connect().open_table(TABLE)
        return [f"index built: {len(memory.incidents)} incidents, {memory.action_count} actions"
                + (", with vectors" if vectors is not None else ", lexical only")]

    def pinned(self) -> MemoryIndex:
        """A read-only view at the current table version, for one request: a save landing
        meanwhile changes neither the rows it searches nor the statistics it scores with."""
        view = copy.copy(self)
        view.repairs = []
        if self._table is not None:
            table = self._connect().open_table(TABLE)
            table.checkout(self._table.version)
            view._table = table
        return view

    def _apply_team_calibration(self) -> list[str]:
        """Use the team's own fitted calibration when there is one for this embedder."""
        if self.meta is None:
            return []
        wanted, notice = self._wanted_calibration(self.embedder_id if self.has_vectors else None)
        if wanted != self.meta.calibration:
            self.meta = self.meta.model_copy(update={"calibration": wanted})
            _write_meta(self.index_dir, self.meta)
        return [notice] if notice else []

    def _wanted_calibration(self, embedder_id: str | None) -> tuple[Calibration, str | None]:
        team, notice = team_calibration(self.calibration_file, embedder_id)
        return team or default_calibration(embedder_id), notice

    def _vectors_missing(self) -> bool:
        return bool(self.embedder and self.meta and self.meta.embed_error and not self.has_vectors)

    def _embedder_answers(self) -> bool:
        """One tiny embed call: is it worth rebuilding with vectors now?"""
        assert self.embedder is not None
        try:
            self.embedder.embed(["probe"])
        except EmbedderUnavailable:
            return False
        return True

    def update_incident(self, memory: LoadedMemory, incident_id: str,
                        previous: Incident | None = None) -> list[str]:
        """Replace one incident's row, re-embedding only its document if it changed."""
        if self._table is None or self.meta is None or self.meta.rows == 0:
            return self.build(memory)
        incident = next(i for i in memory.incidents if i.id == incident_id)
        row = _row(incident)
        vectors, embed_error = self._embed([row["document"]])
        if self.has_vectors and vectors is None:
            return self.build(memory)
        quoted = incident_id.replace("'", "''")
        self._table.delete(f"incident_id = '{quoted}'")
        self._table.add(_arrow_rows([row], vectors if self.has_vectors else None))
        notices: list[str] = []
        if self._table.stats()["fragment_stats"]["num_fragments"] > COMPACT_AFTER_FRAGMENTS:
            self._table.optimize()
            notices.append("index compacted")
        self._memory = memory
        self.meta = self.meta.model_copy(update={
            "source_hash": memory.source_hash, "incidents": len(memory.incidents),
            "rows": len(memory.incidents),
            "document_frequency": _adjusted_frequency(self.meta.document_frequency,
                                                      previous, incident),
            "embed_error": embed_error or self.meta.embed_error,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds")})
        _write_meta(self.index_dir, self.meta)
        return notices

    def _embed(self, texts: list[str], progress: EmbedProgress | None = None,
               ) -> tuple[np.ndarray | None, str | None]:
        if not self.embedder or not texts:
            return None, None
        try:
            return embed_cached(self.embedder, texts, self.cache, progress), None
        except EmbedderUnavailable as exc:
            return None, str(exc)

    def _connect(self) -> Any:
        return _lancedb().connect(str(self.index_dir))

    @property
    def has_vectors(self) -> bool:
        return bool(self.meta and self.meta.vector_dim)

    def _query(self, run: Any) -> list[dict[str, Any]]:
        """Run a query; a damaged index is rebuilt from the incidents once, with a notice."""
        try:
            return list(run())
        except (RuntimeError, OSError, ValueError) as exc:
            if self._memory is None:
                raise IndexUnavailable(f"index unreadable: {exc}") from exc
            self.repairs.append(f"index was damaged ({str(exc)[:120]}); rebuilt from the "
                                "incidents file")
            self.build(self._memory)
            try:
                return list(run())
            except (RuntimeError, OSError, ValueError) as again:
                raise IndexUnavailable(f"index unreadable even after a rebuild: {again} — "
                                       f"delete {self.index_dir} and run `triage index`") from again

    def search(self, text: str, vector: np.ndarray | None, limit: int) -> list[Candidate]:
        """Incidents found by full text (BM25) or by vector, each with both scores it has."""
        if self._table is None or not self.meta or not self.meta.rows:
            return []
        lexical = search_text(text).replace('"', " ").strip()
        use_vector = vector is not None and self.has_vectors
        columns = [*COLUMNS, "vector"] if self.has_vectors else COLUMNS

        def by_text() -> list[dict[str, Any]]:
            if not lexical:
                return []
            return list(self._table.search(lexical, query_type="fts", fts_columns="lexical")
                        .limit(limit).select([*columns, "_score"]).to_list())

        def by_vector() -> list[dict[str, Any]]:
            query = self._table.search(vector, query_type="vector").distance_type("cosine")
            if self.meta is not None and self.meta.ann:
                # refine_factor(1) re-scores the ANN's candidates exactly: HNSW-SQ's own
                # distances are quantised (cosine off by up to 0.3), and the gate reads cosines.
                query = query.ef(ANN_EF).refine_factor(1)
            return list(query.limit(limit).select([*columns, "_distance"]).to_list())

        found: dict[str, dict[str, Any]] = {}
        for row in self._query(by_text):
            found[row["incident_id"]] = row
        if use_vector:
            for row in self._query(by_vector):
                found.setdefault(row["incident_id"], row)["_distance"] = row["_distance"]
        return [self._candidate(row, vector if use_vector else None) for row in found.values()]

    @staticmethod
    def _candidate(row: dict[str, Any], vector: np.ndarray | None) -> Candidate:
        cosine = None
        if vector is not None and row.get("vector") is not None:
            if row.get("_distance") is not None:
                cosine = 1.0 - float(row["_distance"])
            else:
                import numpy as np

                cosine = float(np.dot(np.asarray(row["vector"], dtype=np.float32), vector))
        bm25 = float(row["_score"]) if row.get("_score") is not None else None
        return Candidate(row["incident_id"], row["record"], cosine, bm25, row["document"],
                         frozenset(row["terms"].split()))


def _adjusted_frequency(frequency: dict[str, int], previous: Incident | None,
                        current: Incident) -> dict[str, int]:
    counts = Counter(frequency)
    if previous is not None:
        counts.subtract(set(terms(incident_document(previous))))
    counts.update(set(terms(incident_document(current))))
    return {term: count for term, count in counts.items() if count > 0}


def _write_meta(directory: Path, meta: IndexMeta) -> None:
    temp = directory / f".{META_FILE}.tmp"
    temp.write_text(meta.model_dump_json(), encoding="utf-8")
    os.replace(temp, directory / META_FILE)


def _arrow_rows(rows: list[dict[str, Any]], vectors: np.ndarray | None) -> Any:
    import pyarrow as pa

    fields = [pa.field(name, pa.string()) for name in COLUMNS]
    columns: dict[str, Any] = {name: [row[name] for row in rows] for name in COLUMNS}
    if vectors is not None:
        dim = int(vectors.shape[1])
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
        columns["vector"] = pa.FixedSizeListArray.from_arrays(
            pa.array(vectors.astype("float32").ravel(), type=pa.float32()), dim)
    return pa.Table.from_pydict(columns, schema=pa.schema(fields))


def _create_table(directory: Path, rows: list[dict[str, Any]], vectors: np.ndarray | None) -> Any:
    lancedb = _lancedb()
    from lancedb.index import FTS

    data = _arrow_rows(rows, vectors)
    table = lancedb.connect(str(directory)).create_table(TABLE, data=data, mode="overwrite")
    if rows:
        table.create_index("lexical", config=FTS())
    return table


def _lancedb() -> Any:
    """Import lancedb on first use; its Rust logger otherwise warns on stderr per query."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb
