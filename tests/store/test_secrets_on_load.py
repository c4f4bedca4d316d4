"""Secrets written by hand into the incidents file are redacted as it is loaded, and each one is
recorded (file, line, incident, field, kind — never the value) for `triage check`.

A save through the console or `triage add` leaves every other incident's bytes as they are:
the file is the team's source of truth, scrubbing it is theirs to do.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from store.index import freshness
from store.loader import (
    IncidentFileError,
    SecretFinding,
    load_incidents,
    parse_incidents_text,
    redact_fields,
)
from store.models import Action, ActionOutcome, Incident
from store.writer import file_sha256, save_incident

DSN_PASSWORD = "Sup3rS3cretPw"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
KEY_BODY = "MIIEpAIBAAKCAQEA7bq9xJ3vYkT0Qx2mR5Wn8cF1LhG6pZsD4uE3oN"
SHORT = "abc"
SECRETS = (DSN_PASSWORD, GITHUB, AKIA, AWS_SECRET, KEY_BODY)

# Line numbers matter: each secret's line is asserted below.
FILE = f"""\
# the team's memory
- id: INC-9001
  title: "DB login failed with password={SHORT}"
  service: payments-api
  severity: SEV2
  symptoms: >-
    Connection refused for
    postgres://app:{DSN_PASSWORD}@db.internal:5432/pay, HikariPool exhausted
  root_cause: the CI token {GITHUB} was revoked
  tags: [postgres, "leak {AKIA}"]
  actions:
    - id: A1
      action: Rotated {AKIA}
      outcome: RESOLVED
      explanation: |
        the env dump showed
        aws_secret_access_key = {AWS_SECRET}
    - id: A2
      action: Replaced the deploy key
      outcome: MITIGATED
      kind: "pwd: hunter2"
      explanation: |
        -----BEGIN RSA PRIVATE KEY-----
        {KEY_BODY}
        -----END RSA PRIVATE KEY-----
        was pasted into the ticket

- id: INC-9002
  service: ledger-service
  symptoms: ledger totals drift between shards
  actions: []
"""

EXPECTED = [
    # (line, field, kind)
    (3, "title", "secret-value"),
    (8, "symptoms", "url-password"),
    (9, "root_cause", "github-token"),
    (10, "tags", "aws-access-key"),
    (13, "A1 action", "aws-access-key"),
    (17, "A1 explanation", "secret-value"),
    (21, "A2 kind", "secret-value"),
    (23, "A2 explanation", "private-key"),
]


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(FILE, encoding="utf-8")
    return path


def test_every_secret_is_recorded_with_file_line_incident_field_and_kind(
        secret_file: Path) -> None:
    memory = load_incidents(secret_file)
    assert [(s.file, s.line, s.incident_id, s.field, s.kind) for s in memory.secrets] == [
        (str(secret_file), line, "INC-9001", field, kind) for line, field, kind in EXPECTED]
    assert str(memory.secrets[1]) == (f"{secret_file}:8: url-password secret in INC-9001 "
                                      "symptoms")


def test_the_line_of_a_single_line_value_is_its_yaml_node_line(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text("- id: INC-1\n  service: a\n  symptoms: ok\n  actions:\n    - id: A1\n"
                    "      action: x\n      outcome: RESOLVED\n"
                    f"      explanation: 'token {GITHUB}'\n", encoding="utf-8")
    assert [(s.line, s.field) for s in load_incidents(path).secrets] == [
        (8, "A1 explanation")]


def test_loaded_incidents_carry_no_secret_in_any_field(secret_file: Path) -> None:
    memory = load_incidents(secret_file)
    dumped = "\n".join(i.model_dump_json() for i in memory.incidents)
    for secret in (*SECRETS, "hunter2", f"password={SHORT}"):
        assert secret not in dumped
    incident = memory.incidents[0]
    assert incident.title == "DB login failed with password=[REDACTED:secret-value]"
    assert incident.tags == ["postgres", "leak [REDACTED:aws-access-key]"]
    assert incident.actions[1].kind == "pwd: [REDACTED:secret-value]"
    assert incident.actions[1].explanation == "[REDACTED:private-key]\nwas pasted into the ticket"
    assert memory.incidents[1].symptoms == "ledger totals drift between shards"


def test_a_finding_never_holds_the_secret_nor_any_prefix_of_it(secret_file: Path) -> None:
    memory = load_incidents(secret_file)
    assert [f.name for f in dataclasses.fields(SecretFinding)] == [
        "file", "line", "incident_id", "field", "kind"]
    shown = "\n".join(f"{s} {s!r}" for s in memory.secrets)
    for secret in (*SECRETS, "hunter2"):
        for length in range(4, len(secret) + 1):
            assert secret[:length] not in shown, secret[:length]
    # Recorded (e.g. "DB login failed with password=abc"), "abc" must not be a prefix shown
    # after the label either.
    assert "password=a" not in shown and "pwd: h" not in shown


def test_the_content_hash_is_stable_across_loads_and_blind_to_the_secret_value(
        secret_file: Path, tmp_path: Path) -> None:
    first = load_incidents(secret_file).source_hash
    assert load_incidents(secret_file).source_hash == first
    other = tmp_path / "rotated.yaml"
    other.write_text(FILE.replace(DSN_PASSWORD, "An0therPassw0rd"), encoding="utf-8")
    assert load_incidents(other).source_hash == first  # the hash is of the redacted text


def test_the_index_stays_fresh_across_loads_of_a_file_holding_secrets(
        secret_file: Path, tmp_path: Path) -> None:
    settings = Settings(incidents_path=secret_file, data_dir=tmp_path / "data")
    first = TriageEngine(settings)
    assert first.load().index == "fresh (rebuilt)"
    again = TriageEngine(settings)
    assert again.load().index == "fresh"
    assert again.index is not None
    memory = load_incidents(secret_file)
    assert freshness(settings.index_dir, memory.source_hash, again.index.embedder_id) == "fresh"


def test_parse_incidents_text_redacts_and_reports_like_the_loader(secret_file: Path) -> None:
    found: list[SecretFinding] = []
    parsed = parse_incidents_text(FILE, "new.yaml", found)
    assert parsed == load_incidents(secret_file).incidents
    assert [(s.file, s.line, s.kind) for s in found] == [
        ("new.yaml", line, kind) for line, _, kind in EXPECTED]


def test_an_invalid_file_still_reports_the_secrets_of_its_valid_incidents(
        tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(FILE + "- id: INC-9003\n  service: x\n", encoding="utf-8")
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    assert [p.field for p in caught.value.problems] == ["INC-9003 symptoms"]
    assert [(s.line, s.kind) for s in caught.value.secrets] == [
        (line, kind) for line, _, kind in EXPECTED]


def test_a_schema_error_does_not_quote_a_secret_back(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text("- id: INC-1\n  service: a\n  symptoms: ok\n"
                    f"  title: {{password: hunter2, dsn: 'postgres://u:{DSN_PASSWORD}@h/db'}}\n",
                    encoding="utf-8")
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    message = str(caught.value.problems[0])
    assert message.startswith(f"{path}:4: INC-1 title:")
    assert "hunter2" not in message and DSN_PASSWORD not in message
    assert "[REDACTED:secret-value]" in message and "[REDACTED:url-password]" in message


def test_redact_fields_names_each_field_and_keeps_a_clean_incident_as_is() -> None:
    clean = Incident(id="INC-1", service="a", symptoms="queue stuck", actions=[
        Action(id="A1", action="Restarted", outcome=ActionOutcome.RESOLVED, explanation="ok")])
    assert redact_fields(clean) == (clean, [])
    assert redact_fields(clean)[0] is clean
    dirty = clean.model_copy(update={"severity": "password=abc", "actions": [
        clean.actions[0].model_copy(update={"explanation": f"used {GITHUB}"})]})
    cleaned, found = redact_fields(dirty)
    assert found == [(("severity",), "secret-value"),
                     (("actions", 0, "explanation"), "github-token")]
    assert cleaned.severity == "password=[REDACTED:secret-value]"
    assert cleaned.actions[0].explanation == "used [REDACTED:github-token]"


# --- saving leaves the other incidents' bytes alone ------------------------------------------

def _new_incident(incident_id: str = "INC-9100") -> Incident:
    return Incident(id=incident_id, service="ledger-service",
                    symptoms="ledger totals drift after failover", actions=[
                        Action(id="A1", action="Reconciled from the audit stream",
                               outcome=ActionOutcome.RESOLVED,
                               explanation="the audit stream is authoritative")])


def test_appending_an_incident_keeps_every_byte_of_the_file_and_its_secrets(
        secret_file: Path, tmp_path: Path) -> None:
    original = secret_file.read_bytes()
    engine = TriageEngine(Settings(incidents_path=secret_file, data_dir=tmp_path / "data"))
    engine.load()
    result = engine.save_incident(_new_incident())
    after = secret_file.read_bytes()
    assert after.startswith(original)  # not rewritten, not even to redact it
    assert b"INC-9100" in after[len(original):]
    assert all(secret.encode() not in after[len(original):] for secret in SECRETS)
    assert result.status.incidents == 3
    assert len(load_incidents(secret_file).secrets) == len(EXPECTED)  # still there to scrub


def test_replacing_one_incident_leaves_the_others_bytes_untouched(secret_file: Path) -> None:
    original = secret_file.read_text(encoding="utf-8")
    head = original[:original.index("- id: INC-9002")]
    replaced = _new_incident("INC-9002")
    save_incident(secret_file, replaced, file_sha256(secret_file))
    after = secret_file.read_text(encoding="utf-8")
    assert after.startswith(head)  # INC-9001, secrets and all, as it was
    assert load_incidents(secret_file).incidents[1] == replaced


def test_in_a_directory_memory_each_finding_names_its_own_file(tmp_path: Path) -> None:
    folder = tmp_path / "incidents"
    folder.mkdir()
    (folder / "INC-1.yaml").write_text("- id: INC-1\n  service: a\n  symptoms: clean\n",
                                       encoding="utf-8")
    (folder / "INC-2.yaml").write_text("- id: INC-2\n  service: b\n\n  symptoms: "
                                       f"git push rejected for {GITHUB}\n", encoding="utf-8")
    memory = load_incidents(folder)
    assert [(s.file, s.line, s.incident_id, s.kind) for s in memory.secrets] == [
        (str(folder / "INC-2.yaml"), 4, "INC-2", "github-token")]
