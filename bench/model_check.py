"""`make model-check`: the console's real model path, measured with a real local model.

    python bench/model_check.py [--limit N] [--only a|b|c|n] [--max-minutes 45]
    python bench/model_check.py --compare RUN_A.json RUN_B.json

1. installs the runtime and the weights into ``$TRIAGE_MODEL_CACHE`` (tests/realmodel/install.py;
   default ~/.cache/triage-model-check), checked by sha256;
2. starts tests/realmodel/harness.py (Ollama's API over llama-cpp-python, one thread) on a free
   port of 127.0.0.1;
3. briefs a FIXED alert set with ``triage brief --json`` as a subprocess, twice per alert: with
   OLLAMA_HOST/TRIAGE_MODEL (the model path) and with TRIAGE_OFFLINE=1 (the deterministic
   verdict to compare with). Groups: a, b and n from tests/realmodel/alerts.yaml (acceptance
   alerts, paraphrases, NO PRIOR INCIDENT) over the bundled memory; c the dev-set alerts
   DEV_QIDS over a derived copy of ../shared/eval/postmortems (one RESOLVED action per
   incident, bench/applicability_eval.derive), read at run time — never copied into the repo.
   One index per memory, built once in a temporary data dir and copied per brief (each brief
   starts from the same state);
4. prints the table and writes the run to ``$TRIAGE_MODEL_CACHE/runs/<UTC timestamp>.json``
   (the harness's per-request log beside it), so runs compare (--compare).

Every brief is sequential and the model uses one thread (../shared/REAL_MODEL.md: two threads
collapse under load). --max-minutes stops starting alerts once the run has taken that long; the
alerts not run are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.applicability_eval import SHARED, derive  # noqa: E402
from tests.realmodel import install as installer  # noqa: E402
from tests.realmodel.launch import MODEL_NAME, Harness  # noqa: E402

ALERTS = REPO / "tests" / "realmodel" / "alerts.yaml"
# Dev-set alerts (queries.yaml qids) that recall incidents over the derived memory: a mix of
# PROVEN and unproven, one to seven records.
DEV_QIDS = ("P01", "P02", "P12", "P13", "P29", "P33", "X01")
# One moment for every brief (TRIAGE_NOW), so evidence ages the same in every run.
NOW = "2026-12-02T12:00:00Z"
TRIAGE = REPO / ".venv" / "bin" / "triage"


# ------------------------------------------------------------------------------ alert set

def load_alerts(only: str | None) -> list[dict[str, Any]]:
    bundled = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))
    items = [dict(a, memory="bundled") for a in bundled]
    dev: list[dict[str, Any]] = []
    queries = SHARED / "queries.yaml"
    if queries.exists():
        by_qid = {q["qid"]: q for q in yaml.safe_load(queries.read_text(encoding="utf-8"))}
        for qid in DEV_QIDS:
            if qid in by_qid:
                dev.append({"id": f"c-{qid}", "group": "c", "expect": "model", "memory": "dev",
                            "alert": " ".join(by_qid[qid]["alert"].split())})
    else:
        print(f"(group c skipped: {queries} not found)", file=sys.stderr)
    # the model alerts first (a, b, c), the NO PRIOR INCIDENT ones last
    ordered = ([a for a in items if a["group"] != "n"] + dev + [a for a in items
                                                              if a["group"] == "n"])
    return [a for a in ordered if only is None or a["group"] == only]


def code_state() -> dict[str, str]:
    """The commit and any uncommitted change under console/ and store/ (other work in the tree
    changes what a run measures: each brief imports the code afresh)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO)
        return done.stdout.strip()
    return {"commit": git("rev-parse", "HEAD"),
            "dirty": git("status", "--porcelain", "--", "console", "store")}


def base_env(data_dir: Path, incidents: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRIAGE_", "OLLAMA_", "AWS_"))}
    env.update(TRIAGE_DATA_DIR=str(data_dir), TRIAGE_INCIDENTS=str(incidents), TRIAGE_NOW=NOW)
    return env


def build_index(data_dir: Path, incidents: Path) -> None:
    done = subprocess.run([str(TRIAGE), "index"], env=base_env(data_dir, incidents),
                          capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"triage index failed for {incidents}: {done.stderr[-1500:]}")


def brief(alert: str, index_dir: Path, scratch: Path, incidents: Path,
          extra: dict[str, str]) -> tuple[dict[str, Any] | None, float, str]:
    """(the briefing JSON or None, wall seconds, stderr tail) on a fresh copy of the index."""
    data_dir = scratch / f"data-{time.monotonic_ns()}"
    shutil.copytree(index_dir, data_dir)
    started = time.monotonic()
    done = subprocess.run([str(TRIAGE), "brief", "--json", alert],
                          env={**base_env(data_dir, incidents), **extra},
                          capture_output=True, text=True, cwd=REPO)
    wall = time.monotonic() - started
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    shutil.rmtree(data_dir, ignore_errors=True)
    return out, wall, (done.stderr or "")[-800:] if done.returncode or out is None else ""


def verdict(out: dict[str, Any] | None) -> dict[str, Any]:
    if out is None:
        return {"state": None, "lead": None, "warnings": []}
    recs = out.get("recommendations") or []
    lead = (recs[0].get("evidence") or [{}])[0].get("action_id") if recs else None
    return {"state": out.get("state"), "lead": lead,
            "warnings": sorted({w.get("action_id") for w in out.get("warnings") or []
                                if w.get("action_id")})}


def outcome(out: dict[str, Any] | None, expect: str) -> str:
    if out is None:
        return "error"
    attempts = out.get("attempts") or []
    if out.get("source") == "model":
        accepted = [a["n"] for a in attempts if a.get("result") == "accepted"]
        return f"accepted@{accepted[0] if accepted else '?'}"
    if not attempts:
        return "not-asked"
    return "fallback"


def fallback_reason(degraded: str | None) -> str:
    """The degraded text without its figures, so the same reason groups."""
    if not degraded:
        return "(none)"
    return re.sub(r"(?<![\w.:])\d+(\.\d+)?", "N", degraded)[:140]


def record(item: dict[str, Any], det: dict[str, Any] | None, det_wall: float,
           mod: dict[str, Any] | None, mod_wall: float, window: tuple[float, float],
           error: str) -> dict[str, Any]:
    dv, mv = verdict(det), verdict(mod)
    guard = (mod or {}).get("guard_log") or []
    rejections = [g for g in guard if str(g.get("detail", "")).startswith("attempt ")]
    interventions = [g for g in guard if g not in rejections]
    return {
        "id": item["id"], "group": item["group"], "expect": item["expect"],
        "memory": item["memory"], "alert": item["alert"],
        "outcome": outcome(mod, item["expect"]),
        "wall_s": round(mod_wall, 2), "deterministic_wall_s": round(det_wall, 2),
        "window": window,
        "source": (mod or {}).get("source"), "degraded": (mod or {}).get("degraded"),
        "attempts": (mod or {}).get("attempts") or [],
        "guard_log": guard,
        "rejection_rules": [g["rule"] for g in rejections],
        "intervention_rules": [g["rule"] for g in interventions],
        "claims_removed": sum(1 for g in interventions
                              if any(w in str(g.get("detail", "")).lower()
                                     for w in ("dropped", "removed"))),
        "confidence": (mod or {}).get("confidence"),
        "summary": (mod or {}).get("summary"), "likely_cause": (mod or {}).get("likely_cause"),
        "model": mv, "deterministic": dv,
        "deterministic_degraded": (det or {}).get("degraded"),
        "same_state": mv["state"] == dv["state"], "same_lead": mv["lead"] == dv["lead"],
        "same_warnings": mv["warnings"] == dv["warnings"],
        "recalled": len((det or {}).get("recalled") or []),
        "error": error,
    }


def attach_requests(rows: list[dict[str, Any]], log: Path) -> None:
    """Each harness request to the brief whose wall-clock window it was received in."""
    entries = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] \
        if log.exists() else []
    for row in rows:
        start, end = row["window"]
        row["requests"] = [
            {k: e.get(k) for k in ("result", "prompt_eval_count", "eval_count", "total_duration",
                                   "prompt_eval_duration", "eval_duration", "done_reason",
                                   "prompt_chars", "grammar")}
            | {"output": e.get("output", "")}
            for e in entries if start <= e.get("received", 0) <= end]


# ------------------------------------------------------------------------------ the table

def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q
    low, high = int(k), min(int(k) + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (k - low)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    asked = [r for r in rows if r["expect"] == "model"]
    outcomes = Counter(r["outcome"] for r in asked)
    walls = [r["wall_s"] for r in asked if r["outcome"] != "error"]
    prompt = [q["prompt_eval_count"] for r in asked for q in r.get("requests", [])
              if q.get("prompt_eval_count")]
    output = [q["eval_count"] for r in asked for q in r.get("requests", [])
              if q.get("result") == "done"]
    no_prior = [r for r in rows if r["expect"] == "no-prior"]
    model_rows = [r for r in asked if r["outcome"].startswith("accepted")]
    return {
        "alerts_model": len(asked),
        "accepted_1": outcomes.get("accepted@1", 0), "accepted_2": outcomes.get("accepted@2", 0),
        "accepted_3": outcomes.get("accepted@3", 0), "fallback": outcomes.get("fallback", 0),
        "not_asked_unexpectedly": outcomes.get("not-asked", 0), "errors": outcomes.get("error", 0),
        "fallback_reasons": dict(Counter(fallback_reason(r["degraded"]) for r in asked
                                         if r["outcome"] == "fallback")),
        "rejections_by_rule": dict(Counter(x for r in asked for x in r["rejection_rules"])),
        "interventions_by_rule": dict(Counter(x for r in asked
                                              for x in r["intervention_rules"])),
        "claims_removed": sum(r["claims_removed"] for r in asked),
        "latency_p50_s": round(pct(walls, 0.5), 1), "latency_p90_s": round(pct(walls, 0.9), 1),
        "requests": sum(len(r.get("requests", [])) for r in asked),
        "prompt_tokens_mean": round(statistics.mean(prompt)) if prompt else None,
        "prompt_tokens_max": max(prompt) if prompt else None,
        "output_tokens_mean": round(statistics.mean(output)) if output else None,
        "output_tokens_max": max(output) if output else None,
        "same_state": sum(r["same_state"] for r in asked),
        "same_lead": sum(r["same_lead"] for r in asked),
        "same_warnings": sum(r["same_warnings"] for r in asked),
        "accepted_same_state": sum(r["same_state"] for r in model_rows),
        "accepted_same_lead": sum(r["same_lead"] for r in model_rows),
        "accepted_same_warnings": sum(r["same_warnings"] for r in model_rows),
        "accepted": len(model_rows),
        "no_prior": len(no_prior),
        "no_prior_not_asked": sum(1 for r in no_prior if r["outcome"] == "not-asked"
                                  and "no prior incident" in (r["degraded"] or "")),
    }


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"\n{'alert':22} {'outcome':11} {'wall':>6} {'prompt':>7} {'out':>5} {'st':>2} "
          f"{'ld':>2} {'wn':>2} {'rm':>2}  guard rules / reason")
    for r in rows:
        reqs = r.get("requests", [])
        prompt = "/".join(str(q.get("prompt_eval_count") or 0) for q in reqs) or "-"
        out = "/".join(str(q.get("eval_count") or 0) for q in reqs) or "-"
        rules = ",".join(r["rejection_rules"] + [f"+{x}" for x in r["intervention_rules"]])
        note = rules if r["outcome"].startswith("accepted") else (r["degraded"] or r["error"])
        mark = {True: "=", False: "≠"}
        print(f"{r['id'][:22]:22} {r['outcome']:11} {r['wall_s']:6.1f} {prompt:>7} {out:>5} "
              f"{mark[r['same_state']]:>2} {mark[r['same_lead']]:>2} "
              f"{mark[r['same_warnings']]:>2} {r['claims_removed']:>2}  {(note or '')[:90]}")
    print("  st/ld/wn: shown state / lead fix / warnings equal (=) the deterministic verdict; "
          "rm: claims removed; +rule: guard intervention on the accepted draft")


def print_summary(s: dict[str, Any], label: str = "") -> None:
    n = s["alerts_model"]
    print(f"\nsummary {label}".rstrip())
    print(f"  alerts that reach the model   {n}")
    print(f"  accepted at attempt 1 / 2 / 3 {s['accepted_1']} / {s['accepted_2']} / "
          f"{s['accepted_3']}   (first-attempt rate {s['accepted_1'] / n:.0%})" if n else "")
    print(f"  fell back to deterministic    {s['fallback']}   errors {s['errors']}   "
          f"not asked (unexpected) {s['not_asked_unexpectedly']}")
    for reason, count in sorted(s["fallback_reasons"].items(), key=lambda kv: -kv[1]):
        print(f"      {count} × {reason}")
    print(f"  rejections by rule            {_counts(s['rejections_by_rule'])}")
    print(f"  interventions by rule         {_counts(s['interventions_by_rule'])}")
    print(f"  claims removed                {s['claims_removed']}")
    print(f"  latency per brief p50 / p90   {s['latency_p50_s']} s / {s['latency_p90_s']} s")
    print(f"  prompt tokens mean / max      {s['prompt_tokens_mean']} / {s['prompt_tokens_max']}"
          f"   output tokens mean / max {s['output_tokens_mean']} / {s['output_tokens_max']}"
          f"   ({s['requests']} requests)")
    print(f"  = deterministic: state {s['same_state']}/{n}, lead {s['same_lead']}/{n}, "
          f"warnings {s['same_warnings']}/{n}; of the {s['accepted']} accepted: state "
          f"{s['accepted_same_state']}, lead {s['accepted_same_lead']}, warnings "
          f"{s['accepted_same_warnings']}")
    print(f"  NO PRIOR INCIDENT, model not asked  {s['no_prior_not_asked']}/{s['no_prior']}")


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1])) or "-"


def compare(a_path: Path, b_path: Path) -> int:
    a, b = (json.loads(p.read_text()) for p in (a_path, b_path))
    print(f"{'':30} {a_path.name:>28} {b_path.name:>28}")
    for key in ("wall_s",):
        print(f"{'run wall time (s)':30} {a.get(key, 0):>28.0f} {b.get(key, 0):>28.0f}")
    sa, sb = a["summary"], b["summary"]
    for key in sa:
        va, vb = sa.get(key), sb.get(key)
        if isinstance(va, dict) or isinstance(vb, dict):
            print(f"{key:30} {_counts(va or {})[:28]:>28} {_counts(vb or {})[:28]:>28}")
        else:
            print(f"{key:30} {str(va):>28} {str(vb):>28}")
    rows_b = {r["id"]: r for r in b["rows"]}
    print(f"\n{'alert':22} {'A outcome':>12} {'A wall':>7} {'B outcome':>12} {'B wall':>7}")
    for r in a["rows"]:
        other = rows_b.get(r["id"])
        print(f"{r['id'][:22]:22} {r['outcome']:>12} {r['wall_s']:7.1f} "
              f"{(other or {}).get('outcome', '-'):>12} "
              f"{(other or {}).get('wall_s', float('nan')):7.1f}")
    return 0


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N alerts")
    parser.add_argument("--only", choices=("a", "b", "c", "n"), default=None,
                        help="one group: a acceptance, b paraphrases, c dev set, n no prior")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="TRIAGE_MODEL_TIMEOUT per attempt (the draft's budget is 2×)")
    parser.add_argument("--max-minutes", type=float, default=45.0,
                        help="start no alert once the run has taken this long")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A.json", "B.json"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)

    run_started = time.monotonic()
    code_at_start = code_state()
    try:
        python, model = installer.install()
    except installer.InstallError as exc:
        print(f"model-check: install failed: {exc}", file=sys.stderr)
        return 1
    alerts = load_alerts(args.only)[: args.limit]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    runs = installer.cache_dir() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    log = runs / f"{stamp}.requests.jsonl"
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="triage-model-check-") as tmp:
        scratch = Path(tmp)
        memories = {"bundled": REPO / "incidents.yaml"}
        if any(a["memory"] == "dev" for a in alerts):
            memories["dev"] = derive(SHARED / "incidents.yaml", scratch)
        indexes: dict[str, Path] = {}
        for name, incidents in memories.items():
            indexes[name] = scratch / f"index-{name}"
            build_index(indexes[name], incidents)
        harness = Harness(python, model, log, args.threads)
        try:
            ready = harness.wait_ready()
            print(f"harness {harness.host} {ready}; {len(alerts)} alerts; model timeout "
                  f"{args.timeout:g}s (budget {2 * args.timeout:g}s), TRIAGE_NOW={NOW}",
                  flush=True)
            model_env = {"OLLAMA_HOST": harness.host, "TRIAGE_MODEL": MODEL_NAME,
                         "TRIAGE_MODEL_TIMEOUT": f"{args.timeout:g}"}
            for number, item in enumerate(alerts, 1):
                if time.monotonic() - run_started > args.max_minutes * 60:
                    skipped.append(item["id"])
                    continue
                incidents, index = memories[item["memory"]], indexes[item["memory"]]
                det, det_wall, det_err = brief(item["alert"], index, scratch, incidents,
                                               {"TRIAGE_OFFLINE": "1"})
                t0 = time.time()
                mod, mod_wall, mod_err = brief(item["alert"], index, scratch, incidents,
                                               model_env)
                t1 = time.time()
                row = record(item, det, det_wall, mod, mod_wall, (t0, t1),
                             (mod_err or det_err).strip())
                rows.append(row)
                print(f"[{number}/{len(alerts)}] {item['id']:22} {row['outcome']:11} "
                      f"{mod_wall:6.1f}s  {(row['degraded'] or '')[:70]}", flush=True)
        finally:
            harness.stop()
    time.sleep(0.2)
    attach_requests(rows, log)
    summary = summarise(rows)
    wall = time.monotonic() - run_started
    result = {"started": stamp, "wall_s": round(wall, 1), "model": MODEL_NAME,
              "model_file": str(model), "threads": args.threads, "timeout": args.timeout,
              "now": NOW, "limit": args.limit, "only": args.only, "skipped": skipped,
              "summary": summary, "rows": rows, "requests_log": str(log),
              "code_at_start": code_at_start, "code_at_end": code_state()}
    out_path = runs / f"{stamp}.json"
    out_path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print_rows(rows)
    print_summary(summary)
    print(f"\nrun wall time {wall / 60:.1f} min; {len(rows)} alerts briefed"
          + (f", {len(skipped)} not started (--max-minutes): {', '.join(skipped)}"
             if skipped else ""))
    if code_at_start != result["code_at_end"]:
        print(f"NOTE: console/ or store/ changed during the run: {code_at_start} → "
              f"{result['code_at_end']}")
    print(f"run written to {out_path}")
    return 0 if not summary["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
