"""Recall after 500 single saves vs a freshly built index of the same size.

Each save appends one incident (2 actions) through the same path the console uses
(TriageEngine.save_incident: atomic write + incremental index update + compaction).
Prints recall p50 for both and their ratio. Run: .venv/bin/python bench/saves_bench.py [N]
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from store.models import Incident
from store.recall import recall

REPO = Path(__file__).resolve().parents[1]
QUERIES = [
    "checkout-service p99 latency up, intermittent database connection errors",
    "payments service KeyError: 'amount' after deploy",
    "search results empty after reindex",
    "notification emails delayed, queue backlog growing",
    "ledger shard 17 drift after failover",
    "TLS certificate expired on internal gRPC mesh",
]


def p50_recall(engine: TriageEngine, rounds: int = 15) -> float:
    assert engine.index is not None
    times = []
    for _ in range(rounds):
        for query in QUERIES:
            started = time.perf_counter()
            recall(engine.index, query)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    saves = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    work = Path(tempfile.mkdtemp())
    incidents = work / "incidents.yaml"
    shutil.copy(REPO / "incidents.yaml", incidents)
    engine = TriageEngine(Settings(incidents_path=incidents, data_dir=work / "data"))
    engine.load()
    started = time.perf_counter()
    for n in range(saves):
        engine.save_incident(Incident.model_validate({
            "id": f"INC-{9000 + n}", "service": f"ledger-{n % 7}",
            "symptoms": f"ledger shard {n} drift after failover, totals mismatch {n}",
            "actions": [
                {"id": "A1", "action": f"Replayed journal on shard {n}", "outcome": "WORSENED",
                 "explanation": "Replay doubled entries on the primary"},
                {"id": "A2", "action": "Reconciled from the audit stream", "outcome": "RESOLVED",
                 "explanation": "The audit stream is authoritative"}]}))
    save_time = time.perf_counter() - started
    assert engine.index is not None and engine.index._table is not None
    fragments = engine.index._table.stats()["fragment_stats"]["num_fragments"]
    after_saves = p50_recall(engine)
    fresh = TriageEngine(Settings(incidents_path=incidents, data_dir=work / "fresh"))
    fresh.load(rebuild=True)
    assert fresh.index is not None
    fresh_fragments = fresh.index._table.stats()["fragment_stats"]["num_fragments"]
    rebuilt = p50_recall(fresh)
    print(f"{saves} single saves in {save_time:.1f}s ({save_time / saves * 1000:.0f} ms/save); "
          f"memory now {len(engine.memory.incidents) if engine.memory else 0} incidents")
    print(f"recall p50 after saves: {after_saves * 1000:.1f} ms ({fragments} fragments); "
          f"fresh index: {rebuilt * 1000:.1f} ms ({fresh_fragments} fragments); "
          f"ratio {after_saves / rebuilt:.2f}x")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
