"""The audit log: one JSON line per model attempt, enough to replay why a briefing looks so."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


class AuditLog:
    """Append-only JSON lines in the data dir; a failure to write never blocks a briefing."""

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
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
        except OSError as exc:
            self.error = f"audit log not written ({exc.strerror or exc}): {self.path}"
