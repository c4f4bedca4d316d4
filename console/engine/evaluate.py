"""``triage eval``: how well recall finds past incidents for alerts whose answer is known.

Two sources of questions: a queries file (``{qid, alert, expect}``, the contract in DESIGN.md)
and ``--replay``, which turns each incident of the memory into an alert built from its title,
service and symptoms, with that incident hidden, expecting the incidents it names as
``related`` (or nothing). The index is built in its own directory keyed by the memory's
content hash, never over the team's index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from console.engine.briefing import State
from console.engine.config import Settings
from console.engine.deterministic import deterministic_briefing
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
    qid: str
    kind: str | None = None
    state: State
    ranked_incident_ids: list[str]
    recalled_incident_ids: list[str]
    expect: list[str]
    rank: int | None
    gate: str = ""


class Summary(BaseModel):
    n: int
    answerable: int
    hit_at_1: float
    hit_at_5: float
    mrr: float
    abstention_precision: float
    abstention_recall: float
    wrongly_abstained: float


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


def state_of(result: Recall, memory_incidents: int) -> State:
    """The state the console would show for this recall (deterministic briefing, no model)."""
    return deterministic_briefing(result, memory_incidents, None).state


def run_eval(index: MemoryIndex, memory: LoadedMemory, queries: list[EvalQuery],
             replay: bool = False, hidden: frozenset[str] = frozenset()) -> EvalReport:
    """Recall for every query in one process; per-query rank and state, then the figures.

    ``hidden`` incidents (game-day drills, unless included) are never recalled."""
    results = []
    for query in queries:
        hidden_now = hidden | {query.qid} if replay else hidden
        found = recall(index, query.alert, hidden=hidden_now)
        ranked = [r.incident_id for r in found.ranked]
        expect = set(query.expect)
        rank = next((n for n, i in enumerate(ranked, 1) if i in expect), None)
        results.append(QueryResult(
            qid=query.qid, kind=query.kind, state=state_of(found, len(memory.incidents)),
            ranked_incident_ids=ranked,
            recalled_incident_ids=[i.incident_id for i in found.incidents],
            expect=query.expect, rank=rank, gate=found.gate))
    kinds = sorted({r.kind for r in results if r.kind})
    return EvalReport(
        queries=results, summary=summarise(results),
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
    )
