"""Two `triage add` processes at the same moment, N rounds: is any incident lost?

Each round copies the bundled incidents.yaml, then starts two `triage add` subprocesses
(each adding its own new incident) released together, sharing one data dir (the harder case:
the incidents file and the index both contended). Counted per process: saved (rc 0 and its
incident in the file), refused with a message (rc 2), lost (rc 0 but its incident missing),
traceback (any "Traceback" on stderr), other exit codes. Run:
    .venv/bin/python bench/concurrent_add_bench.py [ROUNDS]        (default 50)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from store.loader import load_incidents  # noqa: E402

NEW = """\
- id: {id}
  service: widget-api
  symptoms: zeppelin {n} mooring lines snapped at dawn
  actions:
    - id: A1
      action: Re-tied the mooring lines
      outcome: RESOLVED
      explanation: The zeppelin stayed put
"""


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    counts: Counter[str] = Counter()
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(rounds):
            folder = Path(tmp) / f"round-{round_number}"
            folder.mkdir()
            incidents = folder / "incidents.yaml"
            shutil.copy(REPO / "incidents.yaml", incidents)
            env = {**os.environ, "TRIAGE_INCIDENTS": str(incidents),
                   "TRIAGE_DATA_DIR": str(folder / "data")}
            ids = [f"INC-{9000 + 2 * round_number + n}" for n in range(2)]
            files = []
            for n, incident_id in enumerate(ids):
                path = folder / f"new-{n}.yaml"
                path.write_text(NEW.format(id=incident_id, n=n), encoding="utf-8")
                files.append(path)
            procs = [subprocess.Popen([sys.executable, "-m", "console", "add", str(path)],
                                      env=env, cwd=REPO, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for path in files]
            results = [proc.communicate(timeout=300) + (proc.returncode,) for proc in procs]
            stored = {i.id for i in load_incidents(incidents).incidents}
            for incident_id, (_, err, rc) in zip(ids, results, strict=True):
                if "Traceback" in err:
                    counts["traceback"] += 1
                elif rc == 0 and incident_id in stored:
                    counts["saved"] += 1
                elif rc == 0:
                    counts["lost (said saved)"] += 1
                elif rc == 2 and err.strip():
                    counts["refused with a message (rc 2)"] += 1
                else:
                    counts[f"rc {rc}"] += 1
                    print(f"round {round_number} {incident_id}: rc {rc}: {err.strip()[:300]}")
            lost = set(ids) - stored
            if lost and all(rc == 0 for *_, rc in results):
                print(f"round {round_number}: lost {sorted(lost)}")
    elapsed = time.monotonic() - started
    print(f"{rounds} rounds x 2 concurrent `triage add` (shared data dir), {elapsed:.0f} s:")
    for outcome in ("saved", "refused with a message (rc 2)", "lost (said saved)", "traceback"):
        print(f"  {outcome:32} {counts.pop(outcome, 0)}")
    for outcome, count in sorted(counts.items()):
        print(f"  {outcome:32} {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
