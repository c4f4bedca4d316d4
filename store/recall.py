"""Recall: the past incidents relevant to an alert, gated so that junk is never padding.

Hybrid: full-text BM25 over one document per incident and the dense cosine of the alert to
that document, fused into one score by the index's calibration. Nothing reaching the
calibrated floor → no prior incident, with the reason (best match and the floor) kept.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from store.calibration import Calibration, default_calibration
from store.embedder import EmbedderUnavailable
from store.index import Candidate, MemoryIndex, incident_document
from store.models import ActionOutcome, Incident
from store.redact import REDACTION_MARKER, redact
from store.terms import coverage, distinct_weights, same_fix_words, terms, weighted_share

CANDIDATES = 50


@dataclass(frozen=True)
class RecalledAction:
    """One stored action as recalled, with its incident's context and relevance."""

    incident_id: str
    action_id: str
    local_action_id: str
    position: int
    service: str
    outcome: ActionOutcome
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
    """A past incident above the floor, with every action taken in it, in order (maybe none)."""

    incident_id: str
    service: str
    title: str
    score: float
    actions: tuple[RecalledAction, ...]
    symptoms: str = ""
    document: str = ""
    cosine: float | None = None
    bm25: float | None = None
    coverage: float = 0.0
    related: tuple[str, ...] = ()
    started_at: str = ""
    root_cause: str = ""
    # The runbook its postmortem recorded ("" none): shown as used last time, never fetched.
    runbook: str = ""
    # How far it stands out from the memory's typical match, in spreads (``standing``), and its
    # lead over the best rival with another fix (``margin``): what applicability reads.
    standing: float | None = None
    margin: float | None = None


@dataclass(frozen=True)
class Ranked:
    """One candidate incident with its evidence components, whether or not it passed the gate.

    ``score`` (fused) orders candidates; ``evidence``, ``standing`` and ``margin`` judge them
    (see :func:`standing`): they do not grow with the alert's length."""

    incident_id: str
    score: float
    cosine: float | None
    bm25: float | None
    coverage: float
    shared_terms: int
    distinct: float = 0.0
    evidence: float = 0.0
    standing: float | None = None
    margin: float | None = None
    seen: float | None = None
    rival: str | None = None


@dataclass(frozen=True)
class Recall:
    """What was searched, how, what came back above the floor, and why the rest did not."""

    query: str
    redacted: tuple[str, ...]
    query_terms: tuple[str, ...]
    mode: str
    floor: float
    incidents: tuple[RecalledIncident, ...]
    best_rejected: float = 0.0
    notices: tuple[str, ...] = field(default_factory=tuple)
    ranked: tuple[Ranked, ...] = field(default_factory=tuple)
    gate: str = ""
    # The calibration's applicability parameters, so the verdict reads them with the recall:
    # an incident is the same failure at standing ≥ ``strong`` with a ``margin`` over rivals.
    margin: float = 2.0
    strong: float = 5.0

    @property
    def actions(self) -> list[RecalledAction]:
        return [action for incident in self.incidents for action in incident.actions]


def action_text(incident: Incident, position: int) -> str:
    """The self-contained text of one action: readable alone, shown and cited as a whole."""
    action = incident.actions[position]
    kind = f" ({action.kind})" if action.kind else ""
    suspected = " [explanation suspected, not confirmed]" if action.confirmed is False else ""
    return (
        f"{incident.id} · {incident.service} · {incident.title or 'untitled'}\n"
        f"Symptoms: {incident.symptoms}\n"
        f"Action {incident.action_ref(action)}{kind}: {action.action} → {action.outcome.value}\n"
        f"Why: {action.explanation}{suspected}"
    )


def rank(candidates: list[Candidate], query_terms: list[str], calibration: Calibration,
         frequencies: dict[str, int], documents: int) -> list[Ranked]:
    """Score every candidate with the calibration's fusion, best first (ties: by id)."""
    needed = min(calibration.min_shared_terms, len(query_terms))
    ranked = []
    for candidate in candidates:
        shared = len(candidate.terms.intersection(query_terms))
        share = coverage(query_terms, candidate.terms, frequencies, documents)
        if calibration.embedder is None and shared < needed:
            share = 0.0  # one rare shared word is a coincidence, not a match
        ranked.append(Ranked(candidate.incident_id,
                             calibration.fuse(candidate.cosine, candidate.bm25, share),
                             candidate.cosine, candidate.bm25, share, shared))
    ranked.sort(key=lambda r: (-r.score, r.incident_id))
    return ranked


def _same_failure(left: Candidate, right: Candidate) -> bool:
    """Recurrences of one failure: declared ``related`` (either way) or resolved or mitigated
    by the same fix. They do not compete with each other."""
    if right.incident_id in left.incident.related or left.incident_id in right.incident.related:
        return True
    return any(same_fix_words(a, b) for a in left.fix_terms for b in right.fix_terms)


def _kin(left: Candidate, right: Candidate) -> bool:
    """The same failure as far as the memory tells: :func:`_same_failure`, or what resolved one
    was tried in the other without making it worse (it did nothing there, or only helped). A
    generic step that only mitigated (a restart, a rollback) ties nothing together; a fix that
    made the other worse says the two differ, so they compete."""
    return _same_failure(left, right) or any(
        same_fix_words(a, b) for one, other in ((left, right), (right, left))
        for a in one.resolving_terms for b in other.tried_terms)


def _components(ids: list[str], linked: Callable[[str, str], bool]) -> dict[str, int]:
    """Each id's connected component under ``linked`` (union–find; ids as given)."""
    parent = list(range(len(ids)))

    def root(n: int) -> int:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for left in range(len(ids)):
        for right in range(left + 1, len(ids)):
            if root(left) != root(right) and linked(ids[left], ids[right]):
                parent[root(right)] = root(left)
    return {incident_id: root(n) for n, incident_id in enumerate(ids)}


def standing(ranked: list[Ranked], candidates: dict[str, Candidate], calibration: Calibration,
             query_terms: list[str], frequencies: dict[str, int], documents: int
             ) -> list[Ranked]:
    """The best-ranked candidates with how far each stands out from its rivals.

    A rival is any other candidate that is not the same failure. The typical match is the mean
    evidence of the ``typical_k`` best rivals (a memory without any: what an unrelated text
    gets); ``standing`` is the candidate's evidence less that, in units of their
    spread; ``margin`` its lead over the best rival that some other fix resolved, in the same
    units. In a memory of one
    application every incident shares its service and alert names, so they stand out of
    nothing; adding unrelated incidents changes neither figure, as they are no near rival."""
    ids = [r.incident_id for r in ranked]
    # One failure is the connected set of the relation (A~B~C is one even when A and C share
    # nothing): declared recurrences, one fix, or one incident's fix tried in the other.
    kin = _components(ids, lambda a, b: _kin(candidates[a], candidates[b]))
    ranked = _with_evidence(ranked, kin, candidates, calibration, query_terms, frequencies,
                            documents)
    judged = []
    for mine in ranked:
        rivals = sorted(((r.evidence, r.incident_id) for r in ranked if r is not mine
                         and kin[r.incident_id] != kin[mine.incident_id]), reverse=True)
        k = calibration.typical_k
        nearest = [e for e, _ in rivals[:k + 1]]
        # The margin is over a rival failure that some fix resolved: one that never resolved
        # (only mitigated, or nothing worked) is part of the typical match, not an alternative.
        contenders = sorted((r.evidence, r.incident_id) for r in ranked if r is not mine
                            and candidates[r.incident_id].resolved
                            and kin[r.incident_id] != kin[mine.incident_id])
        contender = contenders[-1] if contenders else None
        judged.append(dataclasses.replace(
            mine, standing=_spreads(mine.evidence, nearest[:k], calibration),
            margin=_spreads(mine.evidence, nearest[:k], calibration,
                            contender[0] if contender else calibration.unrelated),
            # Seen before: against what comes after its nearest look-alike (a sibling fault
            # with another fix is no sign that nothing like it was seen).
            seen=_spreads(mine.evidence, nearest[1:] if len(nearest) > 1 else nearest,
                          calibration),
            rival=contender[1] if contender else None))
    return judged


def _with_evidence(ranked: list[Ranked], kin: dict[str, int], candidates: dict[str, Candidate],
                   calibration: Calibration, query_terms: list[str],
                   frequencies: dict[str, int], documents: int) -> list[Ranked]:
    """Each candidate's distinct coverage and evidence; terms are weighed against the failures
    nearest the alert (the ``typical_k`` best-ranked, a family counted once)."""
    failures: dict[int, set[str]] = {}
    for r in ranked[:calibration.typical_k]:
        failures.setdefault(kin[r.incident_id], set()).update(candidates[r.incident_id].terms)
    weights = distinct_weights(query_terms, frequencies, documents, list(failures.values()))
    needed = min(calibration.min_shared_terms, len(query_terms))
    judged = []
    for r in ranked:
        # Lexical only: one rare shared word is a coincidence, not a match.
        lone = calibration.embedder is None and r.shared_terms < needed
        distinct = 0.0 if lone else weighted_share(weights, candidates[r.incident_id].terms)
        judged.append(dataclasses.replace(r, distinct=distinct,
                                          evidence=calibration.evidence(r.cosine, distinct)))
    return judged


def _spreads(evidence: float, nearest: list[float], calibration: Calibration,
             against: float | None = None) -> float:
    """``evidence`` over ``against`` (default: the mean of ``nearest``) in spreads of
    ``nearest``."""
    # A memory with no rival at all is compared with what an unrelated text gets.
    nearest = nearest or [calibration.unrelated]
    spread = max(statistics.pstdev(nearest), calibration.spread_min)
    base = statistics.fmean(nearest) if against is None else against
    return round((evidence - base) / spread, 3)


def gate(ranked: list[Ranked], calibration: Calibration,
         candidates: dict[str, Candidate] | None = None) -> list[Ranked]:
    """The candidates that count as "seen before": each stands out from the memory's typical
    match, explains enough of the alert and keeps up with the best such one (``relative`` of
    its evidence) — never the nearest junk as padding — and the
    recurrences of what is kept stay with it, however closely one of them matched (a
    postmortem saved from this very alert joins its family; it never hides it). Best first,
    at most ``max_incidents``."""
    seen = [r for r in ranked[:calibration.max_incidents] if _seen(r, calibration)]
    bar = max((r.evidence for r in seen), default=0.0) * calibration.relative
    kept = [r for r in seen if r.evidence >= bar]
    # The look-alike with another fix that a kept one must beat is shown beside it: it is why
    # the kept one may not prove its fix.
    rivals = {k.rival for k in kept}
    kept += [r for r in ranked if r not in kept and r.incident_id in rivals and r.evidence >= bar]
    if kept and candidates is not None:
        kept += [r for r in ranked if r not in kept and r.evidence >= calibration.evidence_floor
                 and any(_kin(candidates[k.incident_id], candidates[r.incident_id])
                         for k in kept)]
    return sorted(kept, key=ranked.index)[:calibration.max_incidents]


def _seen(r: Ranked, calibration: Calibration) -> bool:
    """Stands out from the memory's typical match, or describes the alert so well that
    look-alikes beside it make it ambiguous, never unseen."""
    if r.evidence >= calibration.described:
        return True
    return (r.seen is not None and r.seen >= calibration.standing_floor
            and r.evidence >= calibration.evidence_floor)


def recall(index: MemoryIndex, alert_text: str, hidden: set[str] | frozenset[str] = frozenset(),
           ) -> Recall:
    """Find the incidents that resemble ``alert_text``; nothing reaching the floor → none.

    ``hidden`` incidents are treated as if they were not in memory (a replay of a past incident
    must not find itself); their terms leave the document frequencies too.
    """
    redaction = redact(alert_text)
    # The markers are ours, not the alert's: they must not dilute the relevance gate.
    searchable = REDACTION_MARKER.sub(" ", redaction.text)
    query_terms = terms(searchable)
    notices: list[str] = []
    vector = None
    if index.has_vectors and index.embedder is not None and searchable.strip():
        try:
            vector = index.embedder.embed([searchable])[0]
        except EmbedderUnavailable as exc:
            notices.append(f"vector search skipped, recall is lexical only: {exc}")
        held = index.meta.vector_dim if index.meta else None
        if vector is not None and held and len(vector) != held:
            if index.cache is not None and index.embedder_id:
                index.cache.forget_other_dimensions(index.embedder_id, len(vector))
            notices.append(f"vector search skipped, recall is lexical only: the embedding model "
                           f"{index.embedder_id} now answers {len(vector)} dimensions but the "
                           f"index holds {held} — run `triage index --rebuild`")
            vector = None
    calibration = index.calibration
    if vector is None and calibration.embedder is not None:
        calibration = default_calibration(None)
    found = index.search(searchable, vector, CANDIDATES + len(hidden))
    candidates = {c.incident_id: c for c in found if c.incident_id not in hidden}
    frequencies = dict(index.meta.document_frequency) if index.meta else {}
    documents = index.meta.incidents if index.meta else 0
    for candidate in found:
        if candidate.incident_id in hidden:
            documents -= 1
            for term in candidate.terms:
                frequencies[term] = frequencies.get(term, 1) - 1
    ranked = standing(rank(list(candidates.values()), query_terms, calibration, frequencies,
                           documents), candidates, calibration, query_terms, frequencies,
                      documents)
    kept = gate(ranked, calibration, candidates)
    kept_ids = {r.incident_id for r in kept}
    # On the gate's own scale: how far the best candidate left out stood out (spreads).
    best_rejected = next((r.seen or 0.0 for r in ranked if r.incident_id not in kept_ids), 0.0)
    incidents = tuple(_recalled(candidates[r.incident_id], r, hidden) for r in kept)
    notices.extend(index.repairs)
    index.repairs.clear()
    mode = "hybrid" if vector is not None else "lexical"
    return Recall(redaction.text, redaction.found, tuple(query_terms), mode,
                  calibration.standing_floor, incidents, round(best_rejected, 3), tuple(notices),
                  tuple(ranked), _gate_reason(ranked, kept, calibration), calibration.margin,
                  calibration.strong)


def _gate_reason(ranked: list[Ranked], kept: list[Ranked], calibration: Calibration) -> str:
    if not ranked:
        return "nothing in memory shares a word or a meaning with this alert"
    best = ranked[0]
    # No incident id here: an id the briefing shows must be one it recalled (and cites).
    parts = [f"best match: fused {best.score:.2f}"]
    if best.cosine is not None:
        parts.append(f"cosine {best.cosine:.2f}")
    if best.bm25 is not None:
        parts.append(f"BM25 {best.bm25:.1f}")
    parts.append(f"term coverage {best.coverage:.2f}")
    parts.append(f"evidence {best.evidence:.2f}")
    if best.seen is not None:
        parts.append(f"stands out {best.seen:.1f} spreads")
    verdict = "passes" if kept else "below"
    return f"{', '.join(parts)} — {verdict} the floor ({calibration.describe()})"


def _recalled(candidate: Candidate, ranked: Ranked,
              hidden: set[str] | frozenset[str] = frozenset()) -> RecalledIncident:
    """One kept candidate as recalled; its ``related`` ids less the hidden ones (an incident
    out of the memory — a replay's own, or one not yet known on the replayed day — is not a
    known recurrence)."""
    incident = candidate.incident
    score = round(ranked.score, 3)
    actions = tuple(
        RecalledAction(
            incident_id=incident.id, action_id=incident.action_ref(action),
            local_action_id=action.id, position=position, service=incident.service,
            outcome=action.outcome, kind=action.kind or "",
            confirmed=action.confirmed is not False, title=incident.title or "",
            symptoms=incident.symptoms, root_cause=incident.root_cause or "",
            action=action.action, explanation=action.explanation,
            started_at=incident.started_at.isoformat() if incident.started_at else "",
            text=action_text(incident, position), score=score)
        for position, action in enumerate(incident.actions))
    return RecalledIncident(incident.id, incident.service, incident.title or "", score, actions,
                            symptoms=incident.symptoms, document=incident_document(incident),
                            cosine=_round(ranked.cosine), bm25=_round(ranked.bm25),
                            coverage=round(ranked.coverage, 3),
                            related=tuple(i for i in incident.related if i not in hidden),
                            started_at=(incident.started_at.isoformat()
                                        if incident.started_at else ""),
                            root_cause=incident.root_cause or "",
                            runbook=incident.runbook or "",
                            standing=ranked.standing, margin=ranked.margin)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
