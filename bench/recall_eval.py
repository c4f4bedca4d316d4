"""Fit and cross-validate recall's fusion weights and "no prior incident" gate on real alerts.

    python bench/recall_eval.py [--memory ../shared/eval/postmortems/incidents.yaml]
                                [--queries ../shared/eval/postmortems/queries.yaml] [--folds 5]

The development set is third-party postmortem summaries with alerts written by someone else
(nothing from it is copied here). Every choice fitted on those alerts — the BM25 and coverage
weights and the floor — is chosen on k-1 folds and scored on the held-out fold; the figures
printed are the held-out ones, then the in-sample ones for comparison, then the alerts that
still miss. The evidence per candidate comes from the product's own recall (MiniLM + LanceDB
FTS), so the figures are the product's.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.engine.config import Settings  # noqa: E402
from console.engine.practice.evaluate import eval_index, load_queries  # noqa: E402
from store.calibration import HYBRID_MINILM, Calibration  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.recall import recall  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval" / "postmortems"
BM25_WEIGHTS = [0.0, 0.005, 0.01, 0.0125, 0.015, 0.02, 0.03]
COVERAGE_WEIGHTS = [0.0, 0.1, 0.2, 0.3, 0.5]
# The share of answerable training alerts the fitted floor may wrongly turn away (the target).
MAX_WRONG_ABSTAIN = 0.10


@dataclass(frozen=True)
class Case:
    qid: str
    kind: str
    expect: frozenset[str]
    candidates: tuple[tuple[str, float, float, float], ...]  # (id, cosine, bm25, coverage)


def collect(memory_path: Path, queries_path: Path, data_dir: Path) -> list[Case]:
    memory = load_incidents(memory_path)
    settings = Settings(incidents_path=memory_path, data_dir=data_dir)
    index = eval_index(settings, memory, MiniLMEmbedder())
    cases = []
    for query in load_queries(queries_path):
        found = recall(index, query.alert)
        cases.append(Case(query.qid, query.kind or "", frozenset(query.expect), tuple(
            (r.incident_id, r.cosine or 0.0, r.bm25 or 0.0, r.coverage) for r in found.ranked)))
    return cases


def scored(case: Case, wb: float, wc: float) -> list[tuple[float, str]]:
    return sorted(((c + wb * b + wc * v, i) for i, c, b, v in case.candidates),
                  key=lambda s: (-s[0], s[1]))


def outcome(case: Case, wb: float, wc: float, floor: float) -> tuple[int | None, bool]:
    """(rank of the first expected id, abstained) under one setting."""
    ranking = scored(case, wb, wc)
    abstained = not ranking or ranking[0][0] < floor
    rank = next((n for n, (_, i) in enumerate(ranking, 1) if i in case.expect), None)
    return rank, abstained


def mrr(cases: list[Case], wb: float, wc: float) -> float:
    """Ranking quality alone (no gate) over the answerable alerts."""
    answerable = [c for c in cases if c.expect]
    return sum(1 / r for c in answerable if (r := outcome(c, wb, wc, float("-inf"))[0])) / len(answerable)


def fit(cases: list[Case]) -> tuple[float, float, float]:
    """Weights that rank best (MRR), then the highest floor that wrongly abstains on at most
    MAX_WRONG_ABSTAIN of the answerable training alerts: telling an engineer "no prior
    incident" when there is one is the worst answer, so that side is bounded first."""
    wb, wc = max(itertools.product(BM25_WEIGHTS, COVERAGE_WEIGHTS),
                 key=lambda w: (round(mrr(cases, *w), 9), -w[0], -w[1]))
    tops = sorted(scored(c, wb, wc)[0][0] for c in cases if c.expect and c.candidates)
    allowed = int(MAX_WRONG_ABSTAIN * len(tops))
    # Abstaining on the `allowed` weakest answerable alerts at most: the floor sits halfway
    # between the last one given up and the first one kept.
    floor = (tops[allowed - 1] + tops[allowed]) / 2 if allowed else tops[0] - 1e-6
    return wb, wc, round(floor, 4)


def figures(cases: list[Case], settings: dict[str, tuple[float, float, float]]) -> dict[str, float]:
    rows = {}
    for kind in ("paraphrase", "cross_service", "novel"):
        group = [c for c in cases if c.kind == kind]
        results = [(c, *outcome(c, *settings[c.qid])) for c in group]
        if kind == "novel":
            rows["novel abstain"] = sum(a for _, _, a in results) / len(group)
            continue
        shown = [None if a else r for _, r, a in results]
        rows[f"{kind} hit@1"] = sum(r == 1 for r in shown) / len(group)
        rows[f"{kind} hit@5"] = sum(r is not None and r <= 5 for r in shown) / len(group)
        rows[f"{kind} MRR"] = sum(1 / r for r in shown if r) / len(group)
        rows[f"{kind} wrongly abstain"] = sum(a for _, _, a in results) / len(group)
    return rows


def cross_validate(cases: list[Case], folds: int, seed: int) -> tuple[dict[str, float], list[str]]:
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    settings: dict[str, tuple[float, float, float]] = {}
    for fold in range(folds):
        held = {cases[i].qid for n, i in enumerate(order) if n % folds == fold}
        fitted = fit([c for c in cases if c.qid not in held])
        settings.update({qid: fitted for qid in held})
    misses = []
    for case in cases:
        rank, abstained = outcome(case, *settings[case.qid])
        if case.expect and (abstained or rank != 1):
            misses.append(f"{case.qid} ({case.kind}): " + ("abstained" if abstained else f"rank {rank}"))
        if not case.expect and not abstained:
            misses.append(f"{case.qid} (novel): answered")
    return figures(cases, settings), misses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, default=SHARED / "incidents.yaml")
    parser.add_argument("--queries", type=Path, default=SHARED / "queries.yaml")
    parser.add_argument("--data-dir", type=Path, default=Path(".triage-data/bench"))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5, help="k-fold runs with other shuffles")
    parser.add_argument("--write", type=Path, help="write the calibration fitted on all alerts "
                        "here (e.g. $TRIAGE_DATA_DIR/calibration.json: the console then uses it)")
    args = parser.parse_args()
    if not args.memory.exists():
        print(f"no development set at {args.memory}; pass --memory and --queries", file=sys.stderr)
        return 2
    cases = collect(args.memory, args.queries, args.data_dir)
    runs = [cross_validate(cases, args.folds, seed) for seed in range(args.repeats)]
    print(f"{args.folds}-fold cross-validated, mean of {args.repeats} shuffles "
          f"({len(cases)} alerts; fitted on the training folds only):")
    for name in runs[0][0]:
        values = [r[0][name] for r in runs]
        print(f"  {name:32} {sum(values) / len(values):.3f}  (min {min(values):.3f}, max {max(values):.3f})")
    wb, wc, floor = fit(cases)
    print(f"\nfitted on all {len(cases)} alerts: bm25_weight={wb} coverage_weight={wc} floor={floor:.4f}")
    if args.write:
        fitted = HYBRID_MINILM.model_copy(update={
            "bm25_weight": wb, "coverage_weight": wc, "floor": floor,
            "fitted_on": f"{args.queries.name} over {args.memory.name} ({len(cases)} alerts)"})
        args.write.write_text(fitted.model_dump_json(indent=2), encoding="utf-8")
        print(f"written to {args.write}")
    everything = figures(cases, {c.qid: (wb, wc, floor) for c in cases})
    print("in-sample (flatters; for comparison only):")
    for name, value in everything.items():
        print(f"  {name:32} {value:.3f}")
    shipped: Calibration = HYBRID_MINILM
    as_shipped = figures(cases, {c.qid: (shipped.bm25_weight, shipped.coverage_weight, shipped.floor)
                                 for c in cases})
    print(f"\nshipped calibration ({shipped.describe()}) on the whole set:")
    for name, value in as_shipped.items():
        print(f"  {name:32} {value:.3f}")
    print("\nstill missing under cross-validation (first shuffle):")
    for miss in runs[0][1]:
        print(f"  {miss}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
