"""The redaction corpus (tests/data/secrets_corpus.yaml): each must-redact line loses its secret
and reports its kind; each must-survive line (trace ids, git SHAs, digests, UUIDs, versions,
command lines without a password) is left exactly as written. Plus the vendored gitleaks
ruleset: every rule used compiles, and the model's draft is redacted before it is shown.

Each test id names the corpus line by its number (the corpus's secrets are made up).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import re2
import yaml

from console.engine.model.draft import extract_json, loose_draft
from store import redact as redact_module
from store.redact import REDACTION_MARKER, redact

CORPUS: dict[str, Any] = yaml.safe_load(
    (Path(__file__).parent / "data" / "secrets_corpus.yaml").read_text(encoding="utf-8"))
MUST_REDACT: list[dict[str, str]] = CORPUS["must_redact"]
MUST_SURVIVE: list[str] = CORPUS["must_survive"]


@pytest.mark.parametrize("case", MUST_REDACT, ids=[f"redact-{n}-{c['kind']}"
                                                   for n, c in enumerate(MUST_REDACT)])
def test_each_secret_is_redacted_with_its_kind(case: dict[str, str]) -> None:
    result = redact(case["text"])
    assert case["secret"] not in result.text, "the secret is still in the text"
    assert f"[REDACTED:{case['kind']}]" in result.text, REDACTION_MARKER.findall(result.text)
    assert case["kind"] in result.found
    again = redact(result.text)
    assert (again.text, again.found) == (result.text, ())  # redacting twice finds nothing


def test_only_the_secret_goes_the_words_around_it_stay() -> None:
    assert redact("ran mysql -h db-1 -u app -pS3cr3tPw9 payments to check the grants").text == (
        "ran mysql -h db-1 -u app -p[REDACTED:cli-password] payments to check the grants")
    assert redact("redis-cli -h cache-1 -a R3disPa55w0rd ping").text == (
        "redis-cli -h cache-1 -a [REDACTED:cli-password] ping")
    assert redact("someone pasted the api key 3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c here").text == (
        "someone pasted the api key [REDACTED:hex-key] here")
    assert redact("curl -u deploy:Cu7lPassw0rd https://nexus.internal/x").text == (
        "curl -u [REDACTED:curl-auth-user] https://nexus.internal/x")


@pytest.mark.parametrize("text", MUST_SURVIVE, ids=[f"survive-{n}"
                                                    for n in range(len(MUST_SURVIVE))])
def test_each_lookalike_is_left_as_written(text: str) -> None:
    result = redact(text)
    assert (result.text, result.found) == (text, ())


def test_the_corpus_has_both_halves_and_no_repeats() -> None:
    kinds = {case["kind"] for case in MUST_REDACT}
    assert {"cli-password", "curl-auth-user", "hex-key", "npm-access-token",
            "secret-value"} <= kinds
    assert len(MUST_REDACT) >= 20 and len(MUST_SURVIVE) >= 25
    assert len({c["text"] for c in MUST_REDACT}) == len(MUST_REDACT)
    assert len(set(MUST_SURVIVE)) == len(MUST_SURVIVE)


def test_every_gitleaks_rule_used_compiles_under_re2_and_has_keywords() -> None:
    """A newer gitleaks.toml dropped in must still load: each rule's regex is RE2 and each
    rule is tried only when one of its keywords is in the text."""
    rules = redact_module._GL_RULES
    assert len(rules) > 200, "the vendored ruleset lost its rules"
    assert "generic-api-key" not in {rule.kind for rule in rules}
    for rule in rules:
        re2.compile(rule.regex)
        assert rule.keywords and all(k == k.lower() for k in rule.keywords), rule.kind
        assert REDACTION_MARKER.fullmatch(f"[REDACTED:{rule.kind}]"), rule.kind


def test_a_gitleaks_rule_keeps_its_entropy_threshold() -> None:
    """``npm_`` and 36 characters of one letter is no token (gitleaks' entropy 2)."""
    text = "npm_" + "a" * 36 + " in the docs"
    assert redact(text) == redact_module.Redaction(text, ())


def test_a_model_writing_credentials_has_them_redacted_before_anything_shows_them() -> None:
    raw = json.dumps({
        "summary": "Connect with password=Zk8pQ2mW7x and retry",
        "likely_cause": "the CI used ghp_abcdefghijklmnopqrstuvwxyz0123456789 to push",
        "none_apply": "redis-cli -a R3disPa55w0rd shows NOAUTH",
        "recommendations": [{"action": "Point the workers at "
                             "postgres://u:Pgpw4Ledger@db.internal/ledger",
                             "evidence": [{"incident_id": "INC-1", "action_id": "INC-1/A1"}]}],
        "warnings": [{"text": "Never paste npm_q7Rk2Lm9Xv4Tz8Wn3Bc6Hj1Pd5Fs0Gy2Ku7E again",
                      "incident_id": "INC-1", "action_id": "INC-1/A2"}],
        "steps": ["docker login -u ci -p D0ckerHubPw9 registry.internal"],
        "confidence": 50})
    draft = loose_draft(extract_json(raw))
    shown = json.dumps(draft)
    for secret in ("Zk8pQ2mW7x", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "R3disPa55w0rd",
                   "Pgpw4Ledger", "npm_q7Rk2Lm9Xv4Tz8Wn3Bc6Hj1Pd5Fs0Gy2Ku7E", "D0ckerHubPw9"):
        assert secret not in shown
    assert draft["summary"] == "Connect with password=[REDACTED:secret-value] and retry"
    assert draft["recommendations"][0]["action"] == (
        "Point the workers at postgres://u:[REDACTED:url-password]@db.internal/ledger")
    assert draft["recommendations"][0]["evidence"] == [
        {"incident_id": "INC-1", "action_id": "INC-1/A1"}]  # citations are not prose: as given


def test_a_model_secret_across_the_length_limit_is_not_left_in_part() -> None:
    """The summary is cut at 2,000 characters: redacted first, so the cut cannot leave the
    start of a token; a marker the cut would split is left out whole."""
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    summary = "x" * 1_990 + " " + token + " tail"
    draft = loose_draft({"summary": summary, "confidence": 10})
    assert draft["summary"] == "x" * 1_990 + " "
    assert "ghp_" not in draft["summary"]
