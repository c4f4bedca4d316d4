"""Pulled copies of the shared index: `triage index --pull` copies the current version into
the data dir, so an air-gapped laptop (or one whose store is down) recalls from it offline.

``DATA/shared/<publish id>/`` holds the copy (tables and FTS index rebuilt locally);
``DATA/shared/pulled.json`` names it and when it was pulled, written last.
"""

from __future__ import annotations

import os
import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ValidationError

from store.index import LANCE_ERRORS, TABLE, lancedb_module
from store.shared import (
    HASHES,
    Published,
    SharedUnavailable,
    Store,
    connect,
    log_store_error,
    parse_time,
    read_current,
    unavailable_error,
)

PULLED_DIR = "shared"  # under the data dir: the pulled copy
PULLED_FILE = "pulled.json"


class Pulled(BaseModel):
    version: Published
    pulled_at: str
    uri: str

    def age(self, now: datetime | None = None) -> str:
        seconds = ((now or datetime.now(UTC)) - parse_time(self.pulled_at)).total_seconds()
        return _duration(seconds)


def _duration(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} s"


def pull(store: Store, data_dir: Path) -> Pulled:
    """Copy the current version into ``data_dir/shared/<id>``; ``pulled.json`` written last.
    A store fault is raised in plain words; its raw text goes to the audit log."""
    try:
        return _pull(store, data_dir)
    except SharedUnavailable as exc:
        log_store_error(data_dir, store, exc.fault, "pulling the shared index")
        raise


def _pull(store: Store, data_dir: Path) -> Pulled:
    version = read_current(store)
    if version is None:
        raise SharedUnavailable(f"nothing is published at {store.describe()} yet", [],
                                "publish it first: `triage index --publish`")
    root = data_dir / PULLED_DIR
    target = root / version.publish_id
    source = connect(store, version.prefix)
    try:
        table = source.open_table(TABLE).to_arrow()
        hashes = source.open_table(HASHES).to_arrow()
    except LANCE_ERRORS as exc:
        raise unavailable_error(store, exc, "read") from exc
    staging = root / f".pull-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    staging.parent.mkdir(parents=True, exist_ok=True)
    try:
        local = lancedb_module().connect(str(staging))
        copied = local.create_table(TABLE, data=table, mode="overwrite")
        from lancedb.index import FTS, HnswSq

        if table.num_rows:
            copied.create_index("lexical", config=FTS())
        meta = version.index_meta()
        if meta.ann:
            copied.create_index("vector", config=HnswSq(distance_type="cosine"))
        local.create_table(HASHES, data=hashes, mode="overwrite")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    pulled = Pulled(version=version, pulled_at=datetime.now(UTC).isoformat(timespec="seconds"),
                    uri=store.uri)
    temp = root / f".{PULLED_FILE}.tmp"
    temp.write_text(pulled.model_dump_json(), encoding="utf-8")
    os.replace(temp, root / PULLED_FILE)
    for old in root.iterdir():  # older copies: only the one named in pulled.json is used
        if old.is_dir() and old.name != version.publish_id and not old.name.startswith("."):
            shutil.rmtree(old, ignore_errors=True)
    return pulled


def read_pulled(data_dir: Path) -> Pulled | None:
    root = data_dir / PULLED_DIR
    try:
        pulled = Pulled.model_validate_json((root / PULLED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None
    return pulled if (root / pulled.version.publish_id / f"{TABLE}.lance").exists() else None
