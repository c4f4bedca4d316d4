"""Game day: drill mode from the environment, the timeline on disk, the drill report.

The game day runs over the real bundled memory, recall, briefing and tripwire (MiniLM); only
the clocks are scripted so that durations are exact.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.tripwire import Tripwire, gather_candidates
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.pipeline import Routed
from console.engine.practice.gameday import (
    EventKind,
    GameDayEvent,
    Timeline,
    game_day_audit_tags,
    game_day_report,
)
from console.engine.render.markdown import briefing_markdown
from store.models import ActionOutcome

PAYMENTS_ALERT = "payments-api: connection timeouts to Postgres, HikariPool exhausted, p99 4s"
START = datetime(2026, 3, 14, 2, 5, tzinfo=UTC)


@pytest.mark.parametrize(("value", "expected"), [
    ("1", True), ("true", True), (" YES ", True), ("True", True),
    ("0", False), ("", False), ("no", False), ("false", False), ("drill", False), (None, False),
])
def test_triage_drill_turns_on_a_game_day_like_triage_offline(value: str | None,
                                                               expected: bool) -> None:
    env = {} if value is None else {"TRIAGE_DRILL": value}
    assert Settings.from_env(env).game_day is expected


def test_game_day_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_DRILL", "1")
    assert Settings.from_env().game_day
    monkeypatch.delenv("TRIAGE_DRILL")
    assert not Settings.from_env().game_day


def test_drill_audit_lines_are_marked() -> None:
    assert game_day_audit_tags("gd-7") == {"drill": True, "drill_id": "gd-7"}


def scripted(timeline_dir: Path, drill_id: str = "gd-1", step: int = 37) -> Timeline:
    """A timeline whose clocks advance ``step`` seconds per event."""
    ticks = itertools.count(0, step)
    walls = (START + timedelta(seconds=s) for s in itertools.count(0, step))
    return Timeline.start(timeline_dir, drill_id, clock=lambda: float(next(ticks)),
                          wall=lambda: next(walls))


def test_the_timeline_is_json_lines_in_the_data_dir_and_reads_back(tmp_path: Path) -> None:
    timeline = scripted(tmp_path)
    timeline.alert_received("checkout p99 up")
    noted = timeline.action_noted("drained node 3 password=hunter2 \x1b[2J", None)
    timeline.action_noted("", ActionOutcome.MITIGATED, amends=noted.seq)
    timeline.resolution("back to normal")

    assert timeline.path == tmp_path / "drills" / "gd-1.jsonl"
    raw = timeline.path.read_text(encoding="utf-8")
    assert "hunter2" not in raw and "\x1b" not in raw and "[REDACTED" in raw
    lines = [json.loads(line) for line in raw.splitlines()]
    assert [line["kind"] for line in lines] == ["alert_received", "action_noted",
                                                "action_noted", "resolution"]
    again = Timeline(timeline.path).events
    assert [e.seq for e in again] == [1, 2, 3, 4]
    assert again[1].at == START + timedelta(seconds=37) and again[1].monotonic == 37.0
    assert again[2].amends == 2 and again[2].outcome is ActionOutcome.MITIGATED


def test_a_torn_line_is_skipped_and_the_next_event_still_lands(tmp_path: Path) -> None:
    timeline = scripted(tmp_path)
    timeline.alert_received("checkout p99 up")
    with timeline.path.open("a", encoding="utf-8") as handle:
        handle.write('{"drill_id": "gd-1", "seq": 2, "ki')  # a crash mid-write

    timeline.resolution("done")

    events = timeline.events
    assert [(e.seq, e.kind) for e in events] == [(1, EventKind.ALERT_RECEIVED),
                                                 (2, EventKind.RESOLUTION)]
    assert timeline.skipped == 1


def _append_many(path: str, writer: int, count: int) -> None:
    timeline = Timeline(Path(path), "gd-race")
    for n in range(count):
        timeline.action_noted(f"writer {writer} action {n}")


def test_two_processes_appending_to_one_drill_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "drills" / "gd-race.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(path), w, 25)) for w in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0

    events = Timeline(path).events
    assert len(events) == 50 and Timeline(path).skipped == 0
    assert sorted(e.seq for e in events) == list(range(1, 51))
    assert {e.text for e in events} == {f"writer {w} action {n}" for w in (1, 2)
                                        for n in range(25)}


@pytest.fixture(scope="module")
def routed(readonly_engine: TriageEngine) -> Routed:
    return readonly_engine.brief(parse_alert(PAYMENTS_ALERT))


@pytest.fixture(scope="module")
def tripwire(routed: Routed, readonly_engine: TriageEngine) -> Tripwire:
    assert readonly_engine.memory is not None
    embedder = readonly_engine.embedder()
    assert embedder is not None
    return Tripwire(gather_candidates(routed.recall, readonly_engine.memory), embedder)


def game_day(tmp_path: Path, routed: Routed, tripwire: Tripwire,
             actions: list[tuple[str, ActionOutcome | None]]) -> Timeline:
    """Alert → briefing → the engineer's actions (each checked by the tripwire) → resolution."""
    timeline = scripted(tmp_path)
    timeline.alert_received(PAYMENTS_ALERT)
    timeline.briefing_shown(routed.briefing)
    for text, outcome in actions:
        timeline.action_noted(text, outcome, tripwire.check(text))
    timeline.resolution("p99 back under 400 ms")
    return timeline


def test_a_game_day_report_shows_timeline_briefing_actions_and_verdicts(
        tmp_path: Path, routed: Routed, tripwire: Tripwire) -> None:
    timeline = game_day(tmp_path, routed, tripwire, [
        ("bounce every payments-api pod at once", ActionOutcome.WORSENED),
        ("raise the connection pool limit on one instance and drain traffic to it gradually",
         ActionOutcome.RESOLVED),
    ])

    report = game_day_report(timeline, embedder=tripwire.embedder)

    assert report.startswith("# DRILL report — gd-1")
    timeline_part = report.split("## The briefing as shown")[0]
    assert "T+00:37 (+00:37) **briefing shown** — proven, confidence 55" in timeline_part
    assert "T+02:28 (+00:37) **resolution** — p99 back under 400 ms" in timeline_part
    assert "alert → resolution 02:28" in timeline_part
    assert briefing_markdown(routed.briefing) in report  # the briefing exactly as shown
    actions = report.split("## Actions noted")[1].split("## What the memory")[0]
    assert "1. bounce every payments-api pod at once — **WORSENED**" in actions
    assert "tripwire warned: `INC-2041/A1` WORSENED" in actions
    right, wrong = report.split("**Right**")[1].split("**Wrong**")
    assert "warned against “bounce every payments-api pod at once” (`INC-2041/A1`) and it " \
           "did make things worse" in right
    assert "recommended fix (`INC-2041/A4`)" in right and "RESOLVED" in right
    assert "nothing contradicted" in wrong


def test_the_report_says_where_the_memory_was_wrong(
        tmp_path: Path, routed: Routed, tripwire: Tripwire) -> None:
    timeline = game_day(tmp_path, routed, tripwire, [
        ("raise the connection pool limit on one instance and drain traffic to it gradually",
         ActionOutcome.NO_EFFECT),
        ("restart all payments-api pods together", ActionOutcome.RESOLVED),
        ("disable the nightly reporting job that holds connections", ActionOutcome.WORSENED),
        ("fail over postgres to the standby", ActionOutcome.RESOLVED),
        ("tail the pgbouncer logs", None),
    ])

    report = game_day_report(timeline, embedder=tripwire.embedder)

    right, wrong = report.split("**Right**")[1].split("**Wrong**")
    wrong, open_ = wrong.split("**Open**")
    assert "recommended fix (`INC-2041/A4`)" in wrong and "NO_EFFECT this time" in wrong
    assert "warned against “restart all payments-api pods together” (`INC-2041/A1`) but it " \
           "RESOLVED" in wrong
    assert "“disable the nightly reporting job that holds connections” made things worse " \
           "and the memory had no warning" in wrong
    assert "“fail over postgres to the standby” resolved it and no recommendation named it" \
           in wrong
    assert "“tail the pgbouncer logs”: no outcome noted" in open_
    assert "heeded" not in right  # the warned action was repeated


def test_an_unrepeated_warning_is_reported_heeded_without_an_embedder(
        tmp_path: Path, routed: Routed, tripwire: Tripwire) -> None:
    timeline = game_day(tmp_path, routed, tripwire, [
        ("Raised the connection pool limit on one instance and drained traffic to it gradually",
         ActionOutcome.RESOLVED)])

    report = game_day_report(timeline.events)  # lexical matching, the briefing from the timeline

    right = report.split("**Right**")[1].split("**Wrong**")[0]
    assert "warning `INC-2041/A1` heeded: no noted action repeated it" in right
    assert "recommended fix (`INC-2041/A4`)" in right


def test_durations_fall_back_to_wall_time_across_machines(tmp_path: Path) -> None:
    events = [GameDayEvent(drill_id="gd-2", seq=n, kind=kind, at=START + timedelta(seconds=sec),
                         monotonic=mono)
              for n, (kind, sec, mono) in enumerate([
                  (EventKind.ALERT_RECEIVED, 0, 900.0), (EventKind.ACTION_NOTED, 65, 12.0),
                  (EventKind.RESOLUTION, 3725, 40.0)], 1)]

    report = game_day_report(events)

    assert "alert → resolution 1:02:05" in report
    assert "_No briefing was shown._" in report
