"""Saving incidents keeps every byte already in the file, and never half-writes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from store.loader import load_incidents
from store.models import Incident
from store.writer import FileChangedOnDisk, SaveRefused, file_sha256, save_incident

REPO = Path(__file__).resolve().parents[2]

ODD_FILE = """\
# Team memory — comments, blank lines and odd formatting must survive.

-   id: INC-1      # trailing comment
    service: "ledger"
    symptoms: |
        line one
        line two
    actions:
      - {id: A1, action: Restarted it, outcome: NO_EFFECT, explanation: "did nothing"}


# between incidents
- id: INC-2
  service: queue
  symptoms: >-
    backlog
    growing
  tags: [a,   b]
  actions: []
# final comment, no newline at end"""


def new_incident(incident_id: str = "INC-3") -> Incident:
    return Incident.model_validate({
        "id": incident_id, "title": "Ledger drift: totals differ across shards",
        "service": "ledger", "started_at": "2026-11-02T03:04:05Z", "severity": "SEV2",
        "symptoms": "Totals differ between shards after a failover, reconciliation job reports "
                    "4,012 mismatched rows and climbing: 'amount' fields doubled",
        "tags": ["ledger", "failover"],
        "actions": [
            {"id": "A1", "action": "Replayed the journal: all shards", "outcome": "WORSENED",
             "explanation": "Replay doubled entries # on the primary", "kind": "replay",
             "confirmed": False},
            {"id": "A2", "action": "Reconciled from the audit stream", "outcome": "RESOLVED",
             "explanation": "The audit stream is authoritative"},
        ]})


@pytest.fixture
def odd_file(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(ODD_FILE, encoding="utf-8")
    return path


def test_append_keeps_every_byte_and_reads_back_exactly(odd_file: Path) -> None:
    before = odd_file.read_bytes()
    save_incident(odd_file, new_incident(), file_sha256(odd_file))
    after = odd_file.read_bytes()
    assert after.startswith(before)
    memory = load_incidents(odd_file)
    assert [i.id for i in memory.incidents] == ["INC-1", "INC-2", "INC-3"]
    assert memory.incidents[2] == new_incident()


def test_edit_replaces_only_that_incidents_block(odd_file: Path) -> None:
    save_incident(odd_file, new_incident(), file_sha256(odd_file))
    before = odd_file.read_text(encoding="utf-8")
    others_before = load_incidents(odd_file).incidents[1:]
    edited = load_incidents(odd_file).incidents[0].model_copy(update={"severity": "SEV1"})
    save_incident(odd_file, edited, file_sha256(odd_file))
    after = odd_file.read_text(encoding="utf-8")
    head, _, tail = before.partition("# between incidents")
    assert after.startswith("# Team memory — comments, blank lines and odd formatting must "
                            "survive.\n\n")
    assert after.endswith("# between incidents" + tail)
    assert load_incidents(odd_file).incidents[0].severity == "SEV1"
    assert load_incidents(odd_file).incidents[1:] == others_before


def test_external_edit_between_load_and_save_is_refused(odd_file: Path) -> None:
    loaded = file_sha256(odd_file)
    odd_file.write_text(ODD_FILE + "\n# a teammate's edit\n", encoding="utf-8")
    edited = odd_file.read_bytes()
    with pytest.raises(FileChangedOnDisk) as refused:
        save_incident(odd_file, new_incident(), loaded)
    assert "changed on disk" in str(refused.value)
    assert odd_file.read_bytes() == edited


def test_directory_memory_gets_a_new_file_per_incident(tmp_path: Path, odd_file: Path) -> None:
    directory = tmp_path / "memory"
    directory.mkdir()
    (directory / "team.yaml").write_bytes(odd_file.read_bytes())
    written = save_incident(directory, new_incident(), file_sha256(directory))
    assert written == directory / "INC-3.yaml"
    assert (directory / "team.yaml").read_text(encoding="utf-8") == ODD_FILE
    assert len(load_incidents(directory).incidents) == 3


def test_saving_an_invalid_result_is_refused_and_writes_nothing(odd_file: Path) -> None:
    before = odd_file.read_bytes()
    duplicate = new_incident("INC-3").model_copy(update={"actions": [
        new_incident().actions[0], new_incident().actions[0]]})
    with pytest.raises(SaveRefused):
        save_incident(odd_file, duplicate, file_sha256(odd_file))
    assert odd_file.read_bytes() == before
    # (No temp file exists yet when this refusal happens: tests/store/test_writer_rules.py
    # checks that a write failing half-way leaves none.)


CRASH_POINTS = ["created", "half-written", "synced", "renamed"]


@pytest.mark.parametrize("point", CRASH_POINTS)
@pytest.mark.parametrize("operation", ["append", "edit"])
def test_sigkill_during_save_leaves_old_or_new_file_never_a_mix(
        tmp_path: Path, odd_file: Path, point: str, operation: str) -> None:
    before = odd_file.read_bytes()
    script = f"""
import sys
from pathlib import Path
from store.loader import load_incidents
from store.writer import save_incident, file_sha256
sys.path.insert(0, {str(REPO / 'tests' / 'store')!r})
from test_writer import new_incident
path = Path({str(odd_file)!r})
incident = new_incident() if {operation!r} == "append" else \\
    load_incidents(path).incidents[0].model_copy(update={{"severity": "SEV1"}})
save_incident(path, incident, file_sha256(path))
"""
    env = {**os.environ, "TRIAGE_CRASH_AT": point}
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr
    after = odd_file.read_bytes()
    memory = load_incidents(odd_file)  # `triage check` passes on it
    if point == "renamed":
        assert after != before
        assert len(memory.incidents) == (3 if operation == "append" else 2)
    else:
        assert after == before
    # A crashed save may leave its temp file behind, never a changed original: one hidden file
    # beside it, named after it, that no directory memory would read as incidents.
    leftovers = sorted(p.name for p in odd_file.parent.iterdir() if p != odd_file)
    assert len(leftovers) == (0 if point == "renamed" else 1), leftovers
    for name in leftovers:
        assert name.startswith(".incidents.yaml.") and name.endswith(".tmp"), name
        (odd_file.parent / name).unlink()
    save_incident(odd_file, new_incident("INC-9"), file_sha256(odd_file))
    assert "INC-9" in [i.id for i in load_incidents(odd_file).incidents]
