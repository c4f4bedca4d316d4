"""Recalls built straight from incidents, for the table-driven tests of the rules that judge a
recall (guards, citations): the same ``RecalledAction`` records ``store.recall`` makes, without
a search in between, so each table row can say exactly which incidents were recalled.
"""

from __future__ import annotations

from typing import Any

from store.index import Candidate, incident_document
from store.models import Incident
from store.recall import Ranked, Recall, _recalled
from store.terms import terms


def act(local_id: str, action: str, outcome: str, explanation: str,
        confirmed: bool | None = None) -> dict[str, Any]:
    """One action as the incidents file records it."""
    item: dict[str, Any] = {"id": local_id, "action": action, "outcome": outcome,
                            "explanation": explanation}
    if confirmed is not None:
        item["confirmed"] = confirmed
    return item


def incident(incident_id: str, *actions: dict[str, Any], service: str = "payments-api",
             title: str = "Payments API errors after deploy") -> Incident:
    return Incident.model_validate({
        "id": incident_id, "title": title, "service": service,
        "symptoms": "Errors and latency after a deploy", "actions": list(actions)})


def recall_of(*incidents: Incident, query: str = "payments api errors after deploy") -> Recall:
    """A recall that returned ``incidents``, best first, every action attached."""
    recalled = []
    for position, item in enumerate(incidents):
        document = incident_document(item)
        candidate = Candidate(item.id, item.model_dump_json(), None, None, document,
                              frozenset(terms(document)))
        score = round(0.9 - position / 100, 3)
        recalled.append(_recalled(candidate, Ranked(item.id, score, None, None, 0.5, 2)))
    # Every incident of these tables matches strongly (the same failure): the rules they test
    # (citations, outcomes, counts) are those of evidence that applies to the alert.
    return Recall(query=query, redacted=(), query_terms=tuple(terms(query)), mode="lexical",
                  floor=0.4, incidents=tuple(recalled), margin=float("-inf"), strong=0.5)


# The memory the guard and citation tables are written against.
POOL = incident(
    "INC-2041",
    act("A1", "Restarted all payments-api pods at once", "WORSENED",
        "Every pod reconnected at once and exhausted Postgres max_connections"),
    act("A2", "Raised the client timeout to 10s", "NO_EFFECT",
        "The pool was still full, requests waited longer"),
    act("A3", "Raised the pool limit on one instance and drained traffic to it", "RESOLVED",
        "Connections stayed under max_connections and p99 recovered"),
)
CACHE_A = incident(
    "INC-1518",
    act("A1", "Restarted payments-api pods", "MITIGATED", "Errors dropped for ten minutes"),
    act("A2", "Flushed the payment-schema cache", "RESOLVED", "Old-shaped entries were gone"),
)
CACHE_B = incident(
    "INC-1619", act("A1", "Flushed the payment-schema cache", "RESOLVED", "Same cause"))
CACHE_C = incident(
    "INC-1745",
    act("A1", "Rolled back the schema migration", "WORSENED",
        "Half-migrated rows failed to parse", confirmed=False),
    act("A2", "Flushed the payment-schema cache", "RESOLVED", "Same cause"),
)
CACHE_D = incident(
    "INC-1853", act("A1", "Flushed the payment-schema cache", "RESOLVED", "Same cause"))
# The same number as INC-1518 under another team's prefix: a bare "1518" is ambiguous.
OTHER_1518 = incident(
    "PAY-1518", act("A1", "Failed over to the standby region", "RESOLVED", "Region was down"),
    service="payments-gateway", title="Gateway down in one region")
# Seen before, nothing recorded as done.
BARE = incident("INC-1900")

MEMORY = (POOL, CACHE_A, CACHE_B, CACHE_C, CACHE_D)
