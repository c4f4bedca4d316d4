"""The tripwire: an intended action that resembles a WORSENED one warns at once, with why.

Real parts: the bundled memory, its index and recall, and the in-process MiniLM embedder.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.tripwire import (
    TRIPWIRE_THRESHOLD,
    Tripwire,
    TripwireCandidate,
    check_intent,
    gather_candidates,
)
from console.engine.engine import TriageEngine
from console.engine.pipeline import Routed
from store.embedder import Embedder
from store.models import ActionOutcome

PAYMENTS_ALERT = "payments-api: connection timeouts to Postgres, HikariPool exhausted, p99 4s"


class RecordingEmbedder:
    """The real embedder, keeping every text it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.texts: list[str] = []
        self.calls = 0

    @property
    def id(self) -> str:
        return self.inner.id

    def embed(self, texts: list[str]) -> Any:
        self.calls += 1
        self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def routed(readonly_engine: TriageEngine) -> Routed:
    return readonly_engine.brief(parse_alert(PAYMENTS_ALERT))


@pytest.fixture(scope="module")
def embedder(readonly_engine: TriageEngine) -> Embedder:
    found = readonly_engine.embedder()
    assert found is not None
    return found


@pytest.fixture(scope="module")
def tripwire(routed: Routed, readonly_engine: TriageEngine, embedder: Embedder) -> Tripwire:
    assert readonly_engine.memory is not None
    return Tripwire(gather_candidates(routed.recall, readonly_engine.memory), embedder)


def stored(engine: TriageEngine, ref: str) -> Any:
    assert engine.memory is not None
    incident_id, local = ref.split("/")
    incident = next(i for i in engine.memory.incidents if i.id == incident_id)
    return next(a for a in incident.actions if a.id == local)


def test_fires_on_a_paraphrase_with_the_citation_and_its_explanation(
        tripwire: Tripwire, readonly_engine: TriageEngine) -> None:
    hits = tripwire.check("bounce every payments-api pod simultaneously")

    assert hits, "a paraphrase of INC-2041/A1 (restart all pods at once) must warn"
    lead = hits[0]
    action = stored(readonly_engine, "INC-2041/A1")
    assert (lead.incident_id, lead.action_id) == ("INC-2041", "INC-2041/A1")
    assert lead.action == action.action
    assert lead.explanation == action.explanation
    assert lead.source == "recalled"
    assert lead.similarity >= TRIPWIRE_THRESHOLD
    assert "INC-2041/A1 WORSENED" in lead.warning and action.explanation in lead.warning


def test_fires_on_a_worsened_action_of_the_service_that_was_not_recalled(
        tripwire: Tripwire, routed: Routed) -> None:
    assert "INC-1712" not in {i.incident_id for i in routed.recall.incidents}

    hits = tripwire.check("increase retries to the fraud scoring vendor")

    assert [h.action_id for h in hits][:1] == ["INC-1712/A2"]
    assert hits[0].source == "service" and "recorded for payments-api" in hits[0].rule


@pytest.mark.parametrize("intent", [
    "open a ticket with the vendor and check the grafana dashboard",
    "roll back the last payments deploy",
    "page the database on-call and read the slow query log",
])
def test_does_not_fire_on_an_unrelated_action(tripwire: Tripwire, intent: str) -> None:
    assert tripwire.check(intent) == []


def test_does_not_fire_on_a_resolved_actions_paraphrase(
        tripwire: Tripwire, readonly_engine: TriageEngine, embedder: Embedder) -> None:
    intent = "raise the pool limit on a single instance and drain traffic to it slowly"
    fix = stored(readonly_engine, "INC-2041/A4")
    assert fix.outcome is ActionOutcome.RESOLVED
    # The paraphrase is close enough to fire, were the RESOLVED action a candidate:
    as_candidate = TripwireCandidate("INC-2041", "INC-2041/A4", "payments-api", fix.action,
                                     fix.explanation, fix.kind or "", "recalled")
    assert check_intent(intent, [as_candidate], embedder)

    assert tripwire.check(intent) == []
    assert {c.action_id for c in tripwire.candidates} >= {"INC-2041/A1"}
    assert all(stored(readonly_engine, c.action_id).outcome is ActionOutcome.WORSENED
               for c in tripwire.candidates)


def test_a_secret_typed_in_the_intent_is_redacted_before_embedding_and_never_echoed(
        tripwire: Tripwire, embedder: Embedder) -> None:
    recording = RecordingEmbedder(embedder)
    intent = "restart all payments-api pods at once password=hunter2secret \x1b]0;owned\x07"

    hits = check_intent(intent, tripwire.candidates, recording)

    assert hits and hits[0].action_id == "INC-2041/A1"
    for hit in hits:
        shown = " ".join([hit.intent, hit.warning, hit.rule])
        assert "hunter2secret" not in shown and "\x1b" not in shown
        assert "[REDACTED" in hit.intent
    assert recording.texts and not any("hunter2" in t for t in recording.texts)


def test_a_check_embeds_the_intent_once_candidates_are_cached(
        tripwire: Tripwire, embedder: Embedder) -> None:
    recording = RecordingEmbedder(embedder)
    cached = Tripwire(tripwire.candidates, recording)  # vectors already there

    cached.check("bounce every payments-api pod simultaneously")
    cached.check("open a ticket with the vendor")

    assert recording.calls == 2 and len(recording.texts) == 2


def test_a_half_typed_intent_does_not_fire(tripwire: Tripwire) -> None:
    assert tripwire.check("restart") == []
    assert tripwire.check("   ") == []


def test_the_alerts_service_brings_its_worsened_actions_without_a_recall(
        readonly_engine: TriageEngine, embedder: Embedder) -> None:
    assert readonly_engine.memory is not None
    candidates = gather_candidates(None, readonly_engine.memory, ["api-gateway"])

    assert {c.action_id for c in candidates} == {"INC-1588/A1", "INC-2247/A2"}
    hits = check_intent("restart every gateway pod together", candidates, embedder)
    assert hits[0].action_id == "INC-2247/A2"


def test_drill_incidents_warn_only_when_drills_are_included(
        readonly_engine: TriageEngine, embedder: Embedder) -> None:
    memory = readonly_engine.memory
    assert memory is not None
    drilled = [i.model_copy(update={"drill": True}) if i.id == "INC-2247" else i
               for i in memory.incidents]
    drill_memory = type(memory)(drilled, memory.files, memory.source_hash)

    real = gather_candidates(None, drill_memory, ["api-gateway"])
    practice = gather_candidates(None, drill_memory, ["api-gateway"], include_drills=True)

    assert "INC-2247/A2" not in {c.action_id for c in real}
    assert "INC-2247/A2" in {c.action_id for c in practice}


def test_hits_are_ranked_and_vectors_are_unit_rows(tripwire: Tripwire) -> None:
    vectors = np.stack([c.vector for c in tripwire.candidates])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    hits = tripwire.check("restart all payments-api pods and bump retries to the fraud vendor")
    assert [h.similarity for h in hits] == sorted((h.similarity for h in hits), reverse=True)
