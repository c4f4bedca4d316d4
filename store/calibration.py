"""How recall turns evidence into one relevance score, and where "no prior incident" begins.

The numbers are fitted, not chosen: on alerts written by other people than the records they
match (see bench/recall_eval.py and README "How recall was calibrated"), with k-fold
cross-validation. A calibration belongs to one embedder and travels in the index's metadata,
so an index built with another embedder never borrows a gate it was not fitted for.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MINILM_ID = "all-MiniLM-L6-v2"


class Calibration(BaseModel):
    """Fusion weights (ranking: ``fused = cosine + bm25_weight·bm25 + coverage_weight·coverage``)
    and the gate (standing out: see the fields below)."""

    model_config = ConfigDict(frozen=True)

    embedder: str | None = Field(description="the embedder this was fitted for; None = lexical only")
    bm25_weight: float
    coverage_weight: float
    relative: float = Field(default=0.8, description="an incident kept beside the best seen one "
                            "has this share of its evidence")
    max_incidents: int = 8
    min_shared_terms: int = Field(default=2,
                                  description="lexical only: fewer shared terms is a coincidence")
    # Standing out (store/recall.py ``standing``): an incident's evidence ``cosine +
    # evidence_weight·distinct coverage`` (terms in half the memory or more weigh nothing),
    # less the mean evidence of the ``typical_k`` best rivals (candidates that are not its
    # recurrences nor resolved by the same fix; for the gate, those after the nearest one; a
    # memory with no rival is compared with ``unrelated``), in units of their spread (at
    # least ``spread_min``). It does not grow with the alert's length, and it is judged
    # against what this memory holds.
    evidence_weight: float = 1.0
    typical_k: int = 10
    spread_min: float = 0.03
    unrelated: float = 0.1
    evidence_floor: float = Field(default=0.3, description="no incident below this evidence is "
                                  "seen before, however it stands out")
    standing_floor: float = Field(default=3.0, description="the best incident must stand out this "
                                  "much from the memory's typical match, else no prior incident")
    described: float = Field(default=0.95, description="evidence at which an incident is seen "
                             "before however many look-alikes stand beside it")
    # Applicability (console/engine/briefing/applicability.py): ``strong`` (the same failure)
    # needs standing ≥ ``strong`` *and* a lead of ``margin`` over the best rival with another fix.
    margin: float = 2.0
    strong: float = 5.0
    fitted_on: str = ""

    def fuse(self, cosine: float | None, bm25: float | None, coverage: float) -> float:
        """The fused relevance of one incident to the alert."""
        dense = cosine if (cosine is not None and self.embedder is not None) else 0.0
        return dense + self.bm25_weight * (bm25 or 0.0) + self.coverage_weight * coverage

    def evidence(self, cosine: float | None, distinct: float) -> float:
        """How much of the alert an incident explains, on a scale that does not grow with the
        alert's length: its cosine plus the weighted share of the alert's distinct terms."""
        dense = cosine if (cosine is not None and self.embedder is not None) else 0.0
        return dense + self.evidence_weight * distinct

    def describe(self) -> str:
        """The rule in words, for the "no prior incident" reason and the README."""
        evidence = (f"cosine + {self.evidence_weight:g}·distinct coverage" if self.embedder
                    else "distinct coverage")
        return (f"evidence ({evidence}) ≥ {self.evidence_floor:g} and standing out "
                f"≥ {self.standing_floor:g} spreads from the {self.typical_k} best rivals, "
                f"or evidence ≥ {self.described:g}")


# Ranking fitted by bench/recall_eval.py, the gate and applicability by bench/verdict_fit.py,
# on alerts by other authors than the records (prose and machine); figures in README.
HYBRID_MINILM = Calibration(
    embedder=MINILM_ID, bm25_weight=0.01, coverage_weight=0.1,
    evidence_weight=1.0, typical_k=10, spread_min=0.03, unrelated=0.1, evidence_floor=0.3,
    standing_floor=3.0, strong=6.0, margin=3.0,
    fitted_on="ranking weights by MRR on the third-party postmortem dev set (190 incidents, 60 "
              "alerts); the gate (standing ≥ 3 past the nearest look-alike, turning away at "
              "most 15% of answerable training alerts) and applicability (strong 6, margin 3: "
              "right − 3·wrong PROVEN) "
              "by bench/verdict_fit.py on it and the ITBench machine-alert set, cross-validated "
              "(ITBench split A↔B, postmortems 5-fold): figures in README",
)
# With no vectors (no embedder installed, or TRIAGE_EMBED_MODEL=none) the gate is the share of
# the alert's IDF weight found in an incident document.
LEXICAL = Calibration(
    embedder=None, bm25_weight=0.0, coverage_weight=1.0,
    # Lexical recall is weak on both development sets (below): these are the whole-set fit of
    # bench/verdict_fit.py --lexical, not cross-validated, with no vector to weigh.
    unrelated=0.0, evidence_floor=0.3, standing_floor=1.5, strong=8.0, margin=3.0, relative=0.5,
    described=0.8,
    fitted_on="lexical fallback: whole-set fit on the postmortem and ITBench development sets "
              "(bench/verdict_fit.py --lexical; not cross-validated)",
)


def default_calibration(embedder_id: str | None) -> Calibration:
    """The shipped calibration for an embedder; unknown embedders get MiniLM's, labelled so."""
    if embedder_id is None:
        return LEXICAL
    if embedder_id == MINILM_ID:
        return HYBRID_MINILM
    return HYBRID_MINILM.model_copy(update={
        "embedder": embedder_id,
        "fitted_on": f"{HYBRID_MINILM.fitted_on} for {MINILM_ID}, not refitted for {embedder_id}"})


TEAM_FILE = "calibration.json"


def team_calibration(path: Path, embedder_id: str | None) -> tuple[Calibration | None, str | None]:
    """A team's own calibration (``bench/recall_eval.py --write``) if it fits this embedder.

    Returns (calibration or None, a notice for the user or None).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path} unreadable ({exc.strerror or exc}); using the shipped calibration"
    try:
        calibration = Calibration.model_validate_json(text)
    except ValidationError as exc:
        return None, (f"{path} is not a calibration ({exc.error_count()} problem(s)); using the "
                      "shipped one — rewrite it with bench/recall_eval.py --write")
    if calibration.embedder != embedder_id:
        return None, (f"{path} was fitted for embedder {calibration.embedder or 'none'}, this index "
                      f"uses {embedder_id or 'none'}; using the shipped calibration — refit it")
    return calibration, None
