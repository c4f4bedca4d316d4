"""The saved drill (DATA/drill.json) is read off the event loop when the memory loads and after
a replay of every incident — not once per briefing — and the drill screen replays the memory
the console shows (the App's engine), not a second read of the incidents file."""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.pilot import Pilot
from textual.widgets import Input, Static

from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.practice.replay import ReplayReport, TrackRecord
from console.ui.app import TriageApp
from console.ui.screens.drill import DrillScreen
from tests.conftest import BUNDLED_INCIDENTS
from tests.engine.practice.test_replay import FIXTURE

SIZE = (120, 40)


class CountingEngine(TriageEngine):
    """The real engine, counting how often the saved drill (and its record) is read."""

    track_record_reads = 0

    def saved_replays(self) -> tuple[ReplayReport | None, TrackRecord | None]:
        self.track_record_reads += 1
        return super().saved_replays()


async def settle(pilot: Pilot[None], app: TriageApp) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def brief(pilot: Pilot[None], app: TriageApp, alert: str) -> None:
    await settle(pilot, app)
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")
    await settle(pilot, app)


def confidence(app: TriageApp) -> str:
    return str(app.screen.query_one("#confidence", Static).content)


async def test_the_track_record_is_read_once_not_per_briefing(bundled_data_dir: Path) -> None:
    settings = Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir)
    engine = CountingEngine(settings)
    app = TriageApp(settings, engine)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "payments service KeyError: 'amount' after deploy")
        assert "track record: no drill run on this memory yet (F7 replays it)" in confidence(app)
        await brief(pilot, app, "auth-service logins failing after key rotation")
        assert "track record: no drill run on this memory yet" in confidence(app)
        assert engine.track_record_reads == 1  # when the memory loaded, not per briefing


async def test_the_drill_replays_the_memory_shown_and_the_record_follows(
        tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(yaml.safe_dump(FIXTURE, sort_keys=False), encoding="utf-8")
    app = TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.engine.memory is not None
        shown = len(app.engine.memory.incidents)
        # Someone edits the file after the console loaded it: the console still shows (and
        # the drill replays) the memory it loaded until F5.
        with incidents.open("a", encoding="utf-8") as handle:
            handle.write("- id: INC-LATE\n  service: api\n  symptoms: added after loading\n")
        await pilot.press("f7")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DrillScreen) and screen.engine is app.engine
        await pilot.press("a")
        await settle(pilot, app)
        report = screen.report
        assert report is not None and report.memory["incidents"] == shown  # not shown + 1
        assert "INC-LATE" not in {replay.incident_id for replay in report.replays}
        # The replay saved drill.json; the App read it again, on the memory it shows.
        saved = app.state.saved_replay
        assert saved is not None and saved.record is not None and not saved.record.stale
        assert saved.record.replays == report.summary.replays
        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("f7")
        await pilot.pause()
        reopened = app.screen
        assert isinstance(reopened, DrillScreen) and reopened is not screen
        assert reopened.report is not None
        assert reopened.report.summary.replays == report.summary.replays
        assert "changed since" not in str(reopened.query_one("#drill-heading", Static).content)


async def test_a_drill_saved_by_an_older_version_reads_as_none(bundled_data_dir: Path) -> None:
    """A version-1 drill.json (leave-one-out figures, before replays were time-ordered) is no
    track record: the panel says to run the drill, it does not show the old figures."""
    import json

    from console.engine.practice.replay import DRILL_FILE_VERSION

    settings = Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir)
    settings.replay_path.write_text(json.dumps({
        "version": DRILL_FILE_VERSION - 1, "source_hash": "x", "embedder": None,
        "include_drills": False, "run_at": "2026-01-01T00:00:00+00:00",
        "report": {"memory": {}, "same_fix_cosine": 0.54, "wall_seconds": 1.0,
                   "summary": {}, "replays": []}}), encoding="utf-8")
    app = TriageApp(settings, CountingEngine(settings))
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "payments service KeyError: 'amount' after deploy")
        assert "track record: no drill run on this memory yet (F7 replays it)" in confidence(app)
