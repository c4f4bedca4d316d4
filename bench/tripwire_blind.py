"""The tripwire measured on paraphrases written blind (issue 23): by a writer who saw only the
WORSENED action texts of the bundled memory — not the tripwire, its 64 self-written positives
(bench/tripwire_calibrate.py) or its threshold.

    .venv/bin/python bench/tripwire_blind.py [--blind tests/data/tripwire_blind.yaml]
        [--folds 5]

Through the console's own path (console.engine.briefing.tripwire.Tripwire.check over every
WORSENED action, the bundled MiniLM):

  * a positive is caught when the paraphrased action is among the hits shown (the right
    citation, not just any warning);
  * a near-miss (a different, safe action on the same system) fires when any hit is shown.

Printed: the shipped weight and threshold on the blind set, every miss and every near-miss
that fires, and a threshold refitted on the blind set (max F1 on k-1 folds by action, judged on
the held-out fold; F1 counts near-misses as the negatives) to say whether the shipped one is
where blind data would put it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from console.engine.briefing import tripwire  # noqa: E402
from console.engine.briefing.tripwire import TripwireCandidate  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.models import ActionOutcome  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=Path, default=ROOT / "incidents.yaml")
    parser.add_argument("--blind", type=Path, default=ROOT / "tests/data/tripwire_blind.yaml")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()

    memory = load_incidents(args.incidents)
    worsened = [TripwireCandidate(i.id, i.action_ref(a), i.service, a.action, a.explanation,
                                  a.kind or "", "service")
                for i in memory.incidents for a in i.actions
                if a.outcome is ActionOutcome.WORSENED]
    by_text = {(c.incident_id, c.action): c.action_id for c in worsened}
    entries = yaml.safe_load(args.blind.read_text(encoding="utf-8"))
    positives: list[tuple[str, str]] = []  # (intent, citation it must hit)
    near: list[tuple[str, str]] = []  # (intent, the action it is near)
    for entry in entries:
        ref = by_text[(entry["incident"], entry["action"])]
        positives += [(text, ref) for text in entry["positives"]]
        near += [(text, ref) for text in entry["near_misses"]]

    embedder = MiniLMEmbedder()
    ready = tripwire.embed_candidates(worsened, embedder)
    # Every hit at any score (threshold -inf), so one pass serves every threshold below.
    shipped = tripwire.TRIPWIRE_THRESHOLD
    tripwire.TRIPWIRE_THRESHOLD = float("-inf")
    checker = tripwire.Tripwire(ready, embedder)
    pos_scores = [_target_score(checker.check(text), ref) for text, ref in positives]
    near_scores = [max((h.similarity for h in checker.check(text)), default=float("-inf"))
                   for text, _ in near]
    tripwire.TRIPWIRE_THRESHOLD = shipped

    caught = sum(s >= shipped for s in pos_scores)
    fired = sum(s >= shipped for s in near_scores)
    print(f"blind set: {len(entries)} WORSENED actions, {len(positives)} paraphrases, "
          f"{len(near)} near-misses ({args.blind.relative_to(ROOT)})")
    print(f"shipped: cosine + {tripwire.LEXICAL_WEIGHT}·overlap ≥ {shipped}")
    print(f"  paraphrases warned with the right citation: {caught}/{len(positives)} "
          f"({caught / len(positives):.0%})")
    print(f"  near-misses warned (false alarms): {fired}/{len(near)} ({fired / len(near):.0%})")
    for (text, ref), score in zip(positives, pos_scores, strict=True):
        if score < shipped:
            print(f"  missed {ref}: {text!r} ({_fmt(score)})")
    for (text, ref), score in zip(near, near_scores, strict=True):
        if score >= shipped:
            print(f"  near-miss fired (near {ref}): {text!r} ({score:.2f})")

    refs = sorted({ref for _, ref in positives})
    fold_of = {ref: n % args.folds for n, ref in enumerate(refs)}
    tp = fn = fp = tn = 0
    chosen = []
    for fold in range(args.folds):
        train_p = [s for (_, r), s in zip(positives, pos_scores, strict=True) if fold_of[r] != fold]
        train_n = [s for (_, r), s in zip(near, near_scores, strict=True) if fold_of[r] != fold]
        threshold = _fit(train_p, train_n)
        chosen.append(threshold)
        for (_, r), s in zip(positives, pos_scores, strict=True):
            if fold_of[r] == fold:
                tp, fn = tp + (s >= threshold), fn + (s < threshold)
        for (_, r), s in zip(near, near_scores, strict=True):
            if fold_of[r] == fold:
                fp, tn = fp + (s >= threshold), tn + (s < threshold)
    print(f"\nrefitted on the blind set, {args.folds}-fold CV by action: thresholds "
          f"{min(chosen):.2f}–{max(chosen):.2f}; held out: paraphrases {tp}/{tp + fn} "
          f"({tp / (tp + fn):.0%}), near-misses firing {fp}/{fp + tn} ({fp / (fp + tn):.0%})")


def _target_score(hits: list[tripwire.TripwireHit], ref: str) -> float:
    """The similarity of the hit citing ``ref`` among those shown (-inf when it is not)."""
    return next((h.similarity for h in hits if h.action_id == ref), float("-inf"))


def _fmt(score: float) -> str:
    return "not among the hits shown" if score == float("-inf") else f"{score:.2f}"


def _fit(pos: list[float], neg: list[float]) -> float:
    best_f1, best = -1.0, 1.0
    for threshold in sorted({round(s, 3) for s in pos + neg if s != float("-inf")}):
        tp = sum(s >= threshold for s in pos)
        fp = sum(s >= threshold for s in neg)
        f1 = 2 * tp / (2 * tp + fp + (len(pos) - tp)) if tp else 0.0
        if f1 >= best_f1:
            best_f1, best = f1, threshold
    return best


if __name__ == "__main__":
    main()
