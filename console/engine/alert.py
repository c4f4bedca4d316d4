"""Turn what the user pasted (plain text or an Alertmanager webhook) into alert text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from store.errors import TriageError
from store.text import clean

MAX_ALERT_CHARS = 20_000


class AlertError(TriageError):
    """The alert cannot be read; the message says what was wrong and what to do."""


@dataclass(frozen=True)
class Alert:
    """The alert as the pipeline sees it."""

    text: str
    source: str  # "text" | "alertmanager"
    service: str | None = None
    truncated: bool = False


def read_alert_file(path: Path) -> str:
    """The raw content of an alert file, or AlertError saying why it cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise AlertError(f"alert file not found: {path}") from None
    except IsADirectoryError:
        raise AlertError(f"alert file is a directory: {path}") from None
    except OSError as exc:
        raise AlertError(f"cannot read alert file {path}: {exc.strerror or exc}") from None
    return decode_alert(data, str(path))


def decode_alert(data: bytes, name: str) -> str:
    """Decode alert bytes as UTF-8 text; binary content is refused, not guessed at."""
    if b"\x00" in data:
        raise AlertError(f"{name} looks binary, not an alert — pass text or Alertmanager JSON")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AlertError(f"{name} is not UTF-8 text — pass text or Alertmanager JSON") from None


def parse_alert(raw: str) -> Alert:
    """Plain text is used as is; JSON must be an Alertmanager webhook payload."""
    stripped = raw.strip()
    if not stripped:
        raise AlertError("the alert is empty — type or paste what the alert says")
    if stripped.startswith("{") or stripped.startswith("["):
        try:
            payload = json.loads(stripped)
        except RecursionError:
            raise AlertError("alert JSON is nested too deeply to be an Alertmanager payload — "
                             "paste the alert text instead") from None
        except json.JSONDecodeError as exc:
            if stripped.startswith("{\"") or stripped.startswith("[{"):
                raise AlertError(f"alert looks like JSON but does not parse (line {exc.lineno}, "
                                 f"column {exc.colno}: {exc.msg})") from None
            return _text_alert(stripped)
        return _alertmanager(payload)
    return _text_alert(stripped)


def _text_alert(text: str) -> Alert:
    truncated = len(text) > MAX_ALERT_CHARS
    return Alert(clean(text[:MAX_ALERT_CHARS]), "text", truncated=truncated)


def _alertmanager(payload: Any) -> Alert:
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if isinstance(payload, dict) and alerts is None and "labels" in payload:
        alerts = [payload]
    if not isinstance(alerts, list) or not alerts:
        raise AlertError("JSON alert is not an Alertmanager webhook (expected an 'alerts' list "
                         "with labels and annotations) — paste the alert text instead")
    common = payload.get("commonLabels") if isinstance(payload, dict) else None
    lines: list[str] = []
    services: list[str] = []
    for item in alerts:
        if not isinstance(item, dict):
            continue
        labels = {**_str_map(common), **_str_map(item.get("labels"))}
        annotations = _str_map(item.get("annotations"))
        service = labels.get("service") or labels.get("job") or labels.get("app")
        if service:
            services.append(service)
        # Status ("firing") is not a symptom: searching for it would dilute recall.
        parts = [labels.get("alertname", ""), f"service {service}" if service else "",
                 annotations.get("summary", ""), annotations.get("description", "")]
        line = " — ".join(p for p in parts if p)
        if line and line not in lines:
            lines.append(line)
    if not lines:
        raise AlertError("Alertmanager payload has no alertname, summary or description to "
                         "search with — paste the alert text instead")
    text = "\n".join(lines)
    return Alert(clean(text[:MAX_ALERT_CHARS]), "alertmanager", services[0] if services else None,
                 truncated=len(text) > MAX_ALERT_CHARS)


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float)}
