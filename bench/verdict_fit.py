"""Measure a length-invariant, memory-relative verdict rule on both development sets (issue 33).

    python bench/verdict_fit.py [--lexical]

Offline study of the rule kept on branch ``issue33-standing`` (not the shipped verdict): every
query of ``../shared/eval/itbench`` (both splits) and ``../shared/eval/postmortems`` (a derived
copy where each incident has one distinct RESOLVED action, as bench/applicability_eval.py does)
is searched by the product's own index; then, per candidate:

- evidence  E = cosine + distinct coverage (IDF share of the alert's terms, a term weighing
  nothing once it is in half the memory) — no raw BM25, so E does not grow with alert length;
- standing  (E − mean E of the 10 best rivals) / their spread (≥ 0.03), rivals = candidates
  not resolved by the same fix, padded with 0.1 for a small memory; the gate skips the nearest
  rival (a sibling fault is no sign that nothing like it was seen);
- margin    (E − best rival) / spread, *required* for strong.

Fit (training part only): the gate = the evidence and standing floors turning away the most
novel alerts while wrongly turning away ≤ 15% of answerable ones; strong and margin maximise
right − 3·wrong PROVEN. Cross-validated:
ITBench split A judged by a fit on split B + the postmortems, and the other way round;
postmortems 5-fold (training = 4 folds + both ITBench splits). Nothing is written.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics as st
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from applicability_eval import derive  # noqa: E402

from console.engine.config import Settings  # noqa: E402
from console.engine.practice.evaluate import eval_index, load_queries  # noqa: E402
from store.loader import load_incidents  # noqa: E402
from store.minilm import MiniLMEmbedder  # noqa: E402
from store.recall import CANDIDATES  # noqa: E402
from store.redact import REDACTION_MARKER, redact  # noqa: E402
from store.terms import terms  # noqa: E402

EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval"
SETS = {"itA": ("itbench/incidents.yaml", "itbench/queries.yaml", False),
        "itB": ("itbench/incidents_swap.yaml", "itbench/queries_swap.yaml", False),
        "pm": ("postmortems/incidents.yaml", "postmortems/queries.yaml", True)}
K, SPREAD_MIN, WRONG_COST = 10, 0.03, 3
EVIDENCE_FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5)
FLOORS = (1.5, 2, 2.5, 3, 3.5)
STRONGS = (3, 4, 5, 6, 7, 8)
MARGINS = (0, 1, 2, 3)


def idf(n: int, total: int) -> float:
    return math.log(1 + (total - n + 0.5) / (n + 0.5))


def distinct(query: list[str], doc: frozenset[str], df: dict[str, int], total: int) -> float:
    weights = {t: idf(df.get(t, 0), total) * (max(0.0, 1 - (df.get(t, 0) - 1) / (0.5 * total))
                                               if df.get(t, 0) > 1 else 1.0) for t in query}
    whole = sum(weights.values())
    return sum(w for t, w in weights.items() if t in doc) / whole if whole else 0.0


def collect(lexical: bool) -> dict[str, list[dict]]:
    embedder = None if lexical else MiniLMEmbedder()
    found: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="triage-verdict-fit-") as scratch:
        for name, (memory_file, queries_file, derived) in SETS.items():
            path = EVAL / memory_file
            if derived:
                path = derive(path, Path(scratch))
            memory = load_incidents(path)
            index = eval_index(Settings(incidents_path=path, data_dir=Path(scratch) / "data"),
                               memory, embedder)
            by_id = {i.id: i for i in memory.incidents}
            df, total = dict(index.meta.document_frequency), index.meta.incidents
            rows = []
            for query in load_queries(EVAL / queries_file):
                text = REDACTION_MARKER.sub(" ", redact(query.alert).text)
                qterms = terms(text)
                vector = embedder.embed([text])[0] if embedder else None
                cands = []
                for c in index.search(text, vector, CANDIDATES):
                    cands.append({"id": c.incident_id, "cos": c.cosine or 0.0,
                                  "fused": (c.cosine or 0.0) + 0.01 * (c.bm25 or 0.0),
                                  "E": (c.cosine or 0.0) + distinct(qterms, c.terms, df, total),
                                  "fix": [frozenset(terms(a.action))
                                          for a in by_id[c.incident_id].actions]})
                cands.sort(key=lambda c: -c["fused"])
                rows.append({"expect": query.expect, "cands": cands})
            found[name] = rows
    return found


def same_fix(a: dict, b: dict) -> bool:
    return any(len(x & y) / len(x | y) >= 0.6 for x in a["fix"] for y in b["fix"] if x | y)


def features(row: dict, unrelated: float) -> list[tuple[dict, float, float, float]]:
    out = []
    for c in row["cands"][:8]:
        rivals = sorted((o["E"] for o in row["cands"] if o is not c and not same_fix(c, o)),
                        reverse=True)
        rivals = (rivals + [unrelated] * (K + 1))[:K + 1]
        seen_spread = max(st.pstdev(rivals[1:]), SPREAD_MIN)
        spread = max(st.pstdev(rivals[:K]), SPREAD_MIN)
        out.append((c, (c["E"] - st.fmean(rivals[1:])) / seen_spread,
                    (c["E"] - st.fmean(rivals[:K])) / spread, (c["E"] - rivals[0]) / spread))
    return out


def judge(rows: list[dict], gate: tuple[float, float], strong: float, margin: float,
          unrelated: float) -> dict:
    evidence_floor, floor = gate
    tally = dict.fromkeys(("proven", "right", "novel_proven", "novel", "novel_abstained",
                           "answerable", "answerable_abstained", "hit5"), 0)
    for row in rows:
        feats = features(row, unrelated)
        novel = not row["expect"]
        tally["novel" if novel else "answerable"] += 1
        if not any(seen >= floor and c["E"] >= evidence_floor for c, seen, _, _ in feats):
            tally["novel_abstained" if novel else "answerable_abstained"] += 1
            continue
        tally["hit5"] += any(c["id"] in row["expect"] for c, *_ in feats[:5])
        strongs = [c for c, _, standing, m in feats if standing >= strong and m >= margin]
        if strongs:
            tally["proven"] += 1
            tally["right"] += strongs[0]["id"] in row["expect"]
            tally["novel_proven"] += novel
    return tally


def fit(rows: list[dict], unrelated: float) -> tuple[tuple[float, float], float, float]:
    """The gate turning away the most novel alerts while wrongly turning away at most 15% of
    answerable ones (ties: the lower floors), then strong and margin for right − 3·wrong."""
    gates = [(judge(rows, (e, f), 99, 99, unrelated), (e, f))
             for e in EVIDENCE_FLOORS for f in FLOORS]
    allowed = [(t, g) for t, g in gates if t["answerable_abstained"] <= 0.15 * t["answerable"]]
    gate = max(allowed or gates[:1], key=lambda x: (x[0]["novel_abstained"],
                                                    -x[1][0], -x[1][1]))[1]
    best = max(((judge(rows, gate, s, m, unrelated), s, m) for s in STRONGS for m in MARGINS),
               key=lambda x: (x[0]["right"] - WRONG_COST * (x[0]["proven"] - x[0]["right"]),
                              x[1], x[2]))
    return gate, best[1], best[2]


def add(a: dict | None, b: dict) -> dict:
    return b if a is None else {k: a[k] + b[k] for k in b}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lexical", action="store_true", help="no embedder")
    args = parser.parse_args()
    if not (EVAL / "itbench").exists():
        print(f"no development sets at {EVAL}", file=sys.stderr)
        return 2
    data = collect(args.lexical)
    unrelated = 0.0 if args.lexical else 0.1
    report(data, unrelated)
    return 0


def report(data: dict[str, list[dict]], unrelated: float) -> None:
    pm = data["pm"]
    order = list(range(len(pm)))
    random.Random(0).shuffle(order)
    folds = [[pm[i] for n, i in enumerate(order) if n % 5 == f] for f in range(5)]
    held: dict[str, dict | None] = {"ITBench": None, "postmortems": None}
    for f in range(5):
        train = [r for g in range(5) if g != f for r in folds[g]] + data["itA"] + data["itB"]
        held["postmortems"] = add(held["postmortems"], judge(folds[f], *fit(train, unrelated),
                                                             unrelated))
    for name, other in (("itA", "itB"), ("itB", "itA")):
        params = fit(data[other] + pm, unrelated)
        held["ITBench"] = add(held["ITBench"], judge(data[name], *params, unrelated))
    print("cross-validated (held-out figures, counts):")
    for name, t in held.items():
        assert t is not None
        print(f"  {name:11} PROVEN right {t['right']}/{t['proven']} · novel PROVEN "
              f"{t['novel_proven']}/{t['novel']} · novel NO PRIOR {t['novel_abstained']}/"
              f"{t['novel']} · answerable abstained {t['answerable_abstained']}/"
              f"{t['answerable']} · hit@5 {t['hit5']}/{t['answerable']}")
    (evidence, floor), strong, margin = fit(pm + data["itA"] + data["itB"], unrelated)
    print(f"fit on everything: evidence floor {evidence}, standing floor {floor}, strong "
          f"{strong}, margin {margin}")


if __name__ == "__main__":
    sys.exit(main())
