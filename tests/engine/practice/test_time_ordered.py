"""Replays that only know the past (issue 20 item 3): time-ordered by default.

On the bundled memory, the KeyError family INC-1518 (2025-01-27) … INC-2077 (2026-04-09): the
first member's replay meets none of the others, the last may meet all four. On a generated
memory of a few hundred dated incidents (dated_memory.py: known families, ties, undated ones),
no replay ever recalls, ranks, cites or expects an incident that started at or after it, and
the undated ones are counted and known from the start. A version-1 drill.json (leave-one-out
figures) is no track record."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.practice.evaluate import eval_index, replay_queries, run_eval
from console.engine.practice.history import UNDATED_RULE, History, instant
from console.engine.practice.replay import (
    DRILL_FILE_VERSION,
    Judge,
    Replay,
    ReplayReport,
    read_saved,
    run_replays,
    save_replays,
    track_record,
)
from store.loader import LoadedMemory, load_incidents
from store.models import Incident
from tests.engine.practice.dated_memory import generate, write

FAMILY = ["INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"]


def seen(r: Replay) -> set[str]:
    """Every incident a replay showed or counted on: recalled, ranked, cited, warned, led by,
    expected as related."""
    out = {*r.recalled_incident_ids, *r.ranked_incident_ids, *r.cited_incident_ids, *r.related}
    out |= {a.split("/")[0] for a in r.warnings}
    if r.lead is not None:
        out.add(r.lead.action_id.split("/")[0])
    return out


# --- the bundled memory: the KeyError family ------------------------------------------------

@pytest.fixture(scope="module")
def family(readonly_engine: TriageEngine) -> dict[str, ReplayReport]:
    engine = readonly_engine
    assert engine.memory is not None and engine.index is not None
    return {mode: run_replays(engine.index, engine.memory, engine.settings, FAMILY,
                              mode=mode)  # type: ignore[arg-type]
            for mode in ("time-ordered", "leave-one-out")}


def test_the_first_of_a_family_meets_none_of_the_later_ones(
        family: dict[str, ReplayReport], readonly_engine: TriageEngine) -> None:
    first = {r.incident_id: r for r in family["time-ordered"].replays}["INC-1518"]
    assert not seen(first) & set(FAMILY), first
    assert first.related == [] and first.rank is None
    assert first.started_at == "2025-01-27T15:12:00+00:00"
    memory = readonly_engine.memory
    assert memory is not None
    when = datetime(2025, 1, 27, 15, 12, tzinfo=UTC)
    assert first.known_incidents == sum(1 for i in memory.incidents
                                        if i.started_at is not None and i.started_at < when)
    # Leave-one-out, the same replay expects all four later members (what it used to claim).
    old = {r.incident_id: r for r in family["leave-one-out"].replays}["INC-1518"]
    assert old.related == FAMILY[1:] and old.known_incidents == len(memory.incidents) - 1


def test_the_last_of_a_family_may_meet_all_four(family: dict[str, ReplayReport]) -> None:
    replays = {r.incident_id: r for r in family["time-ordered"].replays}
    last = replays["INC-2077"]
    assert last.related == FAMILY[:4]
    assert last.rank == 1 and set(last.recalled_incident_ids) & set(FAMILY[:4])
    # Each member expects exactly the members before it.
    for n, iid in enumerate(FAMILY):
        assert replays[iid].related == FAMILY[:n], iid
        assert not seen(replays[iid]) & set(FAMILY[n:]), iid


def test_eval_replay_expects_only_what_was_known(readonly_engine: TriageEngine) -> None:
    memory = readonly_engine.memory
    assert memory is not None
    expect = {q.qid: q.expect for q in replay_queries(memory)}
    assert expect["INC-1518"] == [] and expect["INC-2077"] == FAMILY[:4]
    old = {q.qid: q.expect for q in replay_queries(memory, "leave-one-out")}
    assert old["INC-1518"] == FAMILY[1:]


# --- a generated memory of dated incidents -------------------------------------------------

N = 160


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The generated memory, its lexical index (built once), the time-ordered --all and eval."""
    root = tmp_path_factory.mktemp("dated")
    path = write(root / "incidents.yaml", generate(N, seed=11))
    memory = load_incidents(path)
    settings = Settings(incidents_path=path, data_dir=root / "data")
    index = eval_index(settings, memory, None)
    judge = Judge(None, index)
    report = run_replays(index, memory, settings, judge=judge)
    evaluated = run_eval(index, memory, replay_queries(memory), replay=True, compare=False)
    return {"memory": memory, "settings": settings, "index": index, "report": report,
            "eval": evaluated}


def started(memory: LoadedMemory) -> dict[str, datetime | None]:
    return {i.id: instant(i.started_at) for i in memory.incidents}


def not_before(when: dict[str, datetime | None], replayed: str) -> set[str]:
    """The incidents a replay of ``replayed`` must not know: itself, and those started at or
    after it — every dated one when it is undated."""
    at = when[replayed]
    return {iid for iid, t in when.items()
            if iid == replayed or (t is not None and (at is None or t >= at))}


def test_no_replay_knows_an_incident_that_started_at_or_after_it(
        dated: dict[str, Any]) -> None:
    memory: LoadedMemory = dated["memory"]
    when = started(memory)
    report: ReplayReport = dated["report"]
    assert report.mode == "time-ordered" and len(report.replays) == N
    for r in report.replays:
        future = not_before(when, r.incident_id)
        assert not seen(r) & future, (r.incident_id, seen(r) & future)
        assert r.known_incidents == N - len(future)
    # The rule is not vacuous: families are found, and later members expect earlier ones.
    assert report.summary.with_related > N // 3 and report.summary.hit_at_1 > 0.9


def test_eval_replay_never_ranks_or_expects_the_future(dated: dict[str, Any]) -> None:
    when = started(dated["memory"])
    for q in dated["eval"].queries:
        future = not_before(when, q.qid)
        assert not (set(q.ranked_incident_ids) | set(q.recalled_incident_ids)
                    | set(q.expect)) & future, q.qid
        if q.lead_incident_id is not None:
            assert q.lead_incident_id not in future
    assert dated["eval"].summary.answerable > N // 3  # not vacuous: families are expected


def test_ties_are_not_before(dated: dict[str, Any]) -> None:
    memory: LoadedMemory = dated["memory"]
    by_id = {i.id: i for i in memory.incidents}
    ties = [(a, b) for a in memory.incidents for b in memory.incidents
            if a.id < b.id and a.started_at is not None and a.started_at == b.started_at
            and b.id in a.related]
    assert ties, "the generator makes a family tie"
    replays = {r.incident_id: r for r in dated["report"].replays}
    for a, b in ties:
        assert b.id not in replays[a.id].related and a.id not in replays[b.id].related
        assert not {a.id, b.id} & seen(replays[a.id]) and not {a.id, b.id} & seen(
            replays[b.id])
        assert by_id[a.id].started_at == by_id[b.id].started_at


def test_undated_incidents_are_counted_and_known_from_the_start(
        dated: dict[str, Any]) -> None:
    memory: LoadedMemory = dated["memory"]
    report: ReplayReport = dated["report"]
    undated = {i.id for i in memory.incidents if i.started_at is None}
    assert report.undated == len(undated) == report.memory["undated"] == round(N * 0.05)
    assert report.undated_rule == UNDATED_RULE
    assert dated["eval"].undated == len(undated)
    replays = {r.incident_id: r for r in report.replays}
    # The earliest dated replay knows exactly the undated incidents.
    first = min((i for i in memory.incidents if i.started_at is not None),
                key=lambda i: instant(i.started_at))  # type: ignore[arg-type,return-value]
    assert replays[first.id].known_incidents == len(undated)
    # A dated incident with an undated sibling expects it and, here, recalls it.
    met = [r for r in replays.values() if r.started_at is not None and set(r.related) & undated]
    assert met and any(set(r.recalled_incident_ids) & undated for r in met)
    # An undated replay knows the other undated ones only.
    for iid in undated:
        assert replays[iid].started_at is None
        assert replays[iid].known_incidents == len(undated) - 1
        assert set(seen(replays[iid])) <= undated - {iid}


def test_both_passes_on_one_index_and_the_difference_shows(dated: dict[str, Any]) -> None:
    report: ReplayReport = dated["report"]
    loo = report.summary_leave_one_out
    assert loo is not None and loo.replays == report.summary.replays == N
    # Leave-one-out expects later members too: more replays with a related incident, and no
    # first member of a family abstains for want of a sibling.
    assert loo.with_related > report.summary.with_related
    assert loo.abstained.replays < report.summary.abstained.replays
    doc = json.loads(report.model_dump_json())
    assert {"summary", "summary_leave_one_out", "mode", "undated", "replays"} <= set(doc)


def test_history_as_of_by_hand() -> None:
    def made(iid: str, when: str | None, **extra: Any) -> Incident:
        return Incident.model_validate({"id": iid, "service": "s", "symptoms": "x",
                                        "started_at": when, **extra})

    rows = [made("A", "2025-01-01T00:00:00Z"), made("B", "2025-02-01T00:00:00"),  # naive: UTC
            made("C", "2025-02-01T01:00:00+01:00"),  # the same instant as B: a tie
            made("D", None), made("E", "2025-03-01T00:00:00Z", drill=True),
            made("F", "2025-04-01T00:00:00Z", related=["A", "B", "D", "E"])]
    history = History(rows, drills=frozenset({"E"}))
    by_id = {i.id: i for i in rows}
    assert history.undated == 1
    assert history.as_of(by_id["A"]).hidden == {"A", "B", "C", "E", "F"}
    assert history.as_of(by_id["B"]).hidden == {"B", "C", "E", "F"}  # C is not before B
    assert history.as_of(by_id["D"]).hidden == {"A", "B", "C", "D", "E", "F"}
    f = history.as_of(by_id["F"])
    assert (f.hidden, f.known, f.now) == ({"E", "F"}, 4, datetime(2025, 4, 1, tzinfo=UTC))
    assert history.known_related(by_id["F"], f) == ["A", "B", "D"]  # E: a hidden drill
    loo = history.as_of(by_id["A"], "leave-one-out")
    assert (loo.hidden, loo.now, loo.known) == ({"A", "E"}, None, 4)


# --- the saved track record ----------------------------------------------------------------

def test_an_older_drill_file_is_no_record(dated: dict[str, Any], tmp_path: Path) -> None:
    settings: Settings = dated["settings"].replace(data_dir=tmp_path / "d")
    memory: LoadedMemory = dated["memory"]
    report: ReplayReport = dated["report"]
    path = save_replays(settings, memory, report, None)
    saved = read_saved(settings)
    assert saved is not None and saved.version == DRILL_FILE_VERSION == 2
    record = track_record(settings, memory)
    assert record is not None and record.tiers["3+"] == report.summary.tiers[3]
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["version"] = 1  # what the previous build wrote (leave-one-out figures)
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert read_saved(settings) is None and track_record(settings, memory) is None
    engine = TriageEngine(settings)
    assert engine.saved_replays() == (None, None)
    for junk in ("[]", "{}", '{"version": 2}', "not json"):
        path.write_text(junk, encoding="utf-8")
        assert read_saved(settings) is None, junk
    leave_one_out = report.model_copy(update={"mode": "leave-one-out"})
    with pytest.raises(ValueError, match="time-ordered"):
        save_replays(settings, memory, leave_one_out, None)
