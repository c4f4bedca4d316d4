"""The tripwire on paraphrases written blind (issue 23): tests/data/tripwire_blind.yaml was
written by someone who saw only the WORSENED action texts of the bundled memory — not the
tripwire, its self-written positives or its threshold. The full figures (and every miss) are
printed by bench/tripwire_blind.py; this keeps them from getting worse unseen.

Measured at 2026-12-02 (cosine + 0.3·overlap ≥ 0.63): 96 of 105 paraphrases warned with the
right citation; 30 of 42 near-misses (a safe, different action on the same system) warned too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from console.engine.briefing import tripwire
from console.engine.briefing.tripwire import TripwireCandidate
from store.loader import load_incidents
from store.minilm import MiniLMEmbedder
from store.models import ActionOutcome
from tests.conftest import BUNDLED_INCIDENTS

BLIND = Path(__file__).resolve().parents[1] / "data" / "tripwire_blind.yaml"


@pytest.fixture(scope="module")
def blind() -> tuple[list[dict[str, object]], tripwire.Tripwire, dict[tuple[str, str], str]]:
    memory = load_incidents(BUNDLED_INCIDENTS)
    worsened = [TripwireCandidate(i.id, i.action_ref(a), i.service, a.action, a.explanation,
                                  a.kind or "", "service")
                for i in memory.incidents for a in i.actions
                if a.outcome is ActionOutcome.WORSENED]
    embedder = MiniLMEmbedder()
    checker = tripwire.Tripwire(tripwire.embed_candidates(worsened, embedder), embedder)
    entries = yaml.safe_load(BLIND.read_text(encoding="utf-8"))
    return entries, checker, {(c.incident_id, c.action): c.action_id for c in worsened}


def test_every_worsened_action_of_the_memory_has_blind_paraphrases(blind: tuple) -> None:
    entries, _, refs = blind
    covered = {(e["incident"], e["action"]) for e in entries}
    assert covered == set(refs)  # a WORSENED action added to the memory needs its own
    assert all(len(e["positives"]) == 5 and len(e["near_misses"]) == 2 for e in entries)


def test_blind_paraphrases_are_warned_with_the_right_citation(blind: tuple) -> None:
    entries, checker, refs = blind
    asked = caught = 0
    for entry in entries:
        ref = refs[(entry["incident"], entry["action"])]
        for text in entry["positives"]:
            asked += 1
            caught += any(h.action_id == ref for h in checker.check(text))
    assert caught / asked >= 0.88, f"{caught}/{asked}"


def test_blind_near_misses_do_not_warn_more_often_than_measured(blind: tuple) -> None:
    entries, checker, _ = blind
    texts = [text for entry in entries for text in entry["near_misses"]]
    fired = sum(bool(checker.check(text)) for text in texts)
    assert fired / len(texts) <= 0.75, f"{fired}/{len(texts)}"
