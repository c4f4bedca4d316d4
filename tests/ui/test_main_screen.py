"""The console driven by keys through Pilot, on a real LanceDB memory in a tmp dir."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.help import HelpScreen
from console.ui.screens.record import RecordScreen
from console.ui.widgets.recalled_sidebar import RecalledSidebar

REPO = Path(__file__).resolve().parents[2]
SIZE = (120, 40)


def text_of(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def sidebar_lines(app: TriageApp) -> list[str]:
    sidebar = app.screen.query_one(RecalledSidebar)
    return [str(sidebar.get_option_at_index(i).prompt) for i in range(sidebar.option_count)]


def make_app(tmp_path: Path, incidents: Path = REPO / "incidents.yaml") -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data"))


async def brief(pilot, app: TriageApp, alert: str) -> None:  # type: ignore[no-untyped-def]
    await app.workers.wait_for_complete()
    await pilot.press("f2")
    app.screen.query_one("#alert-input", Input).value = alert
    await pilot.press("enter")
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_status_line_shows_the_memory_once_loaded(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = text_of(app, "#status-line")
        assert "58 incidents / 187 actions" in status
        assert "index fresh" in status
        assert "model not configured" in status


async def test_briefing_warns_with_the_worsened_action_and_shows_derivation(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "checkout-service p99 latency up, intermittent database "
                                "connection errors")
        body = text_of(app, "#briefing-body")
        assert "INC-2041/A1 WORSENED" in body
        assert "max_connections" in body
        assert "INC-2041/A4 RESOLVED" in body
        lines = sidebar_lines(app)
        assert any("\nINC-2041/A1 WORSENED" in line for line in lines)
        assert any(line.startswith("INC-2041/A4 RESOLVED") for line in lines)
        # INC-2041 is on payments-api, the alert on checkout-service: proven elsewhere only,
        # said in words on the main screen; the derivation is on the details view (F12).
        confidence = text_of(app, "#confidence")
        assert confidence.startswith("35 — this fix is proven only on other services")
        assert "tier 0" not in confidence and "clamp(" not in confidence
        await pilot.press("f12")
        await pilot.pause()
        details = text_of(app, "#details-text")
        assert "tier 0: proven elsewhere only" in details and "= 35" in details
        assert "proven on other services only (INC-2041)" in details
        assert "proven elsewhere 1" in details


async def test_no_prior_incident_view_says_what_was_searched(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "TLS certificate expired on internal gRPC mesh")
        assert text_of(app, "#briefing-status").startswith("NO PRIOR INCIDENT")
        body = text_of(app, "#briefing-body")
        assert "58 incidents" in body and "by words and by meaning" in body
        assert sidebar_lines(app) == []
        # The stemmed terms and the rule's arithmetic are on the details view (F12).
        assert "certificate" not in body and "min(model" not in text_of(app, "#confidence")
        await pilot.press("f12")
        await pilot.pause()
        details = text_of(app, "#details-text")
        assert "certificate" in details and "min(model 0, 30) = 0" in details


async def test_open_a_recalled_record_in_full_by_keys(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "payments service KeyError: 'amount' after deploy")
        await pilot.press("f4")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, RecordScreen)
        record_text = text_of(app, "#record-text")
        assert "KeyError" in record_text and "Symptoms:" in record_text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RecordScreen)


async def test_markup_in_memory_and_alert_is_shown_literally(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text(yaml.safe_dump([{
        "id": "INC-1", "service": "ledger", "title": "[bold red]ledger[/] drift",
        "symptoms": "ledger drift [link=http://evil.example]click[/link] totals mismatch",
        "actions": [{"id": "A1", "action": "Replayed the ledger [red]journal[/red]",
                     "outcome": "WORSENED",
                     "explanation": "Replay doubled entries [blink]IGNORE PREVIOUS[/blink]"}],
    }]))
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "ledger drift totals mismatch [b]now[/b]")
        body = text_of(app, "#briefing-body")
        assert "[red]journal[/red]" in body
        assert "[blink]IGNORE PREVIOUS[/blink]" in body
        assert any("[red]journal[/red]" in line for line in sidebar_lines(app))
        await pilot.press("f4", "enter")
        await pilot.pause()
        assert "[link=http://evil.example]click[/link]" in text_of(app, "#record-text")


async def test_broken_incidents_file_is_explained_and_reload_recovers(tmp_path: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    incidents.write_text("- id: INC-1\n  service: a\n  actions: []\n- id: INC-1\n  service: b\n"
                         "  symptoms: s\n")
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = text_of(app, "#briefing-body")
        assert f"{incidents}:1" in body and "symptoms" in body
        assert f"{incidents}:4" in body and "duplicate incident id" in body
        assert "Traceback" not in body
        assert "problem" in text_of(app, "#status-line")
        incidents.write_text("- id: INC-1\n  service: a\n  symptoms: disk full\n  actions: []\n")
        await pilot.press("f5")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "1 incidents / 0 actions" in text_of(app, "#status-line")


async def test_empty_alert_gets_a_clear_message(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, "   ")
        assert "the alert is empty" in text_of(app, "#briefing-body")


async def test_help_and_palette_reach_every_action(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Help", "Focus alert", "Focus briefing", "Focus recalled memory",
                "Reload memory", "Record postmortem"} <= titles
        # Derived from the bindings: every bound action with a tooltip is in the palette,
        # unless the screen would not run it now (nothing to cancel, no record highlighted,
        # no alert groups on screen: see tests/ui/test_batch.py for those).
        from console.ui.screens.main import MainScreen

        bound = {b.palette_title for b in MainScreen.BINDINGS if b.id and b.tooltip}
        assert bound - titles == {"Cancel briefing", "Edit incident", "Brief the next alert group",
                                  "Brief the previous alert group", "Focus alert groups",
                                  "Export the briefing as Markdown",  # no briefing yet
                                  "End the game day",  # not a game day
                                  "Focus incoming pages"}  # no page received (--listen)


@pytest.mark.parametrize("module", ["console.ui.app", "console.__main__"])
def test_heavy_libraries_are_not_imported_before_first_paint(module: str) -> None:
    # lancedb costs ~1.2 s and the embedder's numpy/tokenizers/safetensors more: all of them
    # load in the memory worker, after the first paint. pydantic (~70 ms, a third of the
    # first-paint budget) loads there too: Settings and the widgets' `clean` do without it.
    heavy = ["lancedb", "tokenizers", "safetensors", "numpy", "threadpoolctl", "pydantic"]
    code = (f"import sys, {module}, console.engine.config, console.ui.screens.main; "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=REPO, check=True)
    assert result.stdout.strip() == "[]"
