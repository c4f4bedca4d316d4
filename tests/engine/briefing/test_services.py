"""One service reading (issue 33, item 5): labels first (hash suffixes removed), names matched
to the memory's services by their words and by services.yaml, the service the alert is about
rather than the longest named, and when unsure no cross-service demotion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.applicability import applicability
from console.engine.briefing.services import ServiceRead, read_service
from console.engine.pipeline import service_of
from console.engine.verification.passes import alert_service
from console.ui.screens.postmortem import prefill_from_alert
from store.loader import load_incidents
from tests.conftest import make_incident
from tests.recalls import act, incident, recall_of

MEMORY = ["payments-api", "ledger-api", "checkout-service", "orders-db", "notifications"]
BOUTIQUE = ["ad", "cart", "checkout", "frontend", "payment"]


def alertmanager(**labels: str) -> str:
    """An Alertmanager webhook of one alert with these labels."""
    return json.dumps({"alerts": [{"status": "firing",
                                   "labels": {"alertname": "HighErrorRate", **labels},
                                   "annotations": {"summary": "5xx above 5% after deploy"}}]})


def read(raw: str, services: list[str], aliases: dict[str, list[str]] | None = None
         ) -> ServiceRead:
    alert = parse_alert(raw)
    return read_service(alert.text, alert.service, services, labels=alert.service_labels,
                        aliases=aliases)


# --- labels first ----------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "services", "named", "how"), [
    # a Grafana/Alertmanager label spelt shorter than the memory: the memory's spelling
    (alertmanager(service="payments"), MEMORY, "payments-api", "alias"),
    (alertmanager(service="payments-service"), MEMORY, "payments-api", "alias"),
    (alertmanager(service="Payments-API"), MEMORY, "payments-api", "label"),
    # app before job; a job naming nothing known yields to a label that does
    (alertmanager(job="kubernetes-pods", app="ledger"), MEMORY, "ledger-api", "alias"),
    # a pod's ReplicaSet hash and pod suffix removed; ad ↔ adservice by its words
    (alertmanager(pod="adservice-5d8f7c-x2x", namespace="otel-demo"), BOUTIQUE, "ad", "alias"),
    (alertmanager(pod="adservice-5d8f7c-x2x"), ["adservice", "cart"], "adservice", "alias"),
    (alertmanager(pod="orders-db-0"), MEMORY, "orders-db", "alias"),    # a StatefulSet's
    (alertmanager(deployment="cartservice"), BOUTIQUE, "cart", "alias"),
    # a namespace names the service only when the memory knows it
    (alertmanager(namespace="otel-demo"), BOUTIQUE, None, "none"),
    (alertmanager(namespace="checkout"), BOUTIQUE, "checkout", "label"),
], ids=lambda v: v if isinstance(v, str) and not v.startswith("{") else None)
def test_labels(raw: str, services: list[str], named: str | None, how: str) -> None:
    got = read(raw, services)
    assert (got.named, got.how) == (named, how)
    assert got.known is (named is not None)


def test_a_label_spelt_otherwise_demotes_only_the_other_services() -> None:
    """``service: payments`` against a memory spelling ``payments-api``: its incidents stay the
    same failure; only the ledger-api one is elsewhere (before: all of them were)."""
    here = incident("INC-1", act("A1", "Flushed the payment-schema cache", "RESOLVED", "ok"))
    there = incident("INC-2", act("A1", "Failed over the ledger database", "RESOLVED", "ok"),
                     service="ledger-api")
    got = read(alertmanager(service="payments"), MEMORY)
    assert got.demotes
    matches = applicability(recall_of(here, there), got)
    assert (matches["INC-1"].match, matches["INC-2"].match) == ("strong", "elsewhere")
    assert got.assumed == ("Service assumed: payments-api (read from the label "
                           "service=payments)")


# --- the text, when no label names it ---------------------------------------------------------

@pytest.mark.parametrize(("text", "services", "named", "how"), [
    # two services named: the one the alert is about, not the longer (an upstream caller)
    ("payments-api KeyError: 'amount' after deploy; checkout-service retries failing",
     MEMORY, "payments-api", "text"),
    ("ledger-api statement timeouts — ledger-api p99 30s, checkout-service waits",
     MEMORY, "ledger-api", "text"),
    ("errors on checkout-service: ledger-api slow, ledger-api timeouts", MEMORY, "ledger-api",
     "text"),                                           # named most, no line opens with it
    # a one-word service, written as a service name
    ("adservice high latency after deploy", BOUTIQUE, "ad", "alias"),
    ("cart service returning 503s", BOUTIQUE, "cart", "alias"),
    ("redis timeouts (service cart)", BOUTIQUE, "cart", "text"),
    ("latency up in service cart after the deploy", BOUTIQUE, "cart", "text"),
    ("[FIRING:1] cart: 5xx above 5%", BOUTIQUE, "cart", "text"),
    ("pod cart-5d8f7c-x2x is crash looping", BOUTIQUE, "cart", "alias"),
    # …never as an ordinary word
    ("adding to cart fails, payment page slow", BOUTIQUE, None, "none"),
    ("notifications backlog growing", MEMORY, None, "none"),
    # an unknown name counts only as the subject or spelt as a service, never in passing
    ("quokka-api consumers stalled", MEMORY, "quokka-api", "text"),
    ("consumers stalled, calls from quokka-api time out", MEMORY, None, "none"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_text(text: str, services: list[str], named: str | None, how: str) -> None:
    got = read_service(text, None, services)
    assert (got.named, got.how) == (named, how)


@pytest.mark.parametrize("text", [
    "payments-api and ledger-api both slow after deploy",
    "5xx on checkout-service after the payments-api deploy",
])
def test_unsure_assumes_one_and_demotes_nothing(text: str) -> None:
    got = read_service(text, None, MEMORY)
    assert got.how == "unsure" and got.named in ("payments-api", "checkout-service")
    assert not got.demotes
    assert got.assumed is not None and got.assumed.startswith(f"Service assumed: {got.named}")
    one = incident("INC-1", act("A1", "Flushed the payment-schema cache", "RESOLVED", "ok"))
    other = incident("INC-2", act("A1", "Failed over the ledger database", "RESOLVED", "ok"),
                     service="ledger-api")
    matches = applicability(recall_of(one, other), got)
    assert {m.match for m in matches.values()} == {"strong"}
    assert alert_service(parse_alert(text), MEMORY) is None  # verification asks the engineer


# --- services.yaml ----------------------------------------------------------------------------

def test_a_services_yaml_alias_names_its_service(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(json.dumps([make_incident("INC-1", service="payments-api"),
                                make_incident("INC-2", service="ledger-api")]),
                    encoding="utf-8")
    plain = load_incidents(path)
    (tmp_path / "services.yaml").write_text("payments-api: [pay, billing]\n", encoding="utf-8")
    memory = load_incidents(path)
    assert memory.service_aliases == {"payments-api": ("pay", "billing")}
    assert memory.source_hash == plain.source_hash          # the incidents are the same
    for raw in (alertmanager(service="billing"), "billing service 5xx after deploy"):
        alert = parse_alert(raw)
        got = service_of(alert, memory)
        assert (got.named, got.known, got.how) == ("payments-api", True, "alias")
        assert alert_service(alert, memory.services, memory.service_aliases) == "payments-api"
        assert prefill_from_alert(raw, memory.services, memory.service_aliases)[1] == \
            "payments-api"
    assert service_of(parse_alert(alertmanager(service="billing")), plain).known is False


def test_the_postmortem_form_reads_the_labels_of_the_group_briefed() -> None:
    raw = alertmanager(service="payments")
    group_text = parse_alert(raw).text
    assert prefill_from_alert(raw, MEMORY)[1] == "payments-api"
    assert prefill_from_alert(group_text, MEMORY, alert_payload=raw)[1] == "payments-api"
    assert prefill_from_alert("5xx on checkout-service and ledger-api", MEMORY)[1] in (
        "checkout-service", "ledger-api")  # assumed (editable), as the briefing says
