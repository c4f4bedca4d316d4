"""The drill screen driven by keys through Pilot, on a small fixture memory written by hand
(tests/engine/practice/test_replay.py FIXTURE): a replays everything, the chart and the per-tier table
show the calibration, Enter shows a replay's briefing, a cached drill shows on reopening and
says when the memory changed since."""

from __future__ import annotations

from pathlib import Path

import yaml
from textual.pilot import Pilot
from textual.widgets import OptionList, Static
from textual_plotext import PlotextPlot

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.drill import DrillScreen
from tests.engine.practice.test_replay import FIXTURE

SIZE = (120, 40)


def fixture_memory(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(yaml.safe_dump(FIXTURE, sort_keys=False), encoding="utf-8")
    return path


async def settle(pilot: Pilot[None], app: TriageApp) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


def text(screen: DrillScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def open_drill(pilot: Pilot[None], app: TriageApp) -> DrillScreen:
    await settle(pilot, app)
    await pilot.press("f7")
    await pilot.pause()
    assert isinstance(app.screen, DrillScreen)
    return app.screen


async def test_a_drill_by_keys_shows_each_tier_with_its_interval(tmp_path: Path) -> None:
    incidents = fixture_memory(tmp_path)
    app = TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data"))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_drill(pilot, app)
        assert "No drill has been run" in text(screen, "#drill-heading")
        await pilot.press("a")
        await settle(pilot, app)
        report = screen.report
        assert report is not None
        listing = screen.query_one(OptionList)
        assert listing.option_count == report.summary.replays
        table = text(screen, "#drill-table")
        for row in report.summary.tiers:
            assert row.line() in table
        assert "demo written by us" in table
        # The chart: a bar per tier with a replay that counted, its interval marked.
        drawn = screen.query_one(PlotextPlot).plt.build()
        counted = [row for row in report.summary.tiers if row.counted]
        assert counted and "confidence tier" in drawn and "95% low" in drawn
        assert all(row.tier in drawn for row in counted)
        assert screen.drawn == [(row.tier, round(100 * (row.rate or 0))) for row in counted]
        # Enter on a replay: the briefing it would have had, the hidden incident not in it.
        first = report.replays[0]
        await pilot.press("enter")
        await settle(pilot, app)
        shown = text(screen, "#drill-briefing-body")
        assert f"Replay of {first.incident_id}" in shown
        assert f"{first.incident_id}/" not in shown.split("\n", 1)[1]
        assert (tmp_path / "data" / "drill.json").is_file()


async def test_a_cached_drill_shows_and_says_when_the_memory_changed(tmp_path: Path) -> None:
    incidents = fixture_memory(tmp_path)
    settings = Settings(incidents_path=incidents, data_dir=tmp_path / "data")
    app = TriageApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_drill(pilot, app)
        await pilot.press("a")
        await settle(pilot, app)
        replays = screen.report.summary.replays if screen.report else 0
        await pilot.press("escape")
        await pilot.pause()
        reopened = await open_drill(pilot, app)
        assert reopened.report is not None and reopened.report.summary.replays == replays
        assert "changed since" not in text(reopened, "#drill-heading")
    with incidents.open("a", encoding="utf-8") as handle:
        handle.write("- id: INC-LATE\n  service: api\n  symptoms: added after the drill\n")
    app = TriageApp(settings)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_drill(pilot, app)
        assert "The memory changed since this drill" in text(screen, "#drill-heading")
