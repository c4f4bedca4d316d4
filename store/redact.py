"""One shared redactor: secrets are replaced before text is searched, sent or stored."""

from __future__ import annotations

import re
from dataclasses import dataclass

# Each pattern matches the secret itself, never the error line around it. Where a label
# precedes the secret (``password=``), only the value group is replaced.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("private-key", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S)),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("bearer-token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=-]{12,}")),
    ("basic-auth", re.compile(r"(?i)(?<=\bbasic )[A-Za-z0-9+/]{8,}={0,2}")),
    # (not an earlier marker: redacting a redacted text must find nothing)
    ("url-password", re.compile(r"(?<=://)([^/\s:@]*):(?!\[REDACTED:)([^/\s@]+)(?=@)")),
    ("aws-access-key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    ("github-token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("slack-token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}\b")),
    ("api-key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}\b")),
    ("secret-value", re.compile(
        r"(?i)(?<![A-Za-z0-9])(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|"
        r"auth[_-]?token|token|client[_-]?secret|secret[_-]?key|private[_-]?key)\s*[=:]\s*[\"']?(?!\[REDACTED)(?P<value>[^\s\"',;&]{6,})")),
]


REDACTION_MARKER = re.compile(r"\[REDACTED:[a-z-]+\]")


@dataclass(frozen=True)
class Redaction:
    """Text with secrets replaced, and the kinds of secret that were found."""

    text: str
    found: tuple[str, ...]


def redact(text: str) -> Redaction:
    """Replace every recognised secret with ``[REDACTED:<kind>]``."""
    found: list[str] = []
    for kind, pattern in _PATTERNS:
        marker = f"[REDACTED:{kind}]"

        def _replace(match: re.Match[str], kind: str = kind, marker: str = marker,
                     pattern: re.Pattern[str] = pattern) -> str:
            found.append(kind)
            if "value" in pattern.groupindex:
                start, end = match.span("value")
                offset = match.start()
                whole = match.group(0)
                return whole[: start - offset] + marker + whole[end - offset:]
            if kind == "url-password":
                return f"{match.group(1)}:{marker}"
            return marker

        text = pattern.sub(_replace, text)
    return Redaction(text, tuple(dict.fromkeys(found)))
