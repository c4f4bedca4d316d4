"""The recall gate, rule by rule: how evidence is fused into one score (``Calibration.fuse``),
how candidates are ranked (``rank``) and which of them count as seen before (``gate``).

The fitted numbers themselves are checked on third-party data by bench/recall_eval.py and
tests/store/test_recall_hybrid.py; here each rule is checked with numbers chosen so the expected
result can be read off the row.
"""

from __future__ import annotations

import pytest

from store.calibration import HYBRID_MINILM, LEXICAL, MINILM_ID, Calibration
from store.index import Candidate
from store.recall import Ranked, gate, rank
from store.terms import terms

HYBRID = Calibration(embedder="test-embedder", bm25_weight=0.01, coverage_weight=0.1,
                     max_incidents=3)
WORDS = Calibration(embedder=None, bm25_weight=0.0, coverage_weight=1.0,
                    min_shared_terms=2)


# --- fuse: cosine + bm25_weight·BM25 + coverage_weight·coverage --------------------------

FUSE = [
    # (calibration, cosine, bm25, coverage, fused)
    (HYBRID, 0.5, 10.0, 0.5, 0.5 + 0.1 + 0.05),
    (HYBRID, 0.5, 0.0, 0.0, 0.5),                 # the vector alone counts
    (HYBRID, 0.0, 10.0, 0.0, 0.1),
    (HYBRID, 0.0, 0.0, 1.0, 0.1),
    (HYBRID, -0.25, 0.0, 0.0, -0.25),             # an opposite meaning lowers the score
    (HYBRID, None, 10.0, 0.5, 0.1 + 0.05),        # the vector search did not find it
    (HYBRID, 0.5, None, 0.5, 0.5 + 0.05),         # the full-text search did not find it
    (HYBRID, None, None, 0.0, 0.0),
    (WORDS, 0.9, 10.0, 0.5, 0.5),                 # no embedder: a cosine never counts
    (WORDS, None, None, 0.75, 0.75),
    (HYBRID_MINILM, 0.4, 5.0, 0.3, 0.4 + 0.05 + 0.03),
    (LEXICAL, 0.4, 5.0, 0.3, 0.3),
]


@pytest.mark.parametrize(("calibration", "cosine", "bm25", "share", "fused"), FUSE,
                         ids=[f"{c.embedder or 'lexical'}-{cos}-{b}-{s}"
                              for c, cos, b, s, _ in FUSE])
def test_fuse(calibration: Calibration, cosine: float | None, bm25: float | None, share: float,
              fused: float) -> None:
    assert calibration.fuse(cosine, bm25, share) == pytest.approx(fused, abs=1e-12)


def test_the_shipped_hybrid_calibration_is_fitted_for_minilm() -> None:
    assert HYBRID_MINILM.embedder == MINILM_ID
    assert HYBRID_MINILM.fuse(0.3, None, 0.0) == pytest.approx(0.3)


# --- rank --------------------------------------------------------------------------------

QUERY = ["pool", "exhaust", "timeout", "deploy"]  # as store.terms.terms makes them


def candidate(incident_id: str, document: str, cosine: float | None = None,
              bm25: float | None = None) -> Candidate:
    return Candidate(incident_id, "{}", cosine, bm25, document, frozenset(terms(document)))


def ranked(*items: Candidate, calibration: Calibration = HYBRID,
           query: list[str] = QUERY) -> list[Ranked]:
    # No document frequencies: every query term weighs the same, so coverage = shared / 4.
    return rank(list(items), query, calibration, {}, 10)


def test_rank_scores_each_candidate_by_the_calibrations_fusion() -> None:
    result = ranked(candidate("INC-1", "connection pool exhausted", cosine=0.6, bm25=8.0),
                    candidate("INC-2", "deploy timeouts on the pool, pool exhausted",
                              cosine=0.2, bm25=20.0))
    assert [(r.incident_id, r.shared_terms, r.coverage) for r in result] == [
        ("INC-1", 2, 0.5), ("INC-2", 4, 1.0)]
    assert [r.score for r in result] == pytest.approx([0.6 + 0.08 + 0.05, 0.2 + 0.2 + 0.1])
    assert [(r.cosine, r.bm25) for r in result] == [(0.6, 8.0), (0.2, 20.0)]


def test_rank_puts_the_best_first_and_breaks_ties_by_id() -> None:
    result = ranked(candidate("INC-3", "nothing shared", cosine=0.3),
                    candidate("INC-9", "nothing shared", cosine=0.7),
                    candidate("INC-2", "nothing shared", cosine=0.3),
                    candidate("INC-10", "nothing shared", cosine=0.3))
    assert [r.incident_id for r in result] == ["INC-9", "INC-10", "INC-2", "INC-3"]


def test_lexical_match_on_one_shared_term_is_a_coincidence() -> None:
    result = ranked(candidate("INC-1", "the pool was resized"),
                    candidate("INC-2", "pool exhausted"), calibration=WORDS)
    assert [(r.incident_id, r.shared_terms, r.coverage, r.score) for r in result] == [
        ("INC-2", 2, 0.5, 0.5), ("INC-1", 1, 0.0, 0.0)]


def test_a_one_word_alert_needs_only_that_word() -> None:
    result = ranked(candidate("INC-1", "the pool was resized"), calibration=WORDS,
                    query=["pool"])
    assert [(r.shared_terms, r.coverage) for r in result] == [(1, 1.0)]


def test_with_vectors_one_shared_term_still_counts() -> None:
    result = ranked(candidate("INC-1", "the pool was resized", cosine=0.4))
    assert [(r.shared_terms, r.coverage) for r in result] == [(1, 0.25)]
    assert result[0].score == pytest.approx(0.4 + 0.025)


def test_rarer_terms_weigh_more_in_coverage() -> None:
    """'deploy' is in 9 of 10 documents, 'exhaust' in none: sharing 'exhaust' covers more."""
    frequencies = {"deploy": 9, "pool": 5, "timeout": 5, "exhaust": 0}
    result = rank([candidate("INC-1", "pool exhausted"), candidate("INC-2", "pool deploy")],
                  QUERY, WORDS, frequencies, 10)
    assert [r.incident_id for r in result] == ["INC-1", "INC-2"]
    assert result[0].coverage > 0.5 > result[1].coverage


# --- gate ----------------------------------------------------------------------------------

def scored(*rows: tuple[float, float, float]) -> list[Ranked]:
    """Candidates best first, each (fused score, evidence, standing out past its look-alike)."""
    return [Ranked(f"INC-{n}", score, None, None, 0.0, 0, evidence=evidence, seen=seen)
            for n, (score, evidence, seen) in enumerate(rows, 1)]


GATE = [
    # (rows best first, kept ids): an incident is seen before when it stands out ≥ 3 spreads
    # past its nearest look-alike with evidence ≥ 0.3; those kept, best first, at most 3
    ((), []),
    (((0.9, 0.9, 2.99),), []),                           # stands out too little: no prior
    (((0.9, 0.29, 9.0),), []),                           # explains too little of the alert
    (((0.9, 0.3, 3.0),), ["INC-1"]),                     # exactly both floors pass
    (((2.6, 0.9, 2.0), (2.5, 0.8, 1.0)), []),            # a long alert's big fused score: no
    (((1.0, 0.9, 4.0), (0.99, 0.9, 2.9)), ["INC-1"]),    # a close score is no padding
    (((1.0, 0.9, 1.0), (0.9, 0.8, 3.5)), ["INC-2"]),     # the second stands out, alone
    (((0.9, 0.9, 4), (0.85, 0.8, 5), (0.8, 0.8, 3), (0.75, 0.7, 6)),
     ["INC-1", "INC-2", "INC-3"]),                       # never more than max_incidents
]


@pytest.mark.parametrize(("rows", "kept"), GATE, ids=[repr(s) for s, _ in GATE])
def test_gate(rows: tuple[tuple[float, float, float], ...], kept: list[str]) -> None:
    assert [r.incident_id for r in gate(scored(*rows), HYBRID)] == kept


def test_gate_keeps_what_it_passes_unchanged() -> None:
    candidates = scored((0.9, 0.9, 4.0), (0.8, 0.8, 3.5))
    assert gate(candidates, HYBRID) == candidates
