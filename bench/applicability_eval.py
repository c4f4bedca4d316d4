"""Fit and cross-validate applicability (when a recalled incident is "strong": the same failure)
for PROVEN precision, on alerts written by someone else than the records.

    python bench/applicability_eval.py [--memory …/postmortems/incidents.yaml]
                                       [--queries …/postmortems/queries.yaml] [--folds 5]

The development set records no actions. A copy is derived in a temporary directory (never in
the repo): each incident gets one RESOLVED action whose text is distinct per incident and has
no ``kind``, so every recalled incident could be claimed as proof — the hard case. PROVEN is
right when the incident the lead fix came from is an expected one.

The fit chooses ``margin_weight`` and the ``strong`` bar on the training folds only: the most
training alerts PROVEN with precision ≥ --precision and no novel alert PROVEN (ties: the higher
bar). The held-out folds are then judged with it; figures are pooled over the held-out alerts,
the mean of --repeats shuffles. The sweep table moves the bar over the whole set (a sweep, not a
fit). Everything is computed by the product's own recall and verdict.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import random
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from console.engine.briefing.applicability import applicability, read_service  # noqa: E402
from console.engine.config import Settings  # noqa: E402
from console.engine.practice.evaluate import EvalQuery, eval_index, judge, load_queries  # noqa: E402
from store.loader import LoadedMemory, load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.recall import Recall, recall  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "eval" / "postmortems"
MARGIN_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
BARS = tuple(round(0.2 + 0.01 * n, 2) for n in range(131))


def derive(memory_path: Path, into: Path) -> Path:
    """A copy of the dev memory in which every incident has one distinct RESOLVED action."""
    incidents = yaml.safe_load(memory_path.read_text(encoding="utf-8"))
    for incident in incidents:
        tag = hashlib.sha256(incident["id"].encode()).hexdigest()[:8]
        incident["actions"] = [{
            "id": "A1", "action": f"Applied remediation {tag} recorded for {incident['id']}",
            "outcome": "RESOLVED", "explanation": f"The mitigation recorded for {incident['id']}"}]
    path = into / "derived-incidents.yaml"
    path.write_text(yaml.safe_dump(incidents, sort_keys=False), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Outcome:
    proven: bool
    right: bool


@dataclass
class Case:
    query: EvalQuery
    found: Recall
    # Per margin weight: the verdict at each distinct applicability of the recall, as
    # (bar, outcome) ascending. Between two of them the verdict cannot change, so these few
    # verdicts answer every bar.
    steps: dict[float, list[tuple[float, Outcome]]] = dataclasses.field(default_factory=dict)


def collect(memory: LoadedMemory, memory_path: Path, queries: Path, data_dir: Path,
            lexical: bool) -> list[Case]:
    settings = Settings(incidents_path=memory_path, data_dir=data_dir)
    index = eval_index(settings, memory, None if lexical else MiniLMEmbedder())
    return [Case(q, recall(index, q.alert)) for q in load_queries(queries)]


def judged(case: Case, memory: LoadedMemory, weight: float, bar: float) -> Outcome:
    if weight not in case.steps:
        found = dataclasses.replace(case.found, margin_weight=weight)
        service = read_service(case.query.alert, None, memory.services)
        scores = sorted({a.score for a in applicability(found, service).values()})
        case.steps[weight] = [(score, _verdict(case, memory, weight, score)) for score in scores]
    for score, outcome in case.steps[weight]:
        if bar <= score:
            return outcome
    return Outcome(False, False)


def _verdict(case: Case, memory: LoadedMemory, weight: float, bar: float) -> Outcome:
    found = dataclasses.replace(case.found, margin_weight=weight, strong=bar)
    verdict = judge(found, memory, case.query.alert)
    if verdict.state != "proven" or verdict.lead is None:
        return Outcome(False, False)
    lead = verdict.lead.recommendation.evidence[0].incident_id
    return Outcome(True, lead in case.query.expect)


def table(cases: list[Case], memory: LoadedMemory, weight: float, bar: float
          ) -> tuple[int, int, int, int]:
    """(proven, right, answerable proven, novel proven) for one setting."""
    proven = right = shown = novel = 0
    for case in cases:
        result = judged(case, memory, weight, bar)
        proven += result.proven
        right += result.right
        shown += result.proven and bool(case.query.expect)
        novel += result.proven and not case.query.expect
    return proven, right, shown, novel


def fit(cases: list[Case], memory: LoadedMemory, precision: float) -> tuple[float, float]:
    best: tuple[int, float, float] | None = None
    for weight in MARGIN_WEIGHTS:
        for bar in BARS:
            proven, right, shown, novel = table(cases, memory, weight, bar)
            if novel or (proven and right / proven < precision):
                continue
            key = (shown, bar, -weight)
            if best is None or key > (best[0], best[1], -best[2]):
                best = (shown, bar, weight)
    if best is None:
        return MARGIN_WEIGHTS[0], BARS[-1]
    return best[2], best[1]


def cross_validate(cases: list[Case], memory: LoadedMemory, folds: int, seed: int,
                   precision: float) -> dict[str, float]:
    order = list(range(len(cases)))
    random.Random(seed).shuffle(order)
    proven = right = shown = novel = 0
    fitted = []
    for fold in range(folds):
        held = [cases[i] for n, i in enumerate(order) if n % folds == fold]
        train = [cases[i] for n, i in enumerate(order) if n % folds != fold]
        weight, bar = fit(train, memory, precision)
        fitted.append((weight, bar))
        p, r, s, v = table(held, memory, weight, bar)
        proven, right, shown, novel = proven + p, right + r, shown + s, novel + v
    answerable = sum(1 for c in cases if c.query.expect)
    return {"proven": proven, "right": right, "precision": right / proven if proven else 0.0,
            "coverage": shown / answerable, "novel proven": novel,
            "bar min": min(b for _, b in fitted), "bar max": max(b for _, b in fitted)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memory", type=Path, default=SHARED / "incidents.yaml")
    parser.add_argument("--queries", type=Path, default=SHARED / "queries.yaml")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--precision", type=float, default=0.97,
                        help="the PROVEN precision the fit must keep on its training folds")
    parser.add_argument("--lexical", action="store_true", help="no embedder (TRIAGE_EMBED_MODEL=none)")
    args = parser.parse_args()
    if not args.memory.exists():
        print(f"no development set at {args.memory}; pass --memory and --queries", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="triage-applicability-") as scratch:
        derived = derive(args.memory, Path(scratch))
        memory = load_incidents(derived)
        cases = collect(memory, derived, args.queries, Path(scratch) / "data", args.lexical)
    answerable = sum(1 for c in cases if c.query.expect)
    novel = len(cases) - answerable
    print(f"{len(cases)} alerts ({answerable} answerable, {novel} novel) over {len(memory.incidents)} "
          f"incidents, each with one distinct RESOLVED action; "
          f"{'lexical' if args.lexical else 'MiniLM hybrid'} recall")
    runs = [cross_validate(cases, memory, args.folds, seed, args.precision)
            for seed in range(args.repeats)]
    print(f"\n{args.folds}-fold cross-validated, {args.repeats} shuffles (fit: precision ≥ "
          f"{args.precision} and no novel PROVEN on the training folds):")
    for name in runs[0]:
        values = [r[name] for r in runs]
        print(f"  {name:14} mean {sum(values) / len(values):.3f}  (min {min(values):.3f}, "
              f"max {max(values):.3f})")
    weight, bar = fit(cases, memory, args.precision)
    print(f"\nfitted on all {len(cases)} alerts: margin_weight={weight} strong={bar}")
    print(f"\nsweep of the strong bar at margin_weight={weight} (whole set, not cross-validated):")
    print("  bar   proven right precision coverage novel")
    for sweep_bar in BARS[::5]:
        proven, right, shown, nov = table(cases, memory, weight, sweep_bar)
        share = f"{right / proven:.3f}" if proven else "  -  "
        print(f"  {sweep_bar:.2f}  {proven:6} {right:5} {share:>9} {shown / answerable:8.3f} {nov:5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
