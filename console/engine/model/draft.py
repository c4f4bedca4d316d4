"""What the model is asked to return, and a tolerant parser for what it actually returns."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from store.redact import REDACTION_MARKER, redact
from store.text import CleanStr

MAX_ANSWER_CHARS = 200_000


class DraftEvidence(BaseModel):
    incident_id: str
    action_id: str


class DraftRecommendation(BaseModel):
    action: CleanStr
    evidence: list[DraftEvidence] = Field(default_factory=list)


class DraftWarning(BaseModel):
    text: CleanStr
    incident_id: str
    action_id: str


class DraftStep(BaseModel):
    text: CleanStr
    incident_id: str
    action_id: str


class Draft(BaseModel):
    """The model's answer schema (sent as Ollama's structured-output ``format``)."""

    summary: CleanStr
    recommendations: list[DraftRecommendation] = Field(default_factory=list)
    warnings: list[DraftWarning] = Field(default_factory=list)
    confidence: int = Field(ge=0, le=100)
    likely_cause: CleanStr = ""
    steps: list[DraftStep] = Field(default_factory=list)
    # The model's explicit demotion: why none of the recalled fixes applies to this alert.
    # It can only lower the memory's verdict (a PROVEN briefing becomes unproven), never raise.
    none_apply: CleanStr = ""


class DraftRejected(Exception):
    """The answer cannot be used as a draft; ``rule`` names why, ``detail`` shows where."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(f"{rule}: {detail}")
        self.rule = rule
        self.detail = detail


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def extract_json(raw: str) -> Any:
    """The JSON object in ``raw``: bare, pretty, fenced in markdown, or after some prose."""
    if len(raw) > MAX_ANSWER_CHARS:
        raise DraftRejected("oversized", f"answer is {len(raw):,} characters "
                            f"(limit {MAX_ANSWER_CHARS:,})")
    try:
        whole = json.loads(raw.strip())
    except ValueError:
        whole = None
    else:
        if not isinstance(whole, dict):
            raise DraftRejected("wrong_shape", f"answer is a JSON {type(whole).__name__}, not the "
                                "object the schema asks for")
        return whole
    candidates = [m.group(1).strip() for m in _FENCE.finditer(raw)]
    start, end = raw.find("{"), raw.rfind("}")
    if start != -1 and end > start:
        candidates.append(raw[start:end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    first_line = raw.strip().splitlines()[0][:120] if raw.strip() else "(empty answer)"
    raise DraftRejected("unparseable", f"no JSON object found; answer starts: {first_line!r}")


def _text(value: Any, limit: int) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = "".join(ch for ch in text if ch in "\n\t" or ch.isprintable())
    return text[:limit]


def _prose(value: Any, limit: int) -> str:
    """Text the model wrote, as it may be shown: cleaned, then redacted with the memory's own
    redactor (a model that writes ``password=…``, a ``ghp_…`` token or a DSN's password —
    from its training, or from an alert the redactor missed — never has it shown, printed or
    saved), then cut. Redacted before the cut, so a secret across the limit is not left in
    part; a marker the cut would split is left out whole."""
    text = redact(_text(value, MAX_ANSWER_CHARS)).text
    if len(text) <= limit:
        return text
    for marker in REDACTION_MARKER.finditer(text, max(0, limit - 64), limit + 64):
        if marker.start() < limit < marker.end():
            return text[:marker.start()]
    return text[:limit]


def _citation(item: Any) -> dict[str, str]:
    if isinstance(item, dict):
        return {"incident_id": _text(item.get("incident_id"), 80),
                "action_id": _text(item.get("action_id"), 80)}
    return {"incident_id": "", "action_id": _text(item, 80)}


# "INC-2041/A1", "INC-2041 A1", "inc 2041 #a1", "(INC-2041, A1)": an action named in a line.
_ACTION_MENTION = re.compile(
    r"(?i)\b((?:INC|INCIDENT)[\s_\-–—#]*[0-9０-９]+)\s*(?:[/／#,]|\s)\s*(?:action\s*)?"
    r"#?([A-Z]{1,3}[0-9０-９]+)\b")


def _step(item: Any) -> dict[str, Any] | None:
    """A step's text and the citations it gives (fields, an evidence list, or in its text)."""
    if isinstance(item, str):
        return {"text": _prose(item, 300), "citations": [
            {"incident_id": m.group(1), "action_id": f"{m.group(1)}/{m.group(2)}"}
            for m in _ACTION_MENTION.finditer(item[:300])]}
    if not isinstance(item, dict):
        return None
    citations = [_citation(item)] if item.get("action_id") else []
    evidence = item.get("evidence")
    if isinstance(evidence, list):
        citations += [_citation(e) for e in evidence]
    text = item.get("text") or item.get("action") or ""
    return {"text": _prose(text, 300), "citations": citations}


def _list(value: Any) -> list[Any]:
    """``value`` if it is a list; anything else (a bool, a number, a string) is no list."""
    return value if isinstance(value, list) else []


def loose_draft(value: dict[str, Any]) -> dict[str, Any]:
    """Normalise a parsed answer's shape without judging its content (guards do that)."""
    summary = value.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise DraftRejected("missing_summary", "the answer has no 'summary' text")
    recommendations = value.get("recommendations") or []
    warnings = value.get("warnings") or []
    if not isinstance(recommendations, list) or not isinstance(warnings, list):
        raise DraftRejected("wrong_shape", "'recommendations' and 'warnings' must be lists")
    steps = value.get("steps") or []
    if isinstance(steps, str):
        steps = [line.strip(" -*\t") for line in steps.splitlines() if line.strip(" -*\t")]
    return {
        "summary": _prose(summary, 2_000),
        "recommendations": [
            {"action": _prose(r.get("action"), 500),
             "evidence": [_citation(e) for e in _list(r.get("evidence"))]}
            for r in recommendations if isinstance(r, dict)
        ],
        "warnings": [
            {"text": _prose(w.get("text"), 800), **_citation(w)}
            for w in warnings if isinstance(w, dict)
        ],
        "confidence": value.get("confidence"),
        "confidence_given": "confidence" in value,
        "likely_cause": _prose(value.get("likely_cause"), 500),
        "none_apply": _prose(value.get("none_apply"), 500),
        "steps": [step for step in map(_step, steps if isinstance(steps, list) else [])
                  if step is not None][:12],
    }
