"""Alertmanager webhook payloads with several alert groups, shared by the engine, CLI and UI
tests of batches: what Alertmanager posts when a hundred alerts fire at once."""

from __future__ import annotations

import json
from typing import Any

# Each distractor recalls nothing from the bundled memory (checked in tests/engine/briefing/test_batch.py).
COFFEE = ({"alertname": "CoffeeMachineDescaling", "service": "office-kitchen", "severity": "warning"},
          "Coffee machine needs descaling", "machine {target} reports scale buildup")
HVAC = ({"alertname": "HvacFilterDirty", "service": "building-hvac", "severity": "warning"},
        "Air filter pressure drop high", "filter {target} needs replacement")
RACK = ({"alertname": "RackInletTemperatureHigh", "service": "dc-sensors", "severity": "warning"},
        "Rack inlet temperature above 30C", "sensor {target} reads 31C")
# Alone, it recalls the five KeyError incidents of the bundled memory, all resolved by one fix.
PAYMENTS = ({"alertname": "PaymentsErrors", "service": "payments-api", "severity": "warning"},
            "KeyError: 'amount' after deploy", "payments service KeyError: 'amount' after deploy")
K_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}


def alert_item(labels: dict[str, Any], annotations: dict[str, Any] | None = None,
               status: str = "firing") -> dict[str, Any]:
    """One alert as Alertmanager posts it (webhook version 4)."""
    return {"status": status, "labels": labels, "annotations": annotations or {},
            "startsAt": "2026-03-14T02:05:00Z", "endsAt": "0001-01-01T00:00:00Z",
            "generatorURL": "http://prometheus:9090/graph", "fingerprint": "abc123"}


def webhook(*alerts: dict[str, Any], common: dict[str, Any] | None = None) -> str:
    """An Alertmanager webhook payload (version 4) holding ``alerts``."""
    return json.dumps({
        "version": "4", "groupKey": "{}:{}", "status": "firing", "receiver": "triage",
        "groupLabels": {}, "commonLabels": common or {}, "commonAnnotations": {},
        "externalURL": "http://alertmanager:9093", "alerts": list(alerts)})


def on_targets(kind: tuple[dict[str, str], str, str], count: int, label: str = "instance",
               status: str = "firing") -> list[dict[str, Any]]:
    """The same alert firing on ``count`` targets, told apart by ``label`` (and the target
    named in the description, as Prometheus alert templates do)."""
    labels, summary, description = kind
    return [alert_item({**labels, label: f"{label}-{n}"},
                       {"summary": summary, "description": description.format(target=f"t-{n}")},
                       status)
            for n in range(count)]


def hundred_alert_batch() -> str:
    """100 firing alerts in four groups: 40 + 30 + 29 that memory has never seen, and the
    one (listed last: fewest alerts, same severity) that memory has a proven fix for."""
    alerts = (on_targets(COFFEE, 40, "instance") + on_targets(HVAC, 30, "node")
              + on_targets(RACK, 29, "host") + on_targets(PAYMENTS, 1, "pod"))
    return webhook(*alerts)
