"""Actions noted on the "about to do…" line belong to the alert they were noted under: they come
along into that alert's postmortem (labelled as noted, their outcome left for the engineer to
set), not into another alert's, and a saved postmortem takes them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from textual.pilot import Pilot
from textual.widgets import Select, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.postmortem import PostmortemScreen
from console.ui.widgets.action_row import ActionRow
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief, settle

SIZE = (120, 40)
CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
CERT = "TLS certificate expired on the internal gRPC mesh, handshakes failing"
INTENT = "restart every payments-api pod at the same time"


@pytest.fixture
def incidents(tmp_path: Path) -> Path:
    copy = tmp_path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, copy)
    return copy


def make_app(incidents: Path, data_dir: Path) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=data_dir))


async def note(pilot: Pilot[None], app: TriageApp, intent: str) -> None:
    """Ctrl+T, the action typed, Enter: noted for the postmortem."""
    await pilot.press("ctrl+t")
    await pilot.press(*intent)
    await settle(pilot, app)
    await pilot.press("enter")
    await settle(pilot, app)


async def open_postmortem(pilot: Pilot[None], app: TriageApp) -> PostmortemScreen:
    await pilot.press("ctrl+r")
    await settle(pilot, app)
    assert isinstance(app.screen, PostmortemScreen)
    return app.screen


def heading(screen: PostmortemScreen) -> str:
    return str(screen.query_one("#pm-heading", Static).content)


def rows(screen: PostmortemScreen) -> list[dict[str, object]]:
    return [row.values() for row in screen.query(ActionRow)]


async def test_a_new_alert_starts_without_the_last_alerts_notes(
        incidents: Path, bundled_data_dir: Path) -> None:
    app = make_app(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, CHECKOUT)
        await note(pilot, app, INTENT)
        await brief(pilot, app, CERT)  # another incident altogether
        screen = await open_postmortem(pilot, app)
        assert [row["action"] for row in rows(screen)] == [""]  # one empty row, nothing carried
        assert "Noted" not in heading(screen) and "Carried" not in heading(screen)


async def test_briefing_the_same_alert_again_keeps_its_notes(
        incidents: Path, bundled_data_dir: Path) -> None:
    app = make_app(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, CHECKOUT)
        await note(pilot, app, INTENT)
        await brief(pilot, app, CHECKOUT)  # Enter again on the same alert (after F5, say)
        screen = await open_postmortem(pilot, app)
        assert [row["action"] for row in rows(screen)] == [INTENT]


async def test_noted_actions_are_labelled_as_noted_with_no_outcome_chosen(
        incidents: Path, bundled_data_dir: Path) -> None:
    app = make_app(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, CHECKOUT)
        await note(pilot, app, INTENT)
        screen = await open_postmortem(pilot, app)
        (row,) = rows(screen)
        assert row["action"] == INTENT and row["id"] == "A1"
        assert "outcome" not in row  # not NO_EFFECT: nothing was observed yet
        assert "Noted on the about-to-do line" in heading(screen)
        assert "Carried from the verification" not in heading(screen)
        await pilot.press("ctrl+s")  # saving asks for the outcome the engineer saw
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen)
        assert "outcome" in str(screen.query_one("#pm-problems", Static).content)


async def test_a_saved_postmortem_takes_the_notes(incidents: Path,
                                                 bundled_data_dir: Path) -> None:
    app = make_app(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, CHECKOUT)
        await note(pilot, app, INTENT)
        screen = await open_postmortem(pilot, app)
        (row,) = screen.query(ActionRow)
        screen.query_one(f"#{row.field_id('outcome')}", Select).focus()
        await pilot.press("w")  # it made things worse
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen)
        saved = yaml.safe_load(incidents.read_text(encoding="utf-8"))[-1]
        assert [(a["action"], a["outcome"]) for a in saved["actions"]] == [(INTENT, "WORSENED")]

        again = await open_postmortem(pilot, app)  # the same alert, a second postmortem
        assert [r["action"] for r in rows(again)] == [""]
        assert "Noted" not in heading(again)
