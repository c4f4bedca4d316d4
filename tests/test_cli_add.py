"""`triage add FILE.yaml`: validates, appends keeping every byte, and the next brief sees it.

Through the real entry point in process (tests/test_cli.py's ``call_cli``: the same
environment, exit code and output), but for one `python -m console add` subprocess, the
command end to end (the redaction report): a subprocess cost ~2-3 s each (interpreter start,
imports, MiniLM load) and showed nothing more for the others."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.test_cli import call_cli

REPO = Path(__file__).resolve().parents[1]

NEW = """\
- id: INC-3001
  service: ledger-service
  symptoms: ledger totals drift between shards after failover
  actions:
    - id: A1
      action: Replayed the shard journal on every shard
      outcome: WORSENED
      explanation: Replay doubled entries on the primary
    - id: A2
      action: Reconciled from the audit stream
      outcome: RESOLVED
      explanation: The audit stream is authoritative
"""


def triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_add_appends_and_the_next_briefing_cites_it(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(REPO / "incidents.yaml", incidents)
    original = incidents.read_bytes()
    new_file = tmp_path / "new.yaml"
    new_file.write_text(NEW)
    data_dir = tmp_path / "data"
    added = call_cli("add", str(new_file), data_dir=data_dir, incidents=incidents)
    assert added.returncode == 0, added.stderr
    assert incidents.read_bytes().startswith(original)
    again = call_cli("add", str(new_file), data_dir=data_dir, incidents=incidents)
    assert again.returncode == 2 and "already in" in again.stderr
    brief = call_cli("brief", "ledger totals drift between shards", "--json", data_dir=data_dir,
                     incidents=incidents)
    out = json.loads(brief.stdout)
    assert [w["action_id"] for w in out["warnings"]] == ["INC-3001/A1"]
    assert out["recommendations"][0]["evidence"][0]["action_id"] == "INC-3001/A2"
    assert out["search"]["notices"] == []  # the index followed incrementally, no rebuild notice


def test_add_rejects_an_invalid_file_and_writes_nothing(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(REPO / "incidents.yaml", incidents)
    original = incidents.read_bytes()
    bad = tmp_path / "bad.yaml"
    bad.write_text(NEW.replace("outcome: RESOLVED", "outcome: FIXED"))
    result = call_cli("add", str(bad), data_dir=tmp_path / "data", incidents=incidents)
    assert result.returncode == 2
    assert f"{bad}:11" in result.stderr and "FIXED" in result.stderr
    assert incidents.read_bytes() == original


def test_add_says_what_it_redacted_and_stores_no_secret(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(REPO / "incidents.yaml", incidents)
    new_file = tmp_path / "new.yaml"
    new_file.write_text(NEW.replace("after failover", "after failover, password=abc")
                        .replace("Replayed the shard journal", "Replayed via postgres://u:pw9@db"))
    env = {**os.environ, "TRIAGE_INCIDENTS": str(incidents),
           "TRIAGE_DATA_DIR": str(tmp_path / "data"), "TRIAGE_EMBED_MODEL": "none"}
    added = triage("add", str(new_file), env=env)  # a subprocess: `triage add` end to end
    assert added.returncode == 0, added.stderr
    assert added.stdout.startswith(f"saved INC-3001 to {incidents} (redacted: "
                                   "secret-value in symptoms (line 3), "
                                   "url-password in A1 action (line 6))")
    stored = incidents.read_text()
    assert "password=abc" not in stored and "pw9" not in stored
    assert "password=[REDACTED:secret-value]" in stored
