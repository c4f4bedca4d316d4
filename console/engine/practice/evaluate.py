"""``triage eval``: how well recall finds past incidents for alerts whose answer is known.

Two sources of questions: a queries file (``{qid, alert, expect}``, README "Recall")
and ``--replay``, which turns each incident of the memory into an alert built from its title,
service and symptoms, with that incident hidden, expecting the incidents it names as
``related`` (or nothing). The index is built in its own directory keyed by the memory's
content hash, never over the team's index.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from console.engine.briefing.applicability import read_service
from console.engine.briefing.models import Match, State
from console.engine.briefing.verdict import Verdict, verdict
from console.engine.config import Settings
from console.engine.pipeline import quarantine, without
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


class EvalReport(BaseModel):
    queries: list[QueryResult]
    summary: Summary
    by_kind: dict[str, Summary] = Field(default_factory=dict)
    memory: dict[str, str | int] = Field(default_factory=dict)


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


def replay_queries(memory: LoadedMemory) -> list[EvalQuery]:
    """Each incident as the alert it would have raised, expecting its related incidents."""
    known = {incident.id for incident in memory.incidents}
    return [EvalQuery(qid=incident.id, kind="replay", alert=replay_alert(incident),
                      expect=[i for i in incident.related if i in known])
            for incident in memory.incidents]


def eval_index(settings: Settings, memory: LoadedMemory, embedder: Embedder | None,
               progress: Callable[[int, int], None] | None = None) -> MemoryIndex:
    """An index of ``memory`` in its own directory keyed by content hash (reused when fresh)."""
    index = MemoryIndex(settings.eval_dir(memory.source_hash), embedder,
                        EmbeddingCache(settings.embedding_cache),
                        calibration_file=settings.calibration_path)
    index.open(memory, progress=progress)
    return index


def judge(found: Recall, memory: LoadedMemory, alert_text: str) -> Verdict:
    """The verdict the console would show for this recall: quarantine applied, the alert's
    service read from its text (the pipeline's own steps, without a model)."""
    return verdict(without(found, quarantine(found)),
                   read_service(alert_text, None, memory.services))


# The applicability bars the precision–coverage table is swept over.
SWEEP = tuple(round(0.5 + 0.05 * n, 2) for n in range(17))


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


def sweep(cases: list[tuple[EvalQuery, Recall]], memory: LoadedMemory,
          thresholds: tuple[float, ...] = SWEEP) -> list[PrecisionPoint]:
    """PROVEN precision and coverage with the strong bar moved to each threshold."""
    answerable = sum(1 for query, _ in cases if query.expect)
    points = []
    for threshold in thresholds:
        proven = right = shown = 0
        for query, found in cases:
            judged = judge(dataclasses.replace(found, strong=threshold), memory, query.alert)
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
             replay: bool = False, hidden: frozenset[str] = frozenset()) -> EvalReport:
    """Recall and the verdict for every query in one process; per-query rank, state and lead,
    then the figures.

    ``hidden`` incidents (game-day drills, unless included) are never recalled."""
    results = []
    cases = []
    for query in queries:
        hidden_now = hidden | {query.qid} if replay else hidden
        found = recall(index, query.alert, hidden=hidden_now)
        cases.append((query, found))
        results.append(query_result(query, found, judge(found, memory, query.alert)))
    kinds = sorted({r.kind for r in results if r.kind})
    summary = summarise(results).model_copy(update={"precision_coverage": sweep(cases, memory)})
    return EvalReport(
        queries=results, summary=summary,
        by_kind={kind: summarise([r for r in results if r.kind == kind]) for kind in kinds},
        memory={"incidents": len(memory.incidents), "source_hash": memory.source_hash[:16],
                "embedder": index.embedder_id or "none (lexical)",
                "calibration": index.calibration.describe()})


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
