"""Vector search: numpy exact top-10 vs LanceDB (flat scan and ANN), and hybrid recall p50.

    .venv/bin/python bench/vector_bench.py [--sizes 1000,10000,100000] [--queries 100]
                                           [--hybrid-sizes 1000,10000] [--no-ivfpq]

Vectors are realistic, not random (ANN recall on random vectors is meaningless): ~400
sentences are embedded once with the product's MiniLM, and each synthetic incident is the
normalised, weighted sum of 2–3 of those sentence vectors plus a little noise; queries are
combinations no incident uses. The sentences are read at run time from the third-party
postmortem summaries in ../shared/eval/postmortems/incidents.yaml (or --sentences FILE);
nothing from that file is stored here.

Every figure is printed as a ratio against a baseline measured in the same run (numpy exact
top-10 on the same vectors): these machines are noisy, so there is no absolute pass/fail.
The table answers where an ANN index starts to pay off (the smallest size where the best
ANN configuration with recall@10 ≥ 0.95 has a lower p50 than LanceDB's flat scan), which is
what ``store.index.ANN_MIN_ROWS`` should be set to.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

REPO = Path(__file__).resolve().parents[1]
SHARED_SENTENCES = REPO.parent / "shared" / "eval" / "postmortems" / "incidents.yaml"
BUNDLED_SENTENCES = REPO / "incidents.yaml"
DIM = 384
K = 10
RECALL_TARGET = 0.95
TARGET_RATIO_100K = 1.5  # vector search p50 at 100k ≤ 1.5× numpy exact, recall@10 ≥ 0.95
SERVICES = ["checkout", "payments", "search", "ledger", "auth", "gateway", "notifications",
            "inventory", "billing", "cdn", "dns", "kafka", "postgres", "redis", "scheduler",
            "storage", "k8s-control-plane", "mobile-api", "email", "reporting"]


# --------------------------------------------------------------------------- sentences ----

def load_sentences(path: Path | None = None, limit: int = 400) -> tuple[list[str], str]:
    """Distinct sentences (5–60 words) from an incidents file, read now, never stored."""
    from store.loader import load_incidents

    candidates = [path] if path else [SHARED_SENTENCES, BUNDLED_SENTENCES]
    source = next((p for p in candidates if p and p.exists()), None)
    if source is None:
        raise SystemExit(f"no sentence source: none of {', '.join(map(str, candidates))} exists")
    texts: list[str] = []
    for incident in load_incidents(source).incidents:
        texts.append(incident.symptoms)
        if incident.root_cause:
            texts.append(incident.root_cause)
        for action in incident.actions:
            texts.extend([action.action, action.explanation])
    seen: dict[str, None] = {}
    for text in texts:
        for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
            if 5 <= len(sentence.split()) <= 60:
                seen.setdefault(sentence.strip(), None)
    sentences = list(seen)[:limit]
    if len(sentences) < 40:
        raise SystemExit(f"only {len(sentences)} usable sentences in {source}; need ≥ 40")
    return sentences, str(source)


def embed_sentences(sentences: list[str]) -> np.ndarray:
    from store.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder()
    reason = embedder.available()
    if reason is not None:
        raise SystemExit(f"MiniLM unavailable: {reason}")
    return embedder.embed(sentences)


# --------------------------------------------------------------------- synthetic vectors --

@dataclass
class Synthetic:
    """Incident and query vectors built from sentence embeddings, with the combos used."""

    sentences: list[str]
    base: np.ndarray  # (s, 384) sentence embeddings
    vectors: np.ndarray  # (n, 384) incidents, unit rows
    combos: list[tuple[int, ...]]
    queries: np.ndarray  # (q, 384) unit rows
    query_combos: list[tuple[int, ...]]


def _mix(base: np.ndarray, combo: tuple[int, ...], rng: np.random.Generator, noise: float,
         ) -> np.ndarray:
    weights = rng.uniform(0.5, 1.0, size=len(combo)).astype(np.float32)
    vector = (weights[:, None] * base[list(combo)]).sum(axis=0)
    vector += rng.normal(0.0, noise * float(np.linalg.norm(vector)) / np.sqrt(DIM),
                         size=DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def _combos(count: int, sentences: int, rng: np.random.Generator, taken: set[tuple[int, ...]],
            ) -> list[tuple[int, ...]]:
    found: list[tuple[int, ...]] = []
    while len(found) < count:
        k = 2 if rng.random() < 0.5 else 3
        combo = tuple(sorted(int(i) for i in rng.choice(sentences, size=k, replace=False)))
        if combo not in taken:
            taken.add(combo)
            found.append(combo)
    return found


def synthesise(sentences: list[str], base: np.ndarray, incidents: int, queries: int,
               seed: int = 7, noise: float = 0.15) -> Synthetic:
    """``incidents`` vectors, then ``queries`` held-out combos (no incident uses them)."""
    rng = np.random.default_rng(seed)
    taken: set[tuple[int, ...]] = set()
    combos = _combos(incidents, len(sentences), rng, taken)
    query_combos = _combos(queries, len(sentences), rng, taken)
    vectors = np.stack([_mix(base, c, rng, noise) for c in combos]).astype(np.float32)
    qvectors = np.stack([_mix(base, c, rng, noise) for c in query_combos]).astype(np.float32)
    return Synthetic(sentences, base, vectors, combos, qvectors, query_combos)


# ------------------------------------------------------------------------------ timing -----

def p50_ms(run: Callable[[np.ndarray], Any], queries: np.ndarray, rounds: int = 1,
           warmup: int = 3) -> tuple[float, list[Any]]:
    """Median latency of ``run(query)`` over the queries (and rounds), and the last results."""
    for query in queries[:warmup]:
        run(query)
    times: list[float] = []
    results: list[Any] = []
    for r in range(rounds):
        for query in queries:
            started = time.perf_counter()
            result = run(query)
            times.append(time.perf_counter() - started)
            if r == rounds - 1:
                results.append(result)
    return statistics.median(times) * 1000, results


def numpy_topk(matrix: np.ndarray, k: int = K) -> Callable[[np.ndarray], np.ndarray]:
    def run(query: np.ndarray) -> np.ndarray:
        scores = matrix @ query
        top = np.argpartition(-scores, k)[:k]
        return top[np.argsort(-scores[top])]
    return run


def numpy_baseline(matrix: np.ndarray, queries: np.ndarray) -> tuple[float, list[Any], str]:
    """numpy's exact top-10, with BLAS's default threads and with one (on a busy machine
    OpenBLAS threads can spin-wait); the faster p50 is the baseline, so it is never flattered."""
    from threadpoolctl import threadpool_limits

    default_p50, exact = p50_ms(numpy_topk(matrix), queries, rounds=5)
    with threadpool_limits(limits=1, user_api="blas"):
        single_p50, _ = p50_ms(numpy_topk(matrix), queries, rounds=5)
    if single_p50 < default_p50:
        return single_p50, exact, "1 BLAS thread"
    return default_p50, exact, "default BLAS threads"


def recall_at(found: Iterable[Iterable[int]], exact: Iterable[Iterable[int]], k: int) -> float:
    hits = [len(set(list(f)[:k]) & set(list(e)[:k])) / k for f, e in zip(found, exact, strict=True)]
    return float(np.mean(hits))


# ----------------------------------------------------------------------------- lancedb -----

def _lancedb() -> Any:
    os.environ.setdefault("LANCEDB_LOG", "error")
    import lancedb

    return lancedb


def lance_table(directory: Path, vectors: np.ndarray) -> Any:
    import pyarrow as pa

    data = pa.table({
        "id": pa.array(np.arange(len(vectors), dtype=np.int64)),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel(), type=pa.float32()),
                                                    DIM)})
    return _lancedb().connect(str(directory)).create_table("vectors", data=data, mode="overwrite")


def lance_search(table: Any, k: int = K, ef: int | None = None, nprobes: int | None = None,
                 refine: int | None = None) -> Callable[[np.ndarray], tuple[list[int], list[float]]]:
    def run(query: np.ndarray) -> tuple[list[int], list[float]]:
        q = table.search(query, query_type="vector").distance_type("cosine")
        if ef is not None:
            q = q.ef(ef)
        if nprobes is not None:
            q = q.nprobes(nprobes)
        if refine is not None:
            q = q.refine_factor(refine)
        found = q.limit(k).select(["id", "_distance"]).to_arrow()
        return found.column("id").to_pylist(), found.column("_distance").to_pylist()
    return run


def cosine_error(found: list[tuple[list[int], list[float]]], queries: np.ndarray,
                 matrix: np.ndarray) -> float:
    """p50 of |(1 - _distance) - exact cosine| over every row returned: the product takes
    ``1 - _distance`` as the cosine its relevance gate is calibrated on."""
    errors = [np.abs((1.0 - np.asarray(d)) - matrix[np.asarray(i)] @ q)
              for (i, d), q in zip(found, queries, strict=True) if i]
    return float(np.median(np.concatenate(errors))) if errors else float("nan")


@dataclass
class Row:
    size: int
    method: str
    p50: float
    recall: float | None = None
    build_s: float | None = None
    k: int = K
    ann: bool = False
    note: str = ""
    cos_err: float | None = None


@dataclass
class SizeResult:
    size: int
    numpy_p50: float
    flat_p50: float
    rows: list[Row] = field(default_factory=list)

    def best_ann(self, ok: Callable[[Row], bool] = lambda r: True) -> Row | None:
        good = [r for r in self.rows if r.ann and r.k == K and r.recall is not None
                and r.recall >= RECALL_TARGET and not np.isnan(r.p50) and ok(r)]
        return min(good, key=lambda r: r.p50) if good else None


def bench_size(size: int, synthetic: Synthetic, n_queries: int, work: Path, ivfpq: bool,
               ann_ef: int, candidates: int) -> SizeResult:
    from lancedb.index import HnswSq, IvfPq

    matrix = np.ascontiguousarray(synthetic.vectors[:size])
    queries = synthetic.queries[:n_queries]
    rounds = 3 if size <= 10_000 else 1  # the flat scan at 100k is ~0.15 s a query
    print(f"\n[{size:,} incidents] numpy exact …", flush=True)
    exact_p50, exact, threads = numpy_baseline(matrix, queries)
    _, exact_wide = p50_ms(numpy_topk(matrix, candidates), queries, warmup=0)
    result = SizeResult(size, exact_p50, 0.0)
    result.rows.append(Row(size, f"numpy exact (baseline, {threads})", exact_p50, 1.0))

    started = time.perf_counter()
    table = lance_table(work / f"t{size}", matrix)
    write_s = time.perf_counter() - started

    def measure(method: str, k: int = K, ann: bool = False, build_s: float | None = None,
                repeat: int = 3, **params: int) -> Row:
        p50, found = p50_ms(lance_search(table, k=k, **params), queries, rounds=repeat, warmup=10)
        truth = exact if k == K else exact_wide
        row = Row(size, method, p50, recall_at([ids for ids, _ in found], truth, k), build_s, k,
                  ann, cos_err=cosine_error(found, queries, matrix))
        result.rows.append(row)
        return row

    print(f"[{size:,}] lancedb flat scan …", flush=True)
    result.flat_p50 = measure("lancedb flat scan", build_s=write_s, repeat=rounds).p50
    measure(f"lancedb flat scan k={candidates} (product)", k=candidates, repeat=rounds)

    configs: list[tuple[str, Any, list[tuple[str, dict[str, int]]]]] = [
        ("hnsw-sq", HnswSq(distance_type="cosine"),
         [*[(f"ef={ef}", {"ef": ef}) for ef in sorted({50, ann_ef, 200})],
          (f"ef={ann_ef} refine=1", {"ef": ann_ef, "refine": 1})])]
    if ivfpq:
        configs.append(("ivf-pq", IvfPq(distance_type="cosine"),
                        [(f"nprobes={n} refine=10", {"nprobes": n, "refine": 10})
                         for n in (20, 50)]))
    for name, config, settings in configs:
        print(f"[{size:,}] building {name} …", flush=True)
        started = time.perf_counter()
        try:
            table.create_index("vector", config=config, replace=True)
        except Exception as exc:  # lance raises RuntimeError/ValueError/…; report, carry on
            result.rows.append(Row(size, f"lancedb {name}", float("nan"), ann=True,
                                   note=f"index build failed: {type(exc).__name__}: "
                                        f"{str(exc)[:80]}"))
            continue
        build_s = time.perf_counter() - started
        for n, (label, params) in enumerate(settings):
            measure(f"lancedb {name} {label}", ann=True, build_s=build_s if n == 0 else None,
                    **params)
        if name == "hnsw-sq":
            measure(f"lancedb {name} ef={ann_ef} k={candidates} (product)", k=candidates,
                    ann=True, ef=ann_ef)
    shutil.rmtree(work / f"t{size}", ignore_errors=True)
    return result


def print_vector_table(results: list[SizeResult]) -> None:
    print("\n== Vector search: top-k of one query, p50 over the queries ==")
    print("(×numpy and ×flat are p50 ratios within the same size; cos err = p50 of "
          "|(1 - _distance) - exact cosine|, which the product uses as its gate's cosine)")
    print(f"{'incidents':>10}  {'method':<46} {'build s':>8} {'p50 ms':>8} {'×numpy':>8} "
          f"{'×flat':>7} {'recall@k':>9} {'cos err':>8}")
    for result in results:
        for row in result.rows:
            build = f"{row.build_s:.2f}" if row.build_s is not None else "-"
            recall = f"{row.recall:.3f}" if row.recall is not None else "-"
            if row.k != K and row.recall is not None:
                recall += f"@{row.k}"
            err = f"{row.cos_err:.4f}" if row.cos_err is not None else "-"
            if np.isnan(row.p50):
                print(f"{row.size:>10,}  {row.method:<46} {'-':>8} {'-':>8} {'-':>8} {'-':>7} "
                      f"{'-':>9} {'-':>8}  {row.note}")
                continue
            print(f"{row.size:>10,}  {row.method:<46} {build:>8} {row.p50:>8.2f} "
                  f"{row.p50 / result.numpy_p50:>8.1f} {row.p50 / result.flat_p50:>7.2f} "
                  f"{recall:>9} {err:>8}")


COS_ERR_OK = 0.01  # the gate's floor is fitted to 3 decimals of cosine; beyond this it shifts


def recommend(results: list[SizeResult]) -> int | None:
    """Print where ANN pays off, under the brief's rule and under the product's gate; return
    the recommended ANN_MIN_ROWS (None: never at the sizes measured)."""
    print(f"\n== Where an ANN index pays off: smallest size where the best ANN config with "
          f"recall@{K} ≥ {RECALL_TARGET} beats the flat scan's p50 ==")
    rules: list[tuple[str, Callable[[Row], bool]]] = [
        ("recall only", lambda r: True),
        (f"recall and cos err ≤ {COS_ERR_OK} (usable by the gate)",
         lambda r: r.cos_err is not None and r.cos_err <= COS_ERR_OK)]
    smallest: dict[str, int | None] = {}
    for rule, ok in rules:
        print(f"-- {rule}")
        pays: list[int] = []
        for result in results:
            best = result.best_ann(ok)
            if best is None:
                print(f"{result.size:>10,}: no ANN configuration qualifies")
                continue
            verdict = "pays off" if best.p50 < result.flat_p50 else "does not pay off"
            print(f"{result.size:>10,}: {best.method}: p50 {best.p50:.2f} ms = "
                  f"{best.p50 / result.flat_p50:.2f}× flat, {best.p50 / result.numpy_p50:.1f}× "
                  f"numpy; recall {best.recall:.3f}, cos err {best.cos_err:.4f}, index build "
                  f"{_build_of(result, best):.1f} s → {verdict}")
            if best.p50 < result.flat_p50:
                pays.append(result.size)
        sizes = sorted(r.size for r in results)
        # The smallest size from which it pays off at every larger size measured too, so one
        # noisy size cannot set the threshold.
        first = None
        for size in reversed(sizes):
            if size not in pays:
                break
            first = size
        smallest[rule] = first
        if first is None:
            print(f"   not at the largest size measured ({max(sizes):,})")
            continue
        below = [s for s in sizes if s < first]
        if below:
            estimate = _crossover_estimate(results, max(below), first, ok)
            print(f"   pays off from {first:,} on (not at {max(below):,}); interpolating the "
                  f"flat scan between them puts the crossover near {estimate:,} — rerun with "
                  f"--sizes between them to measure it")
        else:
            print(f"   pays off already at the smallest size measured ({first:,})")
    chosen = smallest[rules[1][0]]
    if chosen is None:
        print("\nRecommended: keep the flat scan (ANN_MIN_ROWS above "
              f"{max(r.size for r in results):,})")
    else:
        print(f"\nRecommended: ANN_MIN_ROWS = {chosen:_} — and query the index with "
              f".refine_factor(1): without it HnswSq's _distance is not the cosine distance "
              f"(see cos err) and the calibrated gate would turn matches away")
    at = next((r for r in results if r.size == 100_000), None)
    if at is not None:
        for rule, ok in rules:
            best = at.best_ann(ok)
            ratio = best.p50 / at.numpy_p50 if best else float("inf")
            met = "met" if best is not None and ratio <= TARGET_RATIO_100K else "NOT met"
            print(f"Target at 100k, vector search ≤ {TARGET_RATIO_100K}× numpy exact at "
                  f"recall@{K} ≥ {RECALL_TARGET} ({rule}): "
                  f"{ratio:.2f}× ({best.method if best else 'none'}) → {met}")
    return chosen


def _build_of(result: SizeResult, row: Row) -> float:
    family = row.method.split(" ")[1]
    return next((r.build_s for r in result.rows if r.ann and r.build_s is not None
                 and r.method.split(" ")[1] == family), float("nan"))


def _crossover_estimate(results: list[SizeResult], lower: int, upper: int,
                        ok: Callable[[Row], bool]) -> int:
    """Where the flat scan's p50, linear between two measured sizes, meets the ANN p50 at the
    upper one (ANN latency barely grows with size)."""
    low = next(r for r in results if r.size == lower)
    high = next(r for r in results if r.size == upper)
    best = high.best_ann(ok)
    assert best is not None
    slope = (high.flat_p50 - low.flat_p50) / (upper - lower)
    if slope <= 0:
        return upper
    return int(min(upper, max(lower, lower + (best.p50 - low.flat_p50) / slope)))


# --------------------------------------------------------------------- hybrid recall -------

class PrecomputedEmbedder:
    """Maps known texts to the synthetic vectors; unknown texts fall back to MiniLM (counted)."""

    def __init__(self, vectors: dict[str, np.ndarray], id: str = "bench-synthetic-minilm-mix"):
        self.vectors = vectors
        self._id = id
        self.misses = 0
        self.calls = 0
        self.texts = 0
        self._fallback: Any = None

    @property
    def id(self) -> str:
        return self._id

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for n, text in enumerate(texts):
            vector = self.vectors.get(text)
            if vector is None:
                if self._fallback is None:
                    from store.minilm import MiniLMEmbedder

                    self._fallback = MiniLMEmbedder()
                self.misses += 1
                vector = self._fallback.embed([text])[0]
            out[n] = vector
        return out


def synthetic_incidents(synthetic: Synthetic, size: int) -> list[Any]:
    from store.models import Incident

    rng = np.random.default_rng(size)
    incidents = []
    for n, combo in enumerate(synthetic.combos[:size]):
        text = [synthetic.sentences[i] for i in combo]
        service = SERVICES[int(rng.integers(len(SERVICES)))]
        title = " ".join(text[0].split()[:8])
        incidents.append(Incident.model_validate({
            "id": f"SYN-{n:06d}", "title": f"{service}: {title}", "service": service,
            "symptoms": " ".join(text), "tags": ["synthetic"],
            "actions": [{"id": "A1", "action": f"Investigated {service}", "outcome": "NO_EFFECT",
                         "explanation": "Synthetic record for the benchmark"}]}))
    return incidents


def hybrid_bench(synthetic: Synthetic, sizes: list[int], n_queries: int, work: Path,
                 numpy_at: dict[int, float]) -> None:
    import store.index as store_index
    from store.embedder import EmbeddingCache
    from store.index import MemoryIndex, incident_document
    from store.loader import LoadedMemory, content_hash
    from store.minilm import MiniLMEmbedder
    from store.recall import recall
    from store.redact import REDACTION_MARKER, redact

    alerts = []
    known: dict[str, np.ndarray] = {}
    for combo, vector in zip(synthetic.query_combos[:n_queries], synthetic.queries[:n_queries],
                             strict=True):
        alert = " ".join(synthetic.sentences[i] for i in combo)
        alerts.append(alert)
        known[alert] = vector
        known[REDACTION_MARKER.sub(" ", redact(alert).text)] = vector
    lines: list[HybridLine] = []
    product_ann_error: str | None = None
    for size in sizes:
        incidents = synthetic_incidents(synthetic, size)
        for incident, vector in zip(incidents, synthetic.vectors[:size], strict=True):
            known[incident_document(incident)] = vector
        memory = LoadedMemory(incidents, [], content_hash(incidents))
        if size == sizes[0] and size < store_index.ANN_MIN_ROWS:
            product_ann_error = _product_ann_build(memory, known, work / f"forced-{size}")
        embedder = PrecomputedEmbedder(known)
        data = work / f"hybrid-{size}"
        index = MemoryIndex(data, embedder, EmbeddingCache(data / "embeddings.sqlite"))
        print(f"\n[hybrid {size:,}] MemoryIndex.build …", flush=True)
        label = f"as shipped (ANN_MIN_ROWS={store_index.ANN_MIN_ROWS:_})"
        started = time.perf_counter()
        try:
            index.build(memory)
        except Exception as exc:  # report what the product raises, carry on
            lines.append(HybridLine(size, label, False, time.perf_counter() - started,
                                    error=f"build failed: {type(exc).__name__}: {str(exc)[:90]}"))
            shutil.rmtree(data, ignore_errors=True)
            continue
        build_s = time.perf_counter() - started
        shipped_ann = bool(index.meta and index.meta.ann)
        lines.append(HybridLine(size, label, shipped_ann, build_s,
                                *_recall_p50(recall, index, alerts)))
        if not shipped_ann and index.meta is not None:
            # What the product would do with ANN on: HnswSq(cosine) on its own table, queried
            # by its own search() with .ef(ANN_EF) — then the same with .refine_factor(1) added.
            from lancedb.index import HnswSq

            print(f"[hybrid {size:,}] adding HnswSq(cosine) to the product's table …", flush=True)
            table = index._table
            started = time.perf_counter()
            table.create_index("vector", config=HnswSq(distance_type="cosine"))
            ann_s = time.perf_counter() - started
            index.meta = index.meta.model_copy(update={"ann": True})
            lines.append(HybridLine(size, f"+ HnswSq, product query (ef={store_index.ANN_EF})",
                                    True, ann_s, *_recall_p50(recall, index, alerts)))
            index._table = RefiningTable(table)
            lines.append(HybridLine(size, "+ HnswSq, query + .refine_factor(1)", True, None,
                                    *_recall_p50(recall, index, alerts)))
        misses = embedder.misses
        if misses:
            print(f"  ({misses} texts were not in the precomputed map and went to MiniLM)")
        shutil.rmtree(data, ignore_errors=True)

    minilm = MiniLMEmbedder()
    minilm.embed(alerts[:2])
    embed_times = []
    for alert in alerts[:20]:
        started = time.perf_counter()
        minilm.embed([alert])
        embed_times.append(time.perf_counter() - started)
    embed_p50 = statistics.median(embed_times) * 1000

    print("\n== Hybrid recall through the product: store.recall.recall(index, alert), p50 ==")
    print("(the alert's vector comes from the precomputed map, so MiniLM's own time is not in "
          "these figures; it is shown last for scale. 'same as flat': share of the flat index's "
          "ranked top-10 found, and share of alerts whose gated incidents are identical)")
    print(f"{'incidents':>10}  {'index':<38} {'ann':>4} {'build s':>8} {'p50 ms':>8} "
          f"{'×numpy exact':>13} {'top-10 same':>12} {'gate same':>10}")
    flat = {line.size: line for line in lines if not line.ann and not line.error}
    for line in lines:
        if line.error:
            print(f"{line.size:>10,}  {line.label:<38} {'-':>4} {line.build_s:>8.2f}  {line.error}")
            continue
        top_same = gate_same = "-"
        if line.ann and line.size in flat:
            base_line = flat[line.size]
            top_same = f"{recall_at(_int_ids(line.tops), _int_ids(base_line.tops), K):.3f}"
            gate_same = f"{np.mean([a == b for a, b in zip(line.gated, base_line.gated, strict=True)]):.2f}"
        base = numpy_at.get(line.size)
        ratio = f"{line.p50 / base:.0f}" if base else "-"
        build = f"{line.build_s:.2f}" if line.build_s is not None else "-"
        print(f"{line.size:>10,}  {line.label:<38} {'yes' if line.ann else 'no':>4} {build:>8} "
              f"{line.p50:>8.2f} {ratio:>13} {top_same:>12} {gate_same:>10}")
    print(f"{'':>10}  {'MiniLM embed of one alert (for scale)':<38} {'':>4} {'':>8} "
          f"{embed_p50:>8.2f}")
    if product_ann_error is not None:
        print("\n!! MemoryIndex.build's own ANN path FAILS (ANN_MIN_ROWS lowered to 0 in-process): "
              f"{product_ann_error[:200]}")
        if "not found in schema" in product_ann_error:
            print("   store/index.py calls table.create_index(config=HnswSq(...)) without the column: "
                  "the sync API's first parameter is then the column name and defaults to 'l2'. "
                  "Every build at ≥ ANN_MIN_ROWS incidents would raise. The '+ HnswSq' rows above "
                  "create the index with create_index(\"vector\", config=...).")
    elif sizes and sizes[0] < store_index.ANN_MIN_ROWS:
        print("\nMemoryIndex.build's own ANN path (ANN_MIN_ROWS lowered to 0 in-process) built fine.")


@dataclass
class HybridLine:
    size: int
    label: str
    ann: bool
    build_s: float | None
    p50: float = float("nan")
    tops: list[list[str]] = field(default_factory=list)
    gated: list[tuple[str, ...]] = field(default_factory=list)
    error: str = ""


class RefiningTable:
    """The product's LanceDB table with ``.refine_factor(1)`` added to every vector query:
    what the fix would look like, measured without editing store/."""

    def __init__(self, table: Any) -> None:
        self._inner = table

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def search(self, *args: Any, **kwargs: Any) -> Any:
        query = self._inner.search(*args, **kwargs)
        return query.refine_factor(1) if kwargs.get("query_type") == "vector" else query


def _recall_p50(recall: Callable[..., Any], index: Any, alerts: list[str], rounds: int = 3,
                ) -> tuple[float, list[list[str]], list[tuple[str, ...]]]:
    for alert in alerts[:3]:
        recall(index, alert)
    times: list[float] = []
    tops: list[list[str]] = []
    gated: list[tuple[str, ...]] = []
    for r in range(rounds):
        for alert in alerts:
            started = time.perf_counter()
            found = recall(index, alert)
            times.append(time.perf_counter() - started)
            if r == rounds - 1:
                tops.append([ranked.incident_id for ranked in found.ranked[:K]])
                gated.append(tuple(i.incident_id for i in found.incidents))
    return statistics.median(times) * 1000, tops, gated


def _product_ann_build(memory: Any, known: dict[str, np.ndarray], data: Path) -> str | None:
    """MemoryIndex.build exactly as shipped, with ANN_MIN_ROWS lowered in this process only."""
    import store.index as store_index
    from store.embedder import EmbeddingCache

    saved = store_index.ANN_MIN_ROWS
    store_index.ANN_MIN_ROWS = 0
    print(f"\n[hybrid {len(memory.incidents):,}] MemoryIndex.build with ANN_MIN_ROWS=0 "
          "(the product's own ANN path) …", flush=True)
    try:
        index = store_index.MemoryIndex(data, PrecomputedEmbedder(known),
                                        EmbeddingCache(data / "embeddings.sqlite"))
        index.build(memory)
        return None
    except Exception as exc:  # report whatever the product raises
        return f"{type(exc).__name__}: {exc}"
    finally:
        store_index.ANN_MIN_ROWS = saved
        shutil.rmtree(data, ignore_errors=True)


def _int_ids(tops: list[list[str]]) -> list[list[int]]:
    return [[int(i.split("-")[1]) for i in top] for top in tops]


# ------------------------------------------------------------------------------- main ------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000",
                        help="incident counts for the vector table (comma-separated)")
    parser.add_argument("--hybrid-sizes", default="1000,10000",
                        help="incident counts for hybrid recall through MemoryIndex ('' = skip)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--sentences", type=Path, default=None,
                        help=f"incidents file to take sentences from (default {SHARED_SENTENCES}, "
                             "else the bundled incidents.yaml)")
    parser.add_argument("--no-ivfpq", action="store_true", help="skip the IVF-PQ index")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    hybrid_sizes = sorted({int(s) for s in args.hybrid_sizes.split(",") if s.strip()})
    for name in ("OLLAMA_HOST", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL"):
        os.environ.pop(name, None)

    from store.index import ANN_EF
    from store.recall import CANDIDATES

    began = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures are "
          "only comparable within this run)")
    sentences, source = load_sentences(args.sentences)
    print(f"embedding {len(sentences)} sentences from {source} with MiniLM …", flush=True)
    base = embed_sentences(sentences)
    largest = max(sizes + hybrid_sizes)
    synthetic = synthesise(sentences, base, largest, args.queries, seed=args.seed)
    nn = synthetic.vectors[:min(largest, 10_000)] @ synthetic.queries.T
    print(f"{largest:,} incident vectors, {args.queries} held-out queries; query→nearest "
          f"incident cosine p50 {np.median(nn.max(axis=0)):.3f} (random vectors would be ~0.2)")
    _lancedb()

    work = Path(tempfile.mkdtemp(prefix="vector-bench-"))
    try:
        results = [bench_size(size, synthetic, args.queries, work, not args.no_ivfpq, ANN_EF,
                              CANDIDATES) for size in sizes]
        print_vector_table(results)
        recommend(results)
        if hybrid_sizes:
            numpy_at = {r.size: r.numpy_p50 for r in results}
            for size in hybrid_sizes:
                if size not in numpy_at:
                    matrix = np.ascontiguousarray(synthetic.vectors[:size])
                    numpy_at[size] = p50_ms(numpy_topk(matrix), synthetic.queries, rounds=5)[0]
            hybrid_bench(synthetic, hybrid_sizes, min(args.queries, 40), work, numpy_at)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\ntotal {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
