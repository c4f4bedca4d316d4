"""A team's shared index on object storage: published versions, a manifest, pulled copies.

Layout under ``TRIAGE_INDEX_URI`` (e.g. ``s3://bucket/prefix``), all written with LanceDB:

    v/<publish id>/         one immutable version: the ``incidents`` table (as a local index
                            builds it) and ``hashes`` (incident id → sha256 of its record)
    entries/<source time>_<publish id>.lance
                            the manifest: one one-row table per version, written LAST (after
                            the version is whole), naming it and what it was built from

A reader lists the manifest first and only opens a version an entry names, so it never sees a
half-published one. Every publish writes under names no other publish can take (its own
publish id), so two publishers at once both land and nothing mixes. (A single manifest table
appended by both was tried first: two processes creating it at once lost one row.) Version
numbers are publish order (1, 2, …). The *current* version is the one built from the newest
incidents content — the greatest ``(source_time, number)``, i.e. the greatest entry name — so
a publish that lost a race to newer content never becomes current by finishing last.

``source_time`` is when the incidents content was written: ``--source-time`` (CI passes the
commit time, ``git log -1 --format=%cI``), else the newest modification time of the incidents
files. A publish older than the current version is refused as stale unless ``--force``
(which then records the current version's time, so it becomes current).

Old versions are removed by ``triage index --prune [--keep N]`` (:func:`prune`): the data of
all but the N most recently published and the current one is deleted; every manifest entry
stays, so version numbers never shift and a pruned version is still named in the history.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import socket
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from store.embedder import EmbedProgress
from store.errors import EXIT_BAD_INPUT, EXIT_INTERNAL, TriageError
from store.index import (
    LANCE_ERRORS,
    SCHEMA_VERSION,
    IndexMeta,
    MemoryIndex,
    create_table,
    lancedb_module,
)
from store.loader import LoadedMemory, content_hash
from store.models import Incident

T = TypeVar("T")
ENTRIES = "entries"  # the manifest: one small table per published version
HASHES = "hashes"
VERSIONS = "v"
OVERLAY_DIR = "overlay"  # under the data dir: the local, not-yet-merged incidents
OVERLAY_TABLE = "overlay"
DEFAULT_TIMEOUT = 5.0  # seconds, per request to the store


class SharedUnavailable(TriageError):
    """The shared index cannot be used (store down, slow, refused, empty); says why in plain
    words. ``fault`` keeps the raw error behind it (for the audit log, never shown)."""

    exit_code = EXIT_INTERNAL
    fault: StoreFault | None = None


class SharedMismatch(SharedUnavailable):
    """The shared index answers but was built for another embedder or schema: a setting to fix
    (or a publish to run), not an outage — no fallback hides it."""


class SharedStale(TriageError):
    """A publish built from older incidents content than the current version."""

    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class Store:
    """Where the shared index lives and how to reach it (``storage_options`` hold secrets:
    never printed; ``describe`` is)."""

    uri: str
    options: dict[str, str] = field(default_factory=dict, repr=False)
    endpoint: str | None = None
    # The longest a console waits on the store for one read (the manifest, a search): LanceDB
    # retries a silent endpoint ~6 times per call whatever its own timeouts say (measured: a
    # 3 s request timeout took 20 s), so the wait is bounded here too.
    deadline: float = 6.0

    def describe(self) -> str:
        return self.uri + (f" (endpoint {self.endpoint})" if self.endpoint else "")

    def at(self, path: str) -> str:
        return f"{self.uri.rstrip('/')}/{path}" if path else self.uri


def storage_options(endpoint: str | None, region: str | None, key_id: str | None,
                    secret: str | None, token: str | None, allow_http: bool | None,
                    timeout: float = DEFAULT_TIMEOUT) -> dict[str, str]:
    """LanceDB (object_store) options for S3 or an S3-compatible endpoint, with explicit
    timeouts and a bounded retry budget: a dead store fails in about ``2·timeout`` seconds,
    not after object_store's defaults (10 retries over up to 180 s)."""
    seconds = max(0.5, float(timeout))
    options = {"connect_timeout": f"{min(seconds, 2.0):g}s", "timeout": f"{seconds:g}s",
               "client_max_retries": "1", "client_retry_timeout": f"{int(max(1, seconds))}"}
    if endpoint:
        options["aws_endpoint"] = endpoint
        options["aws_virtual_hosted_style_request"] = "false"
    if allow_http is None:
        allow_http = bool(endpoint and endpoint.startswith("http://"))
    if allow_http:
        options["allow_http"] = "true"
    for name, value in (("aws_region", region), ("aws_access_key_id", key_id),
                        ("aws_secret_access_key", secret), ("aws_session_token", token)):
        if value:
            options[name] = value
    return options


@dataclass(frozen=True)
class StoreFault:
    """An object-store failure in plain words: what happened (``reason``, one of a few fixed
    phrases: unreachable, denied, not found, corrupt, timed out), what to do (``todo``), and
    the raw error text (``detail``: LanceDB / object_store / cargo wording) — the detail goes to
    the audit log only, never to the status line or a briefing's notices."""

    reason: str
    todo: str
    detail: str


_DETAIL_LIMIT = 4000  # characters of raw error text kept for the audit log
_UNREACHABLE = "check AWS_ENDPOINT_URL and the network, or run `triage doctor`"
AUDIT_FILE = "audit.jsonl"  # the data dir's audit log (console/engine/config.py audit_path)


def store_fault(exc: BaseException) -> StoreFault:
    """What an object-store failure means (LanceDB raises plain errors with Rust text; a
    wrapper's cause is read too, e.g. IndexUnavailable from a failed query)."""
    chain: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in chain and len(chain) < 5:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    text = " <- ".join(f"{type(e).__name__}: {' '.join(str(e).split())}" for e in chain)
    low = text.lower()
    detail = text[:_DETAIL_LIMIT]

    def fault(reason: str, todo: str) -> StoreFault:
        return StoreFault(reason, todo, detail)

    if "nosuchbucket" in low or "bucket does not exist" in low or "specified bucket" in low:
        return fault("the bucket does not exist", "check the bucket named in TRIAGE_INDEX_URI")
    if any(w in low for w in ("connectionrefused", "connection refused", "tcp connect error",
                              "dns error", "failed to lookup", "connection reset")):
        return fault("the store is not reachable", _UNREACHABLE)
    if any(w in low for w in ("invalidaccesskeyid", "signaturedoesnotmatch", "accessdenied",
                              "access denied", "forbidden", "expiredtoken", "missing credentials",
                              "status: 403", "403 forbidden")):
        return fault("the store refused the credentials",
                     "check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or AWS_PROFILE, or run "
                     "`triage doctor`")
    if isinstance(exc, TimeoutError) or any(
            w in low for w in ("timed out", "kind: timeout", "timeouterror", "deadline")):
        return fault("the store did not answer in time", "try again later, or run `triage doctor`")
    if "kind: connect" in low or "error sending request" in low:
        return fault("the store is not reachable", _UNREACHABLE)
    if any(w in low for w in ("not found", "notfound", "nosuchkey", "no such file",
                              "status: 404", "does not exist", "was not found")):
        return fault("part of the shared version is not found in the store",
                     "publish it again: `triage index --publish`")
    if any(w in low for w in ("corrupt", "fill whole buffer", "unexpected eof", "checksum",
                              "malformed", "truncated", "invalid data", "decode",
                              "protobuf", "invalid magic", "invalid file",
                              "invalid range", "invalidrange", "range not satisfiable",
                              "for object of size")):  # (shorter than its manifest says)
        return fault("the shared version's data is corrupt",
                     "publish it again: `triage index --publish`")
    return fault("the store answered with an error triage does not recognise",
                 f"run `triage doctor`; the error text is in {AUDIT_FILE} in TRIAGE_DATA_DIR")


def store_reason(exc: BaseException) -> str:
    """What an object-store failure means, in a few plain words (no raw error text)."""
    return store_fault(exc).reason


def log_store_error(data_dir: Path, store: Store | None, fault: StoreFault | None,
                    what: str) -> None:
    """One audit line with the raw error text behind a plain shared-index notice; a failure to
    write it never stands in the way of a briefing."""
    if fault is None:
        return
    record = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
              "event": "shared_index_error", "what": what, "reason": fault.reason,
              "detail": fault.detail, "store": store.describe() if store is not None else None}
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        with (data_dir / AUDIT_FILE).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
    except OSError:
        pass


def unavailable_error(store: Store, exc: BaseException, doing: str) -> SharedUnavailable:
    fault = store_fault(exc)
    error = SharedUnavailable(
        f"the shared index at {store.describe()} could not be {doing}: {fault.reason}", [],
        f"{fault.todo}; `triage index --pull` keeps a copy for when the store is out of reach")
    error.fault = fault
    return error


class Published(BaseModel):
    """One manifest row: a whole, published version and what it was built from."""

    number: int = 0  # publish order (filled on read)
    publish_id: str
    source_hash: str
    source_time: str
    embedder: str | None
    vector_dim: int | None
    incidents: int
    actions: int
    published_at: str
    publisher: str
    forced: bool = False
    schema_version: int = SCHEMA_VERSION
    meta: str  # the version's IndexMeta (document frequencies, calibration) as JSON

    @property
    def prefix(self) -> str:
        return f"{VERSIONS}/{self.publish_id}"

    @property
    def label(self) -> str:
        return f"v{self.number}"

    def index_meta(self) -> IndexMeta:
        return IndexMeta.model_validate_json(self.meta)

    def describe(self) -> str:
        return (f"shared {self.label} ({self.incidents} incidents, {self.actions} actions, "
                f"embedder {self.embedder or 'none'}, published {self.published_at})")


_MANIFEST_FIELDS = [name for name in Published.model_fields if name != "number"]


CALL_THREAD = "triage-store-call"


def abandoned_calls() -> int:
    """Store calls given up on (``within``) and still running: the `triage` script exits
    without waiting for them (console/__main__.py ``run``)."""
    return sum(1 for t in threading.enumerate() if t.name == CALL_THREAD and t.is_alive())


def within(seconds: float, call: Callable[[], T], what: str = "the store") -> T:
    """``call()`` in a daemon thread, given up after ``seconds`` (TimeoutError): a Rust call
    cannot be interrupted, but the console need not wait for it (nor does the process exit)."""
    result: list[Any] = []

    def run() -> None:
        try:
            result.append((True, call()))
        except BaseException as exc:  # noqa: BLE001  (handed to the caller's thread)
            result.append((False, exc))

    worker = threading.Thread(target=run, name=CALL_THREAD, daemon=True)
    worker.start()
    worker.join(seconds)
    if not result:
        raise TimeoutError(f"{what} timed out after {seconds:g} s")
    ok, value = result[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


def connect(store: Store, path: str = "") -> Any:
    try:
        return lancedb_module().connect(store.at(path), storage_options=store.options)
    except LANCE_ERRORS as exc:
        raise unavailable_error(store, exc, "reached") from exc


def _entry_name(entry: Published) -> str:
    """``<source time>_<publish id>``: names sort as the versions do (content time, then
    publish order), so the current version is the greatest name — one read, not N."""
    return f"{parse_time(entry.source_time).astimezone(UTC):%Y%m%dT%H%M%SZ}_{entry.publish_id}"


def _entry_names(store: Store) -> list[str]:
    db = lancedb_module().connect(store.at(ENTRIES), storage_options=store.options)
    names: list[str] = []
    token: str | None = None
    while True:
        page = db.list_tables(page_token=token, limit=1000)
        names.extend(page.tables)
        token = page.page_token
        if not token or not page.tables:
            return sorted(n for n in names if "_" in n)


def _numbers(names: list[str]) -> dict[str, int]:
    """Version numbers: publish order (the publish id starts with its UTC time)."""
    ids = sorted(name.split("_", 1)[1] for name in names)
    return {publish_id: number for number, publish_id in enumerate(ids, start=1)}


def _read_entry(store: Store, name: str, number: int) -> Published | None:
    """The entry ``name``, or None when it is not one to read: written by a newer triage, or
    still being written — another publish lists its table before its first version is
    committed ("was not found"), and that version is not published until it is."""
    db = lancedb_module().connect(store.at(ENTRIES), storage_options=store.options)
    try:
        table = db.open_table(name)
    except ValueError as exc:
        if "was not found" in str(exc):
            return None  # (a publish under way: every reader went on failing until it ended)
        raise
    rows = table.to_arrow().to_pylist()
    try:
        return Published.model_validate({**rows[0], "number": number}) if rows else None
    except ValidationError:
        return None  # written by a newer version of triage: not ours to read


def read_manifest(store: Store) -> list[Published]:
    """Every published version, numbered in publish order; [] when none yet."""

    def everything() -> list[Published]:
        names = _entry_names(store)
        numbers = _numbers(names)
        read = [_read_entry(store, n, numbers[n.split("_", 1)[1]]) for n in names]
        return sorted((p for p in read if p is not None), key=lambda p: p.number)

    return _guarded(store, everything)


def read_current(store: Store) -> Published | None:
    """The current version (see ``current``), reading only its own entry."""

    def newest() -> Published | None:
        names = _entry_names(store)
        numbers = _numbers(names)
        for name in reversed(names):
            entry = _read_entry(store, name, numbers[name.split("_", 1)[1]])
            if entry is not None:
                return entry
        return None

    return _guarded(store, newest)


def _guarded(store: Store, call: Callable[[], T]) -> T:
    lancedb_module()  # (imported outside the deadline)
    try:
        return within(store.deadline, call)
    except (*LANCE_ERRORS, TimeoutError) as exc:
        raise unavailable_error(store, exc, "read") from exc


def current(published: list[Published]) -> Published | None:
    """The version built from the newest content; among equals, the last committed."""
    return max(published, key=lambda p: (parse_time(p.source_time), p.number), default=None)


def parse_time(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return datetime.min.replace(tzinfo=UTC)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def source_time(memory: LoadedMemory) -> str:
    """When this incidents content was written, as far as the files say (newest mtime)."""
    newest = max((f.stat().st_mtime for f in memory.files if f.exists()), default=0.0)
    return datetime.fromtimestamp(newest, UTC).isoformat(timespec="seconds")


def record_hash(incident: Incident) -> str:
    """The content hash of one incident as stored (what a local edit changes)."""
    return hashlib.sha256(incident.model_dump_json().encode()).hexdigest()


@dataclass(frozen=True)
class PublishResult:
    published: Published | None  # None: the current version already holds this content
    current: Published
    notices: list[str]


def publish(store: Store, memory: LoadedMemory, builder: MemoryIndex, when: str | None = None,
            force: bool = False, progress: EmbedProgress | None = None) -> PublishResult:
    """Build ``memory`` and publish it as a new version (see the module docstring). Incidents
    recorded in a game day (``drill: true``) are never published: practice stays local."""
    when = when or source_time(memory)
    if memory.drill_ids:
        kept = [i for i in memory.incidents if not i.drill]
        memory = dataclasses.replace(memory, incidents=kept, source_hash=content_hash(kept))
    if parse_time(when) == datetime.min.replace(tzinfo=UTC):
        raise SharedStale(f"--source-time {when!r} is not an ISO-8601 time")
    before = read_current(store)
    if before is not None:
        if before.source_hash == memory.source_hash and before.embedder == builder.embedder_id:
            return PublishResult(None, before, [f"already published as {before.describe()}"])
        if parse_time(when) < parse_time(before.source_time):
            if not force:
                raise SharedStale(
                    f"stale: these incidents were written at {when}, the current {before.label} "
                    f"was built from content of {before.source_time}", [],
                    "update the incidents (git pull) and publish again; `--force` publishes "
                    "this content anyway and makes it current")
            when = before.source_time
    rows, vectors, meta = builder._prepare(memory, progress)
    # Microseconds: two publishes in one second were ordered by their random suffix, so the
    # later one was v1 about half the time (test_an_older_publish_exits_2_as_stale failed once).
    publish_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S%f}-{uuid.uuid4().hex[:12]}"
    entry = Published(publish_id=publish_id, source_hash=memory.source_hash, source_time=when,
                      embedder=meta.embedder, vector_dim=meta.vector_dim,
                      incidents=len(memory.incidents), actions=memory.action_count,
                      published_at=datetime.now(UTC).isoformat(timespec="seconds"),
                      publisher=socket.gethostname(), forced=force, meta=meta.model_dump_json())
    version = connect(store, entry.prefix)
    try:  # 1. the whole version, under its own prefix
        create_table(version, rows, vectors, meta.ann)
        version.create_table(HASHES, data=_hash_table(memory.incidents), mode="overwrite")
    except LANCE_ERRORS as exc:
        raise unavailable_error(store, exc, "written") from exc
    _write_entry(store, entry)  # 2. then the manifest names it
    after = read_manifest(store)
    mine = next((p for p in after if p.publish_id == publish_id), entry)
    now = current(after) or mine
    notices = [] if now.publish_id == publish_id else [
        f"{now.label} (content of {now.source_time}) was published meanwhile from newer "
        f"content and stays current; {mine.label} is kept in the history"]
    return PublishResult(mine, now, notices)


def _write_entry(store: Store, entry: Published) -> None:
    """The version's manifest entry: its own table under ``entries/``, a name no other
    publish can take — so two publishers never race on one object."""
    import pyarrow as pa

    row = entry.model_dump(include=set(_MANIFEST_FIELDS))
    schema = pa.schema([
        pa.field(name, pa.bool_() if name == "forced" else
                 pa.int64() if name in ("vector_dim", "incidents", "actions", "schema_version")
                 else pa.string()) for name in _MANIFEST_FIELDS])
    data = pa.Table.from_pylist([row], schema=schema)
    try:
        db = lancedb_module().connect(store.at(ENTRIES), storage_options=store.options)
        db.create_table(_entry_name(entry), data=data, mode="create")
    except LANCE_ERRORS as exc:
        raise unavailable_error(store, exc, "written") from exc


def _hash_table(incidents: list[Incident]) -> Any:
    import pyarrow as pa

    return pa.table({"incident_id": [i.id for i in incidents],
                     "sha256": [record_hash(i) for i in incidents]})


DEFAULT_KEEP = 5  # `triage index --prune`: the versions kept besides the current one


@dataclass(frozen=True)
class PruneResult:
    removed: list[Published]  # versions whose data this prune deleted
    kept: list[Published]  # versions whose data stays (the current one among them)
    gone: int  # versions pruned before (their entries remain; numbers never shift)


def prune(store: Store, keep: int = DEFAULT_KEEP) -> PruneResult:
    """Delete the data (``v/<publish id>/``) of every version but the ``keep`` most recently
    published and the current one. Entries are kept: numbering and the history stay whole.

    A console that loaded a version before it was pruned finds its tables gone at its next
    search and falls back (pulled copy or local index, with a notice) — so keep more versions
    than publishes happen during an on-call shift. A publish in progress is never touched: it
    has no entry yet, and only versions named by an entry are pruned."""
    if keep < 1:
        raise ValueError(f"keep={keep}: at least 1 version is kept")
    published = read_manifest(store)
    now = current(published)
    newest = {p.publish_id for p in sorted(published, key=lambda p: p.number)[-keep:]}
    if now is not None:
        newest.add(now.publish_id)
    removed: list[Published] = []
    kept: list[Published] = []
    gone = 0
    for version in published:
        try:
            db = connect(store, version.prefix)
            tables = _guarded(store, partial(_table_names, db))
            if not tables:
                gone += 1
            elif version.publish_id in newest:
                kept.append(version)
            else:
                for name in tables:
                    db.drop_table(name)
                removed.append(version)
        except LANCE_ERRORS as exc:
            raise unavailable_error(store, exc, "written") from exc
    return PruneResult(removed, kept, gone)


def _table_names(db: Any) -> list[str]:
    return list(db.list_tables().tables)
