"""A game day from alert to drill report, by keys (issue 11): the DRILL banner on every screen,
the tripwire warning before acting, the noted action carried into a postmortem saved as a
drill, audit lines tagged, Ctrl+G writes the report; and Ctrl+O exports the briefing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input, Select, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.help import HelpScreen
from console.ui.screens.postmortem import PostmortemScreen
from console.ui.widgets.action_row import ActionRow
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.tripwire_line import TripwireLine
from tests.conftest import BUNDLED_INCIDENTS

SIZE = (120, 40)
CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"


async def settle(pilot: Pilot[None], app: TriageApp) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


def banner(app: TriageApp) -> str:
    shown = app.screen.query(".drill-banner")
    return str(shown.first(Static).content) if shown else ""


async def brief(pilot: Pilot[None], app: TriageApp) -> None:
    await settle(pilot, app)
    app.screen.query_one("#alert-input", Input).value = CHECKOUT
    await pilot.press("f2", "enter")
    await settle(pilot, app)


async def test_a_game_day_from_alert_to_drill_report(tmp_path: Path,
                                                     bundled_data_dir: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    app = TriageApp(Settings(incidents_path=incidents, data_dir=bundled_data_dir,
                             game_day=True))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert app.timeline is not None
        drill_id = app.timeline.drill_id
        assert "DRILL" in banner(app) and drill_id in banner(app)
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen) and "DRILL" in banner(app)
        await pilot.press("escape")
        await brief(pilot, app)

        # About to do something that made things worse: warned at once, with the citation.
        await pilot.press("ctrl+t")
        await pilot.press(*"restart every payments-api pod at the same time")
        await pilot.pause(0.4)
        await settle(pilot, app)
        line = app.screen.query_one(TripwireLine)
        assert [h.action_id for h in line.hits][:1] == ["INC-2041/A1"]
        warning = str(line.query_one("#tripwire-warning", Static).content)
        assert "INC-2041/A1 WORSENED" in warning and "max_connections" in warning
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.state.noted[0][0] == "restart every payments-api pod at the same time"

        # The noted action rides into the postmortem, which is saved as a drill.
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen) and "DRILL" in banner(app)
        rows = [row.values() for row in app.screen.query(ActionRow)]
        assert rows[0]["action"] == "restart every payments-api pod at the same time"
        assert rows[0]["confirmed"] is False and "INC-2041/A1" in rows[0]["explanation"]
        assert "outcome" not in rows[0]  # not observed yet: the engineer sets it
        app.screen.query_one("#pm-action-1-outcome", Select).focus()
        await pilot.press("w")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        saved = incidents.read_text(encoding="utf-8").split("- id: INC-2325")[1]
        assert "  drill: true\n" in saved

        await pilot.press("ctrl+g")
        await settle(pilot, app)
        report = (bundled_data_dir / "drills" / f"{drill_id}.md").read_text(encoding="utf-8")
        for event in ("alert received", "briefing shown", "action noted", "resolution"):
            assert f"**{event}**" in report, event
        assert "INC-2041/A1" in report
        # Every audit line of the session carries the drill (offline, nothing was audited yet:
        # the log the console writes through is the tagged one).
        app.audit.append({"event": "probe"})
    (line,) = [json.loads(x) for x in (bundled_data_dir / "audit.jsonl").read_text().splitlines()]
    assert (line["drill"], line["drill_id"], line["event"]) == (True, drill_id, "probe")


async def test_no_game_day_no_banner_no_timeline(bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app)
        assert banner(app) == "" and app.timeline is None
        await pilot.press("ctrl+g")
        await settle(pilot, app)
        assert not (bundled_data_dir / "drills").exists()


async def test_ctrl_o_exports_the_briefing_with_every_citation(bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app)
        await pilot.press("ctrl+o")
        await settle(pilot, app)
        (written,) = (bundled_data_dir / "exports").glob("briefing-*.md")
        markdown = written.read_text(encoding="utf-8")
        assert app.state.shown is not None
        briefing = app.state.shown.briefing
        cited = {w.action_id for w in briefing.warnings} | {
            e.action_id for r in briefing.recommendations for e in r.evidence}
        assert cited and all(f"`{c}`" in markdown for c in cited)
        assert app.clipboard == markdown


async def test_with_drills_included_the_sidebar_marks_them(tmp_path: Path,
                                                           bundled_data_dir: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    text = incidents.read_text(encoding="utf-8").replace(
        "- id: INC-2041\n", "- id: INC-2041\n  drill: true\n", 1)
    incidents.write_text(text, encoding="utf-8")
    for include in (False, True):
        app = TriageApp(Settings(incidents_path=incidents, data_dir=bundled_data_dir,
                                 include_drills=include))
        async with app.run_test(size=SIZE) as pilot:
            await brief(pilot, app)
            sidebar = app.screen.query_one(RecalledSidebar)
            lines = [str(sidebar.get_option_at_index(i).prompt)
                     for i in range(sidebar.option_count)]
            drilled = [line for line in lines if line.startswith("INC-2041/")]
            assert bool(drilled) is include
            assert all("◆ drill" in line for line in drilled)
