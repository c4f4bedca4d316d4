"""TRIAGE_NOW: the "now" the age of evidence is measured from, fixed for demos and tests, so
"the newest incident behind the fix is over a year old" does not change with the calendar."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest

from console.__main__ import main
from console.engine import config
from console.engine.briefing.alert import parse_alert
from console.engine.config import Settings
from console.engine.engine import TriageEngine

PAYMENTS = "payments-api p99 latency up, intermittent database connection errors"


@pytest.mark.parametrize(("value", "expected"), [
    ("2026-03-20", datetime(2026, 3, 20, tzinfo=UTC)),
    ("2026-03-20T02:05:00Z", datetime(2026, 3, 20, 2, 5, tzinfo=UTC)),
    ("2026-03-20T04:05:00+02:00", datetime(2026, 3, 20, 2, 5, tzinfo=UTC)),
    (" 2026-03-20T02:05 ", datetime(2026, 3, 20, 2, 5, tzinfo=UTC)),
])
def test_triage_now_is_read_as_an_aware_moment(value: str, expected: datetime) -> None:
    settings = Settings.from_env({"TRIAGE_NOW": value})
    assert settings.now() == expected and settings.now().utcoffset() is not None


def test_without_triage_now_it_is_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "clock", config.wall_clock)  # the suite fixes its own day
    before = datetime.now(UTC)
    now = Settings.from_env({"TRIAGE_NOW": ""}).now()
    assert before <= now <= datetime.now(UTC)


def test_a_bad_triage_now_is_refused_with_what_to_write(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRIAGE_NOW", "next tuesday\x1b[2J")
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert "TRIAGE_NOW='next tuesday\\x1b[2J' is not an ISO date or time" in err
    assert "2026-03-14T02:05:00Z" in err and "\x1b" not in err


@pytest.mark.parametrize(("now", "stale"), [("2026-04-01", False), ("2028-01-01", True)])
def test_verification_measures_the_age_of_evidence_from_triage_now(
        readonly_engine: TriageEngine, now: str, stale: bool) -> None:
    engine = copy.copy(readonly_engine)  # a shallow copy sharing the loaded memory
    engine.settings = readonly_engine.settings.replace(
        fixed_now=Settings.from_env({"TRIAGE_NOW": now}).fixed_now)
    routed = engine.brief(parse_alert(PAYMENTS))
    made = engine.verification_plan(routed, [])
    kinds = {doubt.kind for doubt in made.doubts}
    assert ("stale" in kinds) is stale, kinds
