"""Turn what the user pasted (plain text or an alert payload) into alert text.

Payloads are told apart by their shape (console/engine/briefing/payloads.py): Alertmanager and
Grafana webhooks, PagerDuty Events API v2 events and v3 webhooks, Opsgenie alert webhooks. Each
becomes the text an Alertmanager alert gives (its name, service, summary, description); JSON
that is none of them is briefed as its text, with a notice that says so.

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
from typing import Any, BinaryIO

from console.engine.briefing.models import AlertInput, ServiceReading
from console.engine.briefing.payloads import (
    PAGES,
    AlertFormat,
    Page,
    PageStatus,
    detect,
    item_links,
    item_values,
    runbook_of,
)
from console.engine.briefing.services import service_labels
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
# A payload's own keys: a JSON object that does not parse but has them was meant as that
# payload (cut when copied, a pager that shortened it). Alertmanager's first, as the broadest.
_PAYLOAD_KEYS = (
    (re.compile(r'"(?:alerts|receiver)"\s*:'), "an Alertmanager payload"),
    (re.compile(r'"(?:routing_key|event_action|dedup_key|event_type)"\s*:'),
     "a PagerDuty payload"),
    (re.compile(r'"(?:integrationName|alertId|tinyId)"\s*:'), "an Opsgenie payload"),
)
# How an alert was read: plain text, or one of the payloads of payloads.py.
AlertSource = AlertFormat
# A URL or key carried from a payload (never fetched): bounded like a label, a little longer.
MAX_URL_CHARS = 2_000
# Alertmanager's "no end yet": an alert whose endsAt is this zero time is still firing.
_ZERO_TIME = "0001-01-01"


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
    # The labels that may name its service, in the order trusted (services.service_labels).
    service_labels: tuple[tuple[str, str], ...] = ()
    # Of its first member: the key its tool dedups it by (Alertmanager's fingerprint), the
    # runbook its annotations name, and the links it carries (generator, dashboard, …).
    dedup_key: str | None = None
    runbook_url: str | None = None
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Alert:
    """The alert as the pipeline sees it.

    A payload with several alert groups carries them in ``groups`` (most urgent first, at
    most MAX_GROUPS); ``group`` is the one the engineer asked for (0-based), None to brief the
    group whose recall is strongest. ``text``/``service``/``truncated`` are then those of the
    chosen group (the first until one is chosen). A single alert, or a payload whose alerts
    all fall into one group, has no ``groups``: it is briefed exactly as one alert.
    ``notices`` say what the parse left out (resolved alerts, groups beyond the cap).
    ``dedup_key``, ``runbook_url`` and ``links`` are the payload's (of the chosen group),
    cleaned, redacted and bounded; ``status`` is whether what it pages for still fires.
    ``service_labels`` are the labels that may name its service (``service`` is the one
    ``input.service`` shows); console/engine/briefing/services.py reads the service from them.
    """

    text: str
    source: AlertSource
    service: str | None = None
    truncated: bool = False
    groups: tuple[PayloadGroup, ...] = ()
    group: int | None = None
    notices: tuple[str, ...] = ()
    dedup_key: str | None = None
    runbook_url: str | None = None
    links: tuple[tuple[str, str], ...] = ()
    status: PageStatus | None = None
    service_labels: tuple[tuple[str, str], ...] = ()

    def input(self, service_read: ServiceReading | None = None) -> AlertInput:
        """What ``triage brief --json`` says of where this alert came from (``input``), with
        the service as the briefing read it."""
        return AlertInput(format=self.source, service=self.service, service_read=service_read,
                          runbook_url=self.runbook_url, dedup_key=self.dedup_key,
                          status=self.status, links=dict(self.links))

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
                                   service_labels=chosen.service_labels,
                                   truncated=chosen.truncated, group=index,
                                   dedup_key=chosen.dedup_key, runbook_url=chosen.runbook_url,
                                   links=chosen.links)


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
    """Plain text is used as is; JSON is read as the payload its shape says (payloads.py), or
    as its text with a notice when it is none of them. Text (a paste,
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
            meant = next((name for keys, name in _PAYLOAD_KEYS if keys.search(stripped)), None)
            if stripped.startswith("{") and meant:
                return _text_alert(stripped, (
                    f"the alert looked like {meant} but did not parse "
                    f"({where}): briefed as plain text, not by its fields — send the "
                    "whole payload again (it may have been cut when copied), or paste the "
                    "alert's own text"))
            if stripped.startswith("{\"") or stripped.startswith("[{"):
                raise AlertError(f"alert looks like JSON but does not parse (line {exc.lineno}, "
                                 f"column {exc.colno}: {exc.msg})") from None
            return _text_alert(stripped)
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise AlertError(f"alert JSON cannot be read ({str(exc)[:120]}) — paste the alert "
                             "text instead") from None
        return _from_json(payload, stripped)
    return _text_alert(stripped)


def _from_json(payload: Any, raw: str) -> Alert:
    """The alert a parsed JSON payload pages for, read as the format its shape says."""
    form = detect(payload)
    if form in PAGES:
        return _page_alert(PAGES[form](payload))
    if form in ("alertmanager", "grafana"):
        return _alertmanager(payload, form)
    if not _has_words(payload):
        raise AlertError("JSON alert is not a payload this console reads (Alertmanager, "
                         "Grafana, PagerDuty, Opsgenie) and holds no text to search — paste "
                         "the alert's text instead")
    return _text_alert(raw, (
        "the alert is JSON but not a payload this console reads (Alertmanager, Grafana, "
        "PagerDuty Events v2 or webhook v3, Opsgenie): briefed as plain text, not by its "
        "fields"))


def _has_words(payload: Any) -> bool:
    """Does any string in this JSON hold a letter or a digit (iteratively: no recursion)?"""
    pending = [payload]
    while pending:
        value = pending.pop()
        if isinstance(value, str) and any(c.isalnum() for c in value):
            return True
        if isinstance(value, dict):
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return False


def _page_alert(page: Page) -> Alert:
    """A one-alert page (PagerDuty, Opsgenie) as the alert Alertmanager's labels would give."""
    labels = {name: value for name, value in (("alertname", page.name),
              ("service", page.service), ("severity", page.severity)) if value}
    group = _group(group_key(labels), labels,
                   {"summary": page.summary, "description": page.description}, 1)
    if group is not None and page.services:
        named = [(field, _one_line(value, MAX_LABEL_CHARS)) for field, value in page.services]
        group = dataclasses.replace(group, service_labels=tuple(named))
    if group is None:
        raise AlertError(f"the {page.what} holds no summary, title or message to search "
                         "(an acknowledge or resolve names only the alert it closes) — paste "
                         "the alert's text instead")
    notices: tuple[str, ...] = ()
    if page.status != "firing":
        notices = (f"the {page.what} says the alert is {page.status}: briefing what fired, "
                   "it may not be firing now",)
    return Alert(group.text, page.format, group.service, group.truncated, notices=notices,
                 service_labels=group.service_labels,
                 dedup_key=_carried(page.dedup_key), runbook_url=_carried(page.runbook_url),
                 links=_carried_links(page.links), status=page.status)


def _carried(value: str) -> str | None:
    """A key or URL from a payload, cleaned, redacted and bounded (None when empty)."""
    return _one_line(value, MAX_URL_CHARS) or None if value else None


def _carried_links(links: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    kept: dict[str, str] = {}
    for name, href in links:
        label, url = _one_line(name, 60), _carried(href)
        if label and url and label not in kept:
            kept[label] = url
    return tuple(kept.items())


def _text_alert(text: str, notice: str | None = None) -> Alert:
    truncated = len(text) > MAX_ALERT_CHARS
    return Alert(clean(text[:MAX_ALERT_CHARS]), "text", truncated=truncated,
                 notices=(notice,) if notice else ())


def _alertmanager(payload: Any, form: AlertFormat = "alertmanager") -> Alert:
    """An Alertmanager (or Grafana) webhook: its alerts grouped, the most urgent first."""
    name = "Grafana" if form == "grafana" else "Alertmanager"
    envelope: dict[str, Any] = payload if isinstance(payload, dict) else {}
    alerts = payload if isinstance(payload, list) else envelope.get("alerts")
    if alerts is None and isinstance(envelope.get("labels"), dict):
        alerts = [envelope]
    if not isinstance(alerts, list):
        raise AlertError(f"JSON alert is not an {name} webhook (expected an 'alerts' list with "
                         "labels and annotations) — paste the alert text instead")
    common = _str_map(envelope.get("commonLabels"))
    items, repeated = _unique([item for item in alerts if isinstance(item, dict)])
    firing = [item for item in items if not _resolved(item)]
    notices: list[str] = []
    if repeated:
        notices.append(f"{repeated} alert(s) were in the payload twice (the same fingerprint "
                       "and labels): each was counted once")
    if firing and len(firing) < len(items):
        # Resolved alerts are not what the engineer is paged for: they would only pull the
        # recall towards a problem that is over.
        notices.append(f"{len(items) - len(firing)} resolved alert(s) left out: only the "
                       f"{len(firing)} firing alert(s) were searched")
    elif not firing and items:
        notices.append(f"every alert in this payload is resolved ({len(items)}): briefing "
                       "what fired, nothing is firing now")
    left_out = envelope.get("truncatedAlerts")
    if isinstance(left_out, int) and not isinstance(left_out, bool) and left_out > 0:
        notices.append(f"{name} left {left_out} more alert(s) out of this notification "
                       "(truncatedAlerts: the max_alerts of its webhook config): they were "
                       "not sent, so not searched")
    groups = _groups(firing or items, common)
    if not groups and form == "grafana":
        groups = _grafana_message(envelope, len(items))
    if not groups:
        if not items and not alerts:
            raise AlertError(f"the {name} payload holds no alerts ('alerts' is empty): nothing "
                             "to brief — paste the alert text instead")
        raise AlertError(f"{name} payload has no alertname, summary or description to "
                         "search with — paste the alert text instead")
    if len(groups) > MAX_GROUPS:
        left = groups[MAX_GROUPS:]
        notices.append(f"the payload holds {len(groups)} alert groups: the {MAX_GROUPS} most "
                       f"severe and largest were considered, {len(left)} group(s) of "
                       f"{sum(g.alerts for g in left)} alert(s) were not")
        groups = groups[:MAX_GROUPS]
    first = groups[0]
    return Alert(first.text, form, first.service, first.truncated,
                 service_labels=first.service_labels,
                 groups=tuple(groups) if len(groups) > 1 else (), notices=tuple(notices),
                 dedup_key=first.dedup_key, runbook_url=first.runbook_url, links=first.links,
                 status="firing" if firing or not items else "resolved")


def _grafana_message(envelope: dict[str, Any], count: int) -> list[PayloadGroup]:
    """A Grafana notification whose alerts name nothing to search: its title and message."""
    title, message = (_str_map(envelope).get(key, "") for key in ("title", "message"))
    group = _group(group_key({}), {}, {"summary": title, "description": message},
                   max(1, count))
    return [group] if group is not None else []


def _unique(items: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The items less those sent twice (Alertmanager's fingerprint names an alert; an item
    with the fingerprint of an earlier one but other labels is kept: the labels decide)."""
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    kept: list[dict[str, Any]] = []
    for item in items:
        fingerprint = item.get("fingerprint")
        if isinstance(fingerprint, str) and fingerprint:
            identity = (fingerprint, tuple(sorted(_str_map(item.get("labels")).items())))
            if identity in seen:
                continue
            seen.add(identity)
        kept.append(item)
    return kept, len(items) - len(kept)


def _resolved(item: dict[str, Any]) -> bool:
    """Is this alert over? Its status says so; without one (an alert as Prometheus posts it),
    an ``endsAt`` other than Alertmanager's zero time 0001-01-01 says when it ended."""
    status = item.get("status")
    if isinstance(status, str) and status.strip():
        return status.strip().lower() == "resolved"
    if isinstance(status, dict):  # Alertmanager's API: {"state": "active" | "suppressed" …}
        return False
    ends = item.get("endsAt")
    return isinstance(ends, str) and bool(ends.strip()) and not ends.startswith(_ZERO_TIME)


def _groups(items: list[dict[str, Any]], common: dict[str, str]) -> list[PayloadGroup]:
    """The payload's alerts grouped by their labels less instance labels, most urgent first.

    A group's text and label come from its first member (the rest differ in where they fire,
    and their annotations usually only in the target they name).
    """
    members: dict[tuple[tuple[str, str], ...], list[dict[str, str]]] = {}
    firsts: dict[tuple[tuple[str, str], ...], dict[str, Any]] = {}
    for item in items:
        labels = {**common, **_str_map(item.get("labels"))}
        identity = _what_fires(labels)
        members.setdefault(identity, []).append(labels)
        firsts.setdefault(identity, item)
    groups = []
    for order, (identity, labels_list) in enumerate(members.items()):
        labels, first = labels_list[0], firsts[identity]
        annotations = _str_map(first.get("annotations"))
        values = item_values(first)
        group = _group(group_key(labels), labels, annotations, len(labels_list),
                       shown_after=f"values {values}" if values else "")
        if group is not None:
            group = dataclasses.replace(
                group, dedup_key=_carried(_str_map(first).get("fingerprint", "")),
                runbook_url=_carried(runbook_of(annotations)),
                links=_carried_links(item_links(first)))
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
           count: int, shown_after: str = "") -> PayloadGroup | None:
    # (what is searched and shown keeps the label it always named; the service itself is
    # read from every label that may name it, by console/engine/briefing/services.py)
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
             f"severity {severity}" if severity else "", summary, description, shown_after]
    return PayloadGroup(key=key, text=clean(text[:MAX_ALERT_CHARS]),
                        label=_one_line(" — ".join(p for p in shown if p), MAX_LABEL_CHARS),
                        service=_one_line(service, MAX_LABEL_CHARS) if service else None,
                        alerts=count,
                        truncated=len(text) > MAX_ALERT_CHARS,
                        service_labels=tuple((key, _one_line(value, MAX_LABEL_CHARS))
                                             for key, value in service_labels(labels)))


def _one_line(text: str, limit: int) -> str:
    """Untrusted text for one line of a list: no secrets, no controls, whitespace folded,
    bounded. (The search text is redacted by recall; what is shown is redacted here.)"""
    folded = " ".join(redact(clean(text)).text.split())
    return folded if len(folded) <= limit else folded[:limit - 1] + "…"


def _str_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if isinstance(v, str | int | float)}
