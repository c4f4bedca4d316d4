"""Recall: the past actions relevant to an alert, gated so that junk is never padding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from store.embedder import EmbedderUnavailable
from store.index import MemoryIndex
from store.redact import REDACTION_MARKER, redact
from store.terms import coverage, terms

# Share of the alert's IDF weight a record must contain to count as "seen before".
# Calibrated on the bundled memory (see tests/store/test_recall.py for the cases).
LEXICAL_FLOOR = 0.40
# Cosine a record's embedding must reach when an embedder is configured.
DENSE_FLOOR = 0.60
# A recalled incident must score at least this share of the best one, so one strong match
# is not diluted by weak neighbours.
RELATIVE_FLOOR = 0.5
MAX_INCIDENTS = 8
# A lexical match must share at least this many terms with the alert (fewer if it has fewer).
MIN_MATCHED_TERMS = 2
CANDIDATES = 100


@dataclass(frozen=True)
class RecalledAction:
    """One stored action as recalled: exactly the row in the index, plus its relevance."""

    incident_id: str
    action_id: str
    local_action_id: str
    position: int
    service: str
    outcome: str
    kind: str
    confirmed: bool
    title: str
    symptoms: str
    root_cause: str
    action: str
    explanation: str
    started_at: str
    text: str
    score: float


@dataclass(frozen=True)
class RecalledIncident:
    """A past incident above the floor, with every action taken in it, in order."""

    incident_id: str
    service: str
    title: str
    score: float
    actions: tuple[RecalledAction, ...]


@dataclass(frozen=True)
class Recall:
    """What was searched, how, and what came back above the floor."""

    query: str
    redacted: tuple[str, ...]
    query_terms: tuple[str, ...]
    mode: str
    floor: float
    incidents: tuple[RecalledIncident, ...]
    best_rejected: float = 0.0
    notices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def actions(self) -> list[RecalledAction]:
        return [action for incident in self.incidents for action in incident.actions]


def recall(index: MemoryIndex, alert_text: str) -> Recall:
    """Find the incidents that resemble ``alert_text``; nothing above the floor → none."""
    redaction = redact(alert_text)
    # The markers are ours, not the alert's: they must not dilute the relevance gate.
    query_terms = terms(REDACTION_MARKER.sub(" ", redaction.text))
    notices: list[str] = []
    vector = None
    if index.has_vectors and index.embedder is not None:
        try:
            vector = index.embedder.embed([redaction.text])[0]
        except EmbedderUnavailable as exc:
            notices.append(f"vector search skipped: {exc}")
    mode = "hybrid" if vector is not None else "lexical"
    search_text = " ".join(query_terms)
    candidates = index.search(search_text, vector, CANDIDATES)
    meta = index.meta
    frequencies = meta.document_frequency if meta else {}
    documents = meta.incidents if meta else 0

    needed = min(MIN_MATCHED_TERMS, len(query_terms))

    def relevance(row: dict[str, Any]) -> float:
        row_terms = set(terms(row["text"]))
        lexical = coverage(query_terms, row_terms, frequencies, documents)
        if len(row_terms.intersection(query_terms)) < needed:
            lexical = 0.0  # one rare shared word is a coincidence, not a match
        if vector is None or row.get("vector") is None:
            return lexical
        dense = _cosine(vector, row["vector"])
        return max(lexical, dense if dense >= DENSE_FLOOR else 0.0)

    best_by_incident: dict[str, float] = {}
    for row in candidates:
        score = relevance(row)
        best_by_incident[row["incident_id"]] = max(best_by_incident.get(row["incident_id"], 0.0),
                                                   score)
    passing = {i: s for i, s in best_by_incident.items() if s >= LEXICAL_FLOOR}
    best_rejected = max((s for i, s in best_by_incident.items() if i not in passing), default=0.0)
    if passing:
        top = max(passing.values())
        passing = {i: s for i, s in passing.items() if s >= top * RELATIVE_FLOOR}
    kept = sorted(passing, key=lambda i: -passing[i])[:MAX_INCIDENTS]
    rows_by_incident: dict[str, list[RecalledAction]] = {i: [] for i in kept}
    for row in index.rows_for(kept):
        rows_by_incident[row["incident_id"]].append(_recalled_action(row, relevance(row)))
    incidents = []
    for incident_id in kept:
        actions = sorted(rows_by_incident[incident_id], key=lambda a: a.position)
        if not actions:
            continue
        incidents.append(RecalledIncident(incident_id, actions[0].service, actions[0].title,
                                          round(passing[incident_id], 3), tuple(actions)))
    notices.extend(index.repairs)
    index.repairs.clear()
    return Recall(redaction.text, redaction.found, tuple(query_terms), mode, LEXICAL_FLOOR,
                  tuple(incidents), round(best_rejected, 3), tuple(notices))


def _recalled_action(row: dict[str, Any], score: float) -> RecalledAction:
    return RecalledAction(
        incident_id=row["incident_id"], action_id=row["action_id"],
        local_action_id=row["local_action_id"], position=int(row["position"]),
        service=row["service"], outcome=row["outcome"], kind=row["kind"],
        confirmed=bool(row["confirmed"]), title=row["title"], symptoms=row["symptoms"],
        root_cause=row["root_cause"], action=row["action"], explanation=row["explanation"],
        started_at=row["started_at"], text=row["text"], score=round(score, 3),
    )


def _cosine(left: list[float], right: list[float]) -> float:
    dot = sum(a * b for a, b in zip(left, right, strict=False))
    norm = math.sqrt(sum(a * a for a in left)) * math.sqrt(sum(b * b for b in right))
    return dot / norm if norm else 0.0
