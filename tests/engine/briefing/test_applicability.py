"""How each recalled incident applies to an alert: the service the alert names, the margin over
unrelated rivals, and a class that always agrees with the figure shown."""

from __future__ import annotations

import dataclasses

import pytest

from console.engine.briefing.applicability import ServiceRead, applicability, read_service
from console.engine.briefing.verdict import verdict
from store.models import Incident
from store.recall import Ranked, Recall
from tests.recalls import act, incident, recall_of

SERVICES = {"payments-api", "ledger-api", "reporting-api", "orders-db", "checkout-service",
            "inventory-sync", "notifications"}


# --- read_service ---------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "label", "named", "known"), [
    # the payload's label wins over whatever the text names
    ("payments-api p99 up and ledger-api errors", "ledger-api", "ledger-api", True),
    ("payments-api p99 up", " LEDGER-API ", "ledger-api", True),     # memory's spelling
    ("payments-api p99 up", "quokka-api", "quokka-api", False),       # an unknown label
    # a memory service named in the text, however it is spelled
    ("payments-api p99 latency up", None, "payments-api", True),
    ("Payments API p99 latency up", None, "payments-api", True),
    ("payments_api KeyError after deploy", None, "payments-api", True),
    ("orders-db disk filling up", None, "orders-db", True),
    # "payments service" names payments-api by its words (tests/engine/briefing/test_services.py)
    ("payments service KeyError: 'amount' after deploy", None, "payments-api", True),
    ("notifications backlog growing", None, None, False),             # an ordinary word
    ("quokka-queue consumers stalled", None, None, False),
    # a service-like name the memory does not know: named, unknown
    ("quokka-api consumers stalled", None, "quokka-api", False),
    ("foo-service returning 503s", None, "foo-service", False),
    ("disk full, service: x", None, "x", False),
    ("queue stalled (service quokka)", None, "quokka", False),
], ids=lambda v: str(v))
def test_read_service(text: str, label: str | None, named: str | None, known: bool) -> None:
    read = read_service(text, label, SERVICES)
    assert (read.named, read.known) == (named, known)


# One distinct fix per incident: incidents resolved by the same fix are one family too, and
# these tables decide families by ``related`` alone.
FIXES = {1: "Flushed the payment-schema cache", 2: "Rolled the feature flag back to off",
         3: "Scaled the consumer deployment to twelve replicas",
         9: "Failed over to the standby region"}


def _pool(number: int, service: str = "payments-api", related: tuple[str, ...] = ()) -> Incident:
    item = incident(f"INC-{number}", act("A1", FIXES[number], "RESOLVED", "It worked"),
                    service=service)
    return item.model_copy(update={"related": list(related)})


def scored(*rows: tuple[Incident, float], strong: float = 0.98,
           margin: float = 0.0) -> Recall:
    """A recall of ``rows`` whose fused scores are exactly the given figures."""
    base = recall_of(*[item for item, _ in rows])
    ranked = tuple(Ranked(item.id, score, None, None, 0.5, 2) for item, score in rows)
    incidents = tuple(dataclasses.replace(recalled, score=round(score, 3))
                      for recalled, (_, score) in zip(base.incidents, rows, strict=True))
    return dataclasses.replace(base, incidents=incidents, ranked=ranked, strong=strong,
                               margin=margin)


@pytest.mark.parametrize("text", ["quokka-api consumers stalled", "foo-service returning 503s",
                                  "consumers stalled, service: x"])
def test_an_unknown_named_service_makes_every_strong_incident_elsewhere(text: str) -> None:
    recalled = scored((_pool(1), 0.95), (_pool(2, "ledger-api"), 0.6), (_pool(3), 0.3),
                      strong=0.9, margin=0.2)
    service = read_service(text, None, SERVICES)
    assert service.named is not None and not service.known
    unnamed = applicability(recalled, ServiceRead())
    assert [a.match for a in unnamed.values()] == ["strong", "weak", "weak"]
    matches = applicability(recalled, service)
    assert [a.match for a in matches.values()] == ["elsewhere", "weak", "weak"]
    judged = verdict(recalled, service)
    assert judged.state == "unproven" and judged.confidence.value <= 50


def test_a_known_service_keeps_its_own_incidents_strong_and_the_others_elsewhere() -> None:
    recalled = scored((_pool(1, "ledger-api"), 0.95), (_pool(2, "reporting-api"), 0.94),
                      strong=0.9, margin=float("-inf"))
    matches = applicability(recalled, read_service("ledger-api errors", None, SERVICES))
    assert (matches["INC-1"].match, matches["INC-2"].match) == ("strong", "elsewhere")


# --- margin ---------------------------------------------------------------------------------

def test_the_margin_ignores_related_incidents_a_family_of_recurrences_is_all_strong() -> None:
    family = ("INC-1", "INC-2", "INC-3")
    rows = [(_pool(n, related=tuple(i for i in family if i != f"INC-{n}")), score)
            for n, score in ((1, 0.70), (2, 0.69), (3, 0.68))]
    recalled = scored(*rows, (_pool(9, "ledger-api"), 0.30), strong=0.6, margin=0.3)
    matches = applicability(recalled, ServiceRead())
    assert [matches[i].match for i in family] == ["strong"] * 3
    # Each one's margin is over the unrelated rival (0.30), not over its own recurrences.
    assert matches["INC-2"].margin == pytest.approx(0.39)
    assert matches["INC-2"].score == pytest.approx(0.69)
    assert matches["INC-9"].match == "weak"
    judged = verdict(recalled, ServiceRead())
    assert judged.state == "proven" and judged.lead is not None
    assert judged.lead.applies == "strong"


def test_the_same_scores_without_the_family_are_narrow_wins_and_weak() -> None:
    """The control: unrelated incidents this close compete, and none stands alone."""
    recalled = scored((_pool(1), 0.70), (_pool(2), 0.69), (_pool(3), 0.68),
                      (_pool(9, "ledger-api"), 0.30), strong=0.6, margin=0.3)
    matches = applicability(recalled, ServiceRead())
    assert [matches[i].match for i in ("INC-1", "INC-2", "INC-3")] == ["weak"] * 3
    assert matches["INC-1"].margin == pytest.approx(0.01)
    assert verdict(recalled, ServiceRead()).state == "unproven"


def test_a_recurrence_of_an_incident_that_clears_the_bar_is_strong_too() -> None:
    recalled = scored((_pool(1, related=("INC-2",)), 0.9), (_pool(2, related=("INC-1",)), 0.2),
                      (_pool(3, "ledger-api"), 0.3), strong=0.8, margin=0.3)
    matches = applicability(recalled, ServiceRead())
    assert matches["INC-1"].match == "strong"
    assert matches["INC-2"].score < 0.8 and matches["INC-2"].match == "strong"
    assert matches["INC-3"].match == "weak"


# --- the class agrees with the figure ---------------------------------------------------------

@pytest.mark.parametrize(("own", "shown", "match"), [
    (0.97996, 0.98, "strong"),     # rounds up to the bar: shown 0.98, so it is strong
    (0.97994, 0.9799, "weak"),     # rounds below the bar
    (0.98, 0.98, "strong"),
    (0.980049, 0.98, "strong"),
])
def test_the_class_agrees_with_the_rounded_applicability_figure(own: float, shown: float,
                                                                match: str) -> None:
    recalled = scored((_pool(1), own), strong=0.98, margin=float("-inf"))
    found = applicability(recalled, ServiceRead())["INC-1"]
    assert found.score == shown
    assert found.match == match


def test_the_class_agrees_with_the_figure_across_a_sweep_of_scores() -> None:
    bar = 0.98
    for step in range(400):
        own = 0.5 + step * 0.0012345
        rival = 0.3 + (step % 7) * 0.05
        recalled = scored((_pool(1), own), (_pool(2, "ledger-api"), rival), strong=bar)
        for found in applicability(recalled, ServiceRead()).values():
            assert found.score == round(found.score, 4)
            assert (found.match == "strong") == (found.score >= bar and found.margin >= 0.0), (
                own, rival, found)
