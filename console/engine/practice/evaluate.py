"""``triage eval``: how well recall finds past incidents for alerts whose answer is known.

Two sources of questions: a queries file (``{qid, alert, expect}``, README "Recall")
and ``--replay``, which turns each incident of the memory into an alert built from its title,
service and symptoms, with that incident hidden, expecting the incidents it names as
``related`` (or nothing). The index is built in its own directory keyed by the memory's
content hash, never over the team's index.

``--replay`` is time-ordered by default (history.py): each incident meets the memory as it was
the day it started — later incidents hidden too, ``expect`` = its related ids known then, the
alert's service read against the services known then, judged on its ``started_at`` — and the
report adds ``summary_leave_one_out``: the same queries replayed against today's memory less
each one (``expect`` = its related ids in memory, services of the whole memory, as before),
on the same index. ``--leave-one-out`` replays that way only (``summary_leave_one_out`` null).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from console.engine.briefing.applicability import read_service
from console.engine.briefing.models import Match, State
from console.engine.briefing.verdict import Verdict, verdict
from console.engine.config import Settings
from console.engine.pipeline import quarantine, without
from console.engine.practice.history import LEAVE_ONE_OUT, TIME_ORDERED, History, Mode
from store.embedder import Embedder, EmbeddingCache
from store.errors import TriageError
from store.index import MemoryIndex
from store.loader import YAML_LOADER, LoadedMemory
from store.models import Incident
from store.recall import Recall, recall


class EvalInputError(TriageError):
    """The queries file cannot be used; the message names the file and the problem."""


class EvalQuery(BaseModel):
    """One alert whose right answer is known; ``expect: []`` means nothing should match."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    qid: str = Field(min_length=1)
    alert: str = Field(min_length=1)
    expect: list[str] = Field(default_factory=list)
    kind: str | None = None


class QueryResult(BaseModel):
    """One query's answer. ``lead_incident_id`` is the incident the lead fix was chosen from
    (its first evidence): PROVEN precision counts it, never "any cited incident"."""

    qid: str
    kind: str | None = None
    state: State
    ranked_incident_ids: list[str]
    recalled_incident_ids: list[str]
    expect: list[str]
    rank: int | None
    gate: str = ""
    lead_incident_id: str | None = None
    lead_action_id: str | None = None
    lead_match: Match | None = None
    lead_applicability: float | None = None
    confidence: int = 0
    known_incidents: int | None = None  # --replay: incidents in the memory it met


class StateRow(BaseModel):
    """How often one state was right: PROVEN when its lead's incident is expected; "similar,
    no proven fix" when an expected incident was recalled; NO PRIOR INCIDENT when none exists."""

    n: int
    right: int
    rate: float | None


class PrecisionPoint(BaseModel):
    """PROVEN at one applicability bar: how many, how many led by a right incident, and the
    share of answerable alerts shown PROVEN (coverage)."""

    threshold: float
    proven: int
    right: int
    precision: float | None
    coverage: float


class BandRow(BaseModel):
    """Briefings whose shown confidence fell in one band, and how many of them had a right
    lead (an expected incident the lead fix came from)."""

    band: str
    n: int
    right: int


class Summary(BaseModel):
    n: int
    answerable: int
    hit_at_1: float
    hit_at_5: float
    mrr: float
    abstention_precision: float
    abstention_recall: float
    wrongly_abstained: float
    by_state: dict[str, StateRow] = Field(default_factory=dict)
    proven_precision: float | None = None
    proven_coverage: float = 0.0
    novel_proven_rate: float = 0.0
    precision_coverage: list[PrecisionPoint] = Field(default_factory=list)
    by_band: list[BandRow] = Field(default_factory=list)


class EvalReport(BaseModel):
    queries: list[QueryResult]
    summary: Summary
    by_kind: dict[str, Summary] = Field(default_factory=dict)
    memory: dict[str, str | int] = Field(default_factory=dict)
    # --replay: what the queries above met; null for a queries file.
    mode: Mode | None = None
    # --replay time-ordered: every incident replayed again leave-one-out, on the same index.
    summary_leave_one_out: Summary | None = None
    undated: int | None = None  # --replay: incidents without started_at, known from the start


def load_queries(path: Path) -> list[EvalQuery]:
    """The queries in ``path``, or EvalInputError saying exactly what is wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EvalInputError(f"cannot read {path}: {exc}") from None
    try:
        if any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(text, Loader=YAML_LOADER)):
            raise EvalInputError(f"{path}: YAML aliases (*name) are not accepted in a queries file")
        data = yaml.load(text, Loader=YAML_LOADER)  # noqa: S506 — a safe loader
    except yaml.YAMLError as exc:
        raise EvalInputError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, list):
        raise EvalInputError(f"{path}: expected a YAML list of {{qid, alert, expect}} items")
    queries: list[EvalQuery] = []
    for position, item in enumerate(data, 1):
        try:
            queries.append(EvalQuery.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "item"
            raise EvalInputError(f"{path}: item {position}: {where}: {first['msg']}") from None
    seen: set[str] = set()
    for query in queries:
        if query.qid in seen:
            raise EvalInputError(f"{path}: duplicate qid {query.qid!r}")
        seen.add(query.qid)
    return queries


def replay_alert(incident: Incident) -> str:
    """The alert a past incident would have raised: its service, title and symptoms (what was
    seen, never what was done). `triage eval --replay` and `triage drill` both use it."""
    return f"{incident.service}: {incident.title or ''}\n{incident.symptoms}"


def replay_queries(memory: LoadedMemory, mode: Mode = TIME_ORDERED,
                   hidden: frozenset[str] = frozenset()) -> list[EvalQuery]:
    """Each incident as the alert it would have raised, expecting its related incidents in
    the memory it meets in ``mode`` (time-ordered: those known the day it started; ``hidden``
    drills never)."""
    history = History(memory.incidents, hidden)
    return [EvalQuery(qid=incident.id, kind="replay", alert=replay_alert(incident),
                      expect=history.known_related(incident, history.as_of(incident, mode)))
            for incident in memory.incidents]


def eval_index(settings: Settings, memory: LoadedMemory, embedder: Embedder | None,
               progress: Callable[[int, int], None] | None = None) -> MemoryIndex:
    """An index of ``memory`` in its own directory keyed by content hash (reused when fresh)."""
    index = MemoryIndex(settings.eval_dir(memory.source_hash), embedder,
                        EmbeddingCache(settings.embedding_cache),
                        calibration_file=settings.calibration_path)
    index.open(memory, progress=progress)
    return index


def judge(found: Recall, memory: LoadedMemory, alert_text: str, now: datetime | None = None,
          services: Collection[str] | None = None) -> Verdict:
    """The verdict the console would show for this recall on ``now`` (None: the wall clock):
    quarantine applied, the alert's service read from its text against ``services`` (default:
    the memory's) — the pipeline's own steps, without a model."""
    return verdict(without(found, quarantine(found)),
                   read_service(alert_text, None,
                                memory.services if services is None else services), now)


@dataclass(frozen=True)
class Case:
    """One query as run: its recall, and the day and services it was judged with."""

    query: EvalQuery
    found: Recall
    now: datetime | None = None
    services: Collection[str] | None = None

    def judged(self, memory: LoadedMemory, strong: float | None = None) -> Verdict:
        """:func:`judge` of the recall, with the strong bar moved to ``strong`` if given (the
        quarantine, which no bar changes, is worked out once per case)."""
        usable = self._usable
        if strong is not None:
            # The margin moves with the bar, in the shipped proportion (margin 3 at strong 6).
            usable = dataclasses.replace(usable, strong=strong,
                                         margin=strong * usable.margin / usable.strong
                                         if usable.strong else usable.margin)
        return verdict(usable, read_service(self.query.alert, None, memory.services
                                            if self.services is None else self.services),
                       self.now)

    @cached_property
    def _usable(self) -> Recall:
        return without(self.found, quarantine(self.found))


# The applicability bars (standing, in spreads) the precision–coverage table is swept over.
SWEEP = tuple(float(n) for n in range(2, 31, 2))
# The bands of the shown confidence that ``by_band`` counts (DESIGN: turn 4).
BANDS = ((0, 34), (35, 54), (55, 74), (75, 89), (90, 98))


def query_result(query: EvalQuery, found: Recall, judged: Verdict) -> QueryResult:
    ranked = [r.incident_id for r in found.ranked]
    expect = set(query.expect)
    rank = next((n for n, i in enumerate(ranked, 1) if i in expect), None)
    lead = judged.lead
    first = lead.recommendation.evidence[0] if lead is not None else None
    return QueryResult(
        qid=query.qid, kind=query.kind, state=judged.state, ranked_incident_ids=ranked,
        recalled_incident_ids=[i.incident_id for i in found.incidents],
        expect=query.expect, rank=rank, gate=found.gate,
        lead_incident_id=first.incident_id if first else None,
        lead_action_id=first.action_id if first else None,
        lead_match=lead.applies if lead is not None else None,
        lead_applicability=lead.best if lead is not None else None,
        confidence=judged.confidence.value)


def sweep(cases: list[Case], memory: LoadedMemory,
          thresholds: tuple[float, ...] = SWEEP) -> list[PrecisionPoint]:
    """PROVEN precision and coverage with the strong bar moved to each threshold."""
    answerable = sum(1 for case in cases if case.query.expect)
    points = []
    for threshold in thresholds:
        proven = right = shown = 0
        for case in cases:
            query = case.query
            judged = case.judged(memory, threshold)
            if judged.state != "proven" or judged.lead is None:
                continue
            proven += 1
            shown += bool(query.expect)
            right += judged.lead.recommendation.evidence[0].incident_id in query.expect
        points.append(PrecisionPoint(
            threshold=threshold, proven=proven, right=right,
            precision=round(right / proven, 4) if proven else None,
            coverage=round(shown / answerable, 4) if answerable else 0.0))
    return points


def run_eval(index: MemoryIndex, memory: LoadedMemory, queries: list[EvalQuery],
             replay: bool = False, hidden: frozenset[str] = frozenset(),
             mode: Mode = TIME_ORDERED, now: datetime | None = None,
             compare: bool | None = None) -> EvalReport:
    """Recall and the verdict for every query in one process; per-query rank, state and lead,
    then the figures, judged on ``now`` (None: the wall clock).

    ``hidden`` incidents (game-day drills, unless included) are never recalled. With
    ``replay`` each query is an incident (qid = its id) replayed in ``mode`` (module
    docstring); ``compare`` (default: time-ordered) adds ``summary_leave_one_out``, each
    incident replayed again leave-one-out on the same index."""
    history = History(memory.incidents, hidden) if replay else None
    results, cases = _run(index, memory, queries, hidden, mode if replay else None, now, history)
    kinds = sorted({r.kind for r in results if r.kind})
    summary = summarise(results).model_copy(update={"precision_coverage": sweep(cases, memory)})
    leave_one_out = None
    if history is not None and (compare if compare is not None else mode == TIME_ORDERED) \
            and mode != LEAVE_ONE_OUT:
        if history.same_in_both():
            leave_one_out = summary  # no incident is dated: the very same replays
        else:
            by_qid = {q.qid: q for q in replay_queries(memory, LEAVE_ONE_OUT, hidden)}
            again = [query.model_copy(update={"expect": by_qid[query.qid].expect})
                     if query.qid in by_qid else query for query in queries]
            rows, rerun = _run(index, memory, again, hidden, LEAVE_ONE_OUT, now, history)
            leave_one_out = summarise(rows).model_copy(
                update={"precision_coverage": sweep(rerun, memory)})
    return EvalReport(
        queries=results, summary=summary,
        by_kind={kind: summarise([r for r in results if r.kind == kind]) for kind in kinds},
        memory={"incidents": len(memory.incidents), "source_hash": memory.source_hash[:16],
                "embedder": index.embedder_id or "none (lexical)",
                "calibration": index.calibration.describe()},
        mode=mode if replay else None, summary_leave_one_out=leave_one_out,
        undated=history.undated if history is not None else None)


def _run(index: MemoryIndex, memory: LoadedMemory, queries: list[EvalQuery],
         hidden: frozenset[str], mode: Mode | None, now: datetime | None,
         history: History | None) -> tuple[list[QueryResult], list[Case]]:
    """Each query recalled and judged; ``mode`` None: a queries file (only ``hidden`` out),
    else replays (qid = the incident replayed, out of the memory it meets in ``mode``)."""
    by_id = {incident.id: incident for incident in memory.incidents}
    results = []
    cases = []
    for query in queries:
        incident = by_id.get(query.qid) if mode is not None else None
        if mode is None or history is None:
            case_hidden, when, services, known = hidden, now, None, None
        elif incident is None:  # (a replay query of an id not in memory: itself hidden)
            case_hidden, when, services, known = hidden | {query.qid}, now, None, None
        else:
            as_of = history.as_of(incident, mode)
            case_hidden, when, known = as_of.hidden, as_of.now or now, as_of.known
            # Time-ordered: the services known that day; leave-one-out: the memory's, as before.
            services = ({i.service for i in memory.incidents if i.id not in as_of.hidden}
                        if mode == TIME_ORDERED else None)
        found = recall(index, query.alert, hidden=case_hidden)
        case = Case(query, found, when, services)
        cases.append(case)
        result = query_result(query, found, case.judged(memory))
        results.append(result.model_copy(update={"known_incidents": known}))
    return results, cases


def summarise(results: list[QueryResult]) -> Summary:
    """hit@k and MRR over answerable queries (an abstained answer shows nothing); abstention."""
    answerable = [r for r in results if r.expect]
    abstained = [r for r in results if r.state == "no_prior_incident"]
    should_abstain = [r for r in results if not r.expect]

    def shown_rank(r: QueryResult) -> int | None:
        return None if r.state == "no_prior_incident" else r.rank

    def share(part: int, whole: int) -> float:
        return round(part / whole, 4) if whole else 0.0

    ranks = [shown_rank(r) for r in answerable]
    proven = [r for r in results if r.state == "proven"]
    novel = [r for r in results if not r.expect]
    return Summary(
        n=len(results), answerable=len(answerable),
        hit_at_1=share(sum(1 for k in ranks if k == 1), len(answerable)),
        hit_at_5=share(sum(1 for k in ranks if k is not None and k <= 5), len(answerable)),
        mrr=round(sum(1 / k for k in ranks if k) / len(answerable), 4) if answerable else 0.0,
        abstention_precision=share(sum(1 for r in abstained if not r.expect), len(abstained)),
        abstention_recall=share(sum(1 for r in should_abstain if r.state == "no_prior_incident"),
                                len(should_abstain)),
        wrongly_abstained=share(sum(1 for r in answerable if r.state == "no_prior_incident"),
                                len(answerable)),
        by_state=by_state(results),
        proven_precision=(share(sum(1 for r in proven if lead_right(r)), len(proven))
                          if proven else None),
        proven_coverage=share(sum(1 for r in answerable if r.state == "proven"), len(answerable)),
        novel_proven_rate=share(sum(1 for r in novel if r.state == "proven"), len(novel)),
        by_band=[BandRow(band=f"{low}–{high}",
                         n=sum(1 for r in results if low <= r.confidence <= high),
                         right=sum(1 for r in results
                                   if low <= r.confidence <= high and lead_right(r)))
                 for low, high in BANDS],
    )


def lead_right(result: QueryResult) -> bool:
    """The lead fix came from an expected incident."""
    return result.lead_incident_id is not None and result.lead_incident_id in result.expect


def state_right(result: QueryResult) -> bool:
    """Whether the state shown was the right claim (see StateRow)."""
    if result.state == "proven":
        return lead_right(result)
    if result.state == "unproven":
        return bool(set(result.expect) & set(result.recalled_incident_ids))
    return not result.expect


def by_state(results: list[QueryResult]) -> dict[str, StateRow]:
    rows = {}
    for state in ("proven", "unproven", "no_prior_incident"):
        shown = [r for r in results if r.state == state]
        right = sum(1 for r in shown if state_right(r))
        rows[state] = StateRow(n=len(shown), right=right,
                               rate=round(right / len(shown), 4) if shown else None)
    return rows
