"""Runbooks in the console (issue 24, item 2): a briefed Alertmanager page shows its runbook in
the briefing pane; Ctrl+R offers it pre-filled in the postmortem form, whose save records it
as the incident's ``runbook`` — kept on reload, shown when the incident is edited, and shown
as the runbook used last time when the same page comes again. Driven by keys, on a real
incidents file and index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.postmortem import PostmortemScreen, runbook_from_alert
from tests.ui.driving import brief, settle

REPO = Path(__file__).resolve().parents[2]
PAYLOADS = REPO / "tests" / "data" / "payloads"
RUNBOOK = "https://runbooks.example.internal/payments-api/5xx"
SIZE = (120, 40)


def page() -> str:
    """The fixture's Alertmanager webhook, its firing alerts only, on one line (as the alert
    box holds it)."""
    payload = json.loads((PAYLOADS / "alertmanager.json").read_text(encoding="utf-8"))
    payload["alerts"] = [a for a in payload["alerts"] if a["status"] == "firing"]
    return json.dumps(payload)


def make_app(tmp_path: Path, bundled_index_dir: Path) -> tuple[TriageApp, Path]:
    incidents = tmp_path / "incidents.yaml"
    shutil.copyfile(REPO / "incidents.yaml", incidents)
    shutil.copytree(bundled_index_dir, tmp_path / "data")
    return TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data")), incidents


def pane_text(app: TriageApp) -> str:
    return "\n".join(str(part.content)
                     for part in app.screen.query("BriefingPane Static").results(Static))


def value_of(app: TriageApp, selector: str) -> str:
    return app.screen.query_one(selector, Input).value


def text_of(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


async def open_postmortem(pilot: object, app: TriageApp) -> PostmortemScreen:
    await pilot.press("ctrl+r")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    screen = app.screen
    assert isinstance(screen, PostmortemScreen)
    return screen


async def test_the_runbook_is_briefed_recorded_kept_and_offered_next_time(
        tmp_path: Path, bundled_index_dir: Path) -> None:
    app, incidents = make_app(tmp_path, bundled_index_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, page())
        shown = pane_text(app)
        assert f"Runbook: {RUNBOOK}" in shown
        assert shown.index("Runbook:") < shown.index("⚠")  # above the warnings

        screen = await open_postmortem(pilot, app)
        assert value_of(app, "#pm-runbook") == RUNBOOK
        assert "runbook" in text_of(app, "#pm-heading")  # said to be pre-filled: check it
        new_id = value_of(app, "#pm-id")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen), text_of(app, "#pm-problems")
        del screen

        block = incidents.read_text(encoding="utf-8").split(f"- id: {new_id}")[1]
        assert f"runbook: {RUNBOOK}" in block
        saved = {i["id"]: i for i in yaml.safe_load(incidents.read_text(encoding="utf-8"))}
        assert saved[new_id]["runbook"] == RUNBOOK

        await pilot.press("f5")  # reload the memory from the file
        await settle(pilot, app)
        stored = app.engine.incident(new_id)
        assert stored is not None and stored.runbook == RUNBOOK

        # The same page again: the incident just recorded is recalled with its runbook.
        await brief(pilot, app, page())
        assert f"Runbook (used last time too, {new_id}): {RUNBOOK}" in pane_text(app)

        # Editing it shows the runbook it recorded.
        app.push_screen(PostmortemScreen(app.engine, editing=stored))
        await pilot.pause()
        assert value_of(app, "#pm-runbook") == RUNBOOK
        assert "Edit incident" in text_of(app, "#pm-heading")


async def test_an_empty_runbook_saves_none_and_a_bad_one_is_a_field_error(
        tmp_path: Path, bundled_index_dir: Path) -> None:
    app, incidents = make_app(tmp_path, bundled_index_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await brief(pilot, app, "payments-api 5xx error rate above 5% after deploy")
        assert "Runbook" not in pane_text(app)  # plain text names no runbook
        await open_postmortem(pilot, app)
        assert value_of(app, "#pm-runbook") == ""
        original = incidents.read_bytes()

        field = app.screen.query_one("#pm-runbook", Input)
        for bad, says in (("https://a.example/one\nhttps://b.example/two", "one line"),
                          ("https://rb.example/" + "x" * 2100, "2000")):
            field.value = bad
            await pilot.press("ctrl+s")
            await settle(pilot, app)
            assert isinstance(app.screen, PostmortemScreen)
            assert says in text_of(app, "#pm-runbook-error")
            problems = text_of(app, "#pm-problems")
            assert "Not saved" in problems and "Runbook: " in problems
            assert incidents.read_bytes() == original

        field.value = "   "  # blank: no runbook at all
        new_id = value_of(app, "#pm-id")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen), text_of(app, "#pm-problems")
    block = incidents.read_text(encoding="utf-8").split(f"- id: {new_id}")[1]
    assert "runbook" not in block
    assert "runbook" not in next(i for i in yaml.safe_load(incidents.read_text(encoding="utf-8"))
                                 if i["id"] == new_id)


def test_the_runbook_prefill_is_the_briefed_groups_and_nothing_from_an_unreadable_alert(
        ) -> None:
    payload = json.loads(page())
    other = json.loads(json.dumps(payload["alerts"][0]))
    other["labels"].update(alertname="LedgerLag", service="ledger-recon")
    other["annotations"] = {"summary": "ledger lag above 10 minutes",
                            "runbook_url": "https://runbooks.example.internal/ledger/lag"}
    other["fingerprint"] = "ffff000011112222"
    payload["alerts"].append(other)
    raw = json.dumps(payload)
    from console.engine.briefing.alert import parse_alert

    groups = parse_alert(raw).groups
    assert len(groups) == 2
    by_url = {runbook_from_alert(g.text, raw) for g in groups}
    assert by_url == {RUNBOOK, "https://runbooks.example.internal/ledger/lag"}
    assert runbook_from_alert(page()) == RUNBOOK
    assert runbook_from_alert('{"alerts": []}') == ""  # refused payload: no prefill
    assert runbook_from_alert("payments-api down, see runbook") == ""
