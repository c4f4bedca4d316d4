"""The audit log: one JSON line per model attempt, enough to replay why a briefing looks so."""

from __future__ import annotations

import fcntl
import json
import os
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class AuditLog:
    """Append-only JSON lines in the data dir; a failure to write never blocks a briefing.

    Threads (the briefing worker, the webhook receiver's) and processes (a console and a
    `triage brief`) append to one file: each line is written whole under a lock, never
    interleaved with another."""

    _lock = threading.Lock()  # (one per process: every AuditLog of a path shares the file)

    def __init__(self, path: Path, tags: Mapping[str, Any] | None = None) -> None:
        """``tags`` go on every line (a game day's ``drill``/``drill_id``: practice is never
        read as production)."""
        self.path = path
        self.tags = dict(tags or {})
        self.error: str | None = None

    def append(self, entry: dict[str, Any]) -> None:
        record = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), **self.tags,
                  **entry}
        line = json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, self.path.open("a", encoding="utf-8") as handle:
                fcntl.flock(handle, fcntl.LOCK_EX)
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self.error = f"audit log not written ({exc.strerror or exc}): {self.path}"
