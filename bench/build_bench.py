"""Index build with real MiniLM embeddings, incremental updates, and alert → briefing latency.

    .venv/bin/python bench/build_bench.py [--incidents 2500] [--actions 4] [--alerts 20]

A synthetic memory of 2,500 incidents × 4 actions (≈10k actions) is composed by recombining
sentences read at run time from ../shared/eval/postmortems/incidents.yaml (or --sentences
FILE; nothing from it is stored here), so each incident document is ~60–150 tokens. It is
written to an incidents.yaml in a temp dir with yaml.safe_dump and measured through the
product: MemoryIndex.build with an empty embedding cache, a rebuild after editing one
incident (warm cache: one document re-embedded), update_incident for single edits, then
TriageEngine.brief (guarded deterministic briefing: no model configured).

Every figure is printed beside a baseline measured in the same run, as a ratio (one MiniLM
embed call of one batch; the cold build; one single-document embed; recall alone), because
these machines are noisy. The brief's absolute targets are shown for reference only.
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
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from vector_bench import SERVICES, SHARED_SENTENCES, load_sentences  # noqa: E402

OUTCOMES = ["NO_EFFECT", "MITIGATED", "WORSENED", "RESOLVED"]
ACTIONS = [
    "Restarted the {s} pods one zone at a time",
    "Rolled back the last {s} deploy to the previous release",
    "Failed the {s} primary database over to the replica",
    "Scaled {s} out from 6 to 12 replicas",
    "Flushed the {s} cache and warmed it from the snapshot",
    "Raised the {s} connection pool limit from 50 to 200",
    "Drained the unhealthy {s} node and cordoned it",
    "Disabled the new {s} feature flag for all tenants",
    "Throttled the {s} batch jobs to a quarter of their rate",
    "Rotated the expired {s} TLS certificate",
    "Paused the {s} consumer group and replayed from the last offset",
    "Pinned {s} traffic to the healthy region",
]
TARGET_BUILD_S, TARGET_UPDATE_S, TARGET_BRIEF_MS = 60.0, 2.0, 100.0


def compose_memory(sentences: list[str], incidents: int, actions: int, seed: int,
                   ) -> list[dict[str, Any]]:
    """Incident dicts whose symptoms recombine 2–6 sentences to 35–90 words, so a document
    (title, service line, symptoms) is ~60–150 word pieces."""
    rng = np.random.default_rng(seed)
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    while len(found) < incidents:
        n = len(found)
        service = SERVICES[int(rng.integers(len(SERVICES)))]
        target = int(rng.integers(35, 91))
        picked: list[str] = []
        for i in rng.permutation(len(sentences)):
            if sum(len(s.split()) for s in picked) >= target or len(picked) == 6:
                break
            if sum(len(s.split()) for s in picked) + len(sentences[i].split()) <= 90:
                picked.append(sentences[i])
        symptoms = " ".join(picked)
        if symptoms in seen or len(picked) < 2:
            continue
        seen.add(symptoms)
        found.append({
            "id": f"INC-{20000 + n}",
            "title": f"{service}: {' '.join(picked[0].split()[:7])}",
            "service": service,
            "severity": ["SEV1", "SEV2", "SEV3"][n % 3],
            "symptoms": symptoms,
            "tags": ["synthetic", service],
            "actions": [{
                "id": f"A{a + 1}",
                "action": ACTIONS[int(rng.integers(len(ACTIONS)))].format(s=service),
                "outcome": OUTCOMES[(n + a) % len(OUTCOMES)],
                "explanation": sentences[int(rng.integers(len(sentences)))],
            } for a in range(actions)],
        })
    return found


def write_memory(path: Path, incidents: list[Any]) -> None:
    data = [i.model_dump(mode="json", exclude_none=True) for i in incidents]
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100),
                    encoding="utf-8")


def token_counts(texts: list[str]) -> list[int] | None:
    """Word-piece counts with MiniLM's tokenizer (None if its tokenizer.json cannot be found)."""
    import importlib.util

    from tokenizers import Tokenizer

    try:
        if os.environ.get("TRIAGE_EMBEDDER_WEIGHTS"):
            path = Path(os.environ["TRIAGE_EMBEDDER_WEIGHTS"]).expanduser()
        else:
            spec = importlib.util.find_spec("all_minilm_l6_v2")
            assert spec is not None and spec.origin is not None
            path = Path(spec.origin).parent / "model.zip"
        if path.is_dir():
            tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        else:
            with zipfile.ZipFile(path) as archive:
                name = next(n for n in archive.namelist() if n.endswith("tokenizer.json"))
                tokenizer = Tokenizer.from_str(archive.read(name).decode("utf-8"))
    except Exception:  # only a report line depends on it
        return None
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return [len(e.ids) for e in tokenizer.encode_batch(texts)]


class CountingEmbedder:
    """The product's MiniLM, counting what it is asked to embed (same id: same cache keys)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.texts = 0
        self.calls = 0

    @property
    def id(self) -> str:
        return str(self.inner.id)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)


class Progress:
    """Prints embedding progress about every 10 % (and at the end)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = time.perf_counter()
        self.next_share = 0.0
        self.finished_at: float | None = None

    def __call__(self, done: int, total: int) -> None:
        share = done / total if total else 1.0
        elapsed = time.perf_counter() - self.started
        if done == total and self.finished_at is None:
            self.finished_at = elapsed
        if share >= self.next_share or done == total:
            rate = done / elapsed if elapsed > 0 else 0.0
            print(f"  {self.label}: {done:>5,}/{total:,} documents ({share:6.1%}) "
                  f"{elapsed:6.1f} s  {rate:6.1f} docs/s", flush=True)
            self.next_share = share + 0.1


def p50(fn: Callable[[], Any], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def edited(incident: Any, sentence: str) -> Any:
    from store.models import Incident

    data = incident.model_dump(mode="json", exclude_none=True)
    data["symptoms"] = f"{data['symptoms']} {sentence}"
    return Incident.model_validate(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--incidents", type=int, default=2500)
    parser.add_argument("--actions", type=int, default=4, help="actions per incident")
    parser.add_argument("--alerts", type=int, default=20, help="distinct alerts for the p50")
    parser.add_argument("--updates", type=int, default=5, help="single-incident updates timed")
    parser.add_argument("--sentences", type=Path, default=None,
                        help=f"incidents file to take sentences from (default {SHARED_SENTENCES})")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and print it")
    args = parser.parse_args()
    for name in ("OLLAMA_HOST", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL", "TRIAGE_OFFLINE"):
        os.environ.pop(name, None)
    os.environ.setdefault("LANCEDB_LOG", "error")

    from console.engine.briefing.alert import parse_alert
    from console.engine.config import Settings
    from console.engine.engine import TriageEngine
    from store.embedder import EmbeddingCache
    from store.index import MemoryIndex, incident_document
    from store.loader import LoadedMemory, content_hash, load_incidents
    from store.minilm import MiniLMEmbedder
    from store.recall import recall

    began = time.perf_counter()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (figures are "
          "only comparable within this run)")
    every, source = load_sentences(args.sentences)
    rng = np.random.default_rng(args.seed + 1)
    # A tenth of the sentences never enter the memory: the "new" alerts and the edits use them.
    order = rng.permutation(len(every))
    held = [every[int(i)] for i in order[:len(every) // 10]]
    sentences = [every[int(i)] for i in order[len(every) // 10:]]
    work = Path(tempfile.mkdtemp(prefix="build-bench-"))
    path, data_dir = work / "incidents.yaml", work / "data"
    rows: list[tuple[str, str, str, str]] = []  # (what, measured, baseline, ratio)
    try:
        raw = compose_memory(sentences, args.incidents, args.actions, args.seed)
        path.write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True, width=100),
                        encoding="utf-8")
        started = time.perf_counter()
        memory = load_incidents(path)
        load_s = time.perf_counter() - started
        text = path.read_text(encoding="utf-8")
        parse_s = p50(lambda: yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)),
                      3)
        quarter = work / "quarter.yaml"
        quarter.write_text(yaml.safe_dump(raw[:len(raw) // 4], sort_keys=False, allow_unicode=True,
                                          width=100), encoding="utf-8")
        quarter_s = p50(lambda: load_incidents(quarter), 3)
        rows.append((f"load_incidents, {len(raw):,} incidents", f"{load_s:.2f} s",
                     f"{parse_s:.2f} s (yaml CSafeLoader, same file)", f"{load_s / parse_s:.1f}×"))
        rows.append((f"load_incidents scaling, {len(raw):,} vs {len(raw) // 4:,}",
                     f"{load_s:.2f} s", f"{quarter_s:.2f} s (a quarter of the incidents)",
                     f"{load_s / quarter_s:.1f}× (linear would be ~4×)"))
        documents = [incident_document(i) for i in memory.incidents]
        tokens = token_counts(documents)
        size = (f"tokens p5/p50/p95 {np.percentile(tokens, 5):.0f}/{np.median(tokens):.0f}/"
                f"{np.percentile(tokens, 95):.0f}" if tokens else "tokens unknown")
        print(f"memory: {len(memory.incidents):,} incidents, {memory.action_count:,} actions, "
              f"{path.stat().st_size / 1e6:.1f} MB YAML (load_incidents {load_s:.2f} s); "
              f"documents {size}; sentences from {source}")

        minilm = MiniLMEmbedder()
        reason = minilm.available()
        if reason is not None:
            raise SystemExit(f"MiniLM unavailable: {reason}")
        # Baseline: one embed call of one batch as embed_cached sends it (64 documents, a
        # random sample of the memory's), straight to the model: the cache stays empty.
        sample = [documents[int(i)] for i in rng.choice(len(documents), 64, replace=False)]
        minilm.embed(sample[:8])  # loads the model

        def batch_rate_now() -> float:
            started = time.perf_counter()
            minilm.embed(sample)
            return 64 / (time.perf_counter() - started)

        rate_before = batch_rate_now()
        single_s = p50(lambda: minilm.embed([sample[1]]), 5)

        # 1. Cold build: empty cache, every document embedded.
        embedder = CountingEmbedder(minilm)
        index = MemoryIndex(data_dir, embedder, EmbeddingCache(data_dir / "embeddings.sqlite"))
        print(f"\ncold build of {len(documents):,} documents (empty embedding cache):")
        progress = Progress("embedding")
        started = time.perf_counter()
        index.build(memory, progress=progress)
        build_s = time.perf_counter() - started
        embed_s = progress.finished_at or build_s
        rate = len(documents) / build_s
        print(f"  done: {build_s:.1f} s wall ({embed_s:.1f} s embedding, "
              f"{build_s - embed_s:.1f} s table + FTS + meta); embedded {embedder.texts:,} texts")
        rate_after = batch_rate_now()  # the baseline before and after: the machine drifts
        batch_rate = (rate_before + rate_after) / 2
        print(f"  baseline, one 64-document embed call: {rate_before:.1f} docs/s before the build, "
              f"{rate_after:.1f} after")
        rows.append((f"cold build, {len(documents):,} docs (docs/s)", f"{rate:.1f} docs/s",
                     f"{batch_rate:.1f} docs/s (one 64-doc embed call)*",
                     f"{rate / batch_rate:.2f}× throughput"))
        rows.append(("cold build wall time", f"{build_s:.1f} s",
                     f"{len(documents) / batch_rate:.1f} s (docs ÷ batch rate)",
                     f"{build_s / (len(documents) / batch_rate):.2f}×"))

        # 2. Rebuild after editing one incident: the warm cache must leave one document.
        incidents = list(memory.incidents)
        target = int(rng.integers(len(incidents)))
        incidents[target] = edited(incidents[target], held[0])
        memory = LoadedMemory(incidents, memory.files, content_hash(incidents))
        embedder.texts = embedder.calls = 0
        print("\nrebuild after editing one incident (warm cache):")
        progress = Progress("embedding")
        started = time.perf_counter()
        index.build(memory, progress=progress)
        rebuild_s = time.perf_counter() - started
        flag = "" if embedder.texts == 1 else f"  !! expected 1 — cache missed {embedder.texts - 1}"
        print(f"  done: {rebuild_s:.2f} s; re-embedded {embedder.texts} document(s){flag}")
        rows.append(("rebuild after 1 edit (warm cache)", f"{rebuild_s:.2f} s "
                     f"({embedder.texts} embedded)", f"{build_s:.1f} s (cold build)",
                     f"{rebuild_s / build_s:.3f}×"))

        # 3. update_incident: one edited incident at a time.
        print(f"\nupdate_incident × {args.updates}:")
        times, embedded = [], []
        for n in range(args.updates):
            target = int(rng.integers(len(incidents)))
            previous = incidents[target]
            incidents[target] = edited(previous, held[(n + 1) % len(held)])
            memory = LoadedMemory(incidents, memory.files, content_hash(incidents))
            embedder.texts = 0
            started = time.perf_counter()
            notices = index.update_incident(memory, previous.id, previous)
            times.append(time.perf_counter() - started)
            embedded.append(embedder.texts)
            print(f"  {previous.id}: {times[-1] * 1000:7.1f} ms, embedded {embedder.texts}"
                  + (f", {'; '.join(notices)}" if notices else ""))
        update_s = statistics.median(times)
        rows.append((f"update_incident p50 (×{args.updates})", f"{update_s * 1000:.0f} ms "
                     f"(embedded {max(embedded)} max)", f"{single_s * 1000:.0f} ms (embed of 1 doc)",
                     f"{update_s / single_s:.1f}×"))

        # 4. The engine on that memory: load (index fresh), save_incident, brief.
        write_memory(path, incidents)
        engine = TriageEngine(Settings(incidents_path=path, data_dir=data_dir))
        started = time.perf_counter()
        status = engine.load()
        engine_load_s = time.perf_counter() - started
        rows.append(("TriageEngine.load (index fresh)", f"{engine_load_s:.2f} s",
                     f"{load_s:.2f} s (load_incidents)", f"{engine_load_s / load_s:.2f}×"))
        print(f"\nTriageEngine.load: {engine_load_s:.2f} s, index {status.index}, "
              f"model {status.model}" + (f", notices {status.notices}" if status.notices else ""))
        save_times = []
        for n in range(3):
            assert engine.memory is not None
            previous = engine.memory.incidents[int(rng.integers(len(engine.memory.incidents)))]
            started = time.perf_counter()
            engine.save_incident(edited(previous, held[(n + 10) % len(held)]))
            save_times.append(time.perf_counter() - started)
        save_s = statistics.median(save_times)
        rows.append(("engine.save_incident p50 (×3: write+reload+update)",
                     f"{save_s * 1000:.0f} ms", f"{update_s * 1000:.0f} ms (update_incident)",
                     f"{save_s / update_s:.1f}×"))

        assert engine.memory is not None and engine.index is not None
        alerts = []
        for n in range(args.alerts):
            if n % 2 == 0:  # a recurrence: two sentences of a remembered incident
                incident = engine.memory.incidents[int(rng.integers(len(engine.memory.incidents)))]
                parts = re.split(r"(?<=[.!?])\s+", incident.symptoms)[:2]
                alerts.append(f"[FIRING:1] {incident.service} — {' '.join(parts)}")
            else:  # something new: sentences no incident was composed from
                picks = rng.choice(len(held), size=2, replace=False)
                alerts.append(f"[FIRING:1] {SERVICES[n % len(SERVICES)]} — "
                              + " ".join(held[int(i)] for i in picks))
        parsed = [parse_alert(a) for a in alerts]
        for alert in parsed[:3]:
            engine.brief(alert)
        recall_times, brief_times, sources = [], [], set()
        found = {"recurrence": 0, "new": 0}
        for _ in range(3):
            for n, alert in enumerate(parsed):
                started = time.perf_counter()
                recalled = recall(engine.index, alert.text)
                recall_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                briefing = engine.brief(alert).briefing
                brief_times.append(time.perf_counter() - started)
                sources.add(f"{briefing.source}/{briefing.state}")
                found["recurrence" if n % 2 == 0 else "new"] += bool(recalled.incidents)
        recall_ms = statistics.median(recall_times) * 1000
        brief_ms = statistics.median(brief_times) * 1000
        kinds = {"recurrence": (len(parsed) + 1) // 2, "new": len(parsed) // 2}
        print(f"briefings: {len(parsed)} alerts × 3, states {sorted(sources)}; a prior incident "
              f"recalled for {found['recurrence'] / max(1, 3 * kinds['recurrence']):.0%} of "
              f"recurrences and {found['new'] / max(1, 3 * kinds['new']):.0%} of new alerts")
        if any(not s.startswith("deterministic") for s in sources):
            print("  !! a briefing did not come from the deterministic path: is a model configured?")
        rows.append((f"alert → briefing p50 ({memory.action_count:,} actions)",
                     f"{brief_ms:.1f} ms", f"{recall_ms:.1f} ms (recall alone)",
                     f"{brief_ms / recall_ms:.2f}×"))
        rows.append(("recall alone p50 (incl. MiniLM embed of the alert)", f"{recall_ms:.1f} ms",
                     f"{single_s * 1000:.1f} ms (embed of 1 doc)",
                     f"{recall_ms / (single_s * 1000):.2f}×"))

        print("\n== Build, update and briefing (ratios against baselines from this run) ==")
        width = max(len(r[0]) for r in rows)
        print(f"{'measurement':<{width}}  {'measured':<24} {'baseline':<38} ratio")
        for what, measured, baseline, ratio in rows:
            print(f"{what:<{width}}  {measured:<24} {baseline:<38} {ratio}")
        print("* mean of the rate measured just before and just after the cold build")
        print(f"\nbrief's absolute targets, for reference on this (noisy) machine: "
              f"cold build {build_s:.1f} s vs ≤ {TARGET_BUILD_S:.0f} s "
              f"({'met' if build_s <= TARGET_BUILD_S else 'NOT met'}); update_incident "
              f"{update_s:.2f} s vs ≤ {TARGET_UPDATE_S:.0f} s "
              f"({'met' if update_s <= TARGET_UPDATE_S else 'NOT met'}); briefing {brief_ms:.0f} ms "
              f"vs ≤ {TARGET_BRIEF_MS:.0f} ms ({'met' if brief_ms <= TARGET_BRIEF_MS else 'NOT met'})")
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
