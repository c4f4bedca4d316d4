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
    """Fusion weights and the gate; ``fused = cosine + bm25_weight·bm25 + coverage_weight·coverage``."""

    model_config = ConfigDict(frozen=True)

    embedder: str | None = Field(description="the embedder this was fitted for; None = lexical only")
    bm25_weight: float
    coverage_weight: float
    floor: float = Field(description="the best incident's fused score must reach this")
    relative: float = Field(description="other incidents must reach this share of the best")
    max_incidents: int = 8
    min_shared_terms: int = Field(default=2,
                                  description="lexical only: fewer shared terms is a coincidence")
    # Applicability (console/engine/briefing/applicability.py): ``fused + margin_weight·margin``, where
    # margin is the lead over the best other candidate that is not a known recurrence of it;
    # ``strong`` is where an incident counts as the same failure (fitted for PROVEN precision).
    margin_weight: float = 1.0
    strong: float = 0.98
    fitted_on: str = ""

    def fuse(self, cosine: float | None, bm25: float | None, coverage: float) -> float:
        """The fused relevance of one incident to the alert."""
        dense = cosine if (cosine is not None and self.embedder is not None) else 0.0
        return dense + self.bm25_weight * (bm25 or 0.0) + self.coverage_weight * coverage

    def describe(self) -> str:
        """The rule in words, for the "no prior incident" reason and the README."""
        parts = []
        if self.embedder:
            parts.append("cosine")
        if self.bm25_weight:
            parts.append(f"{self.bm25_weight:g}·BM25")
        if self.coverage_weight:
            parts.append(f"{self.coverage_weight:g}·term coverage")
        return " + ".join(parts) + f" ≥ {self.floor:g}"


# Fitted by bench/recall_eval.py --fit on the third-party postmortem development set
# (190 incidents, 60 alerts by another author), 5-fold cross-validated; figures in README.
HYBRID_MINILM = Calibration(
    embedder=MINILM_ID, bm25_weight=0.01, coverage_weight=0.1, floor=0.458, relative=0.8,
    fitted_on="third-party postmortem dev set (190 incidents, 60 alerts); weights by MRR, floor "
              "turning away at most 10% of answerable alerts; applicability (margin_weight 1.0, "
              "strong 0.98) by bench/applicability_eval.py for PROVEN precision ≥ 0.97 on the "
              "training folds (5-fold: held-out precision 0.955, coverage 0.35, no novel PROVEN)",
    margin_weight=1.0, strong=0.98,
)
# With no vectors (no embedder installed, or TRIAGE_EMBED_MODEL=none) the gate is the share of
# the alert's IDF weight found in an incident document.
LEXICAL = Calibration(
    embedder=None, bm25_weight=0.0, coverage_weight=1.0, floor=0.40, relative=0.5,
    # Lexical recall finds 1 of the dev set's 48 answerable alerts: nothing to cross-validate
    # on; the bar is the whole-set fit of bench/applicability_eval.py --lexical.
    margin_weight=1.0, strong=0.74,
    fitted_on="bundled memory (lexical fallback); applicability bar from the dev set's only "
              "lexically recalled alerts (not cross-validated)",
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
