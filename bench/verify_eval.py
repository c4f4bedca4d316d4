"""Verification on real text: every alert of the development set briefed and verified.

    python bench/verify_eval.py [--memory ../shared/eval/postmortems/incidents.yaml]
                                [--queries ../shared/eval/postmortems/queries.yaml]

The development set is third-party postmortem summaries with alerts written by someone else
(nothing from it is copied here). Each alert is briefed on that memory (deterministic, no
model) and verified with ``always``, no engineer answers and no probes — the headless first
run. Printed: passes that completed vs failed (a stored text that breaks a question would show
here: INC-1619's cause once did), questions per pass, time per pass against the briefing's own
time measured in the same run, and the dispositions split by whether the lead fix came from an
incident the alert's author expected — does verification doubt the wrong direction more often
than the right one?
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.engine.briefing.alert import parse_alert  # noqa: E402
from console.engine.config import Settings  # noqa: E402
from console.engine.engine import TriageEngine  # noqa: E402
from console.engine.practice.evaluate import load_queries  # noqa: E402
from console.engine.verification.passes import alert_service, run_pass  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval" / "postmortems"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memory", type=Path, default=SHARED / "incidents.yaml")
    parser.add_argument("--queries", type=Path, default=SHARED / "queries.yaml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = Path(scratch)
        engine = TriageEngine(Settings(incidents_path=args.memory, data_dir=data_dir,
                                       offline=True))
        engine.load()
        statuses: Counter[str] = Counter()
        by_direction: dict[str, Counter[str]] = {"right": Counter(), "wrong": Counter(),
                                                 "no lead fix": Counter()}
        questions: list[int] = []
        brief_s: list[float] = []
        verify_s: list[float] = []
        failures: list[str] = []
        queries = load_queries(args.queries)
        for query in queries:
            alert = parse_alert(query.alert)
            started = time.perf_counter()
            routed = engine.brief(alert)
            brief_s.append(time.perf_counter() - started)
            started = time.perf_counter()
            result, _ = run_pass(routed.briefing, routed.recall,
                                 service=alert_service(routed.alert, engine.known_services()),
                                 data_dir=data_dir,
                                 rerecall=partial(engine.rerecall, routed.alert.text))
            verify_s.append(time.perf_counter() - started)
            statuses[result["status"]] += 1
            if result["status"] != "done":
                failures.append(f"{query.qid}: {result.get('error')}")
                continue
            questions.append(len(result["questions"]))
            lead = routed.briefing.recommendations[:1]
            if not lead:
                direction = "no lead fix"
            else:
                cited = {e.incident_id for e in lead[0].evidence}
                direction = "right" if cited & set(query.expect) else "wrong"
            by_direction[direction][result["disposition"]] += 1
    total = len(queries)
    print(f"{total} alerts of the development set, each briefed and verified (always, "
          "no answers, no probes)")
    print(f"  passes: {statuses['done']} done, {statuses['failed']} failed")
    for line in failures[:10]:
        print(f"    {line}")
    if questions:
        print(f"  questions per pass: median {statistics.median(questions):g}, "
              f"max {max(questions)}")
    b, v = statistics.median(brief_s), statistics.median(verify_s)
    print(f"  time per pass: median {v * 1000:.0f} ms; the briefing itself {b * 1000:.0f} ms "
          f"(ratio {v / b:.2f}×, same run)")
    print("  dispositions by the lead fix's direction (right = cited from an expected incident):")
    for direction, counts in by_direction.items():
        n = sum(counts.values())
        shares = ", ".join(f"{k} {counts[k]} ({counts[k] / n:.0%})" for k in
                           ("maintain", "revise", "overturn", "undetermined") if counts[k]) \
            if n else "—"
        print(f"    {direction:<12} {n:>4}: {shares}")
    return 0 if statuses["failed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
