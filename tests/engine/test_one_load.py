"""One load at a time (console/engine/engine.py): a briefing asked for while the console's
memory worker is still building the index waits for that load instead of building the same
index into the same data dir a second time (the status line then said whichever ended last:
'fresh (rebuilt)' or 'fresh', seen as a snapshot that flipped on a loaded machine)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from store.index import MemoryIndex
from tests.conftest import BUNDLED_INCIDENTS


def test_a_briefing_asked_for_during_the_first_load_waits_for_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[int] = []
    build = MemoryIndex.build

    def counted(self: MemoryIndex, *args: Any, **kwargs: Any) -> list[str]:
        builds.append(1)
        return build(self, *args, **kwargs)

    monkeypatch.setattr(MemoryIndex, "build", counted)
    engine = TriageEngine(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=tmp_path / "data"))
    building, asked = threading.Event(), threading.Event()

    def progress(done: int, total: int) -> None:
        building.set()
        asked.wait(10)  # the first load goes on once the briefing has asked

    first = threading.Thread(target=engine.load, kwargs={"progress": progress, "partial": True})
    first.start()
    assert building.wait(30)
    asked.set()
    snapshot = engine.snapshot()  # (what a briefing reads)
    first.join(30)

    assert len(builds) == 1
    assert snapshot.memory is engine.memory
    status = engine.status()
    assert status is not None and status.index == "fresh (rebuilt)"
