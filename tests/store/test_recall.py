"""Recall on the bundled memory: the right incidents, whole, and nothing when nothing fits."""

from __future__ import annotations

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.engine import TriageEngine
from store.recall import Recall, recall

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}


@pytest.fixture
def engine(readonly_engine: TriageEngine) -> TriageEngine:
    """Every test here only reads: share one loaded engine across the module."""
    return readonly_engine


def recalled_ids(engine: TriageEngine, alert: str) -> list[str]:
    assert engine.index is not None
    return [i.incident_id for i in recall(engine.index, alert).incidents]


def test_checkout_latency_recalls_inc_2041_first(engine: TriageEngine) -> None:
    assert recalled_ids(engine, CHECKOUT)[0] == "INC-2041"


def test_keyerror_recalls_exactly_the_five_keyerror_incidents(engine: TriageEngine) -> None:
    ids = recalled_ids(engine, KEYERROR)
    assert sorted(ids) == sorted(KEYERROR_INCIDENTS)


def test_something_never_seen_recalls_nothing(engine: TriageEngine) -> None:
    assert engine.index is not None
    result = recall(engine.index, "TLS certificate expired on internal gRPC mesh")
    assert result.incidents == ()
    assert result.best_rejected < result.floor
    assert "certificate" in result.query_terms


def test_secret_in_the_alert_is_redacted_before_search(engine: TriageEngine) -> None:
    assert engine.index is not None
    alert = (f"{KEYERROR}; DATABASE_URL=postgres://app:s3cretpw@db:5432/pay "
             "Authorization: Bearer 9f8e7d6c5b4a3f2e1d0c")
    result = recall(engine.index, alert)
    assert "s3cretpw" not in result.query and "9f8e7d6c5b4a3f2e1d0c" not in result.query
    assert "url-password" in result.redacted and "bearer-token" in result.redacted
    assert result.query.startswith(KEYERROR)
    assert not any("s3cretpw" in term or "9f8e7d6c5b4a3f2e1d0c" in term
                   for term in result.query_terms)


def test_alert_with_a_secret_recalls_what_it_would_without_the_secret(
        engine: TriageEngine) -> None:
    # The secret is removed; the "[REDACTED:…]" marker put in its place must not be searched
    # as if the engineer had typed "redacted secret value".
    without_secret = recalled_ids(engine, f"{KEYERROR} password=")
    assert without_secret and set(without_secret) <= KEYERROR_INCIDENTS
    assert recalled_ids(engine, f"{KEYERROR} password=hunter2xyz") == without_secret


def test_secret_in_the_alert_never_reaches_the_briefing(engine: TriageEngine) -> None:
    briefing = engine.brief(parse_alert(f"{KEYERROR} password=hunter2xyz")).briefing
    assert "hunter2xyz" not in briefing.model_dump_json()
    assert briefing.search is not None and "secret-value" in briefing.search.redacted


def test_every_recalled_incident_comes_with_all_its_actions_in_order(
        engine: TriageEngine) -> None:
    assert engine.index is not None and engine.memory is not None
    stored = {i.id: i for i in engine.memory.incidents}
    for alert in (CHECKOUT, KEYERROR, "notifications queue backlog growing, messages delayed"):
        result = recall(engine.index, alert)
        assert result.incidents
        for found in result.incidents:
            incident = stored[found.incident_id]
            assert [a.action_id for a in found.actions] == [
                incident.action_ref(a) for a in incident.actions]
            for got, want in zip(found.actions, incident.actions, strict=True):
                assert (got.outcome, got.action, got.explanation) == (
                    want.outcome.value, want.action, want.explanation)
                assert got.service == incident.service


def test_incidents_are_ranked_best_first(engine: TriageEngine) -> None:
    assert engine.index is not None
    scores = [i.score for i in recall(engine.index, KEYERROR).incidents]
    assert scores == sorted(scores, reverse=True)


@pytest.mark.parametrize("alert", ["the and of, !!! ??? -- ...", "   ", "a is to be or not to be",
                                   "!!!", "\u200b\u3000"])
def test_alert_without_searchable_words_recalls_nothing(engine: TriageEngine, alert: str) -> None:
    assert engine.index is not None
    result = recall(engine.index, alert)
    assert isinstance(result, Recall)
    assert result.incidents == ()
    assert result.query_terms == ()


# Paraphrases an on-call engineer might type, written from reading incidents.yaml. Each names
# the one incident a reasonable engineer would expect first.
PARAPHRASES = [
    ("orders postgres primary disk almost full, pg_wal growing fast", "INC-1729"),
    ("api-gateway returning 502 Bad Gateway, logs say upstream prematurely closed connection",
     "INC-1588"),
    ("product search returns zero results for brand names after the nightly reindex", "INC-1533"),
    ("customers getting duplicate order confirmation emails, kafka consumer group keeps "
     "rebalancing", "INC-1681"),
    ("users randomly logged out, session lookups not found, redis evicted_keys rising",
     "INC-1698"),
    ("gateway pods OOMKilled every few hours, memory grows steadily", "INC-1884"),
    ("order history query slow, EXPLAIN shows sequential scan on order_items", "INC-2214"),
    ("writes to the orders table stuck waiting on a lock behind ALTER TABLE migration",
     "INC-1869"),
    ("login requests spiking from thousands of rotating IPs, auth-service CPU pinned on "
     "password hashing", "INC-2188"),
    ("SMS one-time login codes not arriving, OTP completion dropping", "INC-1822"),
    ("payment provider webhooks timing out, orders stuck awaiting payment confirmation",
     "INC-1574"),
]


@pytest.mark.parametrize(("alert", "expected"), PARAPHRASES, ids=[e for _, e in PARAPHRASES])
def test_paraphrased_alert_recalls_its_incident_first(engine: TriageEngine, alert: str,
                                                      expected: str) -> None:
    """First comes the incident, or a known recurrence of it (its `related`, which are the same
    problem: the bundled memory records families since issue 11); the incident itself is
    recalled too."""
    assert engine.memory is not None
    incident = next(i for i in engine.memory.incidents if i.id == expected)
    ids = recalled_ids(engine, alert)
    assert ids, f"nothing recalled for {alert!r}"
    assert ids[0] in {expected, *incident.related}, ids
    assert expected in ids, ids


# Things that never happened to this team: recall must abstain, not pad with neighbours.
NOVEL = [
    # (an Android crash is no longer novel: the bundled memory has INC-1846)
    "elevator door controllers rebooting in a loop at the Lyon office",
    # (video transcoding is no longer novel: the bundled memory has INC-2324)
    "satellite uplink modem loses carrier lock every night at 02:00",
    "ntp clock skew detected on hosts",
]
# Novel too, but they explain about half of themselves by a few bundled incidents (evidence
# 0.47–0.48, standing out past the 3-spread gate fitted on the development sets): recalled as
# similar, never as proof.
NEAR_NOVEL = [
    "Kubernetes node NotReady, kubelet PLEG is not healthy",
    "SAML single sign-on broken for the admin console",
]


@pytest.mark.parametrize("alert", NOVEL)
def test_novel_alert_recalls_nothing(engine: TriageEngine, alert: str) -> None:
    assert recalled_ids(engine, alert) == []


@pytest.mark.parametrize("alert", NEAR_NOVEL)
def test_a_near_novel_alert_is_similar_at_most_never_proof(engine: TriageEngine,
                                                           alert: str) -> None:
    briefing = engine.brief(parse_alert(alert)).briefing
    assert briefing.state != "proven"
    assert {r.match for r in briefing.recalled} <= {"weak"}
    assert briefing.confidence.value <= 30


def test_short_alert_is_not_padded_with_incidents_sharing_one_word(engine: TriageEngine) -> None:
    """'notifications backlog' must not pull in another service's backlog as a proven fix."""
    assert engine.memory is not None
    services = {i.id: i.service for i in engine.memory.incidents}
    ids = recalled_ids(engine, "notifications backlog")
    assert ids
    assert {services[i] for i in ids} == {"notifications"}
