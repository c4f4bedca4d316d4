"""The optional `runbook` field (issue 24 item 2): read, checked, written back by a save, and
absent from every hash when an incident has none (indexes and shared versions built before the
field existed stay fresh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.__main__ import main
from store.loader import IncidentFileError, content_hash, load_incidents
from store.models import Incident
from store.writer import incident_block, save_incident

ONE = """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  runbook: https://wiki.example.internal/runbooks/widget-queue
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_runbook_is_read_and_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    [incident] = load_incidents(write(tmp_path, ONE)).incidents
    assert incident.runbook == "https://wiki.example.internal/runbooks/widget-queue"
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(tmp_path / "incidents.yaml"))
    assert main(["check"]) == 0
    assert "unknown field" not in capsys.readouterr().err


@pytest.mark.parametrize("value, words", [
    ("''", "must not be blank"),
    ("[a, b]", "runbook"),
    ("|\n    line one\n    line two", "must be one line"),
])
def test_a_runbook_that_is_not_one_address_fails_check(tmp_path: Path, value: str,
                                                       words: str) -> None:
    path = write(tmp_path, ONE.replace("https://wiki.example.internal/runbooks/widget-queue",
                                       value))
    with pytest.raises(IncidentFileError) as failed:
        load_incidents(path)
    assert any(words in str(p) for p in failed.value.problems), failed.value.problems
    assert any(p.line == 4 for p in failed.value.problems), failed.value.problems


def test_no_runbook_hashes_as_before_the_field_existed() -> None:
    plain = Incident(id="INC-1", service="widget-api", symptoms="widget queue stuck")
    assert "runbook" not in plain.model_dump() and "runbook" not in plain.model_dump_json()
    with_one = plain.model_copy(update={"runbook": "https://wiki/rb"})
    assert content_hash([plain]) != content_hash([with_one])


def test_a_save_writes_the_runbook_back(tmp_path: Path) -> None:
    path = write(tmp_path, ONE)
    new = Incident(id="INC-2", service="widget-api", symptoms="widget queue stuck again",
                   runbook="docs/runbooks/widget-queue.md")
    assert "  runbook: docs/runbooks/widget-queue.md\n" in incident_block(new)
    save_incident(path, new, None)
    assert [i.runbook for i in load_incidents(path).incidents] == [
        "https://wiki.example.internal/runbooks/widget-queue", "docs/runbooks/widget-queue.md"]
