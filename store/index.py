"""The LanceDB index: derived from the incidents file, one row per action, rebuildable."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from store.embedder import Embedder, EmbedderUnavailable
from store.loader import LoadedMemory
from store.models import Incident
from store.terms import terms

TABLE = "actions"
SCHEMA_VERSION = 1  # bump when row text or term rules change
META_FILE = "meta.json"
# Single-incident saves each add a fragment; past this many, compact (plain optimize(): it is
# safe beside readers, unlike cleanup_older_than=0 or delete_unverified).
COMPACT_AFTER_FRAGMENTS = 16
ROW_COLUMNS = ["row_id", "incident_id", "action_id", "local_action_id", "position", "service",
               "outcome", "started_at", "kind", "confirmed", "title", "symptoms", "root_cause",
               "action", "explanation", "text"]


class IndexUnavailable(Exception):
    """The index cannot be used and could not be rebuilt; the message says why."""


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
    built_at: str


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


def row_text(incident: Incident, position: int) -> str:
    """The self-contained text of one action: readable alone, searched as a whole."""
    action = incident.actions[position]
    kind = f" ({action.kind})" if action.kind else ""
    suspected = " [explanation suspected, not confirmed]" if action.confirmed is False else ""
    return (
        f"{incident.id} · {incident.service} · {incident.title or 'untitled'}\n"
        f"Symptoms: {incident.symptoms}\n"
        f"Action {incident.action_ref(action)}{kind}: {action.action} → {action.outcome.value}\n"
        f"Why: {action.explanation}{suspected}"
    )


def incident_rows(incident: Incident) -> list[dict[str, Any]]:
    """One row per action of ``incident``, in the order the actions were taken."""
    rows = []
    for position, action in enumerate(incident.actions):
        rows.append({
            "row_id": incident.action_ref(action),
            "incident_id": incident.id,
            "action_id": incident.action_ref(action),
            "local_action_id": action.id,
            "position": position,
            "service": incident.service,
            "outcome": action.outcome.value,
            "started_at": incident.started_at.isoformat() if incident.started_at else "",
            "kind": action.kind or "",
            "confirmed": action.confirmed is not False,
            "title": incident.title or "",
            "symptoms": incident.symptoms,
            "root_cause": incident.root_cause or "",
            "action": action.action,
            "explanation": action.explanation,
            "text": row_text(incident, position),
        })
    return rows


def incident_terms(incident: Incident) -> set[str]:
    """Every term of an incident's rows: the incident is one document for the gate."""
    return {term for row in incident_rows(incident) for term in terms(row["text"])}


def document_frequency(incidents: list[Incident]) -> Counter[str]:
    """In how many incidents each term appears."""
    counts: Counter[str] = Counter()
    for incident in incidents:
        counts.update(incident_terms(incident))
    return counts


class MemoryIndex:
    """The on-disk LanceDB index of a memory. Opened lazily: ``import lancedb`` costs ~1 s."""

    def __init__(self, data_dir: Path, embedder: Embedder | None = None) -> None:
        self.index_dir = data_dir / "index"
        self.embedder = embedder
        self.meta: IndexMeta | None = None
        self._table: Any = None
        self._memory: LoadedMemory | None = None
        self.repairs: list[str] = []

    @property
    def embedder_id(self) -> str | None:
        return self.embedder.id if self.embedder else None

    def open(self, memory: LoadedMemory, rebuild: bool = False) -> list[str]:
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
            notices.append("the embedder is reachable again; index rebuilt with vectors")
            state = "stale"
        if state != "fresh":
            notices.extend(self.build(memory))
        if self.meta and self.meta.embed_error:
            notices.append(f"recall is lexical only: {self.meta.embed_error}")
        return notices

    def build(self, memory: LoadedMemory) -> list[str]:
        """Rebuild the whole index from ``memory`` in one batch, then swap it in."""
        rows = [row for incident in memory.incidents for row in incident_rows(incident)]
        vectors, embed_error = self._embed_rows(rows)
        self.index_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".index-build-", dir=self.index_dir.parent))
        try:
            table = _create_table(staging, rows, vectors)
            del table
            meta = IndexMeta(
                source_hash=memory.source_hash, embedder=self.embedder_id,
                vector_dim=len(vectors[0]) if vectors else None, embed_error=embed_error,
                incidents=len(memory.incidents), rows=len(rows),
                document_frequency=dict(document_frequency(memory.incidents)),
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
        return [f"index built: {len(memory.incidents)} incidents, {len(rows)} actions"
                + (", with vectors" if vectors else ", lexical only")]

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
        """Replace one incident's rows (batched), compacting when fragments pile up.

        ``memory`` is the whole memory after the change; only this incident's rows are written.
        ``previous`` is the incident as it was (None for a new one), so term statistics are
        adjusted rather than recounted over the whole memory.
        """
        if self._table is None or self.meta is None or self.meta.rows == 0:
            return self.build(memory)
        incident = next(i for i in memory.incidents if i.id == incident_id)
        rows = incident_rows(incident)
        vectors, embed_error = self._embed_rows(rows)
        if self.has_vectors and vectors is None and rows:
            return self.build(memory)
        quoted = incident_id.replace("'", "''")
        self._table.delete(f"incident_id = '{quoted}'")
        if rows:
            self._table.add(_arrow_rows(rows, vectors if self.has_vectors else None))
        notices: list[str] = []
        if self._table.stats()["fragment_stats"]["num_fragments"] > COMPACT_AFTER_FRAGMENTS:
            self._table.optimize()
            notices.append("index compacted")
        self._memory = memory
        self.meta = self.meta.model_copy(update={
            "source_hash": memory.source_hash, "incidents": len(memory.incidents),
            "rows": memory.action_count,
            "document_frequency": _adjusted_frequency(self.meta.document_frequency,
                                                      previous, incident),
            "embed_error": embed_error or self.meta.embed_error,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds")})
        _write_meta(self.index_dir, self.meta)
        return notices

    def _embed_rows(self, rows: list[dict[str, Any]]) -> tuple[list[list[float]] | None, str | None]:
        if not self.embedder or not rows:
            return None, None
        try:
            return self.embedder.embed([row["text"] for row in rows]), None
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

    def search(self, text: str, vector: list[float] | None, limit: int) -> list[dict[str, Any]]:
        """Candidate rows for ``text`` (BM25), fused by RRF with ``vector`` when given."""
        if self._table is None or not self.meta or not self.meta.rows or not text.strip():
            return []
        hybrid = vector is not None and self.has_vectors

        def run() -> list[dict[str, Any]]:
            if hybrid:
                from lancedb.rerankers import RRFReranker

                query = (self._table.search(query_type="hybrid").vector(vector).text(text)
                         .rerank(RRFReranker()))
                columns = [*ROW_COLUMNS, "vector"]
            else:
                query = self._table.search(text, query_type="fts", fts_columns="text")
                columns = [*ROW_COLUMNS, "_score"]
            return list(query.limit(limit).select(columns).to_list())

        return self._query(run)

    def rows_for(self, incident_ids: list[str]) -> list[dict[str, Any]]:
        """Every action row of the given incidents."""
        if self._table is None or not incident_ids:
            return []
        quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in incident_ids)
        columns = [*ROW_COLUMNS, "vector"] if self.has_vectors else ROW_COLUMNS
        return self._query(lambda: self._table.search().where(f"incident_id IN ({quoted})")
                           .select(columns).limit(100_000).to_list())


def _adjusted_frequency(frequency: dict[str, int], previous: Incident | None,
                        current: Incident) -> dict[str, int]:
    counts = Counter(frequency)
    if previous is not None:
        counts.subtract(incident_terms(previous))
    counts.update(incident_terms(current))
    return {term: count for term, count in counts.items() if count > 0}


def _write_meta(directory: Path, meta: IndexMeta) -> None:
    temp = directory / f".{META_FILE}.tmp"
    temp.write_text(meta.model_dump_json(), encoding="utf-8")
    os.replace(temp, directory / META_FILE)


def _arrow_rows(rows: list[dict[str, Any]], vectors: list[list[float]] | None) -> Any:
    import pyarrow as pa

    fields = [pa.field(name, pa.string()) for name in ROW_COLUMNS]
    fields[ROW_COLUMNS.index("position")] = pa.field("position", pa.int32())
    fields[ROW_COLUMNS.index("confirmed")] = pa.field("confirmed", pa.bool_())
    columns: dict[str, list[Any]] = {name: [row[name] for row in rows] for name in ROW_COLUMNS}
    if vectors:
        fields.append(pa.field("vector", pa.list_(pa.float32(), len(vectors[0]))))
        columns["vector"] = vectors
    return pa.Table.from_pydict(columns, schema=pa.schema(fields))


def _create_table(directory: Path, rows: list[dict[str, Any]],
                  vectors: list[list[float]] | None) -> Any:
    lancedb = _lancedb()
    from lancedb.index import FTS

    data = _arrow_rows(rows, vectors)
    table = lancedb.connect(str(directory)).create_table(TABLE, data=data, mode="overwrite")
    if rows:
        table.create_index("text", config=FTS())
    return table


def _lancedb() -> Any:
    """Import lancedb on first use; its Rust logger otherwise warns on stderr per query."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb
