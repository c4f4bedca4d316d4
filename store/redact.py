"""One shared redactor: secrets are replaced before text is searched, sent or stored.

Used on every alert (store/recall.py), on every incident loaded from the team's file
(store/loader.py — before anything is derived from it) and on every incident saved
(store/writer.py). Redacting a redacted text finds nothing and changes nothing.

Two families of rule:

* **Shapes** — a secret recognisable on its own: private-key blocks, JWTs, bearer/basic
  credentials, the password of a URL (``postgres://u:p@h``), AWS access key ids, GitHub,
  GitLab, Slack, Stripe, OpenAI and Google keys. Replaced whole.
* **Labels** — ``label = value`` / ``label: value`` (also ``"label": "value"``,
  ``--label=value``, ``--label value``, ``DB_PASSWORD=…``, ``spring.datasource.password: …``). Only the value
  is replaced, so the line around it stays readable evidence.

  - strong labels (password, passwd, passphrase, pwd, pass): any value of one character or
    more is a secret, except a placeholder, a path or a status word (below);
  - weak labels (token, secret, api_key, access_key, secret_key, private_key, credentials …,
    also with a suffix: ``secret_key_base``, ``token_id``): only a value that looks like a
    credential — letters and digits mixed (8+ characters), mixed case that is not just
    Capitalised words, or a long (20+) opaque string.

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
import re
from collections.abc import Callable
from dataclasses import dataclass

# --- labelled values ----------------------------------------------------------------------

# A label is a whole identifier ending in a known word: not preceded by an identifier
# character, nor by ``$``, ``%``, ``${``, ``%{`` or ``{{`` (then it is a variable reference or
# a template, not a label). After a lone ``{`` it is a label: ``{password: hunter2}`` is YAML.
_LABEL_START = r"(?<![A-Za-z0-9_.$%-])(?<!\$\{)(?<!%\{)(?<!\{\{)"
_STRONG = r"[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pwd)|(?:[A-Za-z0-9_.-]*[_.-])?pass"
_WEAK = (r"[A-Za-z0-9_.-]*?(?:token|secret|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|"
         r"private[_-]?key|credentials?)(?:[_.-][A-Za-z0-9]+){0,2}")
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
    ("secret-value", _LABELLED),
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


_CHECKERS: dict[str, _Checker] = {"secret-value": _is_labelled_secret,
                                  "bearer-token": _is_token, "basic-auth": _is_basic_credential}

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
    "secret-value": ("pass", "pwd", "token", "secret", "key", "credential"),
}
_ANY_NEED = re.compile("|".join(re.escape(w) for words in _NEEDS.values() for w in words))
if _NEEDS.keys() != {kind for kind, _ in _PATTERNS}:
    raise ImportError("store.redact: every pattern needs its trigger words in _NEEDS")

REDACTION_MARKER = re.compile(r"\[REDACTED:[a-z-]+\]")


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


def redact(text: str) -> Redaction:
    """Replace every recognised secret with ``[REDACTED:<kind>]``."""
    found: list[str] = []
    lowered = text.lower()
    if not _ANY_NEED.search(lowered):
        return Redaction(text, ())  # most text: no pattern can match, none is tried
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
    return Redaction(text, tuple(dict.fromkeys(found)))
