"""``triage drill``: replay past incidents as new alerts, each hidden from the memory it meets.

Each replay is the alert the incident would have raised (evaluate.replay_alert: service, title,
symptoms), recalled from ONE index of the whole memory with that incident — and game-day
drills, unless included — passed as ``hidden`` (store/recall.py removes hidden incidents from
the candidates *and* from the document frequencies, so nothing is rebuilt per replay). The
briefing judged is the deterministic one the console shows without a model (quarantined
records removed), so the figures are those of the rule, not of a model's prose.

Per replay: the state and confidence tier shown; the rank of the incidents it names as
``related``; whether the lead recommendation's cited action is what RESOLVED the hidden
incident — rule ``kind`` when both carry a kind (same kind = right), else rule ``cosine``
(embedding cosine of the two action texts ≥ SAME_FIX_COSINE); whether a warning cited a
recalled WORSENED action of a kind the hidden incident also saw go WORSENED. Only replays
whose hidden incident has a RESOLVED action and that did not abstain count toward "right";
abstentions have their own row.

``triage drill --json`` (one id or ``--all``) prints one object, stable:

    {"memory": {"incidents": 38, "source_hash": "16 hex", "embedder": "all-MiniLM-L6-v2",
                "include_drills": false, "skipped_drills": 0},
     "same_fix_cosine": 0.54,             # the calibrated threshold of the cosine rule
     "wall_seconds": 4.2,
     "summary": {                         # over the replays below (meaningful for --all)
        "replays": 38,
        "with_related": 12,               # replays naming a related incident in memory
        "hit_at_1": 0.75, "hit_at_5": 0.92, "mrr": 0.81,   # over with_related; abstained = miss
        "tiers": [{"tier": "0|1|2|3+", "replays": 10,      # landed there (abstentions excluded)
                   "counted": 8,          # of those, hidden incident had a RESOLVED action
                   "right": 5,            # lead recommendation right (no lead = not right)
                   "no_lead": 2,          # counted replays with no recommendation at all
                   "rate": 0.625, "ci_low": 0.306, "ci_high": 0.863}],  # 95% Wilson; null if 0
        "abstained": {"replays": 3, "related_in_memory": 1},   # abstained although a related
                                                               # incident was in memory
        "rules": {"kind": 20, "cosine": 3},  # which rule decided the counted leads
        "warned": {"replays": 9, "right": 4}},  # hidden saw a kind go WORSENED / a warning
                                                # cited a recalled WORSENED action of that kind
     "replays": [{
        "incident_id": "INC-2041", "service": "…", "title": "…", "drill": false,
        "alert": "the replayed alert text",
        "state": "proven | unproven | no_prior_incident", "tier": "0|1|2|3+", "confidence": 55,
        "recalled_incident_ids": ["…"],   # above the floor, best first (never the hidden one)
        "ranked_incident_ids": ["…"],     # best 10 candidates, gated or not
        "cited_incident_ids": ["…"],      # in recommendations and warnings
        "related": ["…"], "rank": 1,      # 1-based rank of the first related id; null if
                                          # not ranked or the replay abstained
        "related_in_memory": true,
        "has_resolved": true,             # the hidden incident has a RESOLVED action
        "lead": {"action_id": "INC-1/A2", "action": "…", "kind": "rollback",
                 "right": true, "rule": "kind | cosine | null", "matched_action_id": "…",
                 "cosine": null} | null,
        "lead_right": true | false | null,  # null: not counted (abstained / no RESOLVED action
                                            # / no embedder to judge texts without kinds)
        "warnings": ["INC-1/A1"],
        "warned_right": true | false | null,  # null: hidden saw no kind go WORSENED
        "warned_matches": [{"action_id": "INC-1/A1", "kind": "restart",
                            "hidden_action_id": "INC-2041/A1"}]}]}

``--all`` caches this report (``DATA/drill.json``) with the memory's content hash and the
embedder id: ``track_record(settings, memory)`` gives each tier's record and whether the
memory (or embedder, or the drills setting) changed since.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from console.engine.briefing.applicability import read_service
from console.engine.briefing.deterministic import deterministic_briefing
from console.engine.briefing.models import Briefing, Match, State
from console.engine.config import Settings
from console.engine.pipeline import quarantine, without
from console.engine.practice.evaluate import replay_alert
from store.embedder import Embedder, embed_cached, normalised
from store.index import MemoryIndex
from store.loader import LoadedMemory
from store.models import ActionOutcome, Incident
from store.recall import Recall, RecalledAction, recall

# Two action texts are "the same fix" at this MiniLM cosine or above — used only when a kind is
# missing on either side. bench/drill_calibrate.py, fitted for precision ≥ 0.9 (a cosine
# "right" must not inflate a track record) on the 3,109 cross-incident pairs of the bundled
# memory's 80 kinded fix actions (self-written), positive = same kind: folds chose 0.51–0.55,
# all pairs 0.54; 5-fold CV precision 0.92, recall 0.05 (22 of 431 same-kind pairs: a kind such
# as "config" spans many different fixes, so only near-rewordings pass). On third-party text
# (71 danluu/post-mortems summaries, same section = positive, a coarse transfer check) 0.54
# gives precision 0.74, recall 0.03. On the 32 lead/fix pairs the bundled drill judged by kind,
# this rule agrees on 22: where kinds are missing, expect "right" to be undercounted.
SAME_FIX_COSINE = 0.54

TIERS: tuple[Literal["0", "1", "2", "3+"], ...] = ("0", "1", "2", "3+")
Tier = Literal["0", "1", "2", "3+"]
Z_95 = 1.959963984540054
RANKED_SHOWN = 10
DRILL_FILE_VERSION = 1


class UnknownIncident(ValueError):
    """``triage drill ID`` named an incident that is not in memory."""


def wilson(right: int, n: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval for ``right`` successes of ``n`` (None when n is 0)."""
    if n <= 0:
        return None
    p = right / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


class LeadCheck(BaseModel):
    action_id: str
    action: str
    kind: str
    right: bool | None
    rule: Literal["kind", "cosine"] | None
    matched_action_id: str | None = None
    cosine: float | None = None


class WarnedMatch(BaseModel):
    action_id: str
    kind: str
    hidden_action_id: str


class Replay(BaseModel):
    incident_id: str
    service: str
    title: str
    drill: bool
    alert: str
    state: State
    tier: Tier
    confidence: int
    recalled_incident_ids: list[str]
    ranked_incident_ids: list[str]
    cited_incident_ids: list[str]
    related: list[str]
    rank: int | None
    related_in_memory: bool
    has_resolved: bool
    lead: LeadCheck | None
    lead_right: bool | None
    warnings: list[str]
    warned_right: bool | None
    warned_matches: list[WarnedMatch] = Field(default_factory=list)
    lead_match: Match | None = None


class TierRow(BaseModel):
    tier: Tier
    replays: int
    counted: int
    right: int
    no_lead: int
    rate: float | None
    ci_low: float | None
    ci_high: float | None

    def line(self) -> str:
        """"tier 3+: lead fix right 11 of 12 replays, 95% CI 65–99%" (the console's words)."""
        if not self.counted:
            return f"tier {self.tier}: no replay with a known fix landed here"
        assert self.ci_low is not None and self.ci_high is not None
        return (f"tier {self.tier}: lead fix right {self.right} of {self.counted} replays, "
                f"95% CI {round(100 * self.ci_low)}–{round(100 * self.ci_high)}%")


class ClassRow(BaseModel):
    """Replays grouped by a state or by the lead's match class: how often the lead was right."""

    name: str
    replays: int
    counted: int
    right: int
    rate: float | None


class AbstainedRow(BaseModel):
    replays: int
    related_in_memory: int


class WarnedRow(BaseModel):
    replays: int
    right: int


class ReplaySummary(BaseModel):
    replays: int
    with_related: int
    hit_at_1: float
    hit_at_5: float
    mrr: float
    tiers: list[TierRow]
    abstained: AbstainedRow
    rules: dict[str, int]
    warned: WarnedRow
    by_state: list[ClassRow] = Field(default_factory=list)
    by_match: list[ClassRow] = Field(default_factory=list)


class ReplayReport(BaseModel):
    memory: dict[str, str | int | bool]
    same_fix_cosine: float
    wall_seconds: float
    summary: ReplaySummary
    replays: list[Replay]


class Judge:
    """Decides whether two actions are the same fix: by kind, else by embedding cosine.

    Action texts are embedded through the index's embedding cache, once each."""

    def __init__(self, embedder: Embedder | None, index: MemoryIndex | None = None,
                 threshold: float = SAME_FIX_COSINE) -> None:
        self.embedder = embedder
        self.cache = index.cache if index is not None else None
        self.threshold = threshold
        self._vectors: dict[str, np.ndarray] = {}

    def cosine(self, left: str, right: str) -> float | None:
        if self.embedder is None:
            return None
        missing = [t for t in (left, right) if t not in self._vectors]
        if missing:
            vectors = normalised(embed_cached(self.embedder, missing, self.cache))
            self._vectors.update(zip(missing, vectors, strict=True))
        return float(np.dot(self._vectors[left], self._vectors[right]))

    def lead(self, lead: RecalledAction | None, resolved: list[tuple[Incident, int]]
             ) -> LeadCheck | None:
        """The lead's check against the hidden incident's RESOLVED actions (by position)."""
        if lead is None:
            return None
        check = LeadCheck(action_id=lead.action_id, action=lead.action, kind=lead.kind,
                          right=None, rule=None)
        if not resolved:
            return check
        kinds = {_kind(i.actions[n].kind): i.action_ref(i.actions[n]) for i, n in resolved
                 if _kind(i.actions[n].kind)}
        if _kind(lead.kind) and kinds:
            matched = kinds.get(_kind(lead.kind))
            return check.model_copy(update={"right": matched is not None, "rule": "kind",
                                            "matched_action_id": matched})
        scored = [(self.cosine(lead.action, i.actions[n].action), i.action_ref(i.actions[n]))
                  for i, n in resolved]
        known = [(c, ref) for c, ref in scored if c is not None]
        if not known:
            return check  # no embedder: texts without kinds cannot be judged
        best, ref = max(known)
        right = best >= self.threshold
        return check.model_copy(update={"right": right, "rule": "cosine",
                                        "matched_action_id": ref if right else None,
                                        "cosine": round(best, 4)})


def _kind(kind: str | None) -> str:
    return (kind or "").strip().lower()


def replay(index: MemoryIndex, memory: LoadedMemory, incident: Incident, judge: Judge,
           hidden: frozenset[str] = frozenset()) -> Replay:
    """One incident replayed as an alert with itself (and ``hidden``) out of the memory."""
    alert, found, usable, briefing = _replayed(index, memory, incident, hidden)
    ranked = [r.incident_id for r in found.ranked]
    present = {i.id for i in memory.incidents} - hidden - {incident.id}
    related = [r for r in incident.related if r in present]
    abstained = briefing.state == "no_prior_incident"
    rank = next((n for n, i in enumerate(ranked, 1) if i in related), None)
    by_ref = {a.action_id: a for a in usable.actions}
    lead_action = None
    if briefing.recommendations and briefing.recommendations[0].evidence:
        lead_action = by_ref.get(briefing.recommendations[0].evidence[0].action_id)
    resolved = [(incident, n) for n, a in enumerate(incident.actions)
                if a.outcome is ActionOutcome.RESOLVED]
    lead = None if abstained else judge.lead(lead_action, resolved)
    if abstained or not resolved:
        lead_right = None
    elif lead is None:
        lead_right = False  # a known fix existed and the console offered none
    else:
        lead_right = lead.right
    worsened = {_kind(a.kind): incident.action_ref(a) for a in incident.actions
                if a.outcome is ActionOutcome.WORSENED and _kind(a.kind)}
    matches = [WarnedMatch(action_id=w.action_id, kind=by_ref[w.action_id].kind,
                           hidden_action_id=worsened[_kind(by_ref[w.action_id].kind)])
               for w in briefing.warnings
               if w.action_id in by_ref and _kind(by_ref[w.action_id].kind) in worsened]
    cited = [e.incident_id for r in briefing.recommendations for e in r.evidence]
    cited += [w.incident_id for w in briefing.warnings]
    return Replay(
        incident_id=incident.id, service=incident.service, title=incident.title or "",
        drill=incident.drill, alert=alert, state=briefing.state,
        tier=briefing.confidence.tier, confidence=briefing.confidence.value,
        recalled_incident_ids=[i.incident_id for i in usable.incidents],
        ranked_incident_ids=ranked[:RANKED_SHOWN], cited_incident_ids=list(dict.fromkeys(cited)),
        related=related, rank=None if abstained else rank, related_in_memory=bool(related),
        has_resolved=bool(resolved), lead=lead, lead_right=lead_right,
        warnings=[w.action_id for w in briefing.warnings],
        warned_right=(bool(matches) if worsened else None), warned_matches=matches,
        lead_match=(briefing.recommendations[0].applies if briefing.recommendations
                    and not abstained else None))


def replay_briefing(index: MemoryIndex, memory: LoadedMemory, incident: Incident,
                    hidden: frozenset[str] = frozenset()) -> Briefing:
    """The briefing the console would have shown for ``incident``'s replay (as :func:`replay`
    judges it): deterministic, with the incident (and ``hidden``) out of the memory."""
    return _replayed(index, memory, incident, hidden)[3]


def _replayed(index: MemoryIndex, memory: LoadedMemory, incident: Incident,
              hidden: frozenset[str]) -> tuple[str, Recall, Recall, Briefing]:
    """The replayed alert, its recall, that recall less quarantined actions, its briefing."""
    alert = replay_alert(incident)
    out = hidden | {incident.id}
    found = recall(index, alert, hidden=out)
    usable = without(found, quarantine(found))
    # The services the memory knows without the replayed incident: a service only it had is
    # new to the replay, as it was when the incident happened.
    services = {i.service for i in memory.incidents if i.id not in out}
    service = read_service(alert, None, services)
    return alert, found, usable, deterministic_briefing(usable, len(memory.incidents), None,
                                                        service=service)


def run_replays(index: MemoryIndex, memory: LoadedMemory, settings: Settings,
              incident_ids: list[str] | None = None, judge: Judge | None = None,
              progress: Callable[[int, int], None] | None = None) -> ReplayReport:
    """Replay ``incident_ids`` (default: every incident, drills only if included) on one index.

    Raises UnknownIncident for an id that is not in memory."""
    started = time.monotonic()
    by_id = {i.id: i for i in memory.incidents}
    drills = settings.hidden_drills(memory.drill_ids)
    if incident_ids is None:
        chosen = [i for i in memory.incidents if i.id not in drills]
    else:
        unknown = [i for i in incident_ids if i not in by_id]
        if unknown:
            raise UnknownIncident(", ".join(unknown))
        chosen = [by_id[i] for i in incident_ids]
    judge = judge or Judge(index.embedder, index)
    replays: list[Replay] = []
    for done, incident in enumerate(chosen):
        if progress is not None:
            progress(done, len(chosen))
        replays.append(replay(index, memory, incident, judge, drills))
    if progress is not None:
        progress(len(chosen), len(chosen))
    return ReplayReport(
        memory={"incidents": len(memory.incidents), "source_hash": memory.source_hash[:16],
                "embedder": index.embedder_id or "none (lexical)",
                "include_drills": settings.include_drills,
                "skipped_drills": len(drills) if incident_ids is None else 0},
        same_fix_cosine=judge.threshold, wall_seconds=round(time.monotonic() - started, 2),
        summary=summarise(replays), replays=replays)


def summarise(replays: list[Replay]) -> ReplaySummary:
    """hit@k / MRR over replays with a related incident; the calibration table per tier."""
    with_related = [r for r in replays if r.related]
    ranks = [r.rank for r in with_related]

    def share(part: float, whole: int) -> float:
        return round(part / whole, 4) if whole else 0.0

    tiers = []
    shown = [r for r in replays if r.state != "no_prior_incident"]
    for tier in TIERS:
        landed = [r for r in shown if r.tier == tier]
        counted = [r for r in landed if r.lead_right is not None]
        right = sum(1 for r in counted if r.lead_right)
        interval = wilson(right, len(counted))
        tiers.append(TierRow(
            tier=tier, replays=len(landed), counted=len(counted), right=right,
            no_lead=sum(1 for r in counted if r.lead is None),
            rate=share(right, len(counted)) if counted else None,
            ci_low=round(interval[0], 4) if interval else None,
            ci_high=round(interval[1], 4) if interval else None))
    abstained = [r for r in replays if r.state == "no_prior_incident"]
    rules: dict[str, int] = {"kind": 0, "cosine": 0}
    for r in replays:
        if r.lead_right is not None and r.lead is not None and r.lead.rule:
            rules[r.lead.rule] += 1
    warned = [r for r in replays if r.warned_right is not None]

    def row(name: str, group: list[Replay]) -> ClassRow:
        counted = [r for r in group if r.lead_right is not None]
        right = sum(1 for r in counted if r.lead_right)
        return ClassRow(name=name, replays=len(group), counted=len(counted), right=right,
                        rate=share(right, len(counted)) if counted else None)

    by_state = [row(state, [r for r in replays if r.state == state])
                for state in ("proven", "unproven", "no_prior_incident")]
    by_match = [row(match, [r for r in shown if r.lead_match == match])
                for match in ("strong", "elsewhere", "weak")]
    return ReplaySummary(
        replays=len(replays), with_related=len(with_related),
        hit_at_1=share(sum(1 for k in ranks if k == 1), len(with_related)),
        hit_at_5=share(sum(1 for k in ranks if k is not None and k <= 5), len(with_related)),
        mrr=share(sum(1 / k for k in ranks if k), len(with_related)),
        tiers=tiers,
        abstained=AbstainedRow(replays=len(abstained),
                               related_in_memory=sum(1 for r in abstained if r.related)),
        rules=rules, warned=WarnedRow(replays=len(warned),
                                      right=sum(1 for r in warned if r.warned_right)),
        by_state=by_state, by_match=by_match)


# --- the cached track record ---------------------------------------------------------------

class ReplayFile(BaseModel):
    """What ``DATA/drill.json`` holds: the last ``--all`` report and what it was run on."""

    version: int = DRILL_FILE_VERSION
    source_hash: str
    embedder: str | None
    include_drills: bool
    run_at: str
    report: ReplayReport


class TrackRecord(BaseModel):
    """Each tier's record from the last ``triage drill --all``, and whether it still applies."""

    tiers: dict[str, TierRow]
    run_at: str
    replays: int
    stale: bool
    why: str = ""

    def line(self, tier: str) -> str:
        """The tier's record as the confidence panel says it, with staleness if any."""
        row = self.tiers.get(tier)
        text = row.line() if row is not None else f"tier {tier}: no drill record"
        return f"{text} (memory changed since the drill: {self.why})" if self.stale else text


def save_replays(settings: Settings, memory: LoadedMemory, report: ReplayReport,
                      embedder_id: str | None) -> Path:
    """Write the ``--all`` report beside the index (atomically: write, then rename)."""
    path = settings.replay_path
    path.parent.mkdir(parents=True, exist_ok=True)
    record = ReplayFile(source_hash=memory.source_hash, embedder=embedder_id,
                       include_drills=settings.include_drills,
                       run_at=datetime.now(UTC).isoformat(timespec="seconds"), report=report)
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(record.model_dump_json(), encoding="utf-8")
    temporary.replace(path)
    return path


def read_saved(settings: Settings) -> ReplayFile | None:
    """The last `replay all` saved in the data dir (None when none was run, or unreadable)."""
    try:
        return ReplayFile.model_validate_json(settings.replay_path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def record_of(saved: ReplayFile, settings: Settings, memory: LoadedMemory | None,
              embedder_id: str | None = None) -> TrackRecord:
    """The saved replays' per-tier record, ``stale`` (with ``why``) when the memory's content
    (None: the incidents file cannot be read), the embedder (if given) or the drills setting
    differ from what the replays ran on."""
    reasons = []
    if memory is None:
        reasons.append("the incidents file cannot be read")
    elif memory.source_hash != saved.source_hash:
        reasons.append("the incidents changed")
    if embedder_id is not None and embedder_id != saved.embedder:
        reasons.append(f"embedder {saved.embedder} → {embedder_id}")
    if settings.include_drills != saved.include_drills:
        reasons.append("drills were " + ("included" if saved.include_drills else "excluded"))
    summary = saved.report.summary
    return TrackRecord(tiers={row.tier: row for row in summary.tiers}, run_at=saved.run_at,
                       replays=summary.replays, stale=bool(reasons), why="; ".join(reasons))


def track_record(settings: Settings, memory: LoadedMemory | None,
                 embedder_id: str | None = None) -> TrackRecord | None:
    """:func:`record_of` the saved replays; None when none were saved (or they are unreadable)."""
    saved = read_saved(settings)
    return None if saved is None else record_of(saved, settings, memory, embedder_id)


def as_json(report: ReplayReport) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False)
