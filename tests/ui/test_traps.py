"""The main screen's small traps (issue 23), driven by keys at 120x40 and 80x24: the about-to-do
line typed blind under the footer, toasts over the confidence panel, keys that said nothing
(F5, F8 without alert groups, e without a recalled record), and a game day that Ctrl+G did not
end (the DRILL banner stayed, a second Ctrl+G recorded a second resolution)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input
from textual.widgets._toast import Toast

from console.engine.config import Settings
from console.engine.practice.gameday import EventKind, Timeline
from console.ui.app import TriageApp
from console.ui.screens.help import HelpScreen
from console.ui.screens.main import MainScreen
from console.ui.screens.postmortem import PostmortemScreen
from console.ui.widgets.briefing_pane import BriefingPane
from console.ui.widgets.confidence_panel import ConfidencePanel
from console.ui.widgets.key_footer import KeyFooter
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.tripwire_line import TripwireLine
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import type_text

SIZES = [pytest.param((120, 40), id="120x40"), pytest.param((80, 24), id="80x24")]
PAYMENTS = "payments-api 5xx error rate above 5% after deploy"
WORSENED = "restart all payments-api pods at once"  # INC-2041/A1, recorded as WORSENED


def make_app(data_dir: Path, incidents: Path = BUNDLED_INCIDENTS, **changes: bool) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=data_dir, **changes))


async def settle(pilot: Pilot[None]) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def brief(pilot: Pilot[None], alert: str = PAYMENTS) -> None:
    await settle(pilot)
    pilot.app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("f2", "enter")
    await settle(pilot)


def toasts(app: TriageApp) -> list[Toast]:
    """The notifications a user sees on the screen now (shown, not merely queued)."""
    return [toast for toast in app.screen.query(Toast)
            if toast.display and toast.parent is not None and toast.parent.display
            and toast.region.area]


def toast_texts(app: TriageApp) -> list[str]:
    return [str(toast.render()) for toast in toasts(app)]


def on_top(app: TriageApp, widget: Widget) -> bool:
    """Every cell of ``widget`` is what the screen shows there (nothing drawn over it)."""
    region = widget.region
    return bool(region.area) and all(
        app.screen.get_widget_at(x, y)[0] in (widget, *widget.query("*"))
        for y in range(region.y, region.bottom) for x in range(region.x, region.right))


# --- 1. the about-to-do line is visible, and focused, once Ctrl+T opens it ---------------


@pytest.mark.parametrize("size", SIZES)
async def test_ctrl_t_shows_the_about_to_do_line_focused_above_the_footer(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size) as pilot:
        await brief(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        line = app.screen.query_one(TripwireLine)
        assert app.focused is line.input
        # The row is on screen, drawn over by nothing (it used to sit under the key footer).
        assert on_top(app, line.input), (line.input.region, app.screen.query_one(KeyFooter).region)
        assert not line.region.overlaps(app.screen.query_one(KeyFooter).region)
        assert line.region.bottom <= size[1]

        await type_text(pilot, WORSENED)
        await pilot.pause(0.4)  # the check runs once typing pauses
        await settle(pilot)
        assert [hit.action_id for hit in line.hits][:1] == ["INC-2041/A1"]
        warning = line.query_one("#tripwire-warning")
        assert on_top(app, line.input) and on_top(app, warning)  # what was typed, and its warning

        await pilot.press("enter")  # noted: the line stays open and focused for the next one
        await settle(pilot)
        assert app.state.noted[-1][0] == WORSENED
        assert app.focused is line.input and on_top(app, line.input)


@pytest.mark.parametrize("size", SIZES)
async def test_the_about_to_do_line_folds_away_when_left_empty(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size) as pilot:
        await brief(pilot)
        line = app.screen.query_one(TripwireLine)
        panes = app.screen.query_one("#panes").region
        assert not line.region.area  # not in use: the panes keep the row
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert app.screen.query_one("#panes").region.height == panes.height - 1
        await pilot.press("f2")
        await settle(pilot)
        assert not line.region.area and app.screen.query_one("#panes").region == panes
        # Left holding text, it stays where it can be read.
        await pilot.press("ctrl+t")
        await type_text(pilot, "drain node 3")
        await pilot.press("f3")
        await settle(pilot)
        assert on_top(app, line.input)


# --- 2. notifications cover none of the panes -------------------------------------------


def read_regions(app: TriageApp) -> dict[str, Region]:
    """What an engineer reads: the briefing's and the sidebar's insides, the confidence panel,
    the about-to-do line."""
    screen = app.screen
    regions = {"briefing": screen.query_one(BriefingPane).content_region,
               "confidence": screen.query_one(ConfidencePanel).region,
               "tripwire": screen.query_one(TripwireLine).region}
    sidebar = screen.query_one(RecalledSidebar)
    if sidebar.display and sidebar.region.area:
        regions["recalled"] = sidebar.content_region
    return regions


@pytest.mark.parametrize("size", SIZES)
async def test_toasts_cover_neither_the_briefing_nor_the_confidence_panel(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size, notifications=True) as pilot:
        await brief(pilot)
        await pilot.press("ctrl+t")
        await type_text(pilot, WORSENED)
        await pilot.pause(0.4)
        await settle(pilot)
        await pilot.press("enter")  # "Noted: …"
        await settle(pilot)
        assert [t for t in toast_texts(app) if "Noted: " + WORSENED in t]
        assert_nothing_read_is_covered(app)
        await pilot.press("f3", "ctrl+o")  # "Briefing written to …", while "Noted" is shown
        await settle(pilot)
        assert_nothing_read_is_covered(app)
        # One at a time, the newest: stacked, two reached down into the briefing.
        texts = toast_texts(app)
        assert len(texts) == 1 and "Briefing written to" in texts[0], texts


def assert_nothing_read_is_covered(app: TriageApp) -> None:
    shown, regions = toasts(app), read_regions(app)
    assert shown and regions["briefing"].area and regions["confidence"].area
    for toast in shown:
        for name, region in regions.items():
            assert not toast.region.overlaps(region), (name, toast.region, region)


# --- 3. keys that had nothing to do say so ----------------------------------------------


@pytest.mark.parametrize("size", SIZES)
async def test_f5_says_the_memory_was_reloaded_and_how_big_it_is(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        app.clear_notifications()  # (what the first load said)
        await pilot.press("f5")
        await settle(pilot)
        status = app.state.memory_status
        assert status is not None
        said = [t for t in toast_texts(app) if "Memory reloaded" in t]
        assert said and f"{status.incidents} incidents" in said[0], toast_texts(app)


@pytest.mark.parametrize("size", SIZES)
async def test_f8_without_alert_groups_says_there_are_none(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size, notifications=True) as pilot:
        await brief(pilot)  # one alert: no groups
        shown = app.state.shown
        await pilot.press("f3", "f8")
        await settle(pilot)
        said = [t for t in toast_texts(app) if "No alert groups" in t]
        assert said and "Alertmanager payload with several alerts" in said[0], toast_texts(app)
        assert app.state.shown is shown and app.state.request is None  # nothing else happened


@pytest.mark.parametrize("size", SIZES)
async def test_e_on_an_empty_sidebar_says_there_is_no_record_to_edit(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("f4")  # the recalled memory, empty before any briefing
        await settle(pilot)
        assert isinstance(app.focused, RecalledSidebar) and not app.focused.records
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert [t for t in toast_texts(app) if "No recalled incident to edit yet" in t], \
            toast_texts(app)


@pytest.mark.parametrize("size", SIZES)
async def test_e_away_from_the_sidebar_says_how_to_pick_a_record(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size, notifications=True) as pilot:
        await brief(pilot)
        await pilot.press("f3", "e")  # the briefing focused: no record highlighted
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert [t for t in toast_texts(app) if "F4" in t and "highlighted" in t], toast_texts(app)
        # On a highlighted record, e still opens its incident.
        await pilot.press("f4", "down", "up")
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, PostmortemScreen)


# --- 4. Ctrl+G ends the game day once ---------------------------------------------------


def banners(app: TriageApp) -> int:
    return len(app.screen.query(".drill-banner"))


@pytest.mark.parametrize("size", SIZES)
async def test_ctrl_g_ends_the_drill_once_and_takes_the_banner_away(
        tmp_path: Path, bundled_data_dir: Path, size: tuple[int, int]) -> None:
    incidents = tmp_path / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    app = make_app(bundled_data_dir, incidents, game_day=True)
    async with app.run_test(size=size, notifications=True) as pilot:
        await brief(pilot)
        assert app.timeline is not None and banners(app) == 1
        timeline = app.timeline
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert banners(app) == 0
        report = timeline.path.with_suffix(".md")
        written = report.read_text(encoding="utf-8")
        assert written.count("**resolution**") == 1
        await pilot.press("f1")  # a screen opened after the end carries no banner either
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen) and banners(app) == 0
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press("ctrl+g")
        await settle(pilot)
        said = [t for t in toast_texts(app) if "already over" in t]
        assert said and str(report) in said[0].replace("\n", ""), toast_texts(app)
        kinds = [json.loads(line)["kind"] for line in
                 timeline.path.read_text(encoding="utf-8").splitlines()]
        assert kinds.count(EventKind.RESOLUTION.value) == 1
        assert report.read_text(encoding="utf-8") == written  # the report is not written again
        assert banners(app) == 0


def test_two_consoles_on_one_drill_record_one_resolution(tmp_path: Path) -> None:
    first = Timeline.start(tmp_path, "gd-1")
    second = Timeline(first.path)
    first.alert_received("checkout p99 up")
    assert first.ended is None
    ended = first.resolution("back to normal")
    assert ended is not None and second.ended == ended
    assert second.resolution("ended from the other console") is None
    assert [e.kind for e in first.events] == [EventKind.ALERT_RECEIVED, EventKind.RESOLUTION]


@pytest.mark.parametrize("size", SIZES)
async def test_ctrl_t_before_a_briefing_says_there_is_nothing_to_check_against(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        line = app.screen.query_one(TripwireLine)
        assert app.focused is line.input and on_top(app, line.input)
        assert "no briefing yet" in line.input.placeholder
        await brief(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert "warned if it made things worse" in line.input.placeholder
