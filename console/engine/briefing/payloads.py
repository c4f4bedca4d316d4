"""The alert payloads on-call tools send, told apart by their shape (never by a flag).

Alertmanager and Grafana post alert groups: console/engine/briefing/alert.py reads those, and this
module only tells Grafana's from Alertmanager's and collects their links. PagerDuty (Events API
v2, webhook v3) and Opsgenie page for one alert at a time: each is read here into a ``Page`` —
the name, service, summary, description and severity an Alertmanager alert carries in its
labels and annotations — from which alert.py builds the same alert text.

Everything read here is untrusted and not yet cleaned: alert.py cleans, redacts and bounds it.
A URL is only carried (to ``--json`` and the details), never fetched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

# What an alert was read from, told apart by shape (``input.format`` of ``triage brief --json``).
AlertFormat = Literal["text", "alertmanager", "grafana", "pagerduty-events-v2",
                      "pagerduty-webhook-v3", "opsgenie"]
# What a page says about its alert now: still firing, seen by someone, or over.
PageStatus = Literal["firing", "acknowledged", "resolved"]
# Keys of a details map that hold a runbook's address (compared lower-cased, "-" as "_").
RUNBOOK_KEYS = ("runbook_url", "runbook", "runbookurl", "runbook_link", "playbook_url",
                "playbook")
# Keys of a details map whose text describes the failure (searched like a description).
DESCRIPTION_KEYS = ("description", "details", "message", "error", "reason", "cause")
# An alert item of Grafana's webhook carries these beside Alertmanager's keys.
GRAFANA_ITEM_KEYS = ("dashboardURL", "panelURL", "silenceURL", "values", "valueString")
# The links of an Alertmanager or Grafana alert item, by the name they are shown under.
ITEM_LINKS = {"generatorURL": "generator", "dashboardURL": "dashboard", "panelURL": "panel",
              "silenceURL": "silence"}


@dataclass(frozen=True)
class Page:
    """One alert from a tool that pages one at a time, in Alertmanager's terms (raw text)."""

    format: AlertFormat
    name: str = ""
    service: str = ""
    severity: str = ""
    summary: str = ""
    description: str = ""
    status: PageStatus = "firing"
    dedup_key: str = ""
    runbook_url: str = ""
    links: tuple[tuple[str, str], ...] = ()
    # Every field that may name the service, most trusted first (``service`` is the first).
    services: tuple[tuple[str, str], ...] = ()
    # What the page is, in words, for a message that names it ("PagerDuty event 'resolve'").
    what: str = ""


def detect(payload: Any) -> AlertFormat | None:
    """Which payload this JSON is, by its shape; None when it is none of them."""
    if isinstance(payload, dict):
        event = payload.get("event")
        if (isinstance(event, dict) and isinstance(event.get("event_type"), str)
                and isinstance(event.get("data"), dict)):
            return "pagerduty-webhook-v3"
        if (("event_action" in payload or "routing_key" in payload)
                and (isinstance(payload.get("payload"), dict) or "dedup_key" in payload)):
            return "pagerduty-events-v2"
        alert = payload.get("alert")
        if (isinstance(alert, dict) and ("action" in payload or "integrationName" in payload)
                and any(key in alert for key in ("message", "alias", "alertId"))):
            return "opsgenie"
        alerts = payload.get("alerts")
        if isinstance(alerts, list):
            return "grafana" if _grafana(payload, alerts) else "alertmanager"
        if isinstance(payload.get("labels"), dict):  # one alert, without the envelope
            return "alertmanager"
        return None
    if (isinstance(payload, list) and payload
            and all(isinstance(item, dict) and isinstance(item.get("labels"), dict)
                    for item in payload)):  # a list of alerts, as Prometheus posts them
        return "alertmanager"
    return None


def _grafana(payload: dict[str, Any], alerts: list[Any]) -> bool:
    if "orgId" in payload or {"title", "state", "message"} <= payload.keys():
        return True
    return any(isinstance(item, dict) and any(key in item for key in GRAFANA_ITEM_KEYS)
               for item in alerts)


def pagerduty_events_v2(event: dict[str, Any]) -> Page:
    """A PagerDuty Events API v2 event: ``payload.summary`` is the alert, its ``component``
    (else ``source``) the service, ``class`` its name; acknowledge and resolve events carry
    only the ``dedup_key`` of the alert they close."""
    body = _map(event.get("payload"))
    details = body.get("custom_details")
    action = _text(event.get("event_action")).lower() or "trigger"
    status: PageStatus = {"acknowledge": "acknowledged", "resolve": "resolved"}.get(
        action, "firing")  # type: ignore[assignment]
    links = [("client", _text(event.get("client_url")))]
    for link in event.get("links") or []:
        if isinstance(link, dict):
            links.append((_text(link.get("text")) or "link", _text(link.get("href"))))
    return Page(
        format="pagerduty-events-v2", name=_text(body.get("class")),
        service=_text(body.get("component")) or _text(body.get("source")),
        services=_present_names(("component", _text(body.get("component"))),
                                ("source", _text(body.get("source")))),
        severity=_text(body.get("severity")), summary=_text(body.get("summary")),
        description=_described(details), status=status, dedup_key=_text(event.get("dedup_key")),
        runbook_url=_linked_runbook(links) or runbook_of(details),
        links=_present(links), what=f"PagerDuty event '{action}'")


def pagerduty_webhook_v3(webhook: dict[str, Any]) -> Page:
    """A PagerDuty webhook (v3): ``event.data`` is the incident — its ``title``, its
    ``service.summary`` (the service), its priority or urgency; ``incident_key`` dedups it."""
    event = _map(webhook.get("event"))
    data = _map(event.get("data"))
    event_type = _text(event.get("event_type"))
    priority = _text(_map(data.get("priority")).get("summary"))
    urgency = _text(data.get("urgency"))
    status = _text(data.get("status")).lower() or event_type.rpartition(".")[2]
    links = [("incident", _text(data.get("html_url"))),
             ("service", _text(_map(data.get("service")).get("html_url")))]
    return Page(
        format="pagerduty-webhook-v3", service=_text(_map(data.get("service")).get("summary")),
        severity=priority or (f"urgency {urgency}" if urgency else ""),
        summary=_text(data.get("title")), description=_described(_map(data.get("body"))),
        status=_page_status(status), dedup_key=_text(data.get("incident_key"))
        or _text(data.get("id")), runbook_url=runbook_of(data), links=_present(links),
        what=f"PagerDuty webhook event '{event_type}'")


def opsgenie(webhook: dict[str, Any]) -> Page:
    """An Opsgenie alert webhook: ``alert.message`` is the alert, its ``entity`` (else a
    ``service:`` tag) the service; ``alias`` is what Opsgenie dedups by."""
    alert = _map(webhook.get("alert"))
    action = _text(webhook.get("action")) or "Create"
    tags = [_text(tag) for tag in alert.get("tags") or [] if isinstance(tag, str)]
    tagged = next((tag.split(":", 1)[1].strip() for tag in tags
                   if tag.lower().startswith("service:")), "")
    details = alert.get("details")
    status: PageStatus = {"close": "resolved", "acknowledge": "acknowledged"}.get(
        action.lower(), "firing")  # type: ignore[assignment]
    return Page(
        format="opsgenie", service=_text(alert.get("entity")) or tagged,
        services=_present_names(("entity", _text(alert.get("entity"))), ("service", tagged)),
        severity=_text(alert.get("priority")), summary=_text(alert.get("message")),
        description=_text(alert.get("description")) or _described(details), status=status,
        dedup_key=_text(alert.get("alias")) or _text(alert.get("alertId")),
        runbook_url=runbook_of(details), what=f"Opsgenie '{action}' webhook")


def _present_names(*names: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple((field, value) for field, value in names if value)


PAGES = {"pagerduty-events-v2": pagerduty_events_v2,
         "pagerduty-webhook-v3": pagerduty_webhook_v3, "opsgenie": opsgenie}


def item_links(item: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The links an Alertmanager or Grafana alert item carries (generator, dashboard, …)."""
    return _present([(name, _text(item.get(key))) for key, name in ITEM_LINKS.items()])


def item_values(item: dict[str, Any]) -> str:
    """A Grafana alert item's evaluated values, as one line ("B=7.31, C=1"); "" when none."""
    values = item.get("values")
    if not isinstance(values, dict):
        return ""
    return ", ".join(f"{name}={value}" for name, value in values.items()
                     if isinstance(value, str | int | float) and not isinstance(value, bool))


def runbook_of(details: Any) -> str:
    """The runbook address in a map of annotations or details, "" when it names none."""
    if not isinstance(details, dict):
        return ""
    keyed = {str(key).strip().lower().replace("-", "_"): value
             for key, value in details.items()}
    return next((_text(keyed[key]) for key in RUNBOOK_KEYS if _text(keyed.get(key))), "")


def _linked_runbook(links: list[tuple[str, str]]) -> str:
    return next((href for text, href in links
                 if href and ("runbook" in text.lower() or "runbook" in href.lower())), "")


def _described(details: Any) -> str:
    """What a details map (or a details string) says about the failure."""
    if isinstance(details, str):
        return details
    if not isinstance(details, dict):
        return ""
    keyed = {str(key).strip().lower(): value for key, value in details.items()}
    return next((_text(keyed[key]) for key in DESCRIPTION_KEYS if _text(keyed.get(key))), "")


def _page_status(status: str) -> PageStatus:
    if status in ("resolved", "acknowledged"):
        return status  # type: ignore[return-value]
    return "firing"


def _present(links: list[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((name, href) for name, href in links if href)


def _map(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    """A scalar as text ("" for anything else: a list, a map, null)."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return ""
    return str(value).strip()
