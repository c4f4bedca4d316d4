"""The LanceDB index: derived from the incidents file, one document per incident, rebuildable.

A document is what an engineer sees when the alert fires — title, service and symptoms — so
an alert written in other words still finds it; the incident's actions travel with the row
(as its stored record) and are attached for citations, never searched on their own.
"""

from __future__ import annotations

import copy
import fcntl
import gc
import hashlib
import os
import shutil
import tempfile
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from store.calibration import TEAM_FILE, Calibration, default_calibration, team_calibration
from store.embedder import EmbedderUnavailable, EmbeddingCache, EmbedProgress, embed_cached, text_key
from store.errors import EXIT_INTERNAL, TriageError
from store.faults import fault_hint, fault_name, is_storage_fault
from store.loader import LoadedMemory
from store.models import ActionOutcome, Incident
from store.terms import search_text, terms

if TYPE_CHECKING:
    import numpy as np

    from store.embedder import Embedder

TABLE = "incidents"
INDEX_DIR = "index"  # under the data dir
LOCK_FILE = ".index.lock"  # under the data dir: held while the index is checked or written
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
# What LanceDB and the file system raise when a table cannot be read or written.
LANCE_ERRORS = (OSError, RuntimeError, ValueError)
BUILD_PREFIX = ".index-build-"
OLD_PREFIX = ".index-old-"


class IndexUnavailable(TriageError):
    """The index cannot be used and could not be rebuilt; the message says why."""

    exit_code = EXIT_INTERNAL


class IndexWriteFailed(IndexUnavailable):
    """The index could not be written where it lives: a full disk, a read-only or forbidden
    data dir (``fault``), or a data dir that is not a directory at all (not a fault: a setting
    to fix). ``short`` is "<what happened> at <where>"."""

    def __init__(self, where: Path, error: BaseException) -> None:
        self.where = where
        self.reason = fault_name(error)
        self.fault = is_storage_fault(error)
        self.short = f"{self.reason} at {where}"
        hint = (f"{fault_hint(error, where.parent, 'TRIAGE_DATA_DIR')}, then run `triage index` "
                "(the console also rebuilds it when it starts)" if self.fault else
                f"check that TRIAGE_DATA_DIR ({where.parent}) names a writable directory, then "
                "run `triage index`")
        super().__init__(f"the index could not be written: {self.short}", [], hint)


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
    # Which build this is: two processes building the same memory at once swap in different
    # tables with equal metadata otherwise (an update must know the table it holds is gone).
    build_id: str = ""
    # The table as it was when it was last known to match this metadata and its memory (built
    # here, or a self-check passed): table_stamp of it. Equal when opened → the self-check's
    # answer is known without LanceDB; anything else ("", another table, a file touched, this
    # metadata edited) → the self-check runs. An incremental update clears it.
    checked: str = ""


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

    @cached_property
    def resolving_terms(self) -> tuple[frozenset[str], ...]:
        """The terms of each action that resolved it."""
        return tuple(frozenset(terms(a.action)) for a in self.incident.actions
                     if a.outcome is ActionOutcome.RESOLVED)

    @property
    def resolved(self) -> bool:
        """Whether some recorded action resolved it (it offers a proven fix)."""
        return bool(self.resolving_terms)

    @cached_property
    def tried_terms(self) -> tuple[frozenset[str], ...]:
        """The terms of every recorded action that did not make things worse."""
        return tuple(frozenset(terms(a.action)) for a in self.incident.actions
                     if a.outcome is not ActionOutcome.WORSENED)

    @cached_property
    def fix_terms(self) -> tuple[frozenset[str], ...]:
        """The terms of each action that resolved or mitigated it (the same-fix rule's input)."""
        return tuple(frozenset(terms(a.action)) for a in self.incident.actions if a.outcome.is_fix)


def read_meta(index_dir: Path) -> IndexMeta | None:
    """The index's metadata, or None when there is no usable index."""
    try:
        return IndexMeta.model_validate_json((index_dir / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def table_stamp(index_dir: Path, meta: IndexMeta) -> str:
    """A digest of every file of the table (its path, size, inode, modification and change
    times) and of ``meta`` besides its ``checked``: any write, compaction, copy, truncation or
    chmod of the table, and any edit of the metadata, changes it. "" when the table cannot be
    listed (or holds no file)."""
    table = index_dir / f"{TABLE}.lance"
    digest = hashlib.sha256(meta.model_copy(update={"checked": ""}).model_dump_json().encode())
    listed = 0

    def unreadable(error: OSError) -> None:
        raise error

    try:
        for root, directories, files in os.walk(table, onerror=unreadable):
            directories.sort()
            for name in sorted(files):
                path = os.path.join(root, name)
                held = os.lstat(path)
                digest.update(f"{os.path.relpath(path, table)}\0{held.st_size}\0{held.st_ino}\0"
                              f"{held.st_mtime_ns}\0{held.st_ctime_ns}\n".encode(
                                  "utf-8", "surrogateescape"))
                listed += 1
    except OSError:
        return ""
    return digest.hexdigest() if listed else ""


def vouched(index_dir: Path, meta: IndexMeta | None) -> bool:
    """Is the table on disk the one ``meta`` was last checked against, untouched since?"""
    return bool(meta is not None and meta.checked
                and meta.checked == table_stamp(index_dir, meta))


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


def incident_row(incident: Incident) -> dict[str, Any]:
    document = incident_document(incident)
    return {"incident_id": incident.id, "service": incident.service, "title": incident.title or "",
            "document": document, "lexical": search_text(document),
            "terms": " ".join(terms(document)), "doc_sha256": text_key(document),
            "record": incident.model_dump_json()}


class MemoryIndex:
    """The on-disk LanceDB index of a memory. Opened lazily: ``import lancedb`` costs ~1 s.

    Owned by one thread at a time (the engine's worker); readers of a pinned snapshot go
    through ``search``/``incident`` only.

    When the index cannot be written (disk full, read-only data dir) and the caller allows it,
    the same index is built in memory instead: recall stays whole for this process and every
    briefing says so (``degraded`` holds why); nothing on disk claims to be up to date.
    """

    def __init__(self, data_dir: Path, embedder: Embedder | None = None,
                 cache: EmbeddingCache | None = None, calibration_file: Path | None = None) -> None:
        self.index_dir = data_dir / INDEX_DIR
        self.embedder = embedder
        self.cache = cache if cache is not None else EmbeddingCache(data_dir / "embeddings.sqlite")
        self.calibration_file = calibration_file or data_dir / TEAM_FILE
        self.meta: IndexMeta | None = None
        self._table_handle: Any = None
        self._table_deferred = False  # vouched on disk, opened on first use (see _table)
        self._db: Any = None  # an in-memory LanceDB connection while ``degraded``
        self._memory: LoadedMemory | None = None
        self.repairs: list[str] = []
        self.degraded: str | None = None  # "<fault> at <index dir>" while held in memory
        self._failed: IndexWriteFailed | None = None  # the write that failed, while degraded
        self.state = "closed"  # after open(): fresh | rebuilt | memory | last good
        self._lock_owner: int | None = None  # the thread holding the index lock, if any
        # Opened for a partial memory (open_last_good, build_in_memory): never written, never
        # rebuilt — the last good index on disk stays as it is until the file loads whole.
        self.read_only = False

    @property
    def _table(self) -> Any:
        """The open LanceDB table. An index opened fresh and vouched for by its stamp
        (IndexMeta.checked) is opened here on first use: `triage index` and `triage doctor` on
        a fresh index never import LanceDB (~1.3 s), a briefing opens it to search."""
        if self._table_deferred:
            self._table_deferred = False
            self._table_handle = self._open_deferred()
        return self._table_handle

    @_table.setter
    def _table(self, table: Any) -> None:
        self._table_handle, self._table_deferred = table, False

    def _open_deferred(self) -> Any:
        """Open the vouched table; one that will not open is rebuilt from the memory (said in
        ``repairs``), as a damaged one found by a search is."""
        try:
            return self._connect().open_table(TABLE)
        except LANCE_ERRORS as exc:
            if self._memory is None or self.read_only:
                raise IndexUnavailable(f"index unreadable: {str(exc)[:200]}", [],
                                       "run `triage index --rebuild`") from exc
            self.repairs.append(f"index unreadable ({str(exc)[:120]}); rebuilt from the "
                                "incidents file")
            self.build(self._memory, in_memory_fallback=True)
            return self._table_handle

    def _vouch(self, meta: IndexMeta) -> IndexMeta:
        """``meta`` stamped with the table on disk as it is now (after a build or a self-check
        that passed: the table matches it)."""
        return meta.model_copy(update={"checked": table_stamp(self.index_dir, meta)})

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Held while the index on disk is checked and written (open, build, update): two
        processes on one data dir take turns, so neither swaps a table out from under the
        other's update. ``fcntl.flock`` on ``.index.lock`` in the data dir (released by the
        kernel if the process dies). Re-entrant in the thread that holds it; another thread
        (a console's save and a request's repair) opens its own handle, and flock makes it
        wait as it would another process. A lock file that cannot be created (a read-only or
        full disk) is no lock: the write itself then fails by name.
        """
        if self._lock_owner == threading.get_ident():
            yield
            return
        try:
            self.index_dir.parent.mkdir(parents=True, exist_ok=True)
            handle = open(self.index_dir.parent / LOCK_FILE, "a", encoding="utf-8")  # noqa: SIM115
        except OSError:
            handle = None
        try:
            if handle is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            self._lock_owner = threading.get_ident()
            yield
        finally:
            self._lock_owner = None
            if handle is not None:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
                handle.close()

    @property
    def embedder_id(self) -> str | None:
        return self.embedder.id if self.embedder else None

    @property
    def calibration(self) -> Calibration:
        if self.meta is not None:
            return self.meta.calibration
        return default_calibration(self.embedder_id if self.has_vectors else None)

    @property
    def degraded_notice(self) -> str | None:
        """What every briefing says while the index is held in memory."""
        if self.degraded is None:
            return None
        hint = self._failed.hint if self._failed else "then run `triage index`"
        return (f"the index could not be written ({self.degraded}): this recall searched an "
                f"index held in memory, built from the incidents file — {hint}")

    def open(self, memory: LoadedMemory, rebuild: bool = False,
             progress: EmbedProgress | None = None, in_memory_fallback: bool = False,
             ) -> list[str]:
        """Make the index match ``memory``, rebuilding when stale or when it does not match
        itself; returns notices for the user. With ``in_memory_fallback`` an index that cannot
        be written is held in memory instead (see the class); otherwise IndexWriteFailed."""
        with self._writing():
            return self._open(memory, rebuild, progress, in_memory_fallback)

    def _open(self, memory: LoadedMemory, rebuild: bool, progress: EmbedProgress | None,
              in_memory_fallback: bool) -> list[str]:
        self._memory = memory
        self._db, self.degraded, self._failed = None, None, None
        notices: list[str] = []
        why = "" if rebuild else self._stale_reason(memory)
        on_disk = read_meta(self.index_dir) if why is None else None
        if why is None and vouched(self.index_dir, on_disk):
            # Checked before and untouched since: its self-check would pass (store/index.py,
            # table_stamp). The table is opened when first searched.
            self.meta, self._table_handle, self._table_deferred = on_disk, None, True
        elif why is None:
            try:
                self._table = self._connect().open_table(TABLE)
                self.meta = read_meta(self.index_dir)
                why = self._self_check(memory)
            except LANCE_ERRORS as exc:
                why = f"index unreadable ({str(exc)[:200]})"
            if why is None and self.meta is not None:
                self._record_checked()
        if why:
            notices.append(f"{why}; rebuilt from the incidents file")
        if why is None and self._vectors_missing() and self._embedder_answers():
            notices.append("the embedder is available again; index rebuilt with vectors")
            why = "vectors missing"
        if why is not None:
            notices.extend(self.build(memory, progress, in_memory_fallback))
        else:
            self.state = "fresh"
        notices.extend(self._apply_team_calibration())
        if self.meta and self.meta.embed_error:
            notices.append(f"recall is lexical only: {self.meta.embed_error}")
        return notices

    def open_last_good(self) -> LoadedMemory | None:
        """The index on disk, read only and as it is, with the memory it was built from (its
        rows' records) — for an incidents file that does not load whole. None when there is
        no usable one: missing, another schema or embedder, or a table that does not hold the
        rows its metadata claims. Nothing on disk is written (the calibration included)."""
        meta = read_meta(self.index_dir)
        if (meta is None or meta.schema_version != SCHEMA_VERSION
                or meta.embedder != self.embedder_id
                or not (self.index_dir / f"{TABLE}.lance").exists()):
            return None
        try:
            table = self._connect().open_table(TABLE)
            rows = int(table.count_rows())
            if rows != meta.rows or rows != meta.incidents:
                return None
            records = (table.search().select(["record"]).limit(rows).to_arrow()["record"]
                       .to_pylist() if rows else [])
            incidents = [Incident.model_validate_json(record) for record in records]
        except (*LANCE_ERRORS, ValidationError):
            return None
        memory = LoadedMemory(incidents, [], meta.source_hash)
        self._db, self.degraded, self._failed = None, None, None
        self._table, self.meta, self._memory = table, meta, memory
        self.read_only, self.state = True, "last good"
        return memory

    def build_in_memory(self, memory: LoadedMemory, progress: EmbedProgress | None = None,
                        ) -> list[str]:
        """The index of ``memory`` built and held in memory only: for a partial memory when
        there is no last good index on disk. Nothing is written to the index dir (vectors
        still come from, and go to, the embedding cache)."""
        rows, vectors, meta = self._prepare(memory, progress)
        try:
            db = lancedb_module().connect("memory://")
            table = create_table(db, rows, vectors, meta.ann)
        except LANCE_ERRORS as exc:
            raise IndexUnavailable(f"the memory cannot be searched: an index of the incidents "
                                   f"that load could not be built in memory "
                                   f"({fault_name(exc)})") from exc
        self._db, self._table, self.meta, self._memory = db, table, meta, memory
        self.degraded, self._failed = None, None
        self.read_only, self.state = True, "memory"
        return [*self._cache_notice()] + ([f"recall is lexical only: {meta.embed_error}"]
                                          if meta.embed_error else [])

    def verify(self, memory: LoadedMemory) -> str | None:
        """What is wrong with the index on disk for ``memory`` (stale, unreadable, or not
        matching itself), None when it is fresh and whole. Reads only; `triage doctor`. An
        index vouched for by its stamp is not opened (no LanceDB)."""
        why = self._stale_reason(memory)
        if why is not None:
            return why or "stale: the incidents changed since it was built"
        if vouched(self.index_dir, read_meta(self.index_dir)):
            return None
        try:
            self._table = self._connect().open_table(TABLE)
            self.meta = read_meta(self.index_dir)
            return self._self_check(memory)
        except LANCE_ERRORS as exc:
            return f"index unreadable ({str(exc)[:200]})"

    def _stale_reason(self, memory: LoadedMemory) -> str | None:
        """Why the index on disk cannot be used as it is (worded for a notice when it is news
        to the user), or None when it is fresh. The self-check against the table follows."""
        state = freshness(self.index_dir, memory.source_hash, self.embedder_id)
        if state == "fresh":
            return None
        meta = read_meta(self.index_dir)
        if state == "missing":
            if self.index_dir.exists() or meta is not None:
                return "index incomplete or unreadable"
            return ""  # no index yet: the "index built" notice says enough
        assert meta is not None
        if meta.schema_version != SCHEMA_VERSION:
            return (f"index was written by another version (schema {meta.schema_version}, "
                    f"this one reads {SCHEMA_VERSION})")
        if meta.embedder != self.embedder_id:
            return (f"index was built with embedder {meta.embedder or 'none'}, the console now "
                    f"uses {self.embedder_id or 'none'}")
        return ""  # the incidents changed: an ordinary rebuild

    def _record_checked(self) -> None:
        """After a self-check that passed: stamp the metadata on disk, so the next open (the
        next `triage index`, `doctor`, `brief`) knows the answer without opening LanceDB. Only
        saves time: a data dir that cannot be written is left as it was."""
        assert self.meta is not None
        stamped = self._vouch(self.meta)
        if not stamped.checked or stamped == self.meta:
            return
        try:
            _write_meta(self.index_dir, stamped)
        except OSError:
            return
        self.meta = stamped

    def _self_check(self, memory: LoadedMemory) -> str | None:
        """Does the index match itself and the memory it claims to be built from? A metadata
        file claiming 0 rows (or any count but the table's) would otherwise make every briefing
        'no prior incident' without a word. Returns what does not match, or None."""
        meta = self.meta
        if meta is None:
            return "index metadata unreadable"
        rows = int(self._table.count_rows())
        if meta.rows != rows:
            return f"index metadata claims {meta.rows} rows but its table holds {rows}"
        if rows != len(memory.incidents) or meta.incidents != len(memory.incidents):
            return (f"index holds {rows} rows for {len(memory.incidents)} incidents in the "
                    "incidents file")
        schema = self._table.schema
        missing = [name for name in COLUMNS if name not in schema.names]
        if missing:
            return f"index table lacks the column(s) {', '.join(missing)}"
        dim = schema.field("vector").type.list_size if "vector" in schema.names else None
        if (dim or None) != meta.vector_dim:
            return (f"index metadata says {meta.vector_dim or 'no'} vector dimensions but its "
                    f"table holds {dim or 'no vectors'}")
        made = getattr(self.embedder, "dim", None)
        if dim and isinstance(made, int) and made != dim:
            return (f"index vectors have {dim} dimensions but embedder {self.embedder_id} "
                    f"makes {made}")
        if rows:
            found = (self._table.search().select(["incident_id", "doc_sha256"]).limit(rows)
                     .to_arrow())
            held = dict(zip(found["incident_id"].to_pylist(), found["doc_sha256"].to_pylist(),
                            strict=True))
            expected = {i.id: text_key(incident_document(i)) for i in memory.incidents}
            if held != expected:
                differ = sorted({k for k, v in expected.items() if held.get(k) != v}
                                | (held.keys() - expected.keys()))
                return (f"index rows do not match the incidents file ({len(differ)} incident(s) "
                        f"differ, first {differ[0]})")
        return None

    def build(self, memory: LoadedMemory, progress: EmbedProgress | None = None,
              in_memory_fallback: bool = False) -> list[str]:
        """Rebuild the whole index from ``memory`` in one batch, then swap it in.

        Raises IndexWriteFailed when it cannot be written, unless ``in_memory_fallback`` and
        the cause is a storage fault: then it is held in memory (see the class)."""
        with self._writing():
            return self._build(memory, progress, in_memory_fallback)

    def _build(self, memory: LoadedMemory, progress: EmbedProgress | None,
               in_memory_fallback: bool) -> list[str]:
        if self.read_only:
            raise IndexUnavailable("the index is not rebuilt while the incidents file has "
                                   "problems (the last good index is kept)", [],
                                   "fix the file (`triage check`), then reload")
        rows, vectors, meta = self._prepare(memory, progress)
        try:
            meta = self._write(rows, vectors, meta)
        except IndexWriteFailed as failed:
            if not (in_memory_fallback and failed.fault):
                raise
            return self._hold_in_memory(memory, rows, vectors, meta, failed)
        self._db, self.degraded, self._failed = None, None, None
        self.meta = meta
        self._memory = memory
        self._table = self._connect().open_table(TABLE)
        self.state = "rebuilt"
        return [_built_notice(memory, vectors is not None), *self._cache_notice()]

    def hold_in_memory(self, memory: LoadedMemory, failed: IndexWriteFailed) -> list[str]:
        """After a failed write on disk: the whole index of ``memory`` in memory (vectors come
        from the embedding cache where it has them)."""
        rows, vectors, meta = self._prepare(memory, None)
        return self._hold_in_memory(memory, rows, vectors, meta, failed)

    def _prepare(self, memory: LoadedMemory, progress: EmbedProgress | None,
                 ) -> tuple[list[dict[str, Any]], np.ndarray | None, IndexMeta]:
        rows = [incident_row(incident) for incident in memory.incidents]
        if self.cache is not None:
            self.cache.write_error = None  # this build's own, for _cache_notice
        vectors, embed_error = self._embed([row["document"] for row in rows], progress)
        dim = int(vectors.shape[1]) if vectors is not None else None
        meta = IndexMeta(build_id=uuid.uuid4().hex,
            source_hash=memory.source_hash, embedder=self.embedder_id, vector_dim=dim,
            embed_error=embed_error, incidents=len(memory.incidents), rows=len(rows),
            document_frequency=dict(document_frequency(memory.incidents)),
            calibration=self._wanted_calibration(self.embedder_id if dim else None)[0],
            ann=vectors is not None and len(rows) >= ANN_MIN_ROWS,
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        return rows, vectors, meta

    def _write(self, rows: list[dict[str, Any]], vectors: np.ndarray | None,
               meta: IndexMeta) -> IndexMeta:
        """Build the table in a staging dir beside the index, then swap it in; the metadata as
        written (stamped: IndexMeta.checked). Any failure leaves the previous index as it was
        and no staging dir behind."""
        staging: Path | None = None
        try:
            self.index_dir.parent.mkdir(parents=True, exist_ok=True)
            _remove_abandoned(self.index_dir.parent)
            staging = Path(tempfile.mkdtemp(prefix=f"{BUILD_PREFIX}{os.getpid()}-",
                                            dir=self.index_dir.parent))
            table = create_table(lancedb_module().connect(str(staging)), rows, vectors, meta.ann)
            del table
            # (the stamp of the staged table holds after the swap: a directory's rename leaves
            # its files' names, inodes and times as they are)
            meta = meta.model_copy(update={"checked": table_stamp(staging, meta)})
            _write_meta(staging, meta)
            _swap_in(staging, self.index_dir)
        except LANCE_ERRORS as exc:
            raise IndexWriteFailed(self.index_dir, exc) from exc
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
        return meta

    def _hold_in_memory(self, memory: LoadedMemory, rows: list[dict[str, Any]],
                        vectors: np.ndarray | None, meta: IndexMeta,
                        failed: IndexWriteFailed) -> list[str]:
        try:
            db = lancedb_module().connect("memory://")
            table = create_table(db, rows, vectors, meta.ann)
        except LANCE_ERRORS as exc:
            raise IndexUnavailable(
                f"the memory cannot be searched: the index could not be written "
                f"({failed.short}) nor built in memory ({fault_name(exc)})", [],
                failed.hint) from exc
        self._db, self._table, self.meta, self._memory = db, table, meta, memory
        self.degraded, self._failed = failed.short, failed
        self.state = "memory"
        return [f"{failed.title}; recall uses an index held in memory for now "
                f"({len(memory.incidents)} incidents"
                + (", with vectors)" if vectors is not None else ", lexical only)")
                + f" — {failed.hint}", *self._cache_notice()]

    def _cache_notice(self) -> list[str]:
        error = self.cache.write_error if self.cache is not None else None
        if not error:
            return []
        return [f"the embedding cache could not be written ({error}): the vectors were not "
                "kept, so the next build embeds them again"]

    def layered(self) -> tuple[int, tuple[str, int] | None] | None:
        """For an index laid over a shared one (store/overlay.py): how many local incidents
        are laid over it, and — since the store stopped answering — the status words of what
        recall reads instead with its own count. None for a plain local index."""
        return None

    def pinned(self) -> MemoryIndex:
        """A read-only view at the current table version, for one request: a save landing
        meanwhile changes neither the rows it searches nor the statistics it scores with."""
        before = len(self.repairs)
        current = self._table  # (a deferred table is opened now: a rebuild it needed is said)
        opening = self.repairs[before:]
        del self.repairs[before:]
        view = copy.copy(self)
        view._lock_owner = None  # a view is used by its request's thread: it takes the lock itself
        view.repairs = [*opening, *([self.degraded_notice] if self.degraded_notice else [])]
        if current is not None:
            table = self._connect().open_table(TABLE)
            table.checkout(self._table.version)
            view._table = table
        return view

    def _apply_team_calibration(self) -> list[str]:
        """Use the team's own fitted calibration when there is one for this embedder."""
        if self.meta is None:
            return []
        wanted, notice = self._wanted_calibration(self.embedder_id if self.has_vectors else None)
        notices = [notice] if notice else []
        if wanted != self.meta.calibration:
            checked = bool(self.meta.checked)
            self.meta = self.meta.model_copy(update={"calibration": wanted, "checked": ""})
            if checked and self._db is None:
                self.meta = self._vouch(self.meta)  # (the table was checked: it still matches)
            if self._db is None:
                try:
                    _write_meta(self.index_dir, self.meta)
                except OSError as exc:
                    notices.append(f"the calibration could not be recorded in the index "
                                   f"({fault_name(exc)} at {self.index_dir}); it is used for "
                                   "this session")
        return notices

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
                        previous: Incident | None = None, in_memory_fallback: bool = False,
                        ) -> list[str]:
        """Replace one incident's row, re-embedding only its document if it changed.

        A write that fails raises IndexWriteFailed — or, with ``in_memory_fallback`` and a
        storage fault, the whole index is held in memory (``degraded`` says why). The metadata
        on disk is written last, so a half-done update reads as stale and is rebuilt."""
        with self._writing():
            return self._update_incident(memory, incident_id, previous, in_memory_fallback)

    def _update_incident(self, memory: LoadedMemory, incident_id: str,
                         previous: Incident | None, in_memory_fallback: bool) -> list[str]:
        if self.read_only:
            return self.build(memory, in_memory_fallback=in_memory_fallback)  # (refuses)
        if self._table is None or self.meta is None or self.meta.rows == 0:
            return self.build(memory, in_memory_fallback=in_memory_fallback)
        if self._db is None and not self._still_ours():
            # Another process rebuilt, updated or compacted the index since it was opened here:
            # this handle may name files that are gone. Open what is on disk now instead.
            return self.open(memory, in_memory_fallback=in_memory_fallback)
        incident = next(i for i in memory.incidents if i.id == incident_id)
        row = incident_row(incident)
        vectors, embed_error = self._embed([row["document"]])
        if self.has_vectors and (vectors is None or vectors.shape[1] != self.meta.vector_dim):
            # (another dimension: the model changed under its name — every row is re-embedded)
            return self.build(memory, in_memory_fallback=in_memory_fallback)
        meta = self.meta.model_copy(update={
            "source_hash": memory.source_hash, "incidents": len(memory.incidents),
            "rows": len(memory.incidents),
            "document_frequency": _adjusted_frequency(self.meta.document_frequency,
                                                      previous, incident),
            "embed_error": embed_error or self.meta.embed_error,
            "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "checked": ""})  # (the next open self-checks the updated table, and stamps it)
        quoted = incident_id.replace("'", "''")
        notices: list[str] = []
        try:
            self._table.delete(f"incident_id = '{quoted}'")
            self._table.add(_arrow_rows([row], vectors if self.has_vectors else None))
            if self._table.stats()["fragment_stats"]["num_fragments"] > COMPACT_AFTER_FRAGMENTS:
                self._table.optimize()
                notices.append("index compacted")
            if self._db is None:
                _write_meta(self.index_dir, meta)
        except LANCE_ERRORS as exc:
            failed = IndexWriteFailed(self.index_dir, exc)
            if not (in_memory_fallback and failed.fault):
                raise failed from exc
            return self.hold_in_memory(memory, failed)
        self._memory = memory
        self.meta = meta
        if self._db is None:
            self.state = "fresh"
        return notices

    def _still_ours(self) -> bool:
        """Is the index on disk the one this object opened or last wrote (same metadata, same
        table version)? Checked under the save lock before an incremental update."""
        try:
            on_disk = read_meta(self.index_dir)
            latest = self._connect().open_table(TABLE).version
        except LANCE_ERRORS:
            return False
        return on_disk == self.meta and latest == self._table.version

    def _embed(self, texts: list[str], progress: EmbedProgress | None = None,
               ) -> tuple[np.ndarray | None, str | None]:
        if not self.embedder or not texts:
            return None, None
        try:
            return embed_cached(self.embedder, texts, self.cache, progress), None
        except EmbedderUnavailable as exc:
            return None, str(exc)

    def _connect(self) -> Any:
        if self._db is not None:
            return self._db
        return lancedb_module().connect(str(self.index_dir))

    @property
    def has_vectors(self) -> bool:
        return bool(self.meta and self.meta.vector_dim)

    def _query(self, run: Any) -> list[dict[str, Any]]:
        """Run a query; a damaged index is rebuilt from the incidents once, with a notice."""
        try:
            return list(run())
        except LANCE_ERRORS as exc:
            if self._memory is None or self.read_only:
                raise IndexUnavailable(f"index unreadable: {str(exc)[:200]}", [],
                                       "fix the incidents file (`triage check`), then reload: "
                                       "the index is rebuilt once it loads whole"
                                       if self.read_only else "") from exc
            self.repairs.append(f"index was damaged ({str(exc)[:120]}); rebuilt from the "
                                "incidents file")
            self.build(self._memory, in_memory_fallback=True)
            if self.degraded_notice:
                self.repairs.append(self.degraded_notice)
            try:
                return list(run())
            except LANCE_ERRORS as again:
                raise IndexUnavailable(f"index unreadable even after a rebuild: {again} — "
                                       f"delete {self.index_dir} and run `triage index`") from again

    def search(self, text: str, vector: np.ndarray | None, limit: int) -> list[Candidate]:
        """Incidents found by full text (BM25) or by vector, each with both scores it has.

        An empty result means the search ran and found nothing: an index that was never
        opened raises instead (it must not read as "no prior incident")."""
        if self._table is None or self.meta is None:
            raise IndexUnavailable("the index is not open, so the memory was not searched",
                                   [], "run `triage index`, then brief again")
        if not self.meta.rows:
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


def _built_notice(memory: LoadedMemory, with_vectors: bool) -> str:
    return (f"index built: {len(memory.incidents)} incidents, {memory.action_count} actions"
            + (", with vectors" if with_vectors else ", lexical only"))


def _swap_in(staging: Path, index_dir: Path) -> None:
    """Rename the staged index over the old one; if that fails the old one is put back."""
    old = index_dir.with_name(f"{OLD_PREFIX}{os.getpid()}")
    moved = False
    if index_dir.exists() or index_dir.is_symlink():
        os.replace(index_dir, old)
        moved = True
    try:
        os.replace(staging, index_dir)
    except OSError:
        if moved:
            os.replace(old, index_dir)
        raise
    if moved:
        _remove_path(old)


def _remove_path(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            path.unlink()
        except OSError:
            pass


def _remove_abandoned(data_dir: Path) -> None:
    """Staging and old index dirs left by a build that was killed (its pid is gone): a big
    memory's half-built index must not keep eating the disk."""
    for path in data_dir.glob(".index-*"):
        name = path.name
        for prefix in (BUILD_PREFIX, OLD_PREFIX):
            if name.startswith(prefix):
                pid = name[len(prefix):].split("-", 1)[0]
                if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                    _remove_path(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _adjusted_frequency(frequency: dict[str, int], previous: Incident | None,
                        current: Incident) -> dict[str, int]:
    counts = Counter(frequency)
    if previous is not None:
        counts.subtract(set(terms(incident_document(previous))))
    counts.update(set(terms(incident_document(current))))
    return {term: count for term, count in counts.items() if count > 0}


def _write_meta(directory: Path, meta: IndexMeta) -> None:
    temp = directory / f".{META_FILE}.tmp"
    try:
        temp.write_text(meta.model_dump_json(), encoding="utf-8")
        os.replace(temp, directory / META_FILE)
    except OSError:
        _remove_path(temp)
        raise


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


def create_table(db: Any, rows: list[dict[str, Any]], vectors: np.ndarray | None,
                  ann: bool = False) -> Any:
    """The table in ``db`` (a directory's connection, or an in-memory one), with its full-text
    index and, from ANN_MIN_ROWS rows with vectors, its HNSW index."""
    from lancedb.index import FTS, HnswSq

    data = _arrow_rows(rows, vectors)
    table = db.create_table(TABLE, data=data, mode="overwrite")
    if rows:
        table.create_index("lexical", config=FTS())
    if ann:
        table.create_index("vector", config=HnswSq(distance_type="cosine"))
    return table


def lancedb_module() -> Any:
    """Import lancedb on first use; its Rust logger otherwise warns on stderr per query.

    The cyclic GC is paused meanwhile: the import builds ~300k objects (its REST client's
    pydantic models), none garbage, and every GC pass walked them all — 0.25 s of its ~1.3 s
    here (bench/headless_bench.py)."""
    os.environ.setdefault("LANCEDB_LOG", "error")
    enabled = gc.isenabled()
    gc.disable()
    try:
        import lancedb
    finally:
        if enabled:
            gc.enable()
    return lancedb
