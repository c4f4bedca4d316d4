"""The shared index on object storage: recall from it against a local index, publish, pull.

    .venv/bin/python bench/shared_bench.py [--incidents 2500] [--actions 4] [--alerts 30]

A synthetic memory (2,500 incidents × 4 actions = 10k actions by default, composed as in
bench/build_bench.py from sentences read at run time) is indexed locally, then published to a
moto S3 server on 127.0.0.1 (tests/s3_server.py; real LanceDB object-store traffic over HTTP)
and pulled into another data dir. Same run, same machine, so every figure has its baseline:

- recall p50 through the shared index (store over HTTP, no overlay) / the local index;
- the same with a pulled copy (local disk) / the local index;
- publish (embedding cache warm: the write of a version, its hashes and entry) / a local
  rebuild with the same warm cache;
- pull (copy + FTS index on the laptop) / the same local rebuild.

The cold embedding of the memory is printed for scale (it is what a laptop saves).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from build_bench import compose_memory  # noqa: E402
from vector_bench import load_sentences  # noqa: E402

from console.engine.engine import read_memory  # noqa: E402
from store.embedder import EmbeddingCache  # noqa: E402
from store.index import MemoryIndex  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.overlay import Sources, open_layered  # noqa: E402
from store.pulled import pull  # noqa: E402
from store.recall import recall  # noqa: E402
from store.shared import Store, publish, storage_options  # noqa: E402
from tests.s3_server import KEY_ID, REGION, SECRET, S3Server, free_port  # noqa: E402


def p50_ms(index: MemoryIndex, alerts: list[str], rounds: int) -> float:
    recall(index, alerts[0])  # warm: first query opens files / connections
    times = []
    for _ in range(rounds):
        for alert in alerts:
            started = time.perf_counter()
            recall(index, alert)
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def timed(run: object) -> float:
    started = time.perf_counter()
    run()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--incidents", type=int, default=2500)
    parser.add_argument("--actions", type=int, default=4)
    parser.add_argument("--alerts", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="shared-bench-"))
    server = S3Server(free_port())
    server.start()
    try:
        server.make_bucket("bench")
        store = Store("s3://bench/team", storage_options(server.endpoint, REGION, KEY_ID,
                                                         SECRET, None, None, 30.0),
                      server.endpoint, deadline=60.0)
        sentences, source = load_sentences()
        items = compose_memory(sentences, args.incidents, args.actions, seed=12)
        incidents = work / "incidents.yaml"
        incidents.write_text(yaml.safe_dump(items, sort_keys=False, width=100), encoding="utf-8")
        memory = read_memory(incidents)
        print(f"memory: {len(memory.incidents)} incidents, {memory.action_count} actions "
              f"(sentences from {source})")
        alerts = [" ".join(i.symptoms.split()[:14]) for i in memory.incidents[::max(
            1, len(memory.incidents) // args.alerts)]][:args.alerts]

        embedder = MiniLMEmbedder()
        ci = work / "ci"
        cache = EmbeddingCache(ci / "embeddings.sqlite")
        local = MemoryIndex(ci, embedder, cache)
        cold = timed(lambda: local.open(memory))
        rebuild = timed(lambda: local.build(memory))
        local_p50 = p50_ms(local.pinned(), alerts, args.rounds)

        builder = MemoryIndex(ci, embedder, cache)
        published = timed(lambda: publish(store, memory, builder, when="2026-06-01T00:00:00Z"))

        laptop = work / "laptop"
        shared = open_layered(Sources(store, laptop, memory, embedder,
                                      EmbeddingCache(laptop / "embeddings.sqlite")))
        shared_p50 = p50_ms(shared.index.pinned(), alerts, args.rounds)
        pulled_s = timed(lambda: pull(store, laptop))
        offline = open_layered(Sources(store, laptop, memory, embedder,
                                       EmbeddingCache(laptop / "embeddings.sqlite"),
                                       offline=True))
        pulled_p50 = p50_ms(offline.index.pinned(), alerts, args.rounds)
        same = all([i.incident_id for i in recall(shared.index.pinned(), a).incidents]
                   == [i.incident_id for i in recall(local.pinned(), a).incidents]
                   for a in alerts)

        print(f"cold local build (embedding {len(memory.incidents)} documents): {cold:.1f} s")
        print(f"local rebuild, warm embedding cache (baseline):                {rebuild:.2f} s")
        print(f"publish to the store, warm cache:        {published:.2f} s  = "
              f"{published / rebuild:.2f}x the local rebuild")
        print(f"pull into a data dir:                    {pulled_s:.2f} s  = "
              f"{pulled_s / rebuild:.2f}x the local rebuild")
        print(f"recall p50, local index (baseline):      {local_p50:.1f} ms")
        print(f"recall p50, shared index over HTTP:      {shared_p50:.1f} ms  = "
              f"{shared_p50 / local_p50:.2f}x local")
        print(f"recall p50, pulled copy:                 {pulled_p50:.1f} ms  = "
              f"{pulled_p50 / local_p50:.2f}x local")
        print(f"same incidents recalled, shared vs local, all {len(alerts)} alerts: {same}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
