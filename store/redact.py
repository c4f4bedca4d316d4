"""One shared redactor: secrets are replaced before text is searched, sent or stored.

Used on every alert (store/recall.py), on every incident loaded from the team's file
(store/loader.py — before anything is derived from it) and on every incident saved
(store/writer.py). Redacting a redacted text finds nothing and changes nothing.

Two families of rule:

* **Shapes** — a secret recognisable on its own: private-key blocks, JWTs, bearer/basic
  credentials, the password of a URL (``postgres://u:p@h``), AWS access key ids, GitHub,
  GitLab, Slack, Stripe, OpenAI and Google keys. Replaced whole.
* **Commands** — a password given on a command line: ``mysql -pPASS``, ``redis-cli -a PASS``,
  ``sshpass -p PASS``, ``docker login -p PASS`` (``curl -u user:PASS`` is gitleaks' rule, below).
  Only the password is replaced.
* **Hex in prose** — a bare run of 32+ hex digits is a secret only when the nearest word before
  it (or right after it) is key, token, secret, password or credential: ``the api key
  0123…cdef was pasted``. Beside trace, span, request, commit, sha, digest, hash, checksum,
  or no word at all, it is an id and stays readable (trace ids, git SHAs, sha256 digests).
* **Labels** — ``label = value`` / ``label: value`` (also ``"label": "value"``,
  ``--label=value``, ``--label value``, ``DB_PASSWORD=…``, ``spring.datasource.password: …``). Only the value
  is replaced, so the line around it stays readable evidence.

  - strong labels (password, passwd, passphrase, pwd, pass): any value of one character or
    more is a secret, except a placeholder, a path or a status word (below);
  - weak labels (token, secret, api_key, access_key, secret_key, private_key, credentials …,
    also with a suffix: ``secret_key_base``, ``token_id``): only a value that looks like a
    credential — letters and digits mixed (8+ characters), mixed case that is not just
    Capitalised words, or a long (20+) opaque string.

* **gitleaks' ruleset** — every vendor token shape the gitleaks project maintains (npm, Azure
  AD, Databricks, Twilio, … 200+ rules), from its default config vendored as
  ``store/rules/gitleaks.toml`` (see ``_GITLEAKS_VERSION``), run with RE2 (google-re2: the
  engine the ruleset is written for, linear-time on hostile text). Applied after the rules
  above, so their kinds stay as they were; a match is replaced by ``[REDACTED:<gitleaks id>]``.

What is deliberately *not* a secret (it is the evidence people write about secrets):

  - status words: ``token: expired``, ``secret: rotated``, ``api_key: missing``,
    ``password: reset``, ``token=invalid`` …, and a few function words (``password: the …``);
  - references to where a secret lives — they hold no secret themselves: environment
    variables (``${DB_PASSWORD}``, ``$PASSWORD``, ``%PASSWORD%``), command substitutions
    (``$(cat /run/secrets/db)``), templates (``{{ .Values.password }}``, ``%(pw)s``);
  - placeholders and masks: ``<password>``, ``****``, ``xxxx``, ``...``, ``[hidden]``,
    ``(redacted)`` and this redactor's own ``[REDACTED:<kind>]`` markers;
  - paths: ``pwd: /srv/app``, ``private_key: ~/.ssh/id_rsa``, ``password_file: ./pw``;
  - prose without a separator: ``password authentication failed for user "app"``,
    ``the password was reset`` (a label needs ``=`` or ``:`` right after it);
  - a bare ``pass`` followed by a number (``tests pass: 12``) is a count.
"""

from __future__ import annotations

import base64
import math
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import re2  # google-re2: gitleaks' patterns are RE2 syntax and must run in linear time

# --- labelled values ----------------------------------------------------------------------

# A label is a whole identifier ending in a known word: not preceded by an identifier
# character, nor by ``$``, ``%``, ``${``, ``%{`` or ``{{`` (then it is a variable reference or
# a template, not a label). After a lone ``{`` it is a label: ``{password: hunter2}`` is YAML.
_LABEL_START = r"(?<![A-Za-z0-9_.$%-])(?<!\$\{)(?<!%\{)(?<!\{\{)"
_STRONG = r"[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pwd)|(?:[A-Za-z0-9_.-]*[_.-])?pass"
_WEAK = (r"[A-Za-z0-9_.-]*?(?:token|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
         r"private[_-]?key|account[_-]?key|credentials?)(?:[_.-][A-Za-z0-9]+){0,2}")
_LABELLED = re.compile(
    r"(?:(?P<flag>" + _LABEL_START + r"--)|" + _LABEL_START + r")"
    r"(?i:(?P<strong>" + _STRONG + r")|(?P<weak>" + _WEAK + r"))"
    # ``--password hunter2`` (a command-line flag) or ``label = value``, ``"label": "value"``
    r"(?(flag)(?:[ \t]*=[ \t]*|[ \t]+)|[\"']?[ \t]*(?:=>|:=|[=:])[ \t]*)"
    # (not an earlier marker: redacting a redacted text must find nothing)
    r"(?!\[REDACTED)(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|[\"']?(?P<value>[^\s\"'`,;&]+))")

_STATUS_WORDS = frozenset("""
    expired expiring expires invalid invalidated missing rotated rotating revoked reset
    required changed unchanged incorrect wrong empty blank none null nil undefined unset notset
    redacted hidden masked omitted removed deleted set ok true false yes no on off na n/a
    unknown denied failed failure present absent leaked compromised exposed disabled enabled
    updated error mismatch rejected refused accepted valid correct default provided supplied
    stale old new same pending generated weak strong prompt policy field value rejected
    the a an is was were not from for in of to and or with via by at as
""".split())
_ENV_REF = re.compile(r"\$[A-Z_][A-Z0-9_]*|\$\{[^}]*\}?|\$\(.*\)?|%[A-Za-z_][A-Za-z0-9_]*%")
_TEMPLATE = re.compile(r"\{\{.*|\{%.*|%\([A-Za-z_]+\)s|%s")
_ANGLE = re.compile(r"<[^<>]*>")
_MASK = re.compile(r"[*xX•.#?_-]+|…+")
_BRACKETED_WORD = re.compile(r"\[[A-Za-z _:-]*\]|\([A-Za-z _:-]*\)")
_PATH = re.compile(r"(?:~|\.{1,2})?/.*|~|[A-Za-z]:\\.*")
_CAMEL_WORDS = re.compile(r"(?:[A-Z][a-z]+)+")
_PLAIN_WORDS = re.compile(r"[a-z]+(?:[_.-][a-z]+)*|[A-Z]+(?:[_.-][A-Z]+)*")
_NUMERIC = re.compile(r"[vV]?[\d:.,/-]+|\d{4}-\d\d-\d\d[T ][\d:.]+(?:Z|[+-][\d:]+)?")
_OPAQUE = re.compile(r"[A-Za-z0-9+/=_.~-]+")
_OPENER = {")": "(", "]": "[", "}": "{"}  # a closing bracket and the one that opens it


def _not_a_secret(value: str) -> bool:
    """A placeholder, a reference, a path or a word about the secret, in any label's place."""
    return (value.lower().strip(".!") in _STATUS_WORDS
            or any(p.fullmatch(value) for p in (_ENV_REF, _TEMPLATE, _ANGLE, _MASK,
                                                _BRACKETED_WORD, _PATH)))


def _looks_like_credential(value: str) -> bool:
    """For weak labels: a value shaped like a key rather than like a word."""
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    if "=" in value.rstrip("=") or "://" in value or _NUMERIC.fullmatch(value):
        return False  # ``ttl=300s``, a URL, a time or a version: something else's value
    if len(value) >= 8 and has_digit and has_alpha:
        return True
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    if len(value) >= 8 and mixed and not _CAMEL_WORDS.fullmatch(value):
        return True
    return (len(value) >= 20 and _OPAQUE.fullmatch(value) is not None
            and not _PLAIN_WORDS.fullmatch(value) and not _CAMEL_WORDS.fullmatch(value))


def _is_labelled_secret(match: re.Match[str]) -> tuple[int, int] | None:
    """The span of the secret value in a labelled match, or None to leave it as written."""
    group = next(g for g in ("dq", "sq", "value") if match.group(g) is not None)
    start, end = match.span(group)
    value = match.group(group)
    if group == "value":
        # ``(password=abc)``, ``password=abc.`` — a full stop, or a closing bracket the value
        # does not open, ends prose; ``password=(abc)`` keeps its brackets.
        while value.endswith(".") or (value[-1:] in _OPENER and _OPENER[value[-1]] not in value):
            value, end = value[:-1], end - 1
    if not value.strip() or _not_a_secret(value.strip()) or REDACTION_MARKER.search(value):
        return None
    if match.group("strong") is not None:
        if match.group("strong").lower() == "pass" and value.isdigit():
            return None  # ``tests pass: 12`` is a count; ``DB_PASS=1234`` is a password
        return start, end
    return (start, end) if _looks_like_credential(value) else None


# --- the patterns, in the order they are applied ------------------------------------------

# A pattern without a checker replaces its whole match (or, for url-password, the password
# group); one with a checker replaces the span the checker returns, or nothing.
_Checker = Callable[[re.Match[str]], "tuple[int, int] | None"]

# Each pattern matches the secret itself, never the error line around it.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private-key", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}")),
    ("basic-auth", re.compile(r"(?i)(?<=\bbasic )[A-Za-z0-9+/]{8,}={0,2}")),
    # (not an earlier marker: redacting a redacted text must find nothing); the password
    # runs to the last ``@`` before the host, so ``p@ss`` in ``u:p@ss@h`` goes whole.
    ("url-password", re.compile(r"(?<=://)([^/\s:@]*):(?!\[REDACTED:)([^/\s]+)(?=@[^/\s@]+)")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("gitlab-token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"\bxox[abeoprs]-[A-Za-z0-9-]{10,}\b|\bxapp-[A-Za-z0-9-]{10,}")),
    ("slack-webhook", re.compile(
        r"(?<=hooks\.slack\.com/services/)T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]{16,}")),
    ("api-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b"
                           r"|\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}|\bAIza[0-9A-Za-z_-]{35}")),
    ("cli-password", re.compile(
        # the client, then (on the same command line) its password option; the value as one
        # argument, quoted or not. ``mysql -p`` alone prompts; ``-P3306`` is a port.
        r"(?<![\w.-])(?:"
        r"(?:mysql(?:dump|admin|import|check|sh)?|mariadb(?:-dump|-admin)?)\b[^\n|;&]{0,300}?"
        r"(?<=\s)-p(?=[^\s])"
        r"|redis-cli\b[^\n|;&]{0,300}?(?<=\s)(?:-a|--pass)[ \t]+"
        r"|sshpass\b[^\n|;&]{0,100}?(?<=\s)-p[ \t]*"
        r"|(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]+registry)[ \t]+login\b"
        r"[^\n|;&]{0,300}?(?<=\s)(?:-p[ \t]*|--password(?:[ \t]*=[ \t]*|[ \t]+))"
        r")(?!\[REDACTED)(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<value>[^\s\"'`;&|]+))")),
    ("secret-value", _LABELLED),
    ("hex-key", re.compile(r"(?<![0-9A-Za-z_-])[0-9a-fA-F]{32,}(?![0-9A-Za-z_-])")),
]



def _is_token(match: re.Match[str]) -> tuple[int, int] | None:
    """``Bearer 9f8e…`` yes; ``bearer authentication failed`` no."""
    return match.span() if _looks_like_credential(match.group(0)) else None


def _is_basic_credential(match: re.Match[str]) -> tuple[int, int] | None:
    """``Basic dXNlcjpw…`` decodes to ``user:password``; ``basic connectivity`` does not.

    The pattern admits base64 characters only, with the padding as written (none, some, or
    one too many): two more ``=`` complete any of them, and the lenient decoder ignores the
    ones it does not need.
    """
    try:
        decoded = base64.b64decode(match.group(0) + "==")
    except ValueError:  # binascii.Error: 4n+1 characters; or a non-ASCII letter (?i) let in
        return None
    return match.span() if b":" in decoded else None


def _is_cli_password(match: re.Match[str]) -> tuple[int, int] | None:
    """The password argument itself, unless it is a reference or a placeholder
    (``-p"$MYSQL_PWD"``, ``-a <password>``)."""
    group = next(g for g in ("dq", "sq", "value") if match.group(g) is not None)
    value = match.group(group)
    return None if _not_a_secret(value) else match.span(group)


# The words that make a bare hex run a key (the nearest word decides), and those that make it
# an id or a digest. Whole words, or the last part of one (``api_key``, ``X-Auth-Token``).
_KEY_WORDS = re.compile(r"(?i)(?:^|[^a-z])(?:api[ _-]?key|apikey|key|token|secret|password|passwd|"
                        r"pwd|credentials?|creds|auth)s?(?![a-z])")
_ID_WORDS = re.compile(r"(?i)(?:^|[^a-z])(?:trace|span|request|req|correlation|commit|sha\d*|"
                       r"digest|hash|checksum|md5|etag|id|uuid|guid|revision|rev|build|image|"
                       r"fingerprint|object|blob|tree|ref)s?(?![a-z])")
_HEX_BEFORE, _HEX_AFTER = 40, 24  # characters of context read on each side of the run


def _is_hex_key(match: re.Match[str]) -> tuple[int, int] | None:
    """``the api key 0123…cdef was pasted`` yes; ``trace 4bf9…4736``, ``sha256:e3b0…``, a
    commit, or a run with no word beside it: no. Before the run, the nearest word decides;
    with none before it, a key word right after it (``0123…cdef is the api key``)."""
    value = match.group(0)
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return None  # all digits (a number) or all letters (a word): not a random key
    text = match.string
    before = text[max(0, match.start() - _HEX_BEFORE):match.start()].split("\n")[-1]
    keys = [m.end() for m in _KEY_WORDS.finditer(before)]
    ids = [m.end() for m in _ID_WORDS.finditer(before)]
    if keys or ids:
        return match.span() if max(keys, default=-1) > max(ids, default=-1) else None
    after = text[match.end():match.end() + _HEX_AFTER].split("\n")[0]
    key_after = _KEY_WORDS.search(after)
    id_after = _ID_WORDS.search(after)
    if key_after and (id_after is None or key_after.start() < id_after.start()):
        return match.span()
    return None


_CHECKERS: dict[str, _Checker] = {"secret-value": _is_labelled_secret,
                                  "bearer-token": _is_token, "basic-auth": _is_basic_credential,
                                  "cli-password": _is_cli_password, "hex-key": _is_hex_key}

# Lower-case words one of which a text must hold for the pattern to be tried at all: each
# pattern's match contains one of them. Every pattern has its words (checked below), so a text
# holding none of them is returned as it is without trying any pattern.
_NEEDS: dict[str, tuple[str, ...]] = {
    "private-key": ("private key",), "jwt": ("eyj",), "bearer-token": ("bearer ",),
    "basic-auth": ("basic ",), "url-password": ("://",), "aws-access-key": ("akia", "asia"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",), "slack-token": ("xox", "xapp-"),
    "slack-webhook": ("hooks.slack.com/services/",),
    "api-key": ("sk_", "rk_", "pk_", "sk-", "aiza"),
    "cli-password": ("mysql", "mariadb", "redis-cli", "sshpass", "login"),
    "secret-value": ("pass", "pwd", "token", "secret", "key", "credential"),
    "hex-key": ("key", "token", "secret", "pass", "pwd", "cred", "auth"),
}
_ANY_NEED = re.compile("|".join(re.escape(w) for words in _NEEDS.values() for w in words))
if _NEEDS.keys() != {kind for kind, _ in _PATTERNS}:
    raise ImportError("store.redact: every pattern needs its trigger words in _NEEDS")

REDACTION_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")  # gitleaks ids have digits


@dataclass(frozen=True)
class Redaction:
    """Text with secrets replaced, and the kinds of secret that were found."""

    text: str
    found: tuple[str, ...]


def _inner_labels(match: re.Match[str], found: list[str]) -> str:
    """A labelled value that is not itself a secret may hold another label's secret:
    ``secret: password=hunter2``, ``credentials: pwd=abc``. Its value is redacted on its own
    (strictly shorter than the match, so this ends)."""
    value = next(g for g in ("dq", "sq", "value") if match.group(g) is not None)
    start = match.start(value) - match.start()
    whole = match.group(0)
    inner = redact(whole[start:])
    found.extend(inner.found)
    return whole[:start] + inner.text


# --- gitleaks' ruleset ---------------------------------------------------------------------
#
# store/rules/gitleaks.toml is gitleaks' default config as released: config/gitleaks.toml at
# tag v8.30.1 (commit 83d9cd684c87d95d656c1458ef04895a7f1cbd8e), MIT licence
# (store/rules/GITLEAKS-LICENSE). To update, replace the file with a newer release's and run
# tests/test_redaction_corpus.py. It is read as gitleaks reads it: a rule is tried when one of
# its keywords is in the text; its secret is its ``secretGroup`` (else the first non-empty
# group, else the match); a secret whose Shannon entropy is at or below the rule's
# ``entropy``, or that a global or rule allowlist regex or stopword allows, is not one.
_GITLEAKS_VERSION = "v8.30.1"
_GITLEAKS_FILE = Path(__file__).with_name("rules") / "gitleaks.toml"
# Rules left out, and why: labelled values are this module's own rules above (their
# not-a-secret words, paths and references are the tested corpus; gitleaks' generic rule
# would take ``token: ExpiredTokenException``); a rule scoped to a file path (``path =``) is
# about files of that name, and the text redacted here has no path.
_GITLEAKS_LEFT_OUT = frozenset({"generic-api-key"})


@dataclass(frozen=True)
class _Rule:
    kind: str
    regex: str
    keywords: tuple[str, ...]
    entropy: float
    group: int
    allow: tuple[str, ...]  # allowlist regexes, on the secret
    stopwords: tuple[str, ...]


def _gitleaks_rules() -> tuple[tuple[_Rule, ...], tuple[str, ...], tuple[str, ...]]:
    """The rules, and the global allowlist's regexes and stopwords."""
    config: dict[str, Any] = tomllib.loads(_GITLEAKS_FILE.read_text(encoding="utf-8"))
    rules = []
    for rule in config["rules"]:
        if rule["id"] in _GITLEAKS_LEFT_OUT or "path" in rule or "regex" not in rule:
            continue
        allow: list[str] = []
        stop: list[str] = []
        for allowlist in rule.get("allowlists", []):
            if allowlist.get("paths") and not (allowlist.get("regexes")
                                               or allowlist.get("stopwords")):
                continue  # about files: no path here
            if allowlist.get("regexTarget", "secret") != "secret" or allowlist.get("paths"):
                raise ImportError(f"store.redact: gitleaks rule {rule['id']}: an allowlist on "
                                  "the match or line, or with paths, is not supported")
            allow += allowlist.get("regexes", [])
            stop += [w.lower() for w in allowlist.get("stopwords", [])]
        rules.append(_Rule(rule["id"], rule["regex"],
                           tuple(k.lower() for k in rule.get("keywords", ())),
                           float(rule.get("entropy", 0.0)), int(rule.get("secretGroup", 0)),
                           tuple(allow), tuple(stop)))
    if any(not rule.keywords for rule in rules):
        raise ImportError("store.redact: every gitleaks rule used needs keywords")
    glob = config.get("allowlist", {})
    return (tuple(rules), tuple(glob.get("regexes", ())),
            tuple(w.lower() for w in glob.get("stopwords", ())))


_GL_RULES, _GL_ALLOW, _GL_STOPWORDS = _gitleaks_rules()
_GL_BY_KEYWORD: dict[str, list[int]] = {}
for _n, _rule in enumerate(_GL_RULES):
    for _keyword in _rule.keywords:
        _GL_BY_KEYWORD.setdefault(_keyword, []).append(_n)
# One scan for "is any keyword here at all" (most text: none); then each keyword on its own.
_GL_ANY_KEYWORD = re.compile("|".join(map(re.escape, sorted(_GL_BY_KEYWORD, key=len,
                                                            reverse=True))))


@cache
def _rule_regex(n: int) -> Any:
    """Rule ``n``'s pattern, compiled on first use (most never are in a run)."""
    return re2.compile(_GL_RULES[n].regex)


@cache
def _allow_regexes(n: int | None) -> tuple[Any, ...]:
    """The allowlist regexes of rule ``n`` (None: the global allowlist)."""
    return tuple(re2.compile(r) for r in (_GL_ALLOW if n is None else _GL_RULES[n].allow))


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    counts = Counter(text)
    return -sum(c / len(text) * math.log2(c / len(text)) for c in counts.values())


def _allowed(n: int, secret: str) -> bool:
    rule = _GL_RULES[n]
    lowered = secret.lower()
    if rule.entropy and _entropy(secret) <= rule.entropy:
        return True
    if any(w in lowered for w in _GL_STOPWORDS + rule.stopwords):
        return True
    return any(a.search(secret) for a in _allow_regexes(None) + _allow_regexes(n))


def _gitleaks(text: str, found: list[str]) -> str:
    """``text`` with every gitleaks rule's secret replaced by ``[REDACTED:<rule id>]``."""
    lowered = text.lower()
    if not _GL_ANY_KEYWORD.search(lowered):
        return text
    candidates = sorted({n for keyword, ns in _GL_BY_KEYWORD.items() if keyword in lowered
                         for n in ns})
    for n in candidates:
        spans = _gitleaks_spans(n, text)
        if not spans:
            continue
        marker = f"[REDACTED:{_GL_RULES[n].kind}]"
        pieces, last = [], 0
        for start, end in sorted(spans):
            pieces += [text[last:start], marker]
            last = end
        text = "".join(pieces) + text[last:]
        found.append(_GL_RULES[n].kind)
    return text


_GL_PASSES = 64  # a bound on the passes of one rule over one text (each pass is linear)


def _gitleaks_spans(n: int, text: str) -> list[tuple[int, int]]:
    """The spans of rule ``n``'s secrets in ``text``.

    A pattern that reaches greedily for the last option of a line (``curl .* -u``) matches
    once there, at the last ``-u``: the text before the first secret a pass found is searched
    again, until a pass finds nothing (an allowed match counts as found: its credential-less
    ``-u $USER:$TOKEN`` must not hide an earlier real one)."""
    spans: list[tuple[int, int]] = []
    end = len(text)
    for _ in range(_GL_PASSES):
        first = end
        for match in _rule_regex(n).finditer(text[:end]):
            group = _GL_RULES[n].group or next(
                (g for g in range(1, len(match.groups()) + 1) if match.group(g)), 0)
            start, stop = match.span(group)
            if start < 0:
                continue  # the rule's secret group took no part in this match
            first = min(first, start)
            secret = text[start:stop]
            if secret and "[REDACTED:" not in secret and not _allowed(n, secret):
                spans.append((start, stop))
        if first == end:
            break
        end = first
    return spans


# Texts up to this long are remembered with their redaction: a memory is loaded again and
# again by one process (the console's reloads and saves, a replay, the test suite), and its
# ~1,000 fields a load cost ~1 ms each to scan. The rules are fixed at import, so a text's
# redaction never changes; a Redaction is immutable.
_REMEMBERED_CHARS = 4096


def redact(text: str) -> Redaction:
    """Replace every recognised secret with ``[REDACTED:<kind>]``."""
    if len(text) <= _REMEMBERED_CHARS:
        return _remembered(text)
    return _redact(text)


@lru_cache(maxsize=16384)
def _remembered(text: str) -> Redaction:
    return _redact(text)


def _redact(text: str) -> Redaction:
    found: list[str] = []
    if _ANY_NEED.search(text.lower()):
        text = _own_rules(text, found)
    text = _gitleaks(text, found)
    return Redaction(text, tuple(dict.fromkeys(found)))


def _own_rules(text: str, found: list[str]) -> str:
    """This module's shapes, commands, hex-in-prose and labels, in their order."""
    lowered = text.lower()
    for kind, pattern in _PATTERNS:
        if not any(word in lowered for word in _NEEDS[kind]):
            continue  # the pattern cannot match: skipped (loading stays ~linear and cheap)
        marker = f"[REDACTED:{kind}]"
        checker = _CHECKERS.get(kind)

        def _replace(match: re.Match[str], kind: str = kind, marker: str = marker,
                     checker: _Checker | None = checker) -> str:
            whole = match.group(0)
            if checker is not None:
                span = checker(match)
                if span is None and kind == "secret-value":
                    return _inner_labels(match, found)
                if span is None:
                    return whole
                offset = match.start()
                found.append(kind)
                return whole[: span[0] - offset] + marker + whole[span[1] - offset:]
            found.append(kind)
            if kind == "url-password":
                return f"{match.group(1)}:{marker}"
            return marker

        replaced = pattern.sub(_replace, text)
        if replaced != text:
            text, lowered = replaced, replaced.lower()
    return text
