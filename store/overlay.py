"""Reading a shared version with the laptop's own, not-yet-merged incidents laid over it.

The overlay is the local incidents new or changed relative to the version's record hashes. A
shared record is hidden only by what this laptop did to it:

- *deleted here*: the laptop held the incident (it was in its incidents files at an earlier
  load) and lacks it now. An incident the checkout never held — a laptop behind the team's
  main — is recalled from the shared version, however new the local files are (a local save
  makes them newer than the shared content without bringing in what main has).
- *edited here*: the local record changed since the laptop last saw it (or, the first time
  the laptop sees it, its files are at least as new as the version's content,
  ``source_time``). A local copy the laptop never changed that differs from the shared one is
  an older copy: the shared record is recalled.

What the laptop held is recorded in the data dir (``shared/held.json``, per incidents source:
each incident's record hash as last seen here, and which ones were edited here); the shared
store is never written by a read. Whatever is hidden is said: a notice ("2 shared incidents
hidden: deleted here: INC-…") and the status line.

One gate for both: the overlay is scored with the version's calibration and its document
frequencies (adjusted for what is hidden and overlaid), and its BM25 comes from a local
full-text index over the whole layered corpus (the version's documents as unscored "ballast"
rows plus the overlay), so its statistics are those of the memory being searched.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from store.embedder import EmbedderUnavailable, EmbeddingCache, embed_cached
from store.index import (
    COLUMNS,
    LANCE_ERRORS,
    SCHEMA_VERSION,
    TABLE,
    Candidate,
    IndexMeta,
    IndexUnavailable,
    MemoryIndex,
    freshness,
    incident_document,
    incident_row,
    lancedb_module,
)
from store.loader import LoadedMemory
from store.models import Incident
from store.terms import search_text, terms

if TYPE_CHECKING:
    import numpy as np

    from store.embedder import Embedder
    from store.shared import Published, Store


T = TypeVar("T")


@dataclass
class _Health:
    """Shared by an index and every pinned view of it: once the store stops answering, every
    later request goes straight to the fallback (no second timeout)."""

    fallback: MemoryIndex | None = None
    notice: str | None = None
    label: str | None = None  # the fallback's status words ("local (shared index not used)")


@dataclass(frozen=True)
class Opened:
    """What the engine loaded: the index, notices, and the status line's words."""

    index: MemoryIndex
    notices: list[str]
    label: str  # "shared v3" | "pulled v3, 2 h old" | "local (shared index unreachable)"
    version: str | None = None  # "v3" when a shared version is in use
    overlaid: int = 0


class LayeredIndex(MemoryIndex):
    """A published version (in the store, or a pulled copy) with the overlay on top. Read-only:
    a save re-lays the overlay (``update_incident``), it never writes the version."""

    def __init__(self, data_dir: Path, embedder: Embedder | None, cache: EmbeddingCache | None,
                 base: Any, version: Published, label: str,
                 fallback: Callable[[str], tuple[MemoryIndex, str, str]] | None = None,
                 deadline: float | None = None) -> None:
        super().__init__(data_dir, embedder, cache)
        self.deadline = deadline  # for a version read from the store (None: a local copy)
        self.base_db = base
        self.version = version
        self.label = label
        self._fallback_factory = fallback
        self._health = _Health()
        self._overlay: Any = None
        self.data_dir = data_dir
        self.hidden: frozenset[str] = frozenset()
        self.deleted_here: tuple[str, ...] = ()
        self.edited_here: tuple[str, ...] = ()
        self.overlaid: list[str] = []
        self.base_hashes: dict[str, str] = {}
        self.state = "shared"

    # -- layering ------------------------------------------------------------------------

    def lay(self, memory: LoadedMemory) -> list[str]:
        """(Re)compute the overlay for ``memory``; returns notices."""
        from store.shared import parse_time, record_hash, source_time

        if not self.base_hashes:
            def fetch() -> tuple[Any, dict[str, str]]:
                rows = self.base_db.open_table("hashes").to_arrow().to_pylist()
                return (self.base_db.open_table(TABLE),
                        {r["incident_id"]: r["sha256"] for r in rows})

            self._table, self.base_hashes = self._remote(fetch)
        shared = self.base_hashes
        local = {i.id: record_hash(i) for i in memory.incidents}
        ahead = parse_time(source_time(memory)) >= parse_time(self.version.source_time)
        held = HeldRecord.read(self.data_dir, memory)
        new = [i for i in memory.incidents if i.id not in shared]
        changed: list[Incident] = []
        older: list[Incident] = []
        for incident in memory.incidents:
            if incident.id in shared and shared[incident.id] != local[incident.id]:
                edited = held.edited_here(incident.id, local[incident.id], ahead)
                (changed if edited else older).append(incident)
        missing = sorted(i for i in shared if i not in local)
        edited_ids = {i.id for i in changed}
        if memory.complete:
            deleted = [i for i in missing if held.held(i)]
        else:
            # Some incidents did not load (a broken file): absence proves nothing. Nothing is
            # hidden for lacking here, and an edit made here is remembered for when it loads.
            deleted = []
            edited_ids |= held.edited & set(missing)
        absent = [i for i in missing if i not in deleted]
        notices = []
        record_problem = held.update(local, edited_ids)
        if record_problem:
            notices.append(record_problem)
        if absent or older:
            notices.append(self._kept_notice(absent, [i.id for i in older], ahead,
                                             memory.complete))
        overlay = new + changed
        self.hidden = frozenset(i.id for i in changed) | frozenset(deleted)
        self.deleted_here = tuple(deleted)
        self.edited_here = tuple(sorted(i.id for i in changed))
        if self.hidden:
            notices.append(f"{_count(len(self.hidden), 'shared incident')} hidden: "
                           f"{self.hiding_detail()} (this laptop's incidents files are "
                           f"laid over shared {self.version.label})")
        self.overlaid = [i.id for i in overlay]
        self.meta = self._layered_meta(overlay)
        self._overlay, embed_notice = (self._overlay_table(overlay) if overlay else (None, None))
        if embed_notice:
            notices.append(embed_notice)
        self._memory = None  # never rebuilt from the incidents file: the version is not ours
        return notices

    def _kept_notice(self, absent: list[str], older: list[str], ahead: bool,
                     complete: bool = True) -> str:
        parts = []
        if absent:
            lack = "lack" if complete else "lack or cannot load"
            parts.append(f"{_count(len(absent), 'incident')} the incidents files here {lack} "
                         f"({_ids(absent)})")
        if older:
            parts.append(f"{_count(len(older), 'incident')} newer than the copy here "
                         f"({_ids(older)})")
        text = (f"shared {self.version.label} holds {' and '.join(parts)}: recalled from the "
                "shared index — `git pull` the incidents to have them here")
        if not ahead:
            text = (f"the incidents files here are older than the content of shared "
                    f"{self.version.label}: " + text)
        return text

    def hiding_detail(self) -> str:
        """``deleted here: INC-1; edited here: INC-2`` (empty when nothing is hidden)."""
        parts = []
        if self.deleted_here:
            parts.append(f"deleted here: {_ids(list(self.deleted_here))}")
        if self.edited_here:
            parts.append(f"edited here (the local record is recalled): "
                         f"{_ids(list(self.edited_here))}")
        return "; ".join(parts)

    def hiding(self) -> str:
        """The status line's words for what the overlay hides ("" when nothing): since the
        store stopped answering, those of what recall reads instead."""
        fallback = self._health.fallback
        if fallback is not None:
            return fallback.hiding() if isinstance(fallback, LayeredIndex) else ""
        if not self.hidden:
            return ""
        parts = []
        if self.deleted_here:
            parts.append(f"deleted here {_ids(list(self.deleted_here), 3)}")
        if self.edited_here:
            parts.append(f"edited here {_ids(list(self.edited_here), 3)}")
        return f"hides {len(self.hidden)} shared: {'; '.join(parts)}"

    def _layered_meta(self, overlay: list[Incident]) -> IndexMeta:
        meta = self.version.index_meta()
        counts = Counter(meta.document_frequency)
        if self.hidden:
            quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in sorted(self.hidden))
            for row in self._remote(lambda: self._table.search()
                                    .where(f"incident_id IN ({quoted})")
                                    .select(["incident_id", "terms"])
                                    .limit(len(self.hidden)).to_list()):
                counts.subtract(set(row["terms"].split()))
        for incident in overlay:
            counts.update(set(terms(incident_document(incident))))
        size = meta.incidents - len(self.hidden) + len(overlay)
        return meta.model_copy(update={
            "document_frequency": {t: c for t, c in counts.items() if c > 0},
            "incidents": size, "rows": size})

    def _overlay_table(self, overlay: list[Incident]) -> tuple[Any, str | None]:
        """The local full-text (and vector) table of the overlay, with the version's
        documents as ballast for the BM25 statistics; cached per version and overlay."""
        from store.shared import record_hash

        digest = hashlib.sha256("\n".join(
            [self.version.publish_id, self.embedder_id or "", *sorted(self.hidden),
             *sorted(record_hash(i) for i in overlay)]).encode()).hexdigest()[:20]
        root = self.index_dir.parent / "overlay"
        where = root / digest
        if (where / "done").exists():
            try:
                return lancedb_module().connect(str(where)).open_table("overlay"), None
            except LANCE_ERRORS:
                pass
        rows = [incident_row(i) for i in overlay]
        vectors, notice = None, None
        dim = self.version.vector_dim
        if dim and self.embedder is not None:
            try:
                vectors = embed_cached(self.embedder, [r["document"] for r in rows], self.cache)
            except EmbedderUnavailable as exc:
                notice = f"local incidents are searched by words only: {exc}"
        every = self._remote(lambda: self._table.search().select(["incident_id", "lexical"])
                             .limit(max(1, self.version.incidents)).to_list())
        ballast = [r for r in every if r["incident_id"] not in self.hidden]
        data = _overlay_arrow(rows, ballast, vectors, dim if vectors is not None else None)
        if root.is_dir():  # older overlays of this data dir
            for old in root.iterdir():
                if old.name != digest:
                    shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(where, ignore_errors=True)
        where.mkdir(parents=True, exist_ok=True)
        from lancedb.index import FTS

        table = lancedb_module().connect(str(where)).create_table("overlay", data=data, mode="overwrite")
        table.create_index("lexical", config=FTS())
        (where / "done").write_text(digest, encoding="utf-8")
        return table, notice

    def _remote(self, call: Callable[[], T]) -> T:
        """A read of the version, bounded by the store's deadline when it is in the store."""
        from store.shared import within

        return within(self.deadline, call) if self.deadline else call()

    # -- the MemoryIndex surface recall and the engine use -------------------------------

    def open(self, memory: LoadedMemory, rebuild: bool = False, progress: Any = None,
             in_memory_fallback: bool = False) -> list[str]:
        return self.lay(memory)

    def update_incident(self, memory: LoadedMemory, incident_id: str,
                        previous: Incident | None = None, in_memory_fallback: bool = False,
                        ) -> list[str]:
        """A save: the incident joins the overlay (recalled at once); the version is untouched."""
        return self.lay(memory)

    def pinned(self) -> MemoryIndex:
        if self._health.fallback is not None:
            view = self._health.fallback.pinned()
            if self._health.notice:
                view.repairs.append(self._health.notice)
            return view
        view = copy.copy(self)
        view.repairs = []
        return view

    def search(self, text: str, vector: np.ndarray | None, limit: int) -> list[Candidate]:
        if self._health.fallback is not None:
            return self._health.fallback.search(text, vector, limit)
        def base() -> list[Candidate]:
            return MemoryIndex.search(self, text, vector, limit + len(self.hidden))

        try:
            shared = self._remote(base)
        except (IndexUnavailable, TimeoutError, *LANCE_ERRORS) as exc:
            return self._fall_back(exc).search(text, vector, limit)
        found = [c for c in shared if c.incident_id not in self.hidden]
        if self._overlay is not None:
            found.extend(self._search_overlay(text, vector, limit))
        return found

    def _fall_back(self, exc: BaseException) -> MemoryIndex:
        from store.shared import log_store_error, store_fault

        fault = store_fault(exc)
        log_store_error(self.data_dir, None, fault, f"search of the {self.label}")
        reason = f"the {self.label} stopped answering ({fault.reason}; {fault.todo})"
        if self._fallback_factory is None:
            raise IndexUnavailable(f"{reason}: the memory was not searched", [],
                                   "run `triage index --pull` when the store answers, or "
                                   "`triage index` to build the index on this laptop") from exc
        index, notice, label = self._fallback_factory(reason)
        self._health.fallback, self._health.notice, self._health.label = index, notice, label
        self.repairs.append(notice)
        return index

    @property
    def fallen_back(self) -> tuple[str, int] | None:
        """Since the store stopped answering: the status words of what recall reads instead and
        the local incidents laid over it (None while the store answers)."""
        if self._health.fallback is None or self._health.label is None:
            return None
        layers = self._health.fallback.layered()
        return self._health.label, layers[0] if layers is not None else 0

    def layered(self) -> tuple[int, tuple[str, int] | None]:
        return len(self.overlaid), self.fallen_back

    def _search_overlay(self, text: str, vector: np.ndarray | None,
                        limit: int) -> list[Candidate]:
        lexical = search_text(text).replace('"', " ").strip()
        has_vectors = "vector" in self._overlay.schema.names
        use_vector = vector is not None and has_vectors
        columns = [*COLUMNS, "vector"] if has_vectors else list(COLUMNS)
        found: dict[str, dict[str, Any]] = {}
        if lexical:
            for row in (self._overlay.search(lexical, query_type="fts", fts_columns="lexical")
                        .where("ballast = false", prefilter=True).limit(limit)
                        .select([*columns, "_score"]).to_list()):
                found[row["incident_id"]] = row
        if use_vector:
            for row in (self._overlay.search(vector, query_type="vector")
                        .distance_type("cosine").where("ballast = false", prefilter=True)
                        .limit(limit).select([*columns, "_distance"]).to_list()):
                found.setdefault(row["incident_id"], row)["_distance"] = row["_distance"]
        return [self._candidate(row, vector if use_vector else None) for row in found.values()]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _ids(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


HELD_FILE = "held.json"  # under DATA/shared/ (store/pulled.py PULLED_DIR)


@dataclass
class HeldRecord:
    """What this laptop's incidents files held, as last seen here (per incidents source):
    each incident's record hash, and the incidents edited here. Only an incident held here and
    lacking now is a local deletion; one never held is one the checkout has not pulled yet."""

    path: Path
    key: str
    seen: dict[str, str]  # incident id → record hash when last seen here (or when deleted)
    edited: set[str]  # incidents whose local record was changed here
    known: bool  # a record existed for this source

    @classmethod
    def read(cls, data_dir: Path, memory: LoadedMemory) -> HeldRecord:
        from store.pulled import PULLED_DIR

        path = data_dir / PULLED_DIR / HELD_FILE
        key = _source_key(memory)
        try:
            sources = json.loads(path.read_text(encoding="utf-8")).get("sources", {})
            entry = sources.get(key)
            seen = {str(k): str(v) for k, v in entry["seen"].items()}
            edited = {str(i) for i in entry["edited"]}
        except (OSError, ValueError, AttributeError, KeyError, TypeError):
            return cls(path, key, {}, set(), False)
        return cls(path, key, seen, edited, True)

    def held(self, incident_id: str) -> bool:
        return incident_id in self.seen

    def edited_here(self, incident_id: str, local_hash: str, ahead: bool) -> bool:
        """Does the local record of a shared incident (differing from the shared one) carry
        an edit made here? Yes when it was edited here before or changed since last seen; the
        first time it is seen, when the local files are at least as new as the shared content."""
        if incident_id in self.edited:
            return True
        previous = self.seen.get(incident_id)
        return ahead if previous is None else previous != local_hash

    def update(self, local: dict[str, str], edited: set[str]) -> str | None:
        """Record ``local`` as held (a deletion stays recorded: its id is kept); a notice when
        the record cannot be written."""
        seen = {**self.seen, **local}
        if seen == self.seen and edited == self.edited and self.known:
            return None
        try:
            try:
                whole = json.loads(self.path.read_text(encoding="utf-8"))
                sources = whole.get("sources", {}) if isinstance(whole, dict) else {}
                if not isinstance(sources, dict):
                    sources = {}
            except (OSError, ValueError):
                sources = {}
            sources[self.key] = {"seen": dict(sorted(seen.items())), "edited": sorted(edited)}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temp = self.path.with_name(f".{HELD_FILE}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
            try:
                temp.write_text(json.dumps({"sources": sources}, sort_keys=True),
                                encoding="utf-8")
                os.replace(temp, self.path)
            finally:
                temp.unlink(missing_ok=True)
        except OSError as exc:
            return (f"what this laptop's incidents files hold could not be recorded "
                    f"({exc.strerror or exc}: {self.path}): a deletion made here is not "
                    "remembered, the shared record stays recalled")
        self.seen, self.edited, self.known = seen, set(edited), True
        return None


def _source_key(memory: LoadedMemory) -> str:
    """The incidents source a record is about: the file, or the directory of several."""
    files = [str(f.resolve()) for f in memory.files]
    if len(files) == 1:
        return files[0]
    return os.path.commonpath(files) if files else ""


def _overlay_arrow(rows: list[dict[str, Any]], ballast: list[dict[str, Any]],
                   vectors: np.ndarray | None, dim: int | None) -> Any:
    import numpy as np
    import pyarrow as pa

    empty = dict.fromkeys(COLUMNS, "")
    every = rows + [{**empty, "incident_id": b["incident_id"], "lexical": b["lexical"]}
                    for b in ballast]
    fields = [pa.field(name, pa.string()) for name in COLUMNS] + [pa.field("ballast", pa.bool_())]
    columns: dict[str, Any] = {name: [r[name] for r in every] for name in COLUMNS}
    columns["ballast"] = [False] * len(rows) + [True] * len(ballast)
    if vectors is not None and dim:
        full = np.zeros((len(every), dim), dtype=np.float32)
        full[:len(rows)] = vectors
        fields.append(pa.field("vector", pa.list_(pa.float32(), dim)))
        columns["vector"] = pa.FixedSizeListArray.from_arrays(
            pa.array(full.ravel(), type=pa.float32()), dim)
    return pa.Table.from_pydict(columns, schema=pa.schema(fields))


# --- opening: the store, else the pulled copy, else a local index -------------------------


@dataclass
class Sources:
    """What the engine hands over to open the memory."""

    store: Store
    data_dir: Path
    memory: LoadedMemory
    embedder: Embedder | None
    cache: EmbeddingCache | None
    calibration_file: Path | None = None
    offline: bool = False
    tried: list[str] = field(default_factory=list)


def open_layered(src: Sources) -> Opened:
    """The shared version when the store answers; else the pulled copy; else an up-to-date
    local index — each fallback with a notice saying why. None of them: SharedUnavailable."""
    from store.shared import SharedMismatch, SharedUnavailable, log_store_error

    reason = "offline (TRIAGE_OFFLINE): the store is not contacted" if src.offline else None
    if reason is None:
        try:
            return _open_remote(src)
        except SharedMismatch as exc:
            # (a setting to fix, not an outage: with no copy to fall back on it is the error)
            fallback = _fallback(src, f"{exc.title} — {exc.hint}")
            if fallback is None:
                raise
            return fallback
        except SharedUnavailable as exc:
            log_store_error(src.data_dir, src.store, exc.fault, "opening the shared index")
            reason = exc.title if exc.fault is None else f"{exc.title} ({exc.fault.todo})"
    fallback = _fallback(src, reason)
    if fallback is None:
        raise SharedUnavailable(
            f"{reason}; there is no pulled copy or up-to-date local index to fall back on: "
            "the memory was not searched", [],
            "run `triage index --pull` once the store answers (a copy for offline use), or "
            "`triage index` to build the index on this laptop")
    return fallback


def _check_embedder(version: Published, src: Sources, where: str) -> None:
    from store.shared import SharedMismatch

    mine = src.embedder.id if src.embedder else None
    if version.schema_version != SCHEMA_VERSION:
        error = SharedMismatch(
            f"the {where} was written by another version of triage (schema "
            f"{version.schema_version}, this one reads {SCHEMA_VERSION})", [],
            "publish it again with this version: `triage index --publish`")
    elif version.embedder != mine:
        error = SharedMismatch(
            f"the {where} {version.label} was built with embedder "
            f"{version.embedder or 'none'}, this console uses {mine or 'none'}", [],
            f"set TRIAGE_EMBED_MODEL to match ({_embed_setting(version.embedder)}), or publish "
            "it again with this embedder: `triage index --publish`")
    else:
        return
    raise error


def _embed_setting(embedder: str | None) -> str:
    if embedder is None:
        return "TRIAGE_EMBED_MODEL=none"
    if embedder.startswith("ollama:"):
        return f"TRIAGE_EMBED_MODEL={embedder.removeprefix('ollama:')}"
    return "unset TRIAGE_EMBED_MODEL for the bundled MiniLM"


def _open_remote(src: Sources) -> Opened:
    from store.shared import SharedUnavailable, read_current, unavailable_error, within

    version = read_current(src.store)
    if version is None:
        raise SharedUnavailable(f"nothing is published at {src.store.describe()} yet")
    _check_embedder(version, src, "shared index")

    try:  # every read of the store inside is bounded by its deadline (the embedding is not)
        base = within(src.store.deadline, lambda: lancedb_module().connect(
            src.store.at(version.prefix), storage_options=src.store.options))
        index = LayeredIndex(src.data_dir, src.embedder, src.cache, base, version,
                             f"shared index {version.label}",
                             fallback=lambda why: _mid_session(src, why),
                             deadline=src.store.deadline)
        notices = index.lay(src.memory)
    except (*LANCE_ERRORS, TimeoutError) as exc:
        raise unavailable_error(src.store, exc, "read") from exc
    return Opened(index, notices, f"shared {version.label}", version.label, len(index.overlaid))


def _mid_session(src: Sources, reason: str) -> tuple[MemoryIndex, str, str]:
    opened = _fallback(src, reason)
    if opened is None:
        raise IndexUnavailable(f"{reason}; there is no pulled copy or up-to-date local index to "
                               "fall back on: the memory was not searched", [],
                               "run `triage index --pull` once the store answers, or `triage "
                               "index` to build the index on this laptop")
    return opened.index, opened.notices[0], opened.label


def _fallback(src: Sources, reason: str) -> Opened | None:
    from store.pulled import PULLED_DIR, read_pulled
    from store.shared import SharedMismatch

    pulled = read_pulled(src.data_dir)
    if pulled is not None:
        try:
            _check_embedder(pulled.version, src, "pulled copy")
        except SharedMismatch:
            pulled = None  # built for another embedder: of no use here
    if pulled is not None:
        path = src.data_dir / PULLED_DIR / pulled.version.publish_id
        age = pulled.age()
        label = f"pulled {pulled.version.label}, {age} old"
        index = LayeredIndex(src.data_dir, src.embedder, src.cache,
                             lancedb_module().connect(str(path)), pulled.version,
                             f"pulled copy of shared {pulled.version.label}")
        try:
            notices = index.lay(src.memory)
        except LANCE_ERRORS:
            pass
        else:
            notice = (f"{reason}: recall uses the copy of shared {pulled.version.label} pulled "
                      f"{age} ago (published {pulled.version.published_at})")
            return Opened(index, [notice, *notices], label, pulled.version.label,
                          len(index.overlaid))
    mine = src.embedder.id if src.embedder else None
    if freshness(src.data_dir / "index", src.memory.source_hash, mine) == "fresh":
        local = MemoryIndex(src.data_dir, src.embedder, src.cache, src.calibration_file)
        notices = local.open(src.memory)
        notice = (f"{reason}: recall uses the index built on this laptop from "
                  f"{len(src.memory.incidents)} incidents")
        return Opened(local, [notice, *notices], "local (shared index not used)")
    return None


__all__ = ["HeldRecord", "LayeredIndex", "Opened", "Sources", "open_layered"]
