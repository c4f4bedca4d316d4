"""Turn what the user pasted (plain text or an Alertmanager webhook) into alert text.

A webhook carrying several alerts is split into alert groups — the same alert on several
targets is one group (see INSTANCE_LABELS) — so that each is searched on its own words;
only firing alerts count when any fire. The pipeline (console/engine/briefing/batch.py) briefs one.

At most MAX_ALERT_BYTES of an alert is read (a file, stdin, a paste); a cut input, and a JSON
object with Alertmanager's keys that does not parse, are briefed as what could be read, with
a notice that says so and what to do.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Literal

from store.errors import TriageError
from store.redact import redact
from store.text import clean

MAX_ALERT_CHARS = 20_000
# What is read of an alert, in bytes, before anything is parsed (a byte cap of its own: the
# 20,000-character search limit applies to the parsed alert, so a webhook far longer than
# 20,000 characters still parses). A stream is read in chunks up to this and no further: an
# endless stdin or /dev/zero never grows memory. A longer input is briefed on its first 1 MB,
# with a notice (and a JSON payload the cut broke, as plain text: see _parse).
MAX_ALERT_BYTES = 1_048_576
_CHUNK = 65_536
# An Alertmanager webhook names its receiver and its alerts: a JSON object that does not parse
# but has these keys was meant as one (cut when copied, a pager that shortened it).
_ALERTMANAGER_KEY = re.compile(r'"(?:alerts|receiver)"\s*:')
# How an alert was read: plain text, or an Alertmanager webhook payload.
AlertSource = Literal["text", "alertmanager"]


class AlertError(TriageError):
    """The alert cannot be read; the message says what was wrong and what to do."""


# Labels that say *where* an alert fires (one scrape target, pod, host or container), not
# *what* fires: alerts that differ only in these are the same alert on several targets and
# are briefed once, as one group. Prometheus' ``job`` names the scrape job (the service),
# not a target, so it stays in the key. ``exported_<name>`` (a target label renamed on
# federation or by honor_labels=false) counts as ``<name>``.
INSTANCE_LABELS = frozenset({
    "instance", "pod", "pod_name", "pod_ip", "uid", "host", "hostname", "host_ip", "ip",
    "address", "node", "nodename", "node_name", "kubernetes_node", "kubernetes_pod_name",
    "container", "container_id", "container_name", "id", "replica", "prometheus_replica",
})
# Groups considered for one payload: each is one recall (~25 ms), and a list longer than
# this is not read on call. The rest are named in a notice.
MAX_GROUPS = 50
# Order of groups, most urgent first: by severity label, then by how many alerts fire.
SEVERITY_RANK = {"critical": 0, "page": 0, "emergency": 0, "high": 1, "error": 1, "major": 1,
                 "warning": 2, "warn": 2, "medium": 2, "minor": 2, "low": 3, "info": 3}
MAX_KEY_CHARS = 300
MAX_LABEL_CHARS = 300


@dataclass(frozen=True)
class PayloadGroup:
    """One alert group of a multi-alert payload: the alerts that are the same alert (same
    labels, less instance labels) firing on several targets.

    ``text`` is what recall searches (alertname, service, summary, description of its first
    member: what today's single alert searches); ``label`` is the one line shown to the
    engineer, with the severity too (not searched: like the status it is not a symptom).
    """

    key: str
    text: str
    label: str
    service: str | None
    alerts: int
    truncated: bool = False


@dataclass(frozen=True)
class Alert:
    """The alert as the pipeline sees it.

    A payload with several alert groups carries them in ``groups`` (most urgent first, at
    most MAX_GROUPS); ``group`` is the one the engineer asked for (0-based), None to brief the
    group whose recall is strongest. ``text``/``service``/``truncated`` are then those of the
    chosen group (the first until one is chosen). A single alert, or a payload whose alerts
    all fall into one group, has no ``groups``: it is briefed exactly as one alert.
    ``notices`` say what the parse left out (resolved alerts, groups beyond the cap).
    """

    text: str
    source: AlertSource
    service: str | None = None
    truncated: bool = False
    groups: tuple[PayloadGroup, ...] = ()
    group: int | None = None
    notices: tuple[str, ...] = ()

    def for_group(self, index: int) -> Alert:
        """This alert with group ``index`` (0-based) chosen; AlertError if there is none."""
        count = max(1, len(self.groups))
        if not 0 <= index < count:
            has = f"{count} alert groups (1–{count})" if count > 1 else "one alert group (1)"
            raise AlertError(f"there is no alert group {index + 1}: this alert has {has}")
        if not self.groups:
            return self
        chosen = self.groups[index]
        return dataclasses.replace(self, text=chosen.text, service=chosen.service,
                                   truncated=chosen.truncated, group=index)


@dataclass(frozen=True)
class RawAlert:
    """What was read of an alert: its text, what it was read from (``name``: a path,
    ``stdin``, ``the alert``), and whether it was longer than MAX_ALERT_BYTES and cut there."""

    text: str
    name: str = "the alert"
    cut: bool = False


def read_alert_file(path: Path) -> RawAlert:
    """At most MAX_ALERT_BYTES of an alert file, or AlertError saying why it cannot be read."""
    try:
        with path.open("rb") as stream:
            return read_alert_stream(stream, str(path))
    except FileNotFoundError:
        raise AlertError(f"alert file not found: {path}") from None
    except IsADirectoryError:
        raise AlertError(f"alert file is a directory: {path}") from None
    except OSError as exc:
        raise AlertError(f"cannot read alert file {path}: {exc.strerror or exc}") from None


def read_alert_stream(stream: BinaryIO, name: str) -> RawAlert:
    """At most MAX_ALERT_BYTES of ``stream`` (stdin, a file, a FIFO), read in chunks — one
    byte more tells whether it was cut; never the whole stream first."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_ALERT_BYTES:
            chunk = stream.read(min(_CHUNK, MAX_ALERT_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except IsADirectoryError:
        raise AlertError(f"{name} is a directory, not an alert") from None
    except OSError as exc:
        raise AlertError(f"cannot read {name}: {exc.strerror or exc}") from None
    cut = size > MAX_ALERT_BYTES
    data = b"".join(chunks)[:MAX_ALERT_BYTES]
    return RawAlert(decode_alert(data, name, cut=cut), name, cut)


def capped(text: str, name: str = "the alert") -> RawAlert:
    """``text`` (a paste, an argument) under the same byte cap as a file or stdin."""
    if len(text) * 4 <= MAX_ALERT_BYTES:  # at most 4 bytes a character: surely under
        return RawAlert(text, name)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= MAX_ALERT_BYTES:
        return RawAlert(text, name)
    # A character cut in two (and a lone surrogate, which clean() drops anyway) is left out.
    return RawAlert(data[:MAX_ALERT_BYTES].decode("utf-8", "ignore"), name, cut=True)


def decode_alert(data: bytes, name: str, cut: bool = False) -> str:
    """Decode alert bytes as UTF-8 text; binary content is refused, not guessed at. Of a
    ``cut`` input, a character the cut split in two is left out."""
    if b"\x00" in data:
        raise AlertError(f"{name} looks binary, not an alert — pass text or Alertmanager JSON")
    try:
        if cut:
            return codecs.getincrementaldecoder("utf-8-sig")().decode(data, final=False)
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AlertError(f"{name} is not UTF-8 text — pass text or Alertmanager JSON") from None


def cut_notice(raw: RawAlert) -> str:
    """What a briefing of a cut input says about it."""
    return (f"{raw.name} was longer than 1 MB ({MAX_ALERT_BYTES:,} bytes): only its first "
            "1 MB was read and briefed")


def parse_alert(raw: str | RawAlert) -> Alert:
    """Plain text is used as is; JSON must be an Alertmanager webhook payload. Text (a paste,
    an argument) is under the same 1 MB cap as what is read from a file or stdin; a cut input
    says so in the alert's notices."""
    read = capped(raw) if isinstance(raw, str) else raw
    alert = _parse(read.text, read.cut)
    if not read.cut:
        return alert
    return dataclasses.replace(alert, notices=(cut_notice(read), *alert.notices))


def _parse(raw: str, cut: bool) -> Alert:
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
            where = f"line {exc.lineno}, column {exc.colno}: {exc.msg}"
            if cut:
                return _text_alert(stripped, (
                    f"the cut at 1 MB broke its JSON ({where}): briefed as plain text — send "
                    "a payload under 1 MB (fewer alerts a notification: max_alerts in "
                    "Alertmanager's webhook_config), or paste the alert's own text"))
            if stripped.startswith("{") and _ALERTMANAGER_KEY.search(stripped):
                return _text_alert(stripped, (
                    f"the alert looked like an Alertmanager payload but did not parse "
                    f"({where}): briefed as plain text, not by its alerts' labels — send the "
                    "whole payload again (it may have been cut when copied), or paste the "
                    "alert's own text"))
            if stripped.startswith("{\"") or stripped.startswith("[{"):
                raise AlertError(f"alert looks like JSON but does not parse (line {exc.lineno}, "
                                 f"column {exc.colno}: {exc.msg})") from None
            return _text_alert(stripped)
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise AlertError(f"alert JSON cannot be read ({str(exc)[:120]}) — paste the alert "
                             "text instead") from None
        return _alertmanager(payload)
    return _text_alert(stripped)


def _text_alert(text: str, notice: str | None = None) -> Alert:
    truncated = len(text) > MAX_ALERT_CHARS
    return Alert(clean(text[:MAX_ALERT_CHARS]), "text", truncated=truncated,
                 notices=(notice,) if notice else ())


def _alertmanager(payload: Any) -> Alert:
    alerts = payload.get("alerts") if isinstance(payload, dict) else None
    if isinstance(payload, dict) and alerts is None and "labels" in payload:
        alerts = [payload]
    if not isinstance(alerts, list) or not alerts:
        raise AlertError("JSON alert is not an Alertmanager webhook (expected an 'alerts' list "
                         "with labels and annotations) — paste the alert text instead")
    common = _str_map(payload.get("commonLabels") if isinstance(payload, dict) else None)
    items = [item for item in alerts if isinstance(item, dict)]
    firing = [item for item in items if not _resolved(item)]
    notices: list[str] = []
    if firing and len(firing) < len(items):
        # Resolved alerts are not what the engineer is paged for: they would only pull the
        # recall towards a problem that is over.
        notices.append(f"{len(items) - len(firing)} resolved alert(s) left out: only the "
                       f"{len(firing)} firing alert(s) were searched")
    elif not firing and items:
        notices.append(f"every alert in this payload is resolved ({len(items)}): briefing "
                       "what fired, nothing is firing now")
    groups = _groups(firing or items, common)
    if not groups:
        raise AlertError("Alertmanager payload has no alertname, summary or description to "
                         "search with — paste the alert text instead")
    if len(groups) > MAX_GROUPS:
        left = groups[MAX_GROUPS:]
        notices.append(f"the payload holds {len(groups)} alert groups: the {MAX_GROUPS} most "
                       f"severe and largest were considered, {len(left)} group(s) of "
                       f"{sum(g.alerts for g in left)} alert(s) were not")
        groups = groups[:MAX_GROUPS]
    first = groups[0]
    return Alert(first.text, "alertmanager", first.service, first.truncated,
                 groups=tuple(groups) if len(groups) > 1 else (), notices=tuple(notices))


def _resolved(item: dict[str, Any]) -> bool:
    status = item.get("status")
    return isinstance(status, str) and status.strip().lower() == "resolved"


def _groups(items: list[dict[str, Any]], common: dict[str, str]) -> list[PayloadGroup]:
    """The payload's alerts grouped by their labels less instance labels, most urgent first.

    A group's text and label come from its first member (the rest differ in where they fire,
    and their annotations usually only in the target they name).
    """
    members: dict[tuple[tuple[str, str], ...], list[dict[str, str]]] = {}
    annotations: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
    for item in items:
        labels = {**common, **_str_map(item.get("labels"))}
        identity = _what_fires(labels)
        members.setdefault(identity, []).append(labels)
        annotations.setdefault(identity, _str_map(item.get("annotations")))
    groups = []
    for order, (identity, labels_list) in enumerate(members.items()):
        labels = labels_list[0]
        group = _group(group_key(labels), labels, annotations[identity], len(labels_list))
        if group is not None:
            groups.append((SEVERITY_RANK.get(labels.get("severity", "").strip().lower(), 4),
                           -group.alerts, order, group))
    return [group for *_, group in sorted(groups, key=lambda g: g[:3])]


def _what_fires(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """The labels that say what fires, not where: the identity of an alert group."""
    return tuple(sorted((name, value) for name, value in labels.items()
                        if not is_instance_label(name)))


def group_key(labels: dict[str, str]) -> str:
    """``alertname{label="value",…}`` over the labels that say what fires (not where)."""
    inner = ",".join(f'{name}="{_quoted(value)}"' for name, value in _what_fires(labels)
                     if name != "alertname")
    return _one_line(f"{labels.get('alertname', '')}{{{inner}}}", MAX_KEY_CHARS)


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


def is_instance_label(name: str) -> bool:
    """Does this label name one target of an alert (see INSTANCE_LABELS)?"""
    name = name.strip().lower()
    return name in INSTANCE_LABELS or name.removeprefix("exported_") in INSTANCE_LABELS


def _group(key: str, labels: dict[str, str], annotations: dict[str, str],
           count: int) -> PayloadGroup | None:
    service = labels.get("service") or labels.get("job") or labels.get("app")
    alertname = labels.get("alertname", "")
    summary, description = annotations.get("summary", ""), annotations.get("description", "")
    # Status ("firing") and severity are not symptoms: searching for them would dilute recall.
    parts = [alertname, f"service {service}" if service else "", summary, description]
    text = " — ".join(p for p in parts if p)
    if not text:
        return None
    severity = labels.get("severity", "")
    shown = [alertname, f"service {service}" if service else "",
             f"severity {severity}" if severity else "", summary, description]
    return PayloadGroup(key=key, text=clean(text[:MAX_ALERT_CHARS]),
                        label=_one_line(" — ".join(p for p in shown if p), MAX_LABEL_CHARS),
                        service=_one_line(service, MAX_LABEL_CHARS) if service else None,
                        alerts=count,
                        truncated=len(text) > MAX_ALERT_CHARS)


def _one_line(text: str, limit: int) -> str:
    """Untrusted text for one line of a list: no secrets, no controls, whitespace folded,
    bounded. (The search text is redacted by recall; what is shown is redacted here.)"""
    folded = " ".join(redact(clean(text)).text.split())
    return folded if len(folded) <= limit else folded[:limit - 1] + "…"


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float)}
