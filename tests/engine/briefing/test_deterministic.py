"""The deterministic briefing: grounded in the recall by construction."""

from __future__ import annotations

from pathlib import Path

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.models import Briefing
from console.engine.config import Settings
from console.engine.engine import TriageEngine

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}
BACKLOG = "push notification queue backlog during marketing campaign send"
NOVEL = "TLS certificate expired on internal gRPC mesh"
FIX_OUTCOMES = {"RESOLVED", "MITIGATED"}


@pytest.fixture
def engine(readonly_engine: TriageEngine) -> TriageEngine:
    """Every test here only briefs: share one loaded engine across the module."""
    return readonly_engine


def brief(engine: TriageEngine, text: str) -> Briefing:
    return engine.brief(parse_alert(text)).briefing


@pytest.mark.parametrize("alert", [CHECKOUT, KEYERROR, BACKLOG,
                                   "notifications queue backlog growing, messages delayed",
                                   "gateway requests failing after upstream config push"])
def test_warnings_come_only_from_worsened_actions(engine: TriageEngine, alert: str) -> None:
    briefing = brief(engine, alert)
    assert briefing.recalled, "nothing recalled: this case would prove nothing"
    recalled = {r.action_id: r for r in briefing.recalled}
    worsened = {r.action_id for r in briefing.recalled if r.outcome == "WORSENED"}
    assert {w.action_id for w in briefing.warnings} == worsened
    for warning in briefing.warnings:
        record = recalled[warning.action_id]
        assert warning.incident_id == record.incident_id
        assert warning.explanation == record.explanation
        assert record.explanation in warning.text
        assert warning.action_id in warning.text


@pytest.mark.parametrize("alert", [CHECKOUT, KEYERROR, BACKLOG,
                                   "notifications queue backlog growing, messages delayed",
                                   "gateway requests failing after upstream config push"])
def test_recommendations_cite_only_recalled_fixes_ranked_by_incidents_resolved(
        engine: TriageEngine, alert: str) -> None:
    briefing = brief(engine, alert)
    assert briefing.recommendations, "no recommendation: this case would prove nothing"
    recalled = {r.action_id: r for r in briefing.recalled}
    for recommendation in briefing.recommendations:
        assert recommendation.evidence
        for evidence in recommendation.evidence:
            assert evidence.outcome in FIX_OUTCOMES
            assert evidence.action_id in recalled  # cited only what this recall returned
            assert recalled[evidence.action_id].outcome == evidence.outcome
            assert recalled[evidence.action_id].incident_id == evidence.incident_id
        assert recommendation.resolved == sum(e.outcome == "RESOLVED"
                                              for e in recommendation.evidence)
        assert len({e.incident_id for e in recommendation.evidence}) == len(
            recommendation.evidence)
    # The strongest class first; within a proving class, the most incidents resolved first;
    # among weak matches (nothing proven) the best-matching incident's fix first.
    order = {"strong": 2, "elsewhere": 1, "weak": 0}
    best = {r.incident_id: r.applicability for r in briefing.recalled}
    keys = [(order[r.applies], best[r.evidence[0].incident_id] if r.applies == "weak"
             else r.resolved - len(r.failed_strong)) for r in briefing.recommendations]
    assert keys == sorted(keys, reverse=True)


def test_checkout_alert_warns_about_restarting_all_pods(engine: TriageEngine) -> None:
    briefing = brief(engine, CHECKOUT)
    assert briefing.recalled[0].incident_id == "INC-2041"
    warning = next(w for w in briefing.warnings if w.action_id == "INC-2041/A1")
    assert "max_connections" in warning.text
    assert briefing.source == "deterministic"
    assert briefing.degraded  # says why no model was used


def test_five_keyerror_incidents_give_one_proven_fix_at_98(engine: TriageEngine) -> None:
    briefing = brief(engine, KEYERROR)
    assert briefing.state == "proven"
    lead = briefing.recommendations[0]
    assert {e.incident_id for e in lead.evidence} == KEYERROR_INCIDENTS
    assert all(e.outcome == "RESOLVED" for e in lead.evidence)
    assert (lead.resolved, lead.tried) == (5, 5)
    assert "versioned cache keys" in lead.action
    assert [r for r in briefing.recommendations if len(r.evidence) == 5] == [lead]
    confidence = briefing.confidence
    assert (confidence.value, confidence.proven, confidence.failed, confidence.tier) == (
        98, 5, 0, "3+")
    assert "5 of 5" in confidence.explanation
    assert confidence.model_claim is None


def test_only_mitigations_is_unproven(engine: TriageEngine) -> None:
    briefing = brief(engine, BACKLOG)
    assert {r.incident_id for r in briefing.recalled} >= {"INC-1547"}
    assert briefing.state == "unproven"
    assert briefing.recommendations
    assert all(e.outcome == "MITIGATED" for r in briefing.recommendations for e in r.evidence)
    assert briefing.confidence.proven == 0
    assert briefing.confidence.value == 0  # no model claim: min(0, 30)
    assert "only mitigated" in briefing.summary  # (the state is the banner's to say)


def test_no_prior_incident_says_what_was_searched(engine: TriageEngine) -> None:
    briefing = brief(engine, NOVEL)
    assert briefing.state == "no_prior_incident"
    assert briefing.recalled == []
    assert briefing.recommendations == [] and briefing.warnings == []
    assert briefing.confidence.value == 0
    assert briefing.confidence.proven == 0
    summary = briefing.summary
    assert "No prior incident" in summary
    assert engine.memory is not None
    assert f"{len(engine.memory.incidents)} incidents" in summary
    # What was searched for (the stemmed terms) and the gate's arithmetic are in ``search``
    # (the JSON, the console's details view), not in the sentence (issue 23).
    assert briefing.search is not None
    for term in ("tls", "certificate", "grpc", "mesh"):
        assert term in briefing.search.terms
        assert term not in summary
    assert "floor" in briefing.search.gate and "floor" not in summary


def test_alert_without_searchable_words_is_no_prior_incident(engine: TriageEngine) -> None:
    briefing = brief(engine, "??? !!! the and of")
    assert briefing.state == "no_prior_incident"
    assert "no searchable words" in briefing.summary


# --- a memory made for counting ---------------------------------------------------------------

SYMPTOMS = "Zorblax queue frozen and the frobnicator rejects every widget batch"


def _incident(incident_id: str, *actions: tuple[str, str]) -> dict:
    return {"id": incident_id, "service": "widget-api", "symptoms": SYMPTOMS,
            "actions": [{"id": f"A{n}", "action": action, "outcome": outcome,
                         "explanation": f"{outcome.lower()} in {incident_id}"}
                        for n, (action, outcome) in enumerate(actions, 1)]}


@pytest.fixture
def counting_engine(tmp_path: Path, write_incidents) -> TriageEngine:
    """Four identical-looking incidents where two fixes have different track records."""
    shard = "Raised the frobnicator shard count to eight"
    drain = "Drained the zorblax queue with the admin tool"
    path = write_incidents([
        _incident("W-1", ("Restarted every frobnicator at once", "WORSENED"),
                  (drain, "MITIGATED"), (shard, "RESOLVED")),
        _incident("W-2", (drain, "RESOLVED")),
        _incident("W-3", (shard, "RESOLVED")),
        _incident("W-4", (shard, "NO_EFFECT"), ("Paged the widget vendor", "MITIGATED")),
    ])
    triage = TriageEngine(Settings(incidents_path=path, data_dir=tmp_path / "data"))
    triage.load()
    return triage


def test_fixes_ranked_by_incidents_resolved_with_failures_counted(
        counting_engine: TriageEngine) -> None:
    briefing = brief(counting_engine, "zorblax queue frozen, frobnicator rejects widget batch")
    assert {r.incident_id for r in briefing.recalled} == {"W-1", "W-2", "W-3", "W-4"}
    actions = [r.action for r in briefing.recommendations]
    # The shard change resolved two incidents but did nothing in a third: it counts 2 − 1 = 1,
    # as the drain does (resolved once, mitigated once) — the drain's mitigation breaks the tie.
    assert actions[:2] == ["Drained the zorblax queue with the admin tool",
                           "Raised the frobnicator shard count to eight"]
    assert actions[-1] == "Paged the widget vendor"
    drain, shard = briefing.recommendations[:2]
    assert {e.action_id for e in shard.evidence} == {"W-1/A3", "W-3/A1"}
    assert (shard.resolved, shard.tried) == (2, 3)
    assert [e.action_id for e in shard.failed_strong] == ["W-4/A1"]
    assert {e.action_id for e in drain.evidence} == {"W-2/A1", "W-1/A2"}
    assert drain.resolved == 1

    assert briefing.state == "proven"
    confidence = briefing.confidence
    assert (confidence.proven, confidence.failed, confidence.tier, confidence.value) == (
        1, 0, "1", 55)
    assert "1 of 1" in confidence.explanation

    assert [w.action_id for w in briefing.warnings] == ["W-1/A1"]
    assert briefing.warnings[0].explanation == "worsened in W-1"


def test_unconfirmed_explanation_is_shown_as_suspected(tmp_path: Path) -> None:
    from console.engine.briefing.alert import parse_alert
    from console.engine.config import Settings
    from console.engine.engine import TriageEngine

    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(
        "- id: INC-1\n  service: ledger\n  symptoms: ledger totals drift between shards\n"
        "  actions:\n"
        "    - id: A1\n      action: Replayed the journal\n      outcome: WORSENED\n"
        "      confirmed: false\n      explanation: Replay probably doubled entries\n"
        "    - id: A2\n      action: Reconciled from audit\n      outcome: WORSENED\n"
        "      explanation: Audit stream lagged\n")
    engine = TriageEngine(Settings(incidents_path=incidents, data_dir=tmp_path / "data"))
    briefing = engine.brief(parse_alert("ledger totals drift between shards")).briefing
    by_action = {w.action_id: w.text for w in briefing.warnings}
    assert "suspected" in by_action["INC-1/A1"]
    assert "suspected" not in by_action["INC-1/A2"]
    assert [r.confirmed for r in briefing.recalled] == [False, True]
