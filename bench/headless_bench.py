"""Headless commands vs a bare ``import lancedb``, each in a fresh interpreter, in one run.

    .venv/bin/python bench/headless_bench.py [RUNS]

Times the whole process (what a script or a chat bot waits on): ``python -c "import
lancedb"``, a fresh-index ``triage index``, ``triage doctor`` and a warm ``triage brief
--json`` (index fresh, the same alert briefed before), against the bundled incidents.yaml
(bundled embedder, no chat model) in a temp data dir whose index is built once first. The four
run interleaved, round after round, so a noisy moment on the machine hits them alike. Prints
the median of RUNS (default 9) of each, wall clock and CPU, and how far each command is from
the bare import. Issue 23's targets: brief within +0.5 s, index and doctor within +0.3 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 9
ROOT = Path(__file__).resolve().parent.parent
ALERT = "payments-api 5xx error rate above 5% after deploy"
TARGETS = {"index": 0.3, "doctor": 0.3, "brief --json": 0.5}


def commands() -> dict[str, list[str]]:
    triage = [sys.executable, "-m", "console"]
    return {"import lancedb": [sys.executable, "-c", "import lancedb"],
            "index": [*triage, "index"],
            "doctor": [*triage, "doctor"],
            "brief --json": [*triage, "brief", "--json", ALERT]}


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds from spawn to exit, and the CPU seconds (user + system) the process used:
    on a machine others share, CPU time moves less than the wall clock. doctor exits 2 when a
    check fails, which is still a run."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 2):
        raise SystemExit(f"{' '.join(argv[2:])} exited {child.returncode}:\n{errors.decode()}")
    return elapsed, usage.ru_utime + usage.ru_stime


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    data = tempfile.mkdtemp(prefix="headless-bench-")
    env = {**os.environ, "TRIAGE_DATA_DIR": data, "TRIAGE_INCIDENTS": str(ROOT / "incidents.yaml")}
    for name in ("TRIAGE_INDEX_URI", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL", "TRIAGE_OFFLINE"):
        env.pop(name, None)  # the defaults: bundled embedder, no chat model, a local index
    argv = commands()
    timed(argv["index"], env)  # built once: every timed run below meets a fresh index
    timed(argv["brief --json"], env)  # and the alert briefed once: the timed briefs are warm
    wall: dict[str, list[float]] = {name: [] for name in argv}
    cpu: dict[str, list[float]] = {name: [] for name in argv}
    for _ in range(runs):
        for name, command in argv.items():
            seconds, used = timed(command, env)
            wall[name].append(seconds)
            cpu[name].append(used)
    medians = {name: statistics.median(values) for name, values in wall.items()}
    cpus = {name: statistics.median(values) for name, values in cpu.items()}
    bare = medians["import lancedb"]
    print(f"headless, median of {runs} (fresh interpreter each, {os.cpu_count()} cores; "
          "wall clock, CPU in brackets):")
    print(f"  {'import lancedb':<19} {bare:5.2f} s [{cpus['import lancedb']:5.2f} s]")
    for name in TARGETS:
        over = medians[name] - bare
        verdict = "ok" if over <= TARGETS[name] else "over"
        print(f"  triage {name:<12} {medians[name]:5.2f} s [{cpus[name]:5.2f} s]  {over:+.2f} s "
              f"vs the bare import (target ≤ +{TARGETS[name]:.1f} s: {verdict})")


if __name__ == "__main__":
    main()
