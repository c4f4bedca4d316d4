"""What time-ordered replays cost against leave-one-out, on one index of a dated memory.

    .venv/bin/python bench/replay_bench.py [--incidents 1000] [--lexical] [--seed 7]

A memory of --incidents dated incidents with known recurrence families
(tests/engine/practice/dated_memory.py: families of 2–6 sharing a service and an error
signature, singletons, ~5% undated, a few exact ties) is written to a temp dir and indexed ONCE
(MiniLM hybrid, or lexical only with --lexical) through eval_index, as `triage drill` does.
Then, on that same index, in one process:

- ``run_replays(mode="leave-one-out")`` over every incident (the old --all);
- ``run_replays(mode="time-ordered", compare=False)`` over every incident (hidden = itself and
  every incident started at or after it: up to the whole memory per replay);
- ``run_replays()`` — a time-ordered --all as `triage drill --all` runs it (both passes).

Each is timed (wall seconds, best of --repeat) and the time-ordered pass is printed as a ratio of
the leave-one-out one. store/recall.py asks the index for CANDIDATES + len(hidden) rows, so a
time-ordered replay's search grows with what it hides; the ratio says what that costs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.engine.config import Settings  # noqa: E402
from console.engine.practice.evaluate import eval_index  # noqa: E402
from console.engine.practice.replay import ReplayReport, run_replays  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from tests.engine.practice.dated_memory import generate, write  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--lexical", action="store_true", help="no embedder: BM25 + coverage")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = write(root / "incidents.yaml", generate(args.incidents, args.seed))
        memory = load_incidents(path)
        settings = Settings(incidents_path=path, data_dir=root / "data")
        embedder = None
        if not args.lexical:
            from store.minilm import MiniLMEmbedder

            embedder = MiniLMEmbedder()
        started = time.perf_counter()
        index = eval_index(settings, memory, embedder)
        built = time.perf_counter() - started
        print(f"memory: {len(memory.incidents)} incidents "
              f"({sum(i.started_at is None for i in memory.incidents)} undated) · index "
              f"{index.embedder_id or 'lexical only'} built once in {built:.1f} s")

        def timed(**kwargs: object) -> tuple[float, ReplayReport]:
            best, report = float("inf"), None
            for _ in range(args.repeat):
                began = time.perf_counter()
                report = run_replays(index, memory, settings, **kwargs)  # type: ignore[arg-type]
                best = min(best, time.perf_counter() - began)
            assert report is not None
            return best, report

        loo_s, loo = timed(mode="leave-one-out")
        to_s, to = timed(mode="time-ordered", compare=False)
        both_s, both = timed()
        n = len(loo.replays)
        known = [r.known_incidents for r in to.replays]
        print(f"leave-one-out  {n} replays  {loo_s:7.1f} s  ({1000 * loo_s / n:.1f} ms each)")
        print(f"time-ordered   {n} replays  {to_s:7.1f} s  ({1000 * to_s / n:.1f} ms each; "
              f"known incidents per replay: mean {sum(known) / n:.0f}, max {max(known)})")
        print(f"time-ordered / leave-one-out: {to_s / loo_s:.2f}x")
        print(f"time-ordered --all (both passes, as `triage drill --all`): {both_s:.1f} s")
        for name, summary in (("time-ordered", both.summary),
                              ("leave-one-out", both.summary_leave_one_out)):
            assert summary is not None
            tiers = " ".join(f"{t.tier}:{t.right}/{t.counted}" for t in summary.tiers)
            print(f"  {name:14} hit@1 {summary.hit_at_1:.2f} hit@5 {summary.hit_at_5:.2f} "
                  f"with related {summary.with_related} · tiers {tiers} · abstained "
                  f"{summary.abstained.replays}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
