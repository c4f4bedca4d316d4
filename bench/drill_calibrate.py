"""Calibrate the drill's "same fix" cosine (SAME_FIX_COSINE in console/engine/practice/replay.py),
cross-validated.

    .venv/bin/python bench/drill_calibrate.py [--incidents incidents.yaml]
        [--postmortems ../shared/eval/postmortems/incidents.yaml] [--folds 5]

The cosine rule decides whether a drill's lead fix is what resolved the hidden incident when
either action has no ``kind``. It is fitted where the answer is known by kind:

1. **Memory pairs** (self-written: our bundled memory, so they flatter the figures): every
   pair of fix actions (RESOLVED/MITIGATED) from two different incidents that both carry a
   kind; positive = same kind. Folds split by incident: the threshold (the lowest on a grid
   whose precision reaches 0.9) is fitted on pairs touching no held-out incident and judged
   on the pairs whose first-folded incident is held out. Figures are summed over folds.
2. **Drill pairs**: the exact (lead action, RESOLVED action) pairs a `triage drill --all` on
   the memory judged by kind — how often the cosine rule, had the kinds been missing, would
   have given the same verdict.
3. **Third-party transfer check**: the postmortem development set (danluu/post-mortems
   summaries; read at run time, never copied). It has no actions, only a section per entry:
   pairs of summaries from the same section (config errors, hardware/power, time, conflicts,
   database; "uncategorized" left out) are positives, other sections negatives. Coarse
   labels over whole summaries, not fixes: a check of how far the threshold transfers to text
   we did not write, not a fit.

Prints the figures; the constant in replay.py carries them in its comment.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from console.engine.practice.replay import SAME_FIX_COSINE  # noqa: E402
from store.embedder import normalised  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402

GRID = [round(0.20 + 0.01 * n, 2) for n in range(71)]  # 0.20 … 0.90


def scores(labels: np.ndarray, cosines: np.ndarray, threshold: float) -> dict[str, float]:
    said = cosines >= threshold
    tp = int(np.sum(said & labels))
    fp = int(np.sum(said & ~labels))
    fn = int(np.sum(~said & labels))
    tn = int(np.sum(~said & ~labels))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall,
            "f1": f1, "balanced": (recall + specificity) / 2}


PRECISION_TARGET = 0.9


def fit(labels: np.ndarray, cosines: np.ndarray) -> float:
    """The lowest grid threshold whose precision reaches PRECISION_TARGET (a "right" verdict
    from the cosine rule should be right 9 times in 10: it must not inflate a track record);
    max F1 picks the bottom of the grid here, because a kind is coarser than a fix."""
    for threshold in GRID:
        said = scores(labels, cosines, threshold)
        if said["tp"] + said["fp"] and said["precision"] >= PRECISION_TARGET:
            return float(threshold)
    return GRID[-1]


def pair_table(texts: list[str], groups: list[str], owners: list[str],
               vectors: np.ndarray) -> tuple[list[tuple[int, int]], np.ndarray, np.ndarray]:
    pairs = [(a, b) for a, b in itertools.combinations(range(len(texts)), 2)
             if owners[a] != owners[b]]
    labels = np.array([groups[a] == groups[b] for a, b in pairs])
    cosines = np.array([float(vectors[a] @ vectors[b]) for a, b in pairs])
    return pairs, labels, cosines


def cross_validate(owners: list[str], pairs: list[tuple[int, int]], labels: np.ndarray,
                   cosines: np.ndarray, folds: int) -> tuple[dict[str, float], list[float]]:
    ordered = sorted(set(owners))
    fold_of = {owner: n % folds for n, owner in enumerate(ordered)}
    totals = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
    fitted = []
    for fold in range(folds):
        # judged: pairs whose first-folded incident is held out (each pair judged once);
        # fitted on: pairs touching no held-out incident
        touching = np.array([fold in (fold_of[owners[a]], fold_of[owners[b]]) for a, b in pairs])
        held = np.array([min(fold_of[owners[a]], fold_of[owners[b]]) == fold for a, b in pairs])
        threshold = fit(labels[~touching], cosines[~touching])
        fitted.append(threshold)
        judged = scores(labels[held], cosines[held], threshold)
        for key in totals:
            totals[key] += int(judged[key])
    tp, fp, fn, tn = totals["tp"], totals["fp"], totals["fn"], totals["tn"]
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return ({"precision": precision, "recall": recall,
             "f1": 2 * precision * recall / (precision + recall) if precision + recall else 0.0,
             "balanced": (recall + (tn / (tn + fp) if tn + fp else 0.0)) / 2, **totals},
            fitted)


def line(name: str, figures: dict[str, float]) -> str:
    return (f"{name}: precision {figures['precision']:.2f} recall {figures['recall']:.2f} "
            f"F1 {figures['f1']:.2f} balanced acc. {figures['balanced']:.2f} "
            f"(tp {figures['tp']} fp {figures['fp']} fn {figures['fn']} tn {figures['tn']})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=Path, default=ROOT / "incidents.yaml")
    parser.add_argument("--postmortems", type=Path,
                        default=ROOT.parent / "shared" / "eval" / "postmortems" / "incidents.yaml")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()
    started = time.monotonic()
    embedder = MiniLMEmbedder()
    memory = load_incidents(args.incidents)

    # 1. memory pairs, cross-validated by incident
    fixes = [(i.id, a.kind.strip().lower(), a.action) for i in memory.incidents
             for a in i.actions if a.outcome.is_fix and a.kind]
    owners = [owner for owner, _, _ in fixes]
    vectors = normalised(embedder.embed([text for _, _, text in fixes]))
    pairs, labels, cosines = pair_table([t for _, _, t in fixes], [k for _, k, _ in fixes],
                                        owners, vectors)
    cv, fitted = cross_validate(owners, pairs, labels, cosines, args.folds)
    overall = fit(labels, cosines)
    print(f"memory fix actions with a kind: {len(fixes)} from {len(set(owners))} incidents; "
          f"{len(pairs)} cross-incident pairs, {int(labels.sum())} same kind")
    print(f"  thresholds fitted per fold: {fitted}; on all pairs: {overall}")
    print("  " + line(f"{args.folds}-fold CV (held-out pairs)", cv))
    print("  " + line(f"in-sample at {overall}", scores(labels, cosines, overall)))
    print("  " + line(f"in-sample at replay.py's {SAME_FIX_COSINE}",
                      scores(labels, cosines, SAME_FIX_COSINE)))

    # 2. the pairs a drill judges by kind
    import tempfile

    from console.engine.config import Settings
    from console.engine.practice.evaluate import eval_index
    from console.engine.practice.replay import run_replays

    with tempfile.TemporaryDirectory() as scratch:
        settings = Settings(incidents_path=args.incidents, data_dir=Path(scratch))
        index = eval_index(settings, memory, embedder)
        report = run_replays(index, memory, settings)
    by_ref = {i.action_ref(a): a for i in memory.incidents for a in i.actions}
    judged = [(r.lead, by_ref[r.lead.matched_action_id] if r.lead.matched_action_id else None,
               r.incident_id) for r in report.replays if r.lead and r.lead.rule == "kind"]
    agree = 0
    for lead, _, hidden_id in judged:
        hidden = next(i for i in memory.incidents if i.id == hidden_id)
        resolved = [a.action for a in hidden.actions if a.outcome.is_proof]
        vs = normalised(embedder.embed([lead.action, *resolved]))
        best = float(np.max(vs[1:] @ vs[0]))
        agree += int((best >= SAME_FIX_COSINE) == bool(lead.right))
    print(f"drill pairs judged by kind on the memory: {len(judged)}; the cosine rule at "
          f"{SAME_FIX_COSINE} gives the same verdict on {agree}")

    # 3. third-party transfer check
    if args.postmortems.exists():
        entries = yaml.safe_load(args.postmortems.read_text(encoding="utf-8"))
        kept = [(e["id"], e["tags"][0], e["symptoms"]) for e in entries
                if e.get("tags") and e["tags"][0] != "uncategorized"]
        pm_vectors = normalised(embedder.embed([text for _, _, text in kept]))
        pm_owners = [pid for pid, _, _ in kept]
        pm_pairs, pm_labels, pm_cos = pair_table([t for _, _, t in kept],
                                                 [s for _, s, _ in kept], pm_owners, pm_vectors)
        pm_cv, pm_fitted = cross_validate(pm_owners, pm_pairs, pm_labels, pm_cos, args.folds)
        print(f"third-party summaries (sections, uncategorized left out): {len(kept)} entries, "
              f"{len(pm_pairs)} pairs, {int(pm_labels.sum())} same section")
        print("  " + line(f"at replay.py's {SAME_FIX_COSINE} (transfer)",
                          scores(pm_labels, pm_cos, SAME_FIX_COSINE)))
        print("  " + line(f"{args.folds}-fold CV fitted on this set ({pm_fitted})", pm_cv))
        print(f"  mean cosine: same section {pm_cos[pm_labels].mean():.3f}, other "
              f"{pm_cos[~pm_labels].mean():.3f}")
    else:
        print(f"(no third-party set at {args.postmortems})")
    print(f"{time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
