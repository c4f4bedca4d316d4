"""The console in a split pane (80×24), driven by keys through Pilot on the bundled memory.

At 80×24 the state, the first warning and the lead fix are on screen without scrolling: the
banners are one status line, the recalled sidebar folds away below SIDEBAR_MIN_WIDTH columns
(F10 toggles it) and the confidence panel keeps to its first line until focused.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Input

from console.engine.briefing.confidence import confidence_words
from console.engine.briefing.models import Briefing
from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.main import SIDEBAR_MIN_WIDTH, MainScreen
from console.ui.widgets.briefing_pane import BriefingPane
from console.ui.widgets.confidence_panel import DETAILS_HINT, FOLDED_HINT, ConfidencePanel
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.verification_panel import VerificationPanel
from tests.conftest import BUNDLED_INCIDENTS

SMALL = (80, 24)
LARGE = (120, 40)
CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR = "payments service KeyError: 'amount' after deploy"
REPO = Path(__file__).resolve().parents[2]
CELL_WIDTH = 12.2  # pixels per terminal column in Textual's SVG export
# A run of text in the SVG picture: its column (x), its row (the clip path of its line), text.
CELL_RUN = re.compile(r'<text[^>]* x="([\d.]+)"[^>]*clip-path="url\(#terminal-\w+-line-(\d+)\)"'
                      r'[^>]*>(.*?)</text>')


def make_app(data_dir: Path) -> TriageApp:
    return TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir))


async def settle(pilot: Pilot[None], app: TriageApp) -> None:
    for _ in range(3):
        await pilot.pause()
        await app.workers.wait_for_complete()
    await pilot.pause()


async def brief(pilot: Pilot[None], app: TriageApp, alert: str) -> Briefing:
    """Type the alert as a user would (F2, the text, Enter) and return the briefing shown."""
    await settle(pilot, app)
    await pilot.press("f2")
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")
    await settle(pilot, app)
    assert app.state.shown is not None
    return app.state.shown.briefing


def screen_lines(app: TriageApp) -> list[str]:
    """The terminal's rows as text, read from the screen's SVG picture (each run of text sits
    at its cell's column on its line; blank cells are drawn, not written)."""
    width, height = app.size
    rows: dict[int, list[str]] = defaultdict(lambda: [" "] * width)
    for x, line, text in CELL_RUN.findall(app.export_screenshot()):
        row, column = rows[int(line)], round(float(x) / CELL_WIDTH)
        for offset, char in enumerate(html.unescape(text).replace("\xa0", " ")):
            if column + offset < width:
                row[column + offset] = char
    return ["".join(rows[line]).rstrip() for line in range(height)]


def visible_text(app: TriageApp, widget: Widget) -> list[str]:
    """The rows of ``widget``'s content as the terminal shows them (scrolled-away text and
    the border are not in it)."""
    region = widget.scrollable_content_region  # without the scrollbar
    rows = screen_lines(app)[region.y:region.bottom]
    return [row[region.x:region.right].ljust(region.width).rstrip() for row in rows]


def joined(rows: list[str]) -> str:
    return " ".join(" ".join(rows).split())


def folded(rows: list[str], line: str) -> bool:
    """One row showing ``line``, cut with an ellipsis where it is wider than the panel."""
    return len(rows) == 1 and (rows[0] == line or (
        rows[0].endswith("…") and line.startswith(rows[0][:-1])))


def main(app: TriageApp) -> MainScreen:
    assert isinstance(app.screen, MainScreen)
    return app.screen


async def test_state_first_warning_and_lead_fix_are_visible_at_80x24(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        briefing = await brief(pilot, app, CHECKOUT)
        assert briefing.warnings and briefing.recommendations
        pane = main(app).query_one(BriefingPane)
        assert pane.scroll_y == 0
        rows = visible_text(app, pane)
        # One status line; the lead fix is proven on payments-api, the alert is on checkout.
        assert rows[0].startswith("SIMILAR INCIDENTS — PROVEN ON payments-api, NOT YET HERE · "
                                  "deterministic")
        shown = joined(rows)
        assert (f"⚠ (same failure, other service) "
                f"{' '.join(briefing.warnings[0].text.split())}") in shown
        lead = briefing.recommendations[0]
        assert f"~ 1. {lead.action}" in shown and "✓" not in shown
        assert "proven on payments-api, not yet on checkout-service" in shown
        assert f"{lead.evidence[0].action_id} RESOLVED" in shown
        # Why the model did not write it is the briefing's last line, said once.
        await pilot.press("f3", "end")
        await pilot.pause()
        assert "⚑ Not written by a model: no model configured (set TRIAGE_MODEL)" in joined(
            visible_text(app, pane))


async def test_no_prior_incident_at_80x24_says_so_on_its_first_line(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        await brief(pilot, app, "TLS certificate expired on internal gRPC mesh")
        rows = visible_text(app, main(app).query_one(BriefingPane))
        assert rows[0].startswith("NO PRIOR INCIDENT · deterministic")
        assert "None of the 58 incidents in memory resembles this alert" in joined(rows)
        assert "Treat it as new" in joined(rows)


async def test_the_sidebar_folds_below_its_width_and_f10_toggles_it(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        briefing = await brief(pilot, app, CHECKOUT)
        screen = main(app)
        sidebar = screen.query_one(RecalledSidebar)
        pane = screen.query_one(BriefingPane)
        assert not sidebar.display
        assert pane.outer_size.width == SMALL[0]  # the briefing has the whole width
        # What is hidden, and the key that shows it, is said under the briefing.
        assert pane.border_subtitle == f"recalled memory ({len(briefing.recalled)}): F10"

        await pilot.press("f10")
        await pilot.pause()
        assert sidebar.display and sidebar.outer_size.width >= 34
        assert f"Recalled memory ({len(briefing.recalled)})" in "\n".join(screen_lines(app))
        assert pane.border_subtitle == ""

        await pilot.press("f10")
        await pilot.pause()
        assert not sidebar.display and pane.outer_size.width == SMALL[0]

        # F4 on a narrow screen shows the sidebar it focuses.
        await pilot.press("f4")
        await pilot.pause()
        assert sidebar.display and app.focused is sidebar


async def test_the_sidebar_follows_the_width_until_f10_chooses(bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=LARGE) as pilot:
        await brief(pilot, app, CHECKOUT)
        sidebar = main(app).query_one(RecalledSidebar)
        assert sidebar.display

        await pilot.resize_terminal(SIDEBAR_MIN_WIDTH - 1, 40)
        await settle(pilot, app)
        assert not sidebar.display
        await pilot.resize_terminal(SIDEBAR_MIN_WIDTH, 40)
        await settle(pilot, app)
        assert sidebar.display

        await pilot.press("f10")  # the engineer's choice now holds at any width
        await pilot.pause()
        assert not sidebar.display
        await pilot.resize_terminal(*LARGE)
        await settle(pilot, app)
        assert not sidebar.display


async def test_the_confidence_panel_shows_its_first_line_until_focused(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        briefing = await brief(pilot, app, CHECKOUT)
        said = confidence_words(briefing.confidence, briefing.state)
        panel = main(app).query_one(ConfidencePanel)
        assert folded(visible_text(app, panel), said[0])
        assert panel.border_subtitle == FOLDED_HINT
        assert "Confidence 35" in str(panel.border_title)

        await pilot.press("f3", "tab")  # from the briefing, Tab reaches the panel
        await pilot.pause()
        assert app.focused is panel
        shown = visible_text(app, panel)
        assert joined(shown).startswith(said[0])  # wrapped in full when focused
        assert "track record:" in joined(shown)
        assert panel.border_subtitle == DETAILS_HINT

        await pilot.press("f2")  # focus elsewhere: folded again
        await pilot.pause()
        assert folded(visible_text(app, panel), said[0])
        assert panel.border_subtitle == FOLDED_HINT


async def test_at_120x40_the_confidence_panel_says_its_figure_in_words(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=LARGE) as pilot:
        briefing = await brief(pilot, app, KEYERROR)
        panel = main(app).query_one(ConfidencePanel)
        assert app.focused is not panel
        shown = joined(visible_text(app, panel))
        assert confidence_words(briefing.confidence, briefing.state)[0] in shown
        assert panel.border_subtitle == DETAILS_HINT


async def test_verification_beside_the_briefing_at_80x24(bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        await brief(pilot, app, CHECKOUT)
        screen = main(app)
        verification = screen.query_one(VerificationPanel)
        sidebar = screen.query_one(RecalledSidebar)
        pane = screen.query_one(BriefingPane)

        await pilot.press("f6")
        await settle(pilot, app)
        assert verification.display and not sidebar.display
        assert verification.outer_size.width > 0 and pane.outer_size.width > 0
        assert pane.outer_size.width + verification.outer_size.width == SMALL[0]
        assert visible_text(app, pane)[0].startswith("SIMILAR INCIDENTS — PROVEN ON")
        assert pane.border_subtitle == ""  # the verification has the sidebar's place

        await pilot.press("f10")  # the sidebar cannot take the verification's place
        await pilot.pause()
        assert verification.display and not sidebar.display

        await pilot.press("f6")
        await pilot.pause()
        assert not verification.display and not sidebar.display
        assert pane.outer_size.width == SMALL[0]


def test_first_paint_does_not_import_the_engine_or_pydantic_models_of_the_briefing() -> None:
    # The main screen imports engine types only for annotations; the engine (and the pipeline
    # it imports) is made by the memory worker, after the first paint (bench/first_paint.py).
    # The messages screens post are on that path: they name the briefing's models (pydantic)
    # only for annotations, so those stay unimported too.
    code = ("import sys, console.ui.app; print(sorted(m for m in ('console.engine.engine', "
            "'console.engine.pipeline', 'console.engine.briefing.models', "
            "'console.engine.model.client', 'console.ui.screens.postmortem') "
            "if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"
