"""Calibrate the tripwire's similarity threshold (console/engine/briefing/tripwire.py), cross-validated.

    .venv/bin/python bench/tripwire_calibrate.py [--incidents incidents.yaml]
        [--postmortems ../shared/eval/postmortems/incidents.yaml] [--folds 5]

Positives: PARAPHRASES below — intents written BY US (self-written data, so they flatter the
figures) for the WORSENED actions of the bundled memory, as an engineer might type them:
terse, command-like, with shorthand. A positive counts as caught only when the paraphrased
action clears the threshold among the MAX_HITS shown (the right citation, not just any warning).

Negatives, scored against WORSENED candidates:
  * memory actions that are not WORSENED, paired only with WORSENED actions of a *different
    kind* (their text is the team's, not ours; "restart one pod" vs "restart all pods" is a
    near miss reported on its own line, not a negative the threshold is fitted on);
  * the third-party postmortem summaries (read at run time from the eval set, never copied:
    action-free text about incidents) as intents against every WORSENED action.

Threshold fitted on k-1 folds (max F1, ties → higher threshold), judged on the held-out fold;
folds split by WORSENED action, negatives spread round-robin. Figures are summed over folds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from console.engine.briefing import tripwire  # noqa: E402
from console.engine.briefing.fixes import overlap  # noqa: E402
from console.engine.briefing.tripwire import TripwireCandidate  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.models import ActionOutcome  # noqa: E402
from store.terms import terms  # noqa: E402

# Self-written paraphrases of the bundled WORSENED actions (keyed by citation).
PARAPHRASES: dict[str, list[str]] = {
    "INC-1502/A2": ["scale the inventory-sync consumers up to 12", "add more inventory-sync "
                    "consumer replicas", "bump inventory sync workers to a dozen replicas",
                    "kubectl scale deploy/inventory-sync --replicas=12"],
    "INC-1561/A2": ["force every service to refresh its JWKS cache", "make downstream "
                    "services reload the signing keys now", "flush the jwks caches everywhere",
                    "trigger a JWKS refresh across all consumers"],
    "INC-1574/A2": ["raise the fraud review timeout to 15 seconds", "give the fraud-review "
                    "client a longer timeout", "bump fraud client timeout 5s -> 15s",
                    "increase timeout on the fraud review call"],
    "INC-1588/A1": ["raise gateway retries to 3", "turn up client retry count on the api "
                    "gateway", "let the gateway retry idempotent requests three times",
                    "increase retries on the gateway for idempotent routes"],
    "INC-1603/A2": ["promote the standby to primary", "manually fail over to the replica and "
                    "send writes there", "promote the orders-db replica now",
                    "make the standby take reads and writes"],
    "INC-1667/A1": ["flush the checkout redis", "FLUSHALL on the checkout cache cluster",
                    "wipe the whole checkout Redis", "clear all keys in checkout redis"],
    "INC-1681/A1": ["restart the email consumers", "bounce the email consumer group",
                    "restart notifications email consumer pods", "kick the email consumer "
                    "group"],
    "INC-1712/A2": ["bump retries to the fraud scoring vendor to 3", "increase retry count "
                    "for fraud-scoring calls", "retry the fraud vendor more times",
                    "raise client retries on the fraud vendor"],
    "INC-1729/A1": ["run vacuum full on the orders tables", "VACUUM FULL orders",
                    "do a full vacuum of the biggest orders tables", "reclaim space with "
                    "vacuum full on orders"],
    "INC-1791/A1": ["scale inventory sync consumers to 10", "add consumers to inventory-sync",
                    "more inventory-sync replicas to catch up the backlog",
                    "scale up the inventory consumers"],
    "INC-1838/A2": ["roll back the key rotation", "go back to signing with the old key",
                    "revert the signing key rotation", "undo the key rotation and sign with "
                    "the previous key"],
    "INC-1869/A1": ["scale the orders api to 16 pods", "add more orders API pods",
                    "scale out orders api", "bump orders-api replicas from 10 to 16"],
    "INC-2041/A1": ["restart all payments pods", "bounce every payments-api pod at once",
                    "kubectl rollout restart deployment/payments-api", "kill all the payments "
                    "api pods so they come back fresh"],
    "INC-2129/A3": ["raise worker concurrency to 16", "bump notification worker threads to "
                    "16", "increase the number of threads per worker", "turn up worker "
                    "concurrency"],
    "INC-2247/A2": ["restart all gateway pods", "bounce the whole api gateway",
                    "rollout restart the gateway deployment", "restart every gateway pod "
                    "together"],
    "INC-2318/A1": ["raise the statement timeout to 120s", "increase the db statement "
                    "timeout", "bump statement_timeout on the ledger database",
                    "give queries a longer statement timeout"],
}


@dataclass(frozen=True)
class Pair:
    """An intent against one candidate set; ``target`` is the citation it must hit (positives)."""

    intent: str
    candidates: tuple[int, ...]  # indexes into the WORSENED list
    target: int | None
    group: str  # fold key


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--incidents", type=Path, default=ROOT / "incidents.yaml")
    parser.add_argument("--postmortems", type=Path,
                        default=ROOT.parent / "shared/eval/postmortems/incidents.yaml")
    parser.add_argument("--folds", type=int, default=5)
    args = parser.parse_args()

    memory = load_incidents(args.incidents)
    worsened: list[TripwireCandidate] = []
    others: list[tuple[str, str]] = []  # (action, kind) not WORSENED
    for incident in memory.incidents:
        for action in incident.actions:
            if action.outcome is ActionOutcome.WORSENED:
                worsened.append(TripwireCandidate(
                    incident.id, incident.action_ref(action), incident.service, action.action,
                    action.explanation, action.kind or "", "service"))
            else:
                others.append((action.action, action.kind or ""))
    by_ref = {c.action_id: n for n, c in enumerate(worsened)}
    missing = sorted(set(by_ref) - set(PARAPHRASES))
    everything = tuple(range(len(worsened)))

    positives = [Pair(text, everything, by_ref[ref], ref)
                 for ref, texts in PARAPHRASES.items() if ref in by_ref for text in texts]
    kind_negatives, near_misses = [], []
    for n, (text, kind) in enumerate(others):
        different = tuple(i for i, c in enumerate(worsened) if not kind or c.kind != kind)
        same = tuple(i for i, c in enumerate(worsened) if kind and c.kind == kind)
        kind_negatives.append(Pair(text, different, None, f"memory-{n}"))
        if same:
            near_misses.append(Pair(text, same, None, f"near-{n}"))
    summaries = yaml.safe_load(args.postmortems.read_text(encoding="utf-8"))
    pm_negatives = [Pair(" ".join(str(s["symptoms"]).split()), everything, None, f"pm-{n}")
                    for n, s in enumerate(summaries)]

    embedder = MiniLMEmbedder()
    embedder.embed(["warm up"])
    start = time.perf_counter()
    ready = tripwire.embed_candidates(worsened, embedder)
    candidates_s = time.perf_counter() - start

    pairs = positives + kind_negatives + pm_negatives + near_misses
    intents = sorted({tripwire.safe_intent(p.intent) for p in pairs})
    vectors = dict(zip(intents, embedder.embed(intents), strict=True))
    import numpy as np

    matrix = np.stack([c.vector for c in ready])
    cand_terms = [set(c.terms) for c in ready]

    def components(pair: Pair) -> list[tuple[int, float, float]]:
        intent = tripwire.safe_intent(pair.intent)
        cosines = matrix @ vectors[intent]
        words = set(terms(intent))
        if len(words) < tripwire.MIN_INTENT_TERMS:
            return []
        return [(i, float(cosines[i]), overlap(words, cand_terms[i])) for i in pair.candidates]

    cached = {id(p): components(p) for p in pairs}

    def top(pair: Pair, score: Callable[[float, float], float]) -> tuple[int | None, float]:
        """The best candidate and its score; for a positive, its target and the target's score
        when the target is among the MAX_HITS shown (a near-twin WORSENED action may lead)."""
        scored = sorted(((score(c, o), i) for i, c, o in cached[id(pair)]), reverse=True)
        if not scored:
            return None, float("-inf")
        shown = scored[:tripwire.MAX_HITS]
        for value, index in shown:
            if index == pair.target:
                return index, value
        return shown[0][1], shown[0][0]

    variants: dict[str, Callable[[float, float], float]] = {
        "cosine": lambda c, o: c,
        "overlap (Jaccard of terms)": lambda c, o: o,
        "cosine + 0.2·overlap": lambda c, o: c + 0.2 * o,
        "cosine + 0.3·overlap": lambda c, o: c + 0.3 * o,
        "cosine + 0.4·overlap": lambda c, o: c + 0.4 * o,
        "cosine + 0.5·overlap": lambda c, o: c + 0.5 * o,
        "max(cosine, overlap)": lambda c, o: max(c, o),
    }
    negatives = kind_negatives + pm_negatives
    print(f"memory: {len(memory.incidents)} incidents, {len(worsened)} WORSENED actions "
          f"({len(worsened) - len(missing)} with paraphrases; none for: {missing or '-'})")
    print(f"positives: {len(positives)} self-written paraphrases · negatives: "
          f"{len(kind_negatives)} memory actions of another kind + {len(pm_negatives)} "
          f"third-party postmortem summaries · near misses (same kind, not WORSENED): "
          f"{len(near_misses)}")
    print(f"{args.folds}-fold CV, folds by WORSENED action; threshold = max F1 on the "
          "training folds\n")
    refs = sorted({p.group for p in positives})
    fold_of = {ref: n % args.folds for n, ref in enumerate(refs)}
    neg_fold = {id(p): n % args.folds for n, p in enumerate(negatives)}

    for name, score in variants.items():
        tp = fn = fp = tn = pm_cv = 0
        thresholds = []
        for fold in range(args.folds):
            train_pos = [p for p in positives if fold_of[p.group] != fold]
            train_neg = [p for p in negatives if neg_fold[id(p)] != fold]
            threshold = fit(train_pos, train_neg, lambda p, score=score: top(p, score))
            thresholds.append(threshold)
            for p in positives:
                if fold_of[p.group] == fold:
                    index, best = top(p, score)
                    hit = index == p.target and best >= threshold
                    tp, fn = tp + hit, fn + (not hit)
            for p in negatives:
                if neg_fold[id(p)] == fold:
                    fired = top(p, score)[1] >= threshold
                    fp, tn = fp + fired, tn + (not fired)
                    pm_cv += fired and p.group.startswith("pm-")
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn)
        fitted = fit(positives, negatives, lambda p, score=score: top(p, score))
        near = sum(top(p, score)[1] >= fitted for p in near_misses)
        pm_fp = sum(top(p, score)[1] >= fitted for p in pm_negatives)
        print(f"{name:<28} CV precision {precision:.2f} recall {recall:.2f} "
              f"(tp {tp} fn {fn} fp {fp}, {pm_cv} of them postmortems, tn {tn}); fold thresholds "
              f"{min(thresholds):.2f}–{max(thresholds):.2f}; all-data threshold {fitted:.2f}: "
              f"near misses firing {near}/{len(near_misses)}, postmortems firing "
              f"{pm_fp}/{len(pm_negatives)}")

    chosen = tripwire.combined
    print(f"\nshipped: cosine + {tripwire.LEXICAL_WEIGHT}·overlap at "
          f"{tripwire.TRIPWIRE_THRESHOLD}")
    tp = sum(1 for p in positives if top(p, chosen)[0] == p.target
             and top(p, chosen)[1] >= tripwire.TRIPWIRE_THRESHOLD)
    fp = sum(1 for p in negatives if top(p, chosen)[1] >= tripwire.TRIPWIRE_THRESHOLD)
    print(f"  in-sample at the shipped threshold: {tp}/{len(positives)} paraphrases caught "
          f"with the right citation, {fp}/{len(negatives)} negatives fire")
    for p in positives:
        index, best = top(p, chosen)
        if index != p.target or best < tripwire.TRIPWIRE_THRESHOLD:
            got = worsened[index].action_id if index is not None else "-"
            print(f"  missed {p.group}: {p.intent!r} → top {got} {best:.2f}")
    for p in kind_negatives:
        index, best = top(p, chosen)
        if best >= tripwire.TRIPWIRE_THRESHOLD and index is not None:
            print(f"  fires on memory action {p.intent!r} → {worsened[index].action_id} "
                  f"{best:.2f}")

    timings = []
    checker = tripwire.Tripwire(ready, embedder)
    for p in positives[:20] + kind_negatives[:20]:
        start = time.perf_counter()
        checker.check(p.intent)
        timings.append((time.perf_counter() - start) * 1000)
    print(f"\nspeed: {len(worsened)} candidates embedded once in {candidates_s * 1000:.0f} ms; "
          f"a check (one intent embed + {len(worsened)} dot products) median "
          f"{statistics.median(timings):.1f} ms, max {max(timings):.1f} ms over {len(timings)}")


def fit(positives: list[Pair], negatives: list[Pair],
        top: Callable[[Pair], tuple[int | None, float]]) -> float:
    """The threshold with the best F1 (a positive counts only with the right citation)."""
    pos = [(best, index == p.target) for p in positives for index, best in [top(p)]]
    neg = [top(p)[1] for p in negatives]
    candidates = sorted({round(b, 3) for b, _ in pos} | {round(b, 3) for b in neg})
    best_f1, best_threshold = -1.0, 1.0
    for threshold in candidates:
        tp = sum(1 for b, right in pos if right and b >= threshold)
        fp = sum(1 for b in neg if b >= threshold)
        fn = len(pos) - tp
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 >= best_f1:
            best_f1, best_threshold = f1, threshold
    return best_threshold


if __name__ == "__main__":
    main()
