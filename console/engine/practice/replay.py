"""``triage drill``: replay past incidents as new alerts, each hidden from the memory it meets.

Each replay is the alert the incident would have raised (evaluate.replay_alert: service, title,
symptoms), recalled from ONE index of the whole memory with that incident — and game-day
drills, unless included — passed as ``hidden`` (store/recall.py removes hidden incidents from
the candidates *and* from the document frequencies, so nothing is rebuilt per replay). The
briefing judged is the deterministic one the console shows without a model (quarantined
records removed), so the figures are those of the rule, not of a model's prose.

Time-ordered by default (history.py): a replay meets the memory as it was the day the incident
started — incidents that started before it (a tie is not before), their ``related`` lists less
the ids not yet known, judged on that day (``now`` = its ``started_at``). Undated incidents are
known from the start; an undated incident is replayed against the other undated ones
(``undated_rule``). Leave-one-out (``--leave-one-out``) meets today's memory less the incident,
judged on the settings' clock. ``--all`` time-ordered also replays every incident
leave-one-out on the same index: ``summary_leave_one_out``, so the difference shows.

Per replay: the state and confidence tier shown; the rank of the incidents it names as
``related``; whether the lead recommendation's cited action is what RESOLVED the hidden
incident — rule ``kind`` when both carry a kind (same kind = right), else rule ``cosine``
(embedding cosine of the two action texts ≥ SAME_FIX_COSINE); whether a warning cited a
recalled WORSENED action of a kind the hidden incident also saw go WORSENED. Only replays
whose hidden incident has a RESOLVED action and that did not abstain count toward "right";
abstentions have their own row.

``triage drill --json`` (one id or ``--all``) prints one object, stable:

    {"memory": {"incidents": 38, "source_hash": "16 hex", "embedder": "all-MiniLM-L6-v2",
                "include_drills": false, "skipped_drills": 0,
                "undated": 0},            # = "undated" below
     "mode": "time-ordered | leave-one-out",  # what the replays below met
     "undated": 0,                        # incidents without started_at (drills hidden: not
                                          # counted), known from the start
     "undated_rule": "…",                 # how an undated incident is replayed, in words
     "same_fix_cosine": 0.54,             # the calibrated threshold of the cosine rule
     "wall_seconds": 4.2,                 # both passes, for a time-ordered --all
     "summary_leave_one_out": {…} | null, # as "summary", every incident replayed leave-one-out
                                          # on the same index; filled for a time-ordered --all
                                          # (null otherwise; with no dated incident it equals
                                          # "summary": the same replays)
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
                            "hidden_action_id": "INC-2041/A1"}],
        "lead_match": "strong | elsewhere | weak" | null,
        "started_at": "2025-01-27T15:12:00+00:00" | null,   # the replayed incident's (UTC)
        "known_incidents": 12}]}          # incidents in the memory this replay met

``--all`` caches this report (``DATA/drill.json``, version DRILL_FILE_VERSION; time-ordered
only — ``--all --leave-one-out`` is printed, not saved) with the memory's content hash and the
embedder id: ``track_record(settings, memory)`` gives each tier's record (time-ordered
``summary``) and whether the memory (or embedder, or the drills setting) changed since. A file
of an older version reads as no record: run ``triage drill --all`` again.
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
from console.engine.practice.history import (
    LEAVE_ONE_OUT,
    TIME_ORDERED,
    UNDATED_RULE,
    History,
    Mode,
    instant,
)
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
# 2: replays are time-ordered (issue 20); a version-1 file (leave-one-out figures) is no record.
DRILL_FILE_VERSION = 2


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
    started_at: str | None = None  # the replayed incident's start (UTC); null: undated
    known_incidents: int = 0       # incidents in the memory this replay met


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
    mode: Mode = TIME_ORDERED
    # The same replays leave-one-out, on the same index: filled for a time-ordered --all.
    summary_leave_one_out: ReplaySummary | None = None
    undated: int = 0               # incidents without started_at: known from the start
    undated_rule: str = UNDATED_RULE


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
           hidden: frozenset[str] = frozenset(), now: datetime | None = None) -> Replay:
    """One incident replayed as an alert with itself (and ``hidden``) out of the memory, judged
    as of ``now`` (None: the wall clock). :func:`run_replays` gives each replay its
    ``hidden`` and ``now`` from history.History.as_of (time-ordered or leave-one-out)."""
    out = hidden | {incident.id}
    alert, found, usable, briefing = _replayed(index, memory, incident, out, now)
    ranked = [r.incident_id for r in found.ranked]
    present = {i.id for i in memory.incidents} - out
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
                    and not abstained else None),
        started_at=(instant(incident.started_at).isoformat()  # type: ignore[union-attr]
                    if incident.started_at is not None else None),
        known_incidents=len(present))


def replay_briefing(index: MemoryIndex, memory: LoadedMemory, incident: Incident,
                    hidden: frozenset[str] = frozenset(), mode: Mode = TIME_ORDERED,
                    now: datetime | None = None) -> Briefing:
    """The briefing the console would have shown for ``incident``'s replay in ``mode`` (as
    :func:`run_replays` judges it): deterministic, with the incident, ``hidden`` (the hidden
    drills) and — time-ordered — whatever was not yet known out of the memory, judged on the
    incident's start (``now``, the caller's clock, when it has none)."""
    as_of = History(memory.incidents, hidden).as_of(incident, mode)
    return _replayed(index, memory, incident, as_of.hidden, as_of.now or now)[3]


def _replayed(index: MemoryIndex, memory: LoadedMemory, incident: Incident,
              out: frozenset[str], now: datetime | None
              ) -> tuple[str, Recall, Recall, Briefing]:
    """The replayed alert, its recall, that recall less quarantined actions, its briefing;
    ``out`` (the incident itself among them) is not in the memory it meets."""
    alert = replay_alert(incident)
    out = out | {incident.id}
    found = recall(index, alert, hidden=out)
    usable = without(found, quarantine(found))
    # The services the memory knows without the replayed incident: a service only it had is
    # new to the replay, as it was when the incident happened.
    services = {i.service for i in memory.incidents if i.id not in out}
    service = read_service(alert, None, services)
    known = sum(1 for i in memory.incidents if i.id not in out)
    return alert, found, usable, deterministic_briefing(usable, known, None, service=service,
                                                        now=now)


def run_replays(index: MemoryIndex, memory: LoadedMemory, settings: Settings,
                incident_ids: list[str] | None = None, judge: Judge | None = None,
                progress: Callable[[int, int], None] | None = None, mode: Mode = TIME_ORDERED,
                compare: bool | None = None) -> ReplayReport:
    """Replay ``incident_ids`` (default: every incident, drills only if included) on one index,
    each against the memory of ``mode`` (history.py: time-ordered = as it was the day the
    incident started; leave-one-out = all of it less itself).

    ``compare`` (default: when every incident is replayed time-ordered) replays them all again
    leave-one-out on the same index for ``summary_leave_one_out`` — skipped, the figures being
    the same replays, when no incident is dated. Raises UnknownIncident for an id that is not
    in memory."""
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
    history = History(memory.incidents, drills)
    if compare is None:
        compare = incident_ids is None and mode == TIME_ORDERED
    passes: list[Mode] = [mode]
    if compare and mode != LEAVE_ONE_OUT and not history.same_in_both():
        passes.append(LEAVE_ONE_OUT)
    total = len(chosen) * len(passes)
    clock = settings.now()
    results: dict[Mode, list[Replay]] = {}
    done = 0
    for pass_mode in passes:
        results[pass_mode] = []
        for incident in chosen:
            if progress is not None:
                progress(done, total)
            as_of = history.as_of(incident, pass_mode)
            results[pass_mode].append(replay(index, memory, incident, judge, as_of.hidden,
                                             as_of.now or clock))
            done += 1
    if progress is not None:
        progress(total, total)
    replays = results[mode]
    summary = summarise(replays)
    leave_one_out = None
    if compare and mode != LEAVE_ONE_OUT:
        leave_one_out = (summarise(results[LEAVE_ONE_OUT]) if LEAVE_ONE_OUT in results
                         else summary)
    return ReplayReport(
        memory={"incidents": len(memory.incidents), "source_hash": memory.source_hash[:16],
                "embedder": index.embedder_id or "none (lexical)",
                "include_drills": settings.include_drills,
                "skipped_drills": len(drills) if incident_ids is None else 0,
                "undated": history.undated},
        same_fix_cosine=judge.threshold, wall_seconds=round(time.monotonic() - started, 2),
        summary=summary, replays=replays, mode=mode, summary_leave_one_out=leave_one_out,
        undated=history.undated)


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
    """What ``DATA/drill.json`` holds: the last time-ordered ``--all`` report and what it was run
    on. A file of another ``version`` (1: leave-one-out figures) is read as no record."""

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
    if report.mode != TIME_ORDERED:
        raise ValueError("the track record is time-ordered: a leave-one-out report is not saved")
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
    """The last `replay all` saved in the data dir (None when none was run, it is unreadable,
    or it was written by another version — `triage drill --all` writes it again)."""
    try:
        text = settings.replay_path.read_text(encoding="utf-8")
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("version") != DRILL_FILE_VERSION:
            return None
        saved = ReplayFile.model_validate(data)
    except (OSError, ValueError, ValidationError):
        return None
    return saved if saved.report.mode == TIME_ORDERED else None


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
