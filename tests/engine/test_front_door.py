# ruff: noqa: F811  (the S3 fixtures are imported by name, as conftest imports fake_ollama)
"""The front-door methods the CLI's commands need besides the console's: the incidents of a
file to add, the eval of a queries file, a replay of an unknown id, the index on disk as the
doctor reads it, publishing the shared index."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.practice.evaluate import EvalInputError, load_queries
from console.engine.practice.replay import UnknownIncident
from store.errors import EXIT_BAD_INPUT, TriageError
from store.loader import IncidentFileError
from tests.conftest import BUNDLED_INCIDENTS, WriteIncidents, make_incident
from tests.s3_server import free_port, s3_bucket, s3_env, s3_server  # noqa: F401


def engine_on(incidents: Path, data_dir: Path, **fields: object) -> TriageEngine:
    return TriageEngine(Settings(incidents_path=incidents, data_dir=data_dir, **fields))


# --- incidents_in (`triage add FILE`) -------------------------------------------------------

def test_incidents_in_gives_the_incidents_redacted_with_the_secrets_found(
        write_incidents: WriteIncidents, tmp_path: Path) -> None:
    new = write_incidents([make_incident("INC-7", symptoms="queue stuck, password=abc")],
                          name="new.yaml")
    incidents, secrets = engine_on(BUNDLED_INCIDENTS, tmp_path / "data").incidents_in(new)
    assert [i.id for i in incidents] == ["INC-7"]
    assert "password=abc" not in incidents[0].symptoms
    assert [(s.incident_id, s.field, s.line) for s in secrets] == [("INC-7", "symptoms", 4)]


def test_incidents_in_an_unreadable_or_invalid_file_is_bad_input(
        write_incidents: WriteIncidents, tmp_path: Path) -> None:
    engine = engine_on(BUNDLED_INCIDENTS, tmp_path / "data")
    missing = tmp_path / "nope.yaml"
    with pytest.raises(TriageError) as raised:
        engine.incidents_in(missing)
    assert raised.value.title.startswith(f"cannot read {missing}: ")
    assert raised.value.exit_code == EXIT_BAD_INPUT
    broken = tmp_path / "broken.yaml"
    broken.write_text("- id: [INC-8\n", encoding="utf-8")
    with pytest.raises(IncidentFileError):
        engine.incidents_in(broken)


# --- evaluate_file (`triage eval --queries F`) ----------------------------------------------

def test_evaluate_file_reads_the_memory_before_the_queries(tmp_path: Path) -> None:
    broken_memory = tmp_path / "incidents.yaml"
    broken_memory.write_text("- id: [INC-1\n", encoding="utf-8")
    with pytest.raises(IncidentFileError):
        engine_on(broken_memory, tmp_path / "data").evaluate_file(tmp_path / "no-queries.yaml")
    with pytest.raises(EvalInputError):
        engine_on(BUNDLED_INCIDENTS, tmp_path / "data").evaluate_file(tmp_path / "no-q.yaml")


def test_evaluate_file_is_evaluate_over_the_file_s_queries(
        write_incidents: WriteIncidents, tmp_path: Path) -> None:
    memory = write_incidents([make_incident("INC-1"),
                              make_incident("INC-2", title="Disk full on db-1", service="db",
                                            symptoms="no space left on device on db-1")])
    queries = tmp_path / "queries.yaml"
    queries.write_text(yaml.safe_dump([
        {"qid": "q1", "alert": "widget queue stopped draining", "expect": ["INC-1"]},
        {"qid": "q2", "alert": "tls handshake failures at the edge", "expect": []}]),
        encoding="utf-8")
    engine = engine_on(memory, tmp_path / "data", embed_model="none")
    from_file = engine.evaluate_file(queries)
    given = engine.evaluate(load_queries(queries))
    assert [(q.qid, q.rank, q.state) for q in from_file.queries] == [
        (q.qid, q.rank, q.state) for q in given.queries]
    assert from_file.summary == given.summary


# --- replay ---------------------------------------------------------------------------------

def test_replaying_an_unknown_id_raises_before_any_index_is_built(
        write_incidents: WriteIncidents, tmp_path: Path) -> None:
    memory = write_incidents([make_incident("INC-1")])
    engine = engine_on(memory, tmp_path / "data", embed_model="none")
    with pytest.raises(UnknownIncident, match="INC-404"):
        engine.replay(["INC-1", "INC-404"])
    assert not engine.settings.eval_dir(engine.current_memory().source_hash).exists()


# --- index_on_disk (`triage doctor`) ----------------------------------------------------------

def test_index_on_disk_says_fresh_or_not_and_writes_nothing(bundled_data_dir: Path,
                                                            tmp_path: Path) -> None:
    engine = engine_on(BUNDLED_INCIDENTS, bundled_data_dir)
    assert engine.index_on_disk(engine.current_memory()) == ("fresh", None)
    empty = engine_on(BUNDLED_INCIDENTS, tmp_path / "empty")
    state, mismatch = empty.index_on_disk(empty.current_memory())
    assert state != "fresh" and mismatch is None
    assert not (tmp_path / "empty").exists()


# --- publish_index (`triage index --publish`) -----------------------------------------------

def test_publish_index_publishes_the_memory_given_once(s3_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    settings = Settings.from_env({**s3_env, "TRIAGE_DATA_DIR": str(tmp_path / "ci"),
                                  "TRIAGE_INCIDENTS": str(BUNDLED_INCIDENTS)})
    engine = TriageEngine(settings)
    memory = engine.current_memory()
    store = settings.shared_store()
    first = engine.publish_index(store, memory, when="2026-06-01T00:00:00+00:00")
    assert first.published is not None and first.published.source_hash == memory.source_hash
    again = engine.publish_index(store, memory, when="2026-06-01T00:00:00+00:00")
    assert again.published is None and again.current.label == first.published.label
