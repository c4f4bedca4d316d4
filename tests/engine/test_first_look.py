"""The incoming list's claim (`triage --listen`): before a page is briefed, the list shows the
state and top incident the memory alone gives it (pipeline.first_look). It must be what the
briefing then says — a row saying PROVEN over a briefing saying NO PRIOR would be a lie told
twice on one screen."""

from __future__ import annotations

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.engine import TriageEngine
from tests.batches import PAYMENTS, alert_item, webhook

# Pages of every kind: matching a proven fix, similar without one, novel, a multi-group payload.
PAGES = [
    "payments service KeyError: 'amount' after deploy",
    "checkout p99 latency high after deploy",
    "payments-api 5xx error rate above 5% after deploy",
    "disk full on the postgres primary, writes failing",
    "search cluster red, shards unassigned after node loss",
    "lighthouse fog-horn relay humming at 3 kHz on the harbour crane",
    "certificate expired on the public load balancer",
    "kafka consumer lag growing on orders topic",
    "orders-db replica lag growing",  # similar incidents, none proving a fix
]


def payloads() -> list[str]:
    labels, summary, _ = PAYMENTS
    return [*PAGES, webhook(alert_item(labels, {"summary": summary}),
                            alert_item({"alertname": "NodeDiskFull", "service": "db"},
                                       {"summary": "disk full on the postgres primary"}))]


@pytest.mark.parametrize("page", payloads())
def test_the_first_look_is_what_the_briefing_then_says(readonly_engine: TriageEngine,
                                                       page: str) -> None:
    alert = parse_alert(page)
    look = readonly_engine.first_look(alert)
    briefing = readonly_engine.brief(alert).briefing
    assert look.state == briefing.state
    top = briefing.recalled[0].incident_id if briefing.recalled else None
    if briefing.batch:
        chosen = next(g for g in briefing.batch if g.selected)
        top = chosen.top_incident_id
        assert look.score == chosen.score
    assert look.top_incident_id == top


def test_the_pages_cover_every_state(readonly_engine: TriageEngine) -> None:
    states = {readonly_engine.first_look(parse_alert(page)).state for page in payloads()}
    assert states == {"proven", "unproven", "no_prior_incident"}
