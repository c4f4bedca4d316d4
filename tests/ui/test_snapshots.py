"""Pictures of each state a user can meet, so a rendering regression shows as an SVG diff.

Baselines live in tests/ui/__snapshots__/; after an intended change run
`.venv/bin/python -m pytest tests/ui/test_snapshots.py --snapshot-update`, look at the new
pictures, and commit them on their own with the reason. The states are deterministic: the
memory's index is prebuilt (no "built" notice), the model host is a fixed closed port, and no
elapsed time is on screen once a briefing has landed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief_and_wait

SIZE = (120, 40)
SMALL = (80, 24)  # a split pane on a laptop: the sidebar folded, the confidence on one line
CLOSED_PORT = "http://127.0.0.1:9"  # the discard port: nothing listens on it here


def app_for(data_dir: Path, incidents: Path = BUNDLED_INCIDENTS, **settings: Any) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=data_dir, **settings))


def briefed(alert: str) -> Any:
    async def run_before(pilot: Any) -> None:
        # A blinking cursor is drawn or not by the clock: a loaded machine flipped it (seen on
        # test_similar_but_unproven). The pictures are of a steady cursor.
        pilot.app.screen.query_one("#alert-input", Input).cursor_blink = False
        await brief_and_wait(pilot, alert)
        pilot.app.clear_notifications()
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("name, alert", [
    ("proven", "payments service KeyError: 'amount' after deploy"),
    ("proven_with_warning", "checkout-service p99 latency up, intermittent database "
                            "connection errors"),
    ("no_prior_incident", "TLS certificate expired on internal gRPC mesh"),
], ids=lambda value: value if " " not in value else "")
def test_main_screen_states(name: str, alert: str, snap_compare: Any,
                            bundled_data_dir: Path) -> None:
    assert snap_compare(app_for(bundled_data_dir), terminal_size=SIZE, run_before=briefed(alert))


@pytest.mark.parametrize("name, alert", [
    ("proven", "payments service KeyError: 'amount' after deploy"),
    ("proven_with_warning", "checkout-service p99 latency up, intermittent database "
                            "connection errors"),
    ("no_prior_incident", "TLS certificate expired on internal gRPC mesh"),
], ids=lambda value: value if " " not in value else "")
def test_main_screen_states_at_80x24(name: str, alert: str, snap_compare: Any,
                                     bundled_data_dir: Path) -> None:
    assert snap_compare(app_for(bundled_data_dir), terminal_size=SMALL, run_before=briefed(alert))


def test_sidebar_and_confidence_unfolded_by_keys_at_80x24(snap_compare: Any,
                                                          bundled_data_dir: Path) -> None:
    alert = "checkout-service p99 latency up, intermittent database connection errors"

    async def unfold(pilot: Any) -> None:
        await briefed(alert)(pilot)
        await pilot.press("f10", "f3", "tab")  # the sidebar shown, the confidence focused
        await pilot.pause()

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SMALL, run_before=unfold)


def test_verification_beside_the_briefing_at_80x24(snap_compare: Any,
                                                   bundled_data_dir: Path) -> None:
    alert = ("statement timeout errors: queries timing out after 30s, canceling statement due "
             "to statement timeout (service ledger-api)")

    async def verify(pilot: Any) -> None:
        await briefed(alert)(pilot)
        await pilot.press("f6")
        for _ in range(3):
            await pilot.app.workers.wait_for_complete()
            await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SMALL, run_before=verify)


def test_similar_but_unproven(snap_compare: Any, tmp_path: Path, write_incidents: Any,
                              incident: Any) -> None:
    path = write_incidents([
        incident("INC-7", service="search-api", title="Search shards unassigned after node loss",
                 symptoms="Cluster health red, 20% of search queries failing with shard errors "
                          "after a data node disappeared",
                 actions=[{"id": "A1", "action": "Restarted the search coordinator",
                           "outcome": "NO_EFFECT", "explanation": "Shards stayed unassigned"}]),
        incident("INC-8", service="billing", title="Invoice PDFs blank", actions=[],
                 symptoms="Invoice PDFs rendered with empty totals"),
    ])
    app = app_for(tmp_path / "data", incidents=path)
    assert snap_compare(app, terminal_size=SIZE, run_before=briefed(
        "search cluster went red after we lost a data node; queries failing with shard failures"))


def test_model_offline_deterministic_briefing(snap_compare: Any, bundled_data_dir: Path) -> None:
    app = app_for(bundled_data_dir, ollama_host=CLOSED_PORT, model="qwen2.5:7b",
                  model_timeout=2.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=briefed(
        "checkout-service p99 latency up, intermittent database connection errors"))


def test_bad_incidents_file(snap_compare: Any, tmp_path: Path,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the problems name the file: keep the picture free of tmp paths
    broken = Path("incidents.yaml")
    broken.write_text("- id: INC-1\n  service: api\n- id: INC-1\n  symptoms: twice\n"
                      "  service: api\n  actions:\n    - {id: A1, action: x, outcome: MAYBE}\n",
                      encoding="utf-8")

    async def loaded(pilot: Any) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(app_for(tmp_path / "data", incidents=broken), terminal_size=SIZE,
                        run_before=loaded)


def test_postmortem_form_prefilled_from_the_alert(snap_compare: Any,
                                                  bundled_data_dir: Path) -> None:
    alert = "payments-api p99 latency up, DB connection pool exhausted"

    async def open_form(pilot: Any) -> None:
        await briefed(alert)(pilot)
        await pilot.press("ctrl+r")
        for _ in range(500):  # bounded: the form is up and filled, however loaded the machine
            await pilot.pause()
            if pilot.app.screen.query(Input):
                break
        for field in pilot.app.screen.query(Input):
            field.cursor_blink = False  # (a blinking cursor is drawn or not by the clock)
        await pilot.pause()
        await pilot.pause()

    assert snap_compare(app_for(bundled_data_dir), terminal_size=SIZE, run_before=open_form)
