"""Redaction: secrets go, the error line around them stays readable."""

from __future__ import annotations

import pytest

from store.redact import redact

SECRETS = [
    # (alert text, the secret, the kind reported)
    ("GET /v1/charges 401: Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c rejected by upstream",
     "9f8e7d6c5b4a3f2e1d0c", "bearer-token"),
    ("curl -H 'authorization: bearer abc.DEF_ghi-jkl~123' https://api.internal/x",
     "abc.DEF_ghi-jkl~123", "bearer-token"),
    ("ERROR connect failed postgres://app:s3cretpw@db:5432/pay timeout after 30s",
     "s3cretpw", "url-password"),
    ("amqp://worker:Tr0ub4dor%263@rabbit.internal:5672/ connection reset",
     "Tr0ub4dor%263", "url-password"),
    ("redis cache unreachable at redis://:cachepa55word@cache-1:6379/0, falling back",
     "cachepa55word", "url-password"),
    ("boto3 InvalidClientTokenId for key AKIAIOSFODNN7EXAMPLE in eu-west-1",
     "AKIAIOSFODNN7EXAMPLE", "aws-access-key"),
    ("STS session ASIAY34FZKBOKMUTVV7A expired during deploy",
     "ASIAY34FZKBOKMUTVV7A", "aws-access-key"),
    ("env dump: aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY region=eu",
     "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "secret-value"),
    ("auth failed, token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
     "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U invalid signature",
     "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "jwt"),
    ("login failed password=hunter2xyz for user bob", "hunter2xyz", "secret-value"),
    ("DB_PASSWORD: 'Zq9!mK2#pL' missing from vault sync", "Zq9!mK2#pL", "secret-value"),
    ("config api_key: 0123456789abcdef loaded from env", "0123456789abcdef", "secret-value"),
    ("callback https://hooks.internal/notify?token=abcdef123456&retry=1 returned 500",
     "abcdef123456", "secret-value"),
    ("stripe error for sk_live_51HxYzAbCdEfGhIjKlMn on charge", "sk_live_51HxYzAbCdEfGhIjKlMn",
     "api-key"),
    ("git clone failed with ghp_abcdefghijklmnopqrstuvwxyz0123456789 revoked",
     "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "github-token"),
    ("slack notify failed: invalid_auth for xoxb-2841973-9f8e7d6c5b4a in #payments-alerts",
     "xoxb-2841973-9f8e7d6c5b4a", "slack-token"),
    ("webhook 401 with Authorization: Basic dXNlcjpodW50ZXIyeHl6 from the proxy",
     "dXNlcjpodW50ZXIyeHl6", "basic-auth"),
    ("curl -H 'authorization: basic YWRtaW46czNjcmV0cHc=' https://api.internal/x",
     "YWRtaW46czNjcmV0cHc=", "basic-auth"),
]


@pytest.mark.parametrize(("text", "secret", "kind"), SECRETS,
                         ids=[kind + "-" + str(n) for n, (_, _, kind) in enumerate(SECRETS)])
def test_secret_is_replaced_and_its_kind_reported(text: str, secret: str, kind: str) -> None:
    result = redact(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert kind in result.found


def test_private_key_block_goes_entirely_and_text_after_it_stays() -> None:
    body = "MIIEpAIBAAKCAQEA7bq9xJ3vYkT0Qx2mR5Wn8cF1LhG6pZsD4uE3oN"
    text = (f"deploy log: loaded key\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n"
            f"Zm9vYmFyYmF6\n-----END RSA PRIVATE KEY-----\nERROR tls handshake failed")
    result = redact(text)
    assert body not in result.text and "Zm9vYmFyYmF6" not in result.text
    assert "BEGIN RSA PRIVATE KEY" not in result.text
    assert result.text.startswith("deploy log: loaded key\n")
    assert result.text.endswith("\nERROR tls handshake failed")
    assert result.found == ("private-key",)


def test_truncated_private_key_block_is_still_removed() -> None:
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ"
    result = redact(f"pasted: -----BEGIN PRIVATE KEY-----\n{body}\n(output truncated")
    assert body not in result.text
    assert "private-key" in result.found


def test_error_line_around_a_url_password_survives() -> None:
    text = "ERROR connect failed postgres://app:s3cretpw@db:5432/pay timeout after 30s"
    result = redact(text)
    assert "s3cretpw" not in result.text
    assert result.text.startswith("ERROR connect failed postgres://app:")
    assert result.text.endswith("@db:5432/pay timeout after 30s")


def test_error_line_around_labelled_secret_survives() -> None:
    result = redact("WARN retrying login password=hunter2xyz for user bob (attempt 3)")
    assert result.text == (
        "WARN retrying login password=[REDACTED:secret-value] for user bob (attempt 3)")


def test_several_secrets_in_one_alert_are_all_removed() -> None:
    text = ("payments-api 500s: postgres://app:s3cretpw@db/pay refused; "
            "Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c; AKIAIOSFODNN7EXAMPLE")
    result = redact(text)
    for secret in ("s3cretpw", "9f8e7d6c5b4a3f2e1d0c", "AKIAIOSFODNN7EXAMPLE"):
        assert secret not in result.text
    assert set(result.found) == {"url-password", "bearer-token", "aws-access-key"}
    assert result.text.startswith("payments-api 500s: postgres://app:")


@pytest.mark.parametrize("text", [
    "payments service KeyError: 'amount' after deploy",
    "Payments API p99 4s, HikariPool-1 - Connection is not available, timed out after 3000ms",
    "401 invalid_token after signing key rotation; JWKS cache 15 minutes",
    "the password reset page is slow",
    "token validation errors spiked to 4k/min",
    "checkout-service p99 latency up, intermittent database connection errors",
    "GET https://api.example.com/v1/orders?page=2 returned 502",
    "POST /v1/refunds 500 at 18% — KeyError: 'amount' in refund_serializer.py",
])
def test_ordinary_text_is_untouched(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.found == ()


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact("login failed password=hunter2xyz postgres://app:s3cretpw@db/pay").text
    assert redact(once).text == once


def test_an_already_redacted_text_reports_no_secret() -> None:
    """`triage check` on a file saved through the console must not report the markers."""
    once = redact("login failed password=hunter2xyz postgres://app:s3cretpw@db/pay "
                  "token: 9f8e7d6c5b4a3f2e")
    assert once.found == ("url-password", "secret-value")
    again = redact(once.text)
    assert again.found == ()
    assert again.text == once.text


def test_the_line_after_a_labelled_secret_is_kept_word_for_word() -> None:
    result = redact("first: api_key=0123456789abcdef; then token: abcdef123456, done")
    assert result.text == ("first: api_key=[REDACTED:secret-value]; then "
                           "token: [REDACTED:secret-value], done")
    assert result.found == ("secret-value",)
