"""Secrets written by hand into the incidents file never leave it: the real `triage` CLI in
subprocesses, a real LanceDB index on disk, the real ollama client against the fake Ollama
server (tests/fake_ollama.py), which records every request body.

No secret may appear in stdout or stderr, in any byte under the data dir (LanceDB index,
embedding cache, audit log), or in any body sent to /api/chat or /api/embed. `triage check`
names each one by file:line and kind, exits 0, and 2 when the file also has an error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.fake_ollama import ChatReply, FakeOllama

DSN_PASSWORD = "Sup3rS3cretPw"
GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
AKIA = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
KEY_BODY = "MIIEpAIBAAKCAQEA7bq9xJ3vYkT0Qx2mR5Wn8cF1LhG6pZsD4uE3oN"
# Every string that must never leave the file. ``password=abc``'s value is too short to search
# for alone: the label and value together are searched for (and the label survives redaction).
NEVER = (DSN_PASSWORD, GITHUB, AKIA, AWS_SECRET, KEY_BODY, "BEGIN RSA PRIVATE KEY",
         "password=abc", "pwd: hunter2", "hunter2")
# A word that is in the same fields, not a secret: found in the index bytes, it shows that
# those bytes are readable text (so the absence of the secrets means something).
CANARY = "zorblattqueue"

INCIDENTS = f"""\
- id: INC-7001
  title: "Zorblatt ledger sync failing, password=abc in the job log"
  service: ledger-sync
  symptoms: >-
    {CANARY} backlog growing, connection refused for
    postgres://ledger:{DSN_PASSWORD}@db.internal:5432/ledger from the sync workers
  root_cause: the sync CI token {GITHUB} was revoked by the org policy
  tags: [ledger, postgres]
  actions:
    - id: A1
      action: Restarted every sync worker with key {AKIA}
      outcome: WORSENED
      kind: restart
      explanation: |
        all workers reconnected at once and exhausted the pool;
        aws_secret_access_key = {AWS_SECRET} was in the env dump
    - id: A2
      action: Rotated the deploy key and restarted one sync worker at a time
      outcome: RESOLVED
      kind: "pwd: hunter2"
      explanation: |
        the old key was pasted into the ticket:
        -----BEGIN RSA PRIVATE KEY-----
        {KEY_BODY}
        -----END RSA PRIVATE KEY-----
        the backlog drained after the rotation
- id: INC-7002
  service: checkout-service
  symptoms: checkout latency up after a config push
  actions: []
"""

# (line, field, kind) of each secret above.
FINDINGS = [
    (2, "title", "secret-value"),
    (6, "symptoms", "url-password"),
    (7, "root_cause", "github-token"),
    (11, "A1 action", "aws-access-key"),
    (16, "A1 explanation", "secret-value"),
    (20, "A2 kind", "secret-value"),
    (23, "A2 explanation", "private-key"),
]

ALERT = "zorblatt ledger sync backlog growing, sync workers get connection refused from postgres"
MODEL = "qwen2.5:7b"
EMBED_MODEL = "nomic-embed-text"
DRAFT = json.dumps({
    "summary": "The sync workers lost their database connections.",
    "recommendations": [{"action": "Restart one sync worker at a time",
                         "evidence": [{"incident_id": "INC-7001", "action_id": "INC-7001/A2"}]}],
    "warnings": [{"text": "Do not restart every worker at once", "incident_id": "INC-7001",
                  "action_id": "INC-7001/A1"}],
    "confidence": 60})
_MACHINE_ENV = ("OLLAMA_HOST", "TRIAGE_MODEL", "TRIAGE_EMBED_MODEL", "TRIAGE_OFFLINE",
                "TRIAGE_MODEL_TIMEOUT", "PYTHONPATH", "TRIAGE_INDEX_URI")


def triage(*args: str, incidents: Path, data_dir: Path, **env: str
           ) -> subprocess.CompletedProcess[str]:
    """``python -m console ARGS`` (the installed `triage`), its own memory and data dir."""
    environ = {k: v for k, v in os.environ.items() if k not in _MACHINE_ENV}
    environ.update(TRIAGE_INCIDENTS=str(incidents), TRIAGE_DATA_DIR=str(data_dir), **env)
    return subprocess.run([sys.executable, "-m", "console", *args], cwd=REPO_ROOT, env=environ,
                          capture_output=True, text=True, timeout=300, check=False)


def assert_no_secret(text: str, where: str) -> None:
    leaked = [secret for secret in NEVER if secret in text]
    assert not leaked, f"{leaked} in {where}"


def every_file(directory: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def assert_no_secret_on_disk(data_dir: Path) -> dict[Path, bytes]:
    """No secret in any file under ``data_dir`` — as written, nor lower-cased as the index's
    search terms are (index/meta.json keeps each document's terms)."""
    files = every_file(data_dir)
    assert files, f"nothing was written under {data_dir}"
    for path, data in files.items():
        leaked = [secret for secret in NEVER
                  if secret.encode() in data or secret.lower().encode() in data.lower()]
        assert not leaked, f"{leaked} in {path}"
    return files


def sent(fake: FakeOllama, path: str) -> list[str]:
    """Every body the fake server received on ``path``, as JSON text."""
    return [json.dumps(r["body"], ensure_ascii=False) for r in fake.requests if r["path"] == path]


@pytest.fixture
def incidents(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(INCIDENTS, encoding="utf-8")
    return path


def test_check_names_each_secret_by_file_line_and_kind_and_exits_0(
        incidents: Path, tmp_path: Path) -> None:
    result = triage("check", incidents=incidents, data_dir=tmp_path / "data")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if ": warning: " in line]
    assert len(warnings) == len(FINDINGS)
    for warning, (line, field, kind) in zip(warnings, FINDINGS, strict=True):
        assert warning.startswith(f"{incidents}:{line}: warning: {kind} secret in INC-7001 "
                                  f"{field}"), warning
        assert "scrub" in warning and "git history" in warning
    assert f"{len(FINDINGS)} secrets found" in result.stdout.splitlines()[-1]
    assert_no_secret(result.stdout + result.stderr, "triage check output")


def test_check_with_an_error_as_well_exits_2_and_still_names_the_secrets(
        incidents: Path, tmp_path: Path) -> None:
    incidents.write_text(INCIDENTS.replace("outcome: RESOLVED", "outcome: FIXED"),
                         encoding="utf-8")
    result = triage("check", incidents=incidents, data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert f"{incidents}:19:" in result.stderr and "FIXED" in result.stderr
    # INC-7001 itself is invalid now: the valid INC-7002 holds no secret.
    incidents.write_text(INCIDENTS + "- id: INC-7003\n  service: x\n", encoding="utf-8")
    result = triage("check", incidents=incidents, data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert "INC-7003 symptoms" in result.stderr
    for line, _, kind in FINDINGS:
        assert f"{incidents}:{line}: warning: {kind} secret" in result.stdout
    assert_no_secret(result.stdout + result.stderr, "triage check output")


def test_no_secret_reaches_the_index_the_cache_the_model_or_the_output(
        incidents: Path, tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """In-process MiniLM embeddings (with their cache) and the Ollama chat model."""
    data_dir = tmp_path / "data"
    fake_ollama.default_chat = ChatReply(DRAFT)
    indexed = triage("index", incidents=incidents, data_dir=data_dir)
    assert indexed.returncode == 0, indexed.stderr
    assert_no_secret(indexed.stdout + indexed.stderr, "triage index output")

    briefed = triage("brief", ALERT, "--json", incidents=incidents, data_dir=data_dir,
                     OLLAMA_HOST=fake_ollama.host, TRIAGE_MODEL=MODEL, TRIAGE_MODEL_TIMEOUT="30")
    assert briefed.returncode == 0, briefed.stderr
    assert_no_secret(briefed.stdout + briefed.stderr, "triage brief --json output")
    out = json.loads(briefed.stdout)
    assert out["recalled"][0]["incident_id"] == "INC-7001"
    assert "[REDACTED:private-key]" in briefed.stdout  # the recalled text, redacted

    chats = sent(fake_ollama, "/api/chat")
    assert chats, "the model was never asked"
    for body in chats:
        assert_no_secret(body, "a /api/chat request")
    assert any("[REDACTED:url-password]" in body and CANARY in body for body in chats)

    files = assert_no_secret_on_disk(data_dir)
    index_bytes = b"".join(data for path, data in files.items() if "index" in path.parts[-4:]
                           or path.suffix == ".lance")
    assert CANARY.encode() in index_bytes, "the index bytes are not readable: test is blind"
    cache = data_dir / "embeddings.sqlite"
    assert cache in files and len(files[cache]) > 0


def test_no_secret_reaches_the_ollama_embedding_model(
        incidents: Path, tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """Embeddings by an Ollama model: every /api/embed body is checked too."""
    data_dir = tmp_path / "data"
    fake_ollama.default_chat = ChatReply(DRAFT)
    env = {"OLLAMA_HOST": fake_ollama.host, "TRIAGE_MODEL": MODEL,
           "TRIAGE_EMBED_MODEL": EMBED_MODEL, "TRIAGE_MODEL_TIMEOUT": "30"}
    indexed = triage("index", incidents=incidents, data_dir=data_dir, **env)
    assert indexed.returncode == 0, indexed.stderr
    briefed = triage("brief", ALERT, "--json", incidents=incidents, data_dir=data_dir, **env)
    assert briefed.returncode == 0, briefed.stderr
    assert_no_secret(indexed.stdout + indexed.stderr + briefed.stdout + briefed.stderr,
                     "CLI output")

    embeds = sent(fake_ollama, "/api/embed")
    assert any(CANARY in body for body in embeds), "the incidents were never embedded"
    for body in embeds + sent(fake_ollama, "/api/chat"):
        assert_no_secret(body, "a request to Ollama")
    assert_no_secret_on_disk(data_dir)


# --- issue 22 item 7: every line of the redaction corpus, stored and in the alert --------------
#
# tests/data/secrets_corpus.yaml's must-redact half (command-line passwords, Azure connection
# strings, npm and other vendor tokens from gitleaks' ruleset, a bare hex key in prose, and the
# credentials a model tends to write): each line stored as one action's explanation, the whole
# half sent as the alert, and a model draft that writes three of them in its summary, likely
# cause and recommendation (its ``model_note``). In process (tests/test_cli.py's call_cli): the
# same CLI, without a subprocess's ~3 s per command.

CORPUS_CASES: list[dict[str, str]] = yaml.safe_load(
    (REPO_ROOT / "tests" / "data" / "secrets_corpus.yaml").read_text(encoding="utf-8")
)["must_redact"]
CORPUS_SECRETS = tuple(case["secret"] for case in CORPUS_CASES)
CORPUS_CANARY = "quokkafluxreplica"
MODEL_SECRETS = {  # what the model writes: a corpus line, so the stored records back it
    "summary": "connect with password=Zk8pQ2mW7x and retry",
    "likely_cause": "the CI used ghp_abcdefghijklmnopqrstuvwxyz0123456789 to push",
    "model_note": "point the sync workers at postgres://ledger:Pgpw4Ledger@db.internal/ledger "
                  "again",
}


def corpus_incidents() -> str:
    """INC-7101 with one action per corpus line (A1 the fix the model cites), INC-7102 clean."""
    actions = [{"id": f"A{n}", "action": f"Looked at {CORPUS_CANARY} step {n}",
                "outcome": "RESOLVED" if n == 1 else "NO_EFFECT", "explanation": case["text"]}
               for n, case in enumerate(CORPUS_CASES, 1)]
    actions[0]["action"] = (f"Pointed the {CORPUS_CANARY} sync workers at the ledger database "
                            "again")
    return yaml.safe_dump([
        {"id": "INC-7101", "title": f"{CORPUS_CANARY} ledger replica stalled after a rotation",
         "service": "ledger-sync",
         "symptoms": f"{CORPUS_CANARY} lag growing, sync workers get access denied",
         "actions": actions},
        {"id": "INC-7102", "service": "checkout-service",
         "symptoms": "checkout latency up after a config push", "actions": []},
    ], sort_keys=False, allow_unicode=True)


def corpus_draft() -> str:
    return json.dumps({
        "summary": f"The {CORPUS_CANARY} workers lost access; {MODEL_SECRETS['summary']}.",
        "likely_cause": MODEL_SECRETS["likely_cause"],
        "recommendations": [{"action": MODEL_SECRETS["model_note"],
                             "evidence": [{"incident_id": "INC-7101",
                                           "action_id": "INC-7101/A1"}]}],
        "warnings": [], "confidence": 60})


def assert_no_corpus_secret(text: str, where: str) -> None:
    leaked = [n for n, secret in enumerate(CORPUS_SECRETS) if secret in text]
    assert not leaked, f"corpus lines {leaked} leaked into {where}"  # (never print a secret)


@pytest.fixture
def corpus_memory(tmp_path: Path) -> Path:
    path = tmp_path / "corpus-incidents.yaml"
    path.write_text(corpus_incidents(), encoding="utf-8")
    return path


def test_check_names_the_incident_and_field_of_each_corpus_secret(
        corpus_memory: Path, tmp_path: Path) -> None:
    from tests.test_cli import call_cli

    result = call_cli("check", data_dir=tmp_path / "data", incidents=corpus_memory)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stdout.splitlines() if ": warning: " in line]
    for n, case in enumerate(CORPUS_CASES, 1):
        assert any(f": warning: {case['kind']} secret in INC-7101 A{n} explanation" in line
                   for line in warnings), f"corpus line {n - 1} not named"
    assert f"{len(CORPUS_CASES)} secrets found" in result.stdout.splitlines()[-1]
    assert_no_corpus_secret(result.stdout + result.stderr, "triage check output")


def test_no_corpus_secret_reaches_the_index_the_prompt_or_any_output(
        corpus_memory: Path, tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """Stored, in the alert, and written by the model: never in the index, a request to the
    model, `brief --json`, `brief --format md`, or any file under the data dir (the
    verification artifact of `--verify` included); the model's lines shown redacted."""
    from tests.test_cli import call_cli

    data_dir = tmp_path / "data"
    fake_ollama.default_chat = ChatReply(corpus_draft())
    model = {"OLLAMA_HOST": fake_ollama.host, "TRIAGE_MODEL": MODEL, "TRIAGE_MODEL_TIMEOUT": "30"}
    indexed = call_cli("index", data_dir=data_dir, incidents=corpus_memory)
    assert indexed.returncode == 0, indexed.stderr
    alert = (f"{CORPUS_CANARY} lag growing, sync workers get access denied; log: "
             + " | ".join(case["text"] for case in CORPUS_CASES))
    briefed = call_cli("brief", alert, "--json", "--verify", data_dir=data_dir,
                       incidents=corpus_memory, extra_env=model)
    assert briefed.returncode == 0, briefed.stderr
    assert_no_corpus_secret(briefed.stdout + briefed.stderr, "triage brief --json")
    out = json.loads(briefed.stdout)
    assert out["source"] == "model", out["degraded"]
    assert out["recalled"][0]["incident_id"] == "INC-7101"
    assert out["summary"].endswith("connect with password=[REDACTED:secret-value] and retry.")
    assert out["likely_cause"] == "the CI used [REDACTED:github-token] to push"
    assert out["recommendations"][0]["model_note"] == (
        "point the sync workers at postgres://ledger:[REDACTED:url-password]"
        "@db.internal/ledger again")

    markdown = call_cli("brief", alert, "--format", "md", data_dir=data_dir,
                        incidents=corpus_memory, extra_env=model)
    assert markdown.returncode == 0, markdown.stderr
    assert_no_corpus_secret(markdown.stdout + markdown.stderr, "triage brief --format md")
    # (Markdown shows the marker literally: its brackets escaped)
    assert ("**Likely cause (the model's reading):** the CI used \\[REDACTED:github-token\\] "
            "to push") in markdown.stdout
    assert "connect with password=\\[REDACTED:secret-value\\] and retry." in markdown.stdout

    chats = sent(fake_ollama, "/api/chat")
    assert chats, "the model was never asked"
    for body in chats:
        assert_no_corpus_secret(body, "a /api/chat request")
    assert any("[REDACTED:npm-access-token]" in body and "[REDACTED:hex-key]" in body
               for body in chats)

    files = every_file(data_dir)
    assert any(CORPUS_CANARY.encode() in data for data in files.values()), "blind: no canary"
    for path, data in files.items():
        assert_no_corpus_secret(data.decode("utf-8", errors="replace"), str(path))
        lowered = data.lower()
        leaked = [n for n, s in enumerate(CORPUS_SECRETS) if s.lower().encode() in lowered]
        assert not leaked, f"corpus lines {leaked} in {path} (lower-cased)"
