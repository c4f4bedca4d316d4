"""Tripwire: warn, while the engineer types what they are about to do, that it resembles an
action the memory recorded as making things WORSE — with the citation and why, before they act.

Candidates are WORSENED actions only (a RESOLVED action's paraphrase never fires): those in
this briefing's recall, plus every WORSENED action recorded for the alert's service(s). Each
candidate's vector is embedded once (:func:`embed_candidates`); a check embeds only the intent.

The intent is untrusted: it is cleaned of control characters and redacted before it is
embedded, and only the redacted text is ever returned (``TripwireHit.intent``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from console.engine.briefing.fixes import overlap
from console.engine.briefing.instructions import looks_like_instructions
from store.models import ActionOutcome
from store.recall import action_text
from store.redact import REDACTION_MARKER, redact
from store.terms import terms
from store.text import clean

if TYPE_CHECKING:
    from store.embedder import Embedder
    from store.loader import LoadedMemory
    from store.recall import Recall

# similarity = cosine(MiniLM(intent), MiniLM(stored action)) + LEXICAL_WEIGHT · Jaccard(terms).
# Fitted by bench/tripwire_calibrate.py on the bundled memory (38 incidents, 16 WORSENED actions).
# Positives: 64 paraphrases WE wrote (self-written: they flatter recall); caught only when the
# paraphrased action itself is among the hits shown. Negatives: 117 non-WORSENED memory actions
# (the team's text) against WORSENED actions of another kind, and 190 third-party postmortem
# summaries (../shared/eval/postmortems, read at run time) against all 16 — harder than a real
# check, whose candidates are only the recall's and the service's.
# 5-fold CV by WORSENED action (threshold = max F1 on 4 folds, judged on the 5th):
#   cosine + 0.3·Jaccard → precision 0.97, recall 0.92 (tp 59, fn 5, fp 2 of 307; fold
#   thresholds 0.63–0.66); cosine alone → 0.92 / 0.91; Jaccard alone → 0.86 / 0.94.
# Shipped threshold: the same fit on all the data. Near misses — same-kind actions that were
# not WORSENED ("Flushed the resolver cache on one gateway pod") — still fire in 18 of 86 pairs:
# they read alike, so the warning shows its explanation and the engineer judges.
# A check: one intent embed + a dot product per candidate, median 12–28 ms on 2 busy cores.
LEXICAL_WEIGHT = 0.3
TRIPWIRE_THRESHOLD = 0.63
# Fewer meaningful words than this is a half-typed intent ("re", "restart"): nothing to judge.
MIN_INTENT_TERMS = 2
# One warning per incident action is enough; more than this is noise at typing speed.
MAX_HITS = 3

Source = Literal["recalled", "service"]


@dataclass(frozen=True)
class TripwireCandidate:
    """One stored WORSENED action the intent is compared with, and why it is a candidate."""

    incident_id: str
    action_id: str  # INC-x/Ay
    service: str
    action: str
    explanation: str
    kind: str
    source: Source
    confirmed: bool = True
    vector: Any = field(default=None, compare=False, repr=False)  # unit float32 row, once embedded

    @property
    def terms(self) -> frozenset[str]:
        return frozenset(terms(self.action))


@dataclass(frozen=True)
class TripwireHit:
    """A WORSENED action the intent resembles: cite it, say why it went wrong, and by what rule."""

    incident_id: str
    action_id: str
    action: str
    explanation: str
    similarity: float
    rule: str
    source: Source
    cosine: float
    overlap: float
    intent: str  # the intent as checked: cleaned and redacted, never the raw text

    @property
    def warning(self) -> str:
        """The line to show at once, worded like a briefing warning (how alike it was worked
        out is ``rule``, for the audit and the timeline: not the engineer's words)."""
        return f"About to repeat {self.action_id} WORSENED: {self.action} — {self.explanation}"


def safe_intent(text: str) -> str:
    """The intent as the tripwire may use and show it: no control characters, secrets redacted."""
    return redact(clean(text)).text.strip()


def combined(cosine: float, overlap: float) -> float:
    """The tripwire's similarity: dense meaning, nudged by shared words (see LEXICAL_WEIGHT)."""
    return cosine + LEXICAL_WEIGHT * overlap


def gather_candidates(recall: Recall | None, memory: LoadedMemory,
                      services: Iterable[str | None] = (), include_drills: bool = False,
                      ) -> list[TripwireCandidate]:
    """The WORSENED actions an intent is checked against: this recall's (pass the recall the
    briefing cited, quarantine already applied) and every one recorded for ``services`` (the
    alert's service; when it names none, the recalled incidents'). Each action once, recall
    first.

    Records that read like instructions are left out, as they are from every briefing; drill
    incidents (``drill: true``) only when ``include_drills``.
    """
    found: dict[str, TripwireCandidate] = {}
    wanted = {s.strip().lower() for s in services if s and s.strip()}
    if recall is not None:
        for recalled in recall.actions:
            if recalled.outcome is ActionOutcome.WORSENED and not looks_like_instructions(
                    recalled.text):
                found.setdefault(recalled.action_id, TripwireCandidate(
                    recalled.incident_id, recalled.action_id, recalled.service, recalled.action,
                    recalled.explanation, recalled.kind, "recalled", recalled.confirmed))
        if not wanted:  # the alert names no service: the recalled incidents' services
            wanted.update(i.service.strip().lower() for i in recall.incidents)
    for incident in memory.incidents:
        if incident.service.strip().lower() not in wanted:
            continue
        if getattr(incident, "drill", False) and not include_drills:
            continue
        for position, action in enumerate(incident.actions):
            if action.outcome is not ActionOutcome.WORSENED:
                continue
            ref = incident.action_ref(action)
            if ref in found or looks_like_instructions(action_text(incident, position)):
                continue
            found[ref] = TripwireCandidate(
                incident.id, ref, incident.service, action.action, action.explanation,
                action.kind or "", "service", action.confirmed is not False)
    return list(found.values())


def embed_candidates(candidates: Sequence[TripwireCandidate], embedder: Embedder,
                     ) -> list[TripwireCandidate]:
    """The candidates with their vectors, embedding (in one batch) only those without one."""
    missing = [n for n, c in enumerate(candidates) if c.vector is None]
    if not missing:
        return list(candidates)
    vectors = embedder.embed([candidates[n].action for n in missing])
    ready = list(candidates)
    for row, n in enumerate(missing):
        ready[n] = replace(candidates[n], vector=vectors[row])
    return ready


def scores(intent: str, candidates: Sequence[TripwireCandidate], embedder: Embedder,
           ) -> list[tuple[float, float]]:
    """(cosine, term overlap) of a safe intent to each candidate, which must carry vectors."""
    import numpy as np

    intent_terms = set(terms(intent))
    searchable = REDACTION_MARKER.sub(" ", intent)
    vector = embedder.embed([searchable])[0]
    matrix = np.stack([c.vector for c in candidates])
    cosines = matrix @ vector
    return [(float(cosine), overlap(intent_terms, set(c.terms)))
            for cosine, c in zip(cosines, candidates, strict=True)]


def check_intent(text: str, candidates: Sequence[TripwireCandidate], embedder: Embedder,
                 ) -> list[TripwireHit]:
    """WORSENED candidates the intent resembles (similarity ≥ TRIPWIRE_THRESHOLD), most alike
    first, at most MAX_HITS. Candidates without vectors are embedded here (cache them with
    :func:`embed_candidates` to keep a check to one embed). Raises EmbedderUnavailable."""
    intent = safe_intent(text)
    if len(terms(REDACTION_MARKER.sub(" ", intent))) < MIN_INTENT_TERMS or not candidates:
        return []
    ready = embed_candidates(candidates, embedder)
    hits = []
    for candidate, (cosine, shared) in zip(ready, scores(intent, ready, embedder), strict=True):
        similarity = combined(cosine, shared)
        if similarity < TRIPWIRE_THRESHOLD:
            continue
        origin = ("recalled for this alert" if candidate.source == "recalled"
                  else f"recorded for {candidate.service}")
        rule = (f"similarity {similarity:.2f} ≥ {TRIPWIRE_THRESHOLD:.2f}: cosine {cosine:.2f} + "
                f"{LEXICAL_WEIGHT}·word overlap {shared:.2f}; WORSENED action {origin}")
        explanation = candidate.explanation + (
            "" if candidate.confirmed else " (explanation suspected, not confirmed)")
        hits.append(TripwireHit(candidate.incident_id, candidate.action_id, candidate.action,
                                explanation, round(similarity, 3), rule, candidate.source,
                                round(cosine, 3), round(shared, 3), intent))
    hits.sort(key=lambda h: (-h.similarity, h.action_id))
    return hits[:MAX_HITS]


class Tripwire:
    """The candidates of one briefing with their vectors, embedded once; ``check`` per keystroke
    pause. Safe to share between threads once built (read-only)."""

    def __init__(self, candidates: Sequence[TripwireCandidate], embedder: Embedder) -> None:
        self.embedder = embedder
        self.candidates = embed_candidates(candidates, embedder) if candidates else []

    def check(self, text: str) -> list[TripwireHit]:
        return check_intent(text, self.candidates, self.embedder)
