"""Redaction: secrets go, the error line around them stays readable.

The corpus below (CORPUS_SECRETS, CORPUS_LOOKALIKES) pins the exact output for each line, one
test each, and that redacting the output again changes nothing and finds nothing.
"""

from __future__ import annotations

import pytest

from store.redact import REDACTION_MARKER, redact

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


# --- the corpus: each line's exact redaction --------------------------------------------

R = "[REDACTED:{}]".format
PRIVATE_KEY_BODY = "MIIEpAIBAAKCAQEA7bq9xJ3vYkT0Qx2mR5Wn8cF1LhG6pZsD4uE3oN"

CORPUS_SECRETS = [
    # (text, exactly what redact() makes of it)
    # DSNs and URLs with a password
    ("ERROR connect failed postgres://u:p@h/db",
     f"ERROR connect failed postgres://u:{R('url-password')}@h/db"),
    ("postgresql://app:s3cretpw@db:5432/pay?sslmode=require refused",
     f"postgresql://app:{R('url-password')}@db:5432/pay?sslmode=require refused"),
    ("mysql://root:x@127.0.0.1:3306/app", f"mysql://root:{R('url-password')}@127.0.0.1:3306/app"),
    ("mongodb+srv://svc:Mng0!pass@cluster0.mongodb.net/prod timed out",
     f"mongodb+srv://svc:{R('url-password')}@cluster0.mongodb.net/prod timed out"),
    ("redis://:cachepa55word@cache-1:6379/0 unreachable",
     f"redis://:{R('url-password')}@cache-1:6379/0 unreachable"),
    ("amqp://worker:p@ss@rabbit:5672/ reset", f"amqp://worker:{R('url-password')}@rabbit:5672/ reset"),
    ("jdbc:postgresql://db/pay?user=app&password=abc&ssl=true",
     f"jdbc:postgresql://db/pay?user=app&password={R('secret-value')}&ssl=true"),
    ("dsn: host=db user=app password=abc dbname=pay",
     f"dsn: host=db user=app password={R('secret-value')} dbname=pay"),
    # GitHub, GitLab
    ("clone failed with ghp_abcdefghijklmnopqrstuvwxyz0123456789 revoked",
     f"clone failed with {R('github-token')} revoked"),
    ("GH_TOKEN github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP expired",
     f"GH_TOKEN {R('github-token')} expired"),
    ("oauth gho_16C7e42F292c6912E7710c838347Ae178B4a rejected", f"oauth {R('github-token')} rejected"),
    ("runner used glpat-xY3kZ8qW2vB7nM4pL9sT", f"runner used {R('gitlab-token')}"),
    # AWS
    ("boto3 InvalidClientTokenId for key AKIAIOSFODNN7EXAMPLE in eu-west-1",
     f"boto3 InvalidClientTokenId for key {R('aws-access-key')} in eu-west-1"),
    ("STS session ASIAY34FZKBOKMUTVV7A expired", f"STS session {R('aws-access-key')} expired"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY region=eu",
     f"aws_secret_access_key = {R('secret-value')} region=eu"),
    ('AWS_SECRET_ACCESS_KEY: "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"',
     f'AWS_SECRET_ACCESS_KEY: "{R("secret-value")}"'),
    # private keys
    (f"loaded\n-----BEGIN RSA PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n-----END RSA PRIVATE KEY-----\nthen 500s",
     f"loaded\n{R('private-key')}\nthen 500s"),
    (f"-----BEGIN OPENSSH PRIVATE KEY----- {PRIVATE_KEY_BODY} -----END OPENSSH PRIVATE KEY----- (folded)",
     f"{R('private-key')} (folded)"),
    (f"-----BEGIN EC PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n-----END EC PRIVATE KEY-----",
     R("private-key")),
    (f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PRIVATE_KEY_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
     R("private-key")),
    (f"pasted -----BEGIN PRIVATE KEY-----\n{PRIVATE_KEY_BODY}\n(output truncated",
     f"pasted {R('private-key')}"),
    # Slack, JWT, bearer, basic, vendor keys
    ("notify failed for xoxb-2841973-9f8e7d6c5b4a in #alerts",
     f"notify failed for {R('slack-token')} in #alerts"),
    ("user token xoxp-1234567890-abcdefghij leaked", f"user token {R('slack-token')} leaked"),
    ("POST https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx 404",
     f"POST https://hooks.slack.com/services/{R('slack-webhook')} 404"),
    ("token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U bad",
     f"token {R('jwt')} bad"),
    ("401: Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c rejected",
     f"401: Authorization: Bearer {R('bearer-token')} rejected"),
    ("curl -H 'authorization: bearer abc.DEF_ghi-jkl~123' https://api.internal/x",
     f"curl -H 'authorization: bearer {R('bearer-token')}' https://api.internal/x"),
    ("proxy sent Authorization: Basic dXNlcjpodW50ZXIyeHl6",
     f"proxy sent Authorization: Basic {R('basic-auth')}"),
    # basic credentials whose padding was dropped (user:password, user:password1) or overdone
    ("shipper logged Authorization: Basic dXNlcjpwYXNzd29yZA (padding stripped)",
     f"shipper logged Authorization: Basic {R('basic-auth')} (padding stripped)"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDE", f"Authorization: Basic {R('basic-auth')}"),
    ("Authorization: Basic dXNlcjpwYXNzd29yZDE== (one = too many)",
     f"Authorization: Basic {R('basic-auth')} (one = too many)"),
    ("stripe error for sk_live_51HxYzAbCdEfGhIjKlMn", f"stripe error for {R('api-key')}"),
    ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx1234 quota", f"OPENAI_API_KEY={R('api-key')} quota"),
    ("maps key AIzaSyA1234567890abcdefghijklmnopqrstuv denied", f"maps key {R('api-key')} denied"),
    # short values after strong labels
    ("login failed password=abc for bob", f"login failed password={R('secret-value')} for bob"),
    ("pwd: hunter2", f"pwd: {R('secret-value')}"),
    ("passwd=x1", f"passwd={R('secret-value')}"),
    ('PASSWORD: "s3"', f'PASSWORD: "{R("secret-value")}"'),
    ("password=1", f"password={R('secret-value')}"),
    ("pass: abc", f"pass: {R('secret-value')}"),
    ("DB_PASS=qwerty", f"DB_PASS={R('secret-value')}"),
    ("export PGPASSWORD=abc", f"export PGPASSWORD={R('secret-value')}"),
    ("MYSQL_ROOT_PASSWORD=r00t in compose file", f"MYSQL_ROOT_PASSWORD={R('secret-value')} in compose file"),
    ("spring.datasource.password: Zx9", f"spring.datasource.password: {R('secret-value')}"),
    ('{"user": "app", "password": "hunter2"}', f'{{"user": "app", "password": "{R("secret-value")}"}}'),
    ('password: "correct horse battery staple"', f'password: "{R("secret-value")}"'),
    ("psql --password hunter2 -h db", f"psql --password {R('secret-value')} -h db"),
    ("passphrase: 'open sesame'", f"passphrase: '{R('secret-value')}'"),
    ("login failed (password=abc)", f"login failed (password={R('secret-value')})"),
    ("pwd: 1234", f"pwd: {R('secret-value')}"),
    # trailing punctuation: a full stop or a bracket the value does not open ends the prose
    ("rotated; old password: hunter2.", f"rotated; old password: {R('secret-value')}."),
    ("login failed for bob (password=hunter2).",
     f"login failed for bob (password={R('secret-value')})."),
    ("password=(hunter2)", f"password={R('secret-value')}"),
    ("creds {user: app, password: hunter2}", f"creds {{user: app, password: {R('secret-value')}}}"),
    ("[token: 9f8e7d6c5b4a3f2e]", f"[token: {R('secret-value')}]"),
    ("DB_PASSWORD: 'Zq9!mK2#pL' missing from vault sync",
     f"DB_PASSWORD: '{R('secret-value')}' missing from vault sync"),
    # weak labels with credential-shaped values
    ("token: 9f8e7d6c5b4a3f2e", f"token: {R('secret-value')}"),
    ("config api_key: 0123456789abcdef loaded", f"config api_key: {R('secret-value')} loaded"),
    ("X-Api-Key: 3f9a8b7c6d5e4f3a", f"X-Api-Key: {R('secret-value')}"),
    ("client_secret: 8dK2mQ9vX4pL7nR3", f"client_secret: {R('secret-value')}"),
    ("vault login --token=s.Xk29dkQ0pLmN", f"vault login --token={R('secret-value')}"),
    ("secret_key_base: 3b9f2c8e7d6a5b4c3d2e1f0a9b8c7d6e", f"secret_key_base: {R('secret-value')}"),
    ("https://hooks.internal/notify?token=abcdef123456&retry=1 returned 500",
     f"https://hooks.internal/notify?token={R('secret-value')}&retry=1 returned 500"),
    ("SECRET=Abc12345", f"SECRET={R('secret-value')}"),
    ("credentials=admin:Adm1n2024", f"credentials={R('secret-value')}"),
    # at each threshold of a weak label's value: 8 letters and digits, 8 of mixed case, 20 opaque
    ("token: 9f8e7d6c", f"token: {R('secret-value')}"),
    ("session_secret: hQxKpWzR", f"session_secret: {R('secret-value')}"),
    ("refresh_token: qzvhtkwpmf+xrnbdlgjc", f"refresh_token: {R('secret-value')}"),
    # base64 padding is part of the token
    ("X-Auth-Token: c2Vzc2lvbjo5ZjhlN2Q2YzViNGE=", f"X-Auth-Token: {R('secret-value')}"),
    # a weak label whose value holds a strong label's secret
    ("secret: password=hunter2", f"secret: password={R('secret-value')}"),
    ("credentials: pwd=abc", f"credentials: pwd={R('secret-value')}"),
    # YAML flow mappings: a label right after a lone brace
    ("creds: {password: hunter2}", f"creds: {{password: {R('secret-value')}}}"),
    ("{password=hunter2}", f"{{password={R('secret-value')}}}"),
    # a PASS-suffixed variable holding digits is a password, not a count
    ("DB_PASS=1234", f"DB_PASS={R('secret-value')}"),
    ("SMTP_PASS: 123456", f"SMTP_PASS: {R('secret-value')}"),
]

CORPUS_LOOKALIKES = [
    # labels with no secret after them: status words
    "pwd: /srv/app",
    "token: expired",
    "secret: rotated",
    "api_key: missing",
    "token=invalid",
    "password: expired for 3 service accounts",
    "password: null",
    "password: none",
    "db login fixed, password: rotated.",
    "login failed, password: wrong!",
    "password: the vault returned an old one",
    # references to where a secret lives (env vars, substitutions, templates): not secrets
    "password: ${DB_PASSWORD}",
    "DB_PASSWORD=$PASSWORD",
    "password: $DB_PASSWORD",
    "password: %DB_PASSWORD%",
    "password: $(cat /run/secrets/db)",
    "password: {{ .Values.db.password }}",
    "password: %(pw)s",
    "cd $PWD: permission denied",
    # placeholders and masks
    "password: <redacted>",
    "password: <password>",
    "password: ****",
    "password: xxxx",
    "password: ...",
    "password: [hidden]",
    "password: (redacted)",
    'password: ""',
    "password=",
    "Authorization: Bearer <token>",
    # paths
    "private_key: ~/.ssh/id_rsa",
    "PWD=/home/deploy",
    "password_file: /run/secrets/db_password",
    # prose: no separator right after the label
    'password authentication failed for user "app"',
    "the password was reset",
    "the bearer authentication failed",
    "basic connectivity checks passed",
    "Basic auth failed: 401 from the proxy",
    "basic authentication failed for user app",
    "api-key header missing from request",
    "Rotated the GitHub token and the AWS access key",
    # other key: value text
    "key: value",
    "tests pass: 12, fail: 3",
    "%{password} and {{password}} and ${password} are templates",
    "bypass: true",
    "token_url: https://auth.internal/oauth/token",
    "secret_name: db-credentials",
    "secretName: payments-db",
    "token_count: 12",
    "token_ttl: 3600s",
    "token_expiry: 2026-03-14T02:05:00Z",
    "token: ExpiredTokenException",
    "token: sha256",
    "api_key: v1.2.3",
    "password_policy: strict",
    # weak labels: one short of each threshold (7 letters and digits, 7 of mixed case, 19 opaque)
    "token: 9f8e7d6",
    "session_secret: hQxKpWz",
    "refresh_token: qzvhtkwpmf+xrnbdlgj",
    # weak labels: another setting's value, a URL, a URN, words, a masked value
    "token: exp=1710382500 (expired)",
    "token_endpoint: https://sso1.example.com/oauth2/token",
    "subject_token_type: urn:ietf:params:oauth:token-type:access_token",
    "secret_name: payments-db-credentials",
    "credentials: user=XXXXXXXX",
    # URLs and errors that only look like credentials
    "https://api.example.com:8443/v1/orders returned 502",
    "ssh://git@github.com:22/org/repo clone failed",
    "GET /v1/tokens?page=2 returned 500",
    "KeyError: 'amount' in refund_serializer.py",
    "HikariPool-1 - Connection is not available, timed out after 3000ms",
    "JWT signature invalid; JWKS cache 15 minutes",
]


def _kinds(text: str) -> set[str]:
    """The kinds named by the markers in ``text``."""
    return {marker[len("[REDACTED:"):-1] for marker in REDACTION_MARKER.findall(text)}


@pytest.mark.parametrize(("text", "expected"), CORPUS_SECRETS,
                         ids=[f"secret-{n}" for n in range(len(CORPUS_SECRETS))])
def test_corpus_secret_is_redacted_exactly(text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected
    assert set(result.found) == _kinds(expected)


@pytest.mark.parametrize(("text", "expected"), CORPUS_SECRETS,
                         ids=[f"secret-{n}" for n in range(len(CORPUS_SECRETS))])
def test_corpus_secret_redacted_twice_is_stable(text: str, expected: str) -> None:
    once = redact(text).text
    again = redact(once)
    assert (again.text, again.found) == (once, ())


@pytest.mark.parametrize("text", CORPUS_LOOKALIKES,
                         ids=[f"lookalike-{n}" for n in range(len(CORPUS_LOOKALIKES))])
def test_corpus_lookalike_is_left_as_written(text: str) -> None:
    result = redact(text)
    assert (result.text, result.found) == (text, ())
    assert redact(result.text) == result  # and twice: still nothing


def test_the_corpus_is_large_enough_and_has_no_repeats() -> None:
    assert len(CORPUS_SECRETS) >= 40 and len(CORPUS_LOOKALIKES) >= 40
    assert len({t for t, _ in CORPUS_SECRETS}) == len(CORPUS_SECRETS)
    assert len(set(CORPUS_LOOKALIKES)) == len(CORPUS_LOOKALIKES)
