"""A huge incidents file: read in linear time (no cyclic-GC pass over its YAML nodes).

bench/load_bench.py has the figures (5/10/20/50 MB); this checks the cause deterministically:
every cyclic-GC pass walks all live objects, and a big file's node tree is millions of them, so
passes during the read made it superlinear (0.44 → 0.50 s/MB from 5 to 50 MB; paused: flat).
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import Any

from console.engine.engine import read_memory
from store.loader import load_incidents

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

from load_bench import generate  # noqa: E402


def test_reading_a_big_memory_runs_no_gc_pass_and_restores_the_gc(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    incidents = generate(path, 1.0)
    passes: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    # A full pass resets the generation counters: a pass that starts in the few allocations
    # before the pause takes effect can then only be a young one (failed once under the whole
    # suite: the counters were already at a gen-1 pass when the read began).
    gc.collect()
    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        memory = read_memory(path)
        paused = list(passes)
        assert gc.isenabled()
        passes.clear()
        load_incidents(path)
        plain = list(passes)
    finally:
        gc.callbacks.remove(count)
    assert len(memory.incidents) == incidents
    # At most a young-generation pass as the pause begins; never one over the older objects.
    assert [g for g in paused if g > 0] == [], paused
    assert [g for g in plain if g > 0], "the plain loader ran no GC pass over older objects: " \
        "this test no longer shows the cause"
