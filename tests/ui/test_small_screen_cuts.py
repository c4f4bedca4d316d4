"""Nothing cut at 80×24 (the help overlay, the status line, the key footer, the postmortem form's
labels), and two small traps: a postmortem's start time, a payload's real alert-group count.

Read off the screen as the terminal shows it (the SVG picture, as tests/ui/test_small_terminal.py
does), driven by keys through Pilot on the bundled memory.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from textual.widgets import Input

from console.engine.briefing.models import AlertGroup
from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.help import HelpScreen
from console.ui.screens.postmortem import PostmortemScreen, alert_started_at
from console.ui.widgets.batch_list import batch_title, left_out
from tests.batches import alert_item, webhook
from tests.conftest import BUNDLED_INCIDENTS, TEST_NOW
from tests.ui.driving import brief, settle
from tests.ui.test_small_terminal import screen_lines

SMALL = (80, 24)
LARGE = (120, 40)
CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"


def make_app(data_dir: Path, incidents: Path = BUNDLED_INCIDENTS) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=data_dir))


# --- 80×24: nothing cut ------------------------------------------------------------------------

async def test_help_wraps_at_80_columns(bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        dialog = app.screen.query_one("#dialog-scroll")
        assert dialog.region.right <= SMALL[0]  # the whole box on screen, its border too
        text = "\n".join(screen_lines(app))
        # The ends of the first entries, cut at the edge before ("…JSON line), En").
        assert "Enter to brief." in text
        assert "the stored text of the action it cites." in text


async def test_status_line_fits_80_columns_saying_the_model_first_in_few_words(
        bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot, app)
        status = screen_lines(app)[0].strip()
        assert "…" not in status
        assert "no model (deterministic)" in status and "58 incidents" in status
        await brief(pilot, app, CHECKOUT)
        status = screen_lines(app)[0].strip()
        assert "…" not in status and "no model" in status
    async with make_app(bundled_data_dir).run_test(size=LARGE) as pilot:
        await settle(pilot, pilot.app)
        status = screen_lines(pilot.app)[0]
        assert "memory 58 incidents / 187 actions" in status
        assert "model not configured (deterministic)" in status


@pytest.mark.parametrize("size", [SMALL, LARGE])
async def test_footer_keeps_quit_help_and_drill_with_no_stray_key(
        bundled_data_dir: Path, size: tuple[int, int]) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=size) as pilot:
        await brief(pilot, app, CHECKOUT)
        footer = screen_lines(app)[-1]
        for key in ("^q Quit", "f1 Help", "f7 Drill", "f6 Verify", "^r Postmortem"):
            assert key in footer, (key, footer)
        assert footer.rstrip().endswith("^p palette")  # nothing showing through after it
        # Each key is whole (a caret starts "^x Name"): none runs under the palette key.
        assert all(re.match(r"\^[a-z] \w", footer[i:]) for i, c in enumerate(footer) if c == "^")


async def test_postmortem_form_labels_are_whole_at_80_columns(bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir)
    async with app.run_test(size=SMALL) as pilot:
        await brief(pilot, app, CHECKOUT)
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen)
        text = "\n".join(screen_lines(app))
        assert f"Started at {TEST_NOW}" in text
        assert "▐X▌ why is confirmed (Space toggles)" in text
        assert "outcome  r/m/n/w or Enter" in text
        assert "Severity SEV1…SEV4" in text
        # Its footer: the keys that fit, each whole — Save, Reload, Cancel, Quit and Help stay.
        footer = screen_lines(app)[-1]
        for key in ("^s Save", "^l Reload", "esc Cancel", "^q Quit", "f1 Help"):
            assert key in footer, (key, footer)
        assert footer.rstrip().endswith("^p palette")
        assert all(re.match(r"\^[a-z] \w", footer[i:]) for i, c in enumerate(footer) if c == "^")


# --- a postmortem's start -------------------------------------------------------------------------

@pytest.fixture
def incidents(tmp_path: Path) -> Path:
    copy = tmp_path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, copy)
    return copy


async def test_a_postmortem_starts_at_now_when_the_alert_gives_no_time(
        incidents: Path, bundled_data_dir: Path) -> None:
    app = make_app(bundled_data_dir, incidents)
    async with app.run_test(size=LARGE) as pilot:
        await brief(pilot, app, CHECKOUT)
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, PostmortemScreen)
        assert screen.query_one("#pm-started-at", Input).value == TEST_NOW
        assert "started at (now: the alert gives no time)" in str(
            screen.query_one("#pm-heading").render())
        incident, errors = screen.form.check()
        assert errors.keys() <= {"pm-action-1-action", "pm-action-1-outcome",
                                 "pm-action-1-explanation"}


async def test_a_postmortem_starts_when_the_alert_fired(incidents: Path,
                                                        bundled_data_dir: Path) -> None:
    payload = webhook(alert_item({"alertname": "CheckoutLatency", "service": "checkout-service",
                                  "severity": "critical"},
                                 {"summary": "checkout-service p99 latency up, intermittent "
                                             "database connection errors"}))
    app = make_app(bundled_data_dir, incidents)
    async with app.run_test(size=LARGE) as pilot:
        await brief(pilot, app, payload)
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen)
        # tests/batches.py: every alert item startsAt 2026-03-14T02:05:00Z.
        assert app.screen.query_one("#pm-started-at", Input).value == "2026-03-14T02:05:00Z"
        await pilot.press("shift+tab")  # into the start time: editable, typing replaces it
        await pilot.press(*"2026-03-14T01:50:00Z")
        assert app.screen.query_one("#pm-started-at", Input).value == "2026-03-14T01:50:00Z"


@pytest.mark.parametrize(("raw", "started"), [
    ("plain text alert", None),
    ('{"alerts": [{"status": "firing", "startsAt": "2026-03-14T02:09:00+01:00"},'
     ' {"status": "firing", "startsAt": "2026-03-14T01:05:00Z"},'
     ' {"status": "resolved", "startsAt": "2026-03-13T00:00:00Z"}]}', "2026-03-14T01:05:00Z"),
    ('{"alerts": [{"startsAt": "0001-01-01T00:00:00Z"}]}', None),
    ('{"payload": {"summary": "x", "timestamp": "2026-05-01T10:00:00.123Z"}}',
     "2026-05-01T10:00:00Z"),
    ('{"event": {"occurred_at": "2026-05-01T10:00:00Z"}}', "2026-05-01T10:00:00Z"),
    ('{"alert": {"createdAt": 1777629600000}}', "2026-05-01T10:00:00Z"),
    ('{"alerts": [{"startsAt": "2026-03-14T02:05:00"}]}', None),  # no zone: not guessed
])
def test_when_an_alert_says_it_started(raw: str, started: str | None) -> None:
    assert alert_started_at(raw) == started


# --- a payload's real alert-group count --------------------------------------------------------

async def test_alert_groups_title_says_how_many_the_payload_held(bundled_data_dir: Path) -> None:
    sixty = webhook(*(alert_item({"alertname": f"Thing{n}Broke", "service": f"svc-{n}",
                                  "severity": "warning"}, {"summary": f"thing {n} broke"})
                      for n in range(60)))
    app = make_app(bundled_data_dir)
    async with app.run_test(size=LARGE) as pilot:
        await brief(pilot, app, sixty)
        text = "\n".join(screen_lines(app))
        assert "Alert groups (50 shown of 60 groups, 50 of 60 alerts" in text
        assert "50 of 50" not in text


def test_the_title_of_a_payload_listed_whole() -> None:
    groups = [AlertGroup(key=str(n), alerts=n * 10, alert="x", state="unproven")
              for n in (1, 2)]
    assert batch_title(groups).startswith("Alert groups (2 groups of 30 alerts, each recalled")
    assert left_out(["3 resolved alert(s) left out: only the 2 firing alert(s) were searched"]) \
        == (0, 0)
