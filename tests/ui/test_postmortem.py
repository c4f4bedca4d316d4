"""The postmortem screen driven only by keys, saving into a real incidents file and LanceDB."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.pilot import Pilot
from textual.widgets import Input, Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.postmortem import PostmortemScreen, prefill_from_alert
from tests.ui.driving import type_text

REPO = Path(__file__).resolve().parents[2]
SIZE = (120, 40)


@pytest.fixture
def incidents(tmp_path: Path, bundled_index_dir: Path) -> Path:
    """A copy of the bundled incidents file, with ``make_app``'s data dir (tmp_path/data)
    holding a copy of the session's prebuilt index of it: the console opens it as fresh
    instead of embedding the whole memory again in every test (~5 s each)."""
    copy = tmp_path / "incidents.yaml"
    shutil.copyfile(REPO / "incidents.yaml", copy)
    shutil.copytree(bundled_index_dir, tmp_path / "data")
    return copy


def make_app(tmp_path: Path, incidents: Path) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=tmp_path / "data"))


def text_of(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def value_of(app: TriageApp, selector: str) -> str:
    return app.screen.query_one(selector, Input).value


def notifications(app: TriageApp) -> str:
    return "\n".join(n.message for n in app._notifications)


async def settle(pilot: Pilot[None], app: TriageApp) -> None:
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def type_in(pilot: Pilot[None], text: str) -> None:
    """Type plain text into the focused field, one Key event per character (driving.type_text)."""
    await type_text(pilot, text)


async def open_postmortem(pilot: Pilot[None], app: TriageApp) -> None:
    await settle(pilot, app)
    await pilot.press("ctrl+r")
    await pilot.pause()
    assert isinstance(app.screen, PostmortemScreen)


async def fill_incident(pilot: Pilot[None], *, title: str, service: str, symptoms: str,
                        root_cause: str = "", tags: str = "", runbook: str = "") -> None:
    """From the title field (focused on open): title, service, symptoms, root cause, tags,
    runbook."""
    for text in (title, service, symptoms, root_cause, tags, runbook):
        await type_in(pilot, text)
        await pilot.press("tab")


async def fill_action(pilot: Pilot[None], *, did: str, outcome: str, why: str,
                      kind: str = "", suspected: bool = False) -> None:
    """From a row's 'did' field: did, outcome (one letter), kind, confirmed, why."""
    await type_in(pilot, did)
    await pilot.press("tab", outcome, "tab")
    await type_in(pilot, kind)
    await pilot.press("tab")
    if suspected:
        await pilot.press("space")
    await pilot.press("tab")
    await type_in(pilot, why)


async def test_record_by_keys_then_brief_cites_it(tmp_path: Path, incidents: Path) -> None:
    original = incidents.read_bytes()
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await open_postmortem(pilot, app)
        new_id = value_of(app, "#pm-id")
        assert new_id == app.engine.suggest_incident_id()
        await fill_incident(pilot, title="Quasar ledger stalled", service="ledger-recon",
                            symptoms="quasar ledger reconciliation stalled with flux lock "
                                     "timeouts", root_cause="unknown", tags="flux, ledger")
        await pilot.press("tab")  # row id A1 → did
        await fill_action(pilot, did="Restarted the flux coordinator", outcome="w",
                          kind="restart", why="The restart dropped the flux lock lease and "
                                              "every worker retried at once")
        await pilot.press("ctrl+n")
        await pilot.pause()
        await fill_action(pilot, did="Drained the quasar queue before unlocking", outcome="r",
                          why="Draining first let the flux lock release cleanly")
        await pilot.press("ctrl+s")
        await settle(pilot, app)

        assert not isinstance(app.screen, PostmortemScreen)
        assert "59 incidents" in text_of(app, "#status-line")
        assert f"Saved {new_id} with 2 action(s)" in notifications(app)

        await pilot.press("f2")
        await type_in(pilot, "quasar ledger reconciliation stalled, flux lock timeouts")
        await pilot.press("enter")
        await settle(pilot, app)
        body = text_of(app, "#briefing-body")
        warning = next(line for line in body.splitlines() if line.startswith("⚠"))
        assert f"{new_id}/A1 WORSENED" in warning and "flux lock lease" in warning
        assert "Drained the quasar queue before unlocking" in body
        assert f"{new_id}/A2 RESOLVED" in body
        assert "59 incidents" in text_of(app, "#status-line")

    saved = incidents.read_bytes()
    assert saved.startswith(original)
    added = yaml.safe_load(saved[len(original):])
    assert added[0]["id"] == new_id and added[0]["service"] == "ledger-recon"
    assert [a["outcome"] for a in added[0]["actions"]] == ["WORSENED", "RESOLVED"]
    assert added[0]["tags"] == ["flux", "ledger"]


async def test_invalid_form_is_refused_with_reasons_and_nothing_written(
        tmp_path: Path, incidents: Path) -> None:
    original = incidents.read_bytes()
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await open_postmortem(pilot, app)
        await pilot.press("shift+tab")  # started at
        await type_in(pilot, "yesterday")
        await pilot.press("shift+tab", "shift+tab")  # incident id (its text is selected)
        await type_in(pilot, "INC-2041")
        await pilot.press("tab", "tab", "tab")  # title
        await fill_incident(pilot, title="Broken form", service="payments-api", symptoms="")
        await pilot.press("tab")  # row id → did
        await fill_action(pilot, did="Flushed the cache", outcome="n", why="Nothing changed")
        await pilot.press("ctrl+n")
        await pilot.pause()
        await type_in(pilot, "Rolled back")  # no outcome, no why
        await pilot.press("shift+tab")  # this row's id, A2 (selected)
        await type_in(pilot, "A1")
        await pilot.press("ctrl+s")
        await settle(pilot, app)

        assert isinstance(app.screen, PostmortemScreen)
        problems = text_of(app, "#pm-problems")
        assert "Not saved" in problems and "nothing was written" in problems
        assert "Symptoms: required" in problems
        assert "duplicate action id 'A1'" in problems
        assert "outcome: pick one: r/m/n/w" in problems
        assert "INC-2041 already exists in memory" in problems
        assert "not an ISO-8601 time" in problems
        assert "required" in text_of(app, "#pm-symptoms-error")
        assert "ISO-8601" in text_of(app, "#pm-started-at-error")
        assert "duplicate action id" in text_of(app, "#pm-action-2-id-error")
        assert "pick one" in text_of(app, "#pm-action-2-outcome-error")
        assert "required" in text_of(app, "#pm-action-2-explanation-error")
        assert value_of(app, "#pm-title") == "Broken form"  # nothing lost
        assert value_of(app, "#pm-action-2-action") == "Rolled back"

        # The first field in error has the focus; fixing it clears its error as you type.
        assert app.screen.focused is not None and app.screen.focused.id == "pm-id"
        await pilot.press("ctrl+a", "ctrl+k")  # start of the input, delete to the end
        await type_in(pilot, "INC-9999")
        await pilot.pause()
        assert text_of(app, "#pm-id-error") == ""
        assert "duplicate action id" in text_of(app, "#pm-action-2-id-error")
    assert incidents.read_bytes() == original


async def fill_disk_postmortem(pilot: Any, app: TriageApp) -> None:
    """Open the form and fill one incident with one action, as the save-race tests need."""
    await open_postmortem(pilot, app)
    await fill_incident(pilot, title="Disk filled", service="orders-db",
                        symptoms="orders-db volume full, writes rejected")
    await pilot.press("tab")
    await fill_action(pilot, did="Deleted old WAL segments", outcome="r",
                      why="Freed 40% of the volume")


async def test_external_edit_refuses_save_then_reload_keeps_the_form(
        tmp_path: Path, incidents: Path) -> None:
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await fill_disk_postmortem(pilot, app)
        # A teammate edits an incident this console loaded: saving over it is refused (an
        # append onto a file that only gained incidents or comments is not: test_concurrent_saves).
        incidents.write_text(incidents.read_text(encoding="utf-8").replace(
            "title: Inventory feed lag during warehouse cycle count",
            "title: Inventory feed lag during the warehouse cycle count"), encoding="utf-8")
        edited = incidents.read_bytes()

        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen)
        problems = text_of(app, "#pm-problems")
        assert "changed on disk" in problems and "ctrl+l" in problems
        assert incidents.read_bytes() == edited
        assert value_of(app, "#pm-symptoms") == "orders-db volume full, writes rejected"

        await pilot.press("ctrl+l")
        await settle(pilot, app)
        assert "Memory reloaded" in text_of(app, "#pm-problems")
        assert value_of(app, "#pm-title") == "Disk filled"
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen)
        assert "59 incidents" in text_of(app, "#status-line")
    assert incidents.read_bytes().startswith(edited)


async def test_a_comment_added_meanwhile_does_not_block_a_new_postmortem(
        tmp_path: Path, incidents: Path) -> None:
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await fill_disk_postmortem(pilot, app)
        with incidents.open("a", encoding="utf-8") as file:
            file.write("# reviewed by a teammate while the console was open\n")
        edited = incidents.read_bytes()
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen)
        assert "59 incidents" in text_of(app, "#status-line")
    assert incidents.read_bytes().startswith(edited)
    assert b"Deleted old WAL segments" in incidents.read_bytes()


async def test_secret_in_symptoms_is_redacted_and_reported(tmp_path: Path,
                                                           incidents: Path) -> None:
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await open_postmortem(pilot, app)
        new_id = value_of(app, "#pm-id")
        await fill_incident(pilot, title="Leaked creds", service="auth-service",
                            symptoms="login failures; logs showed password=hunter2xyz in clear")
        await pilot.press("tab")
        await fill_action(pilot, did="Rotated the password", outcome="r", why="Old one leaked",
                          suspected=True)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen)
        assert "redacted before saving: secret-value in symptoms" in notifications(app)
    text = incidents.read_text(encoding="utf-8")
    assert "hunter2xyz" not in text
    saved = next(i for i in yaml.safe_load(text) if i["id"] == new_id)
    assert "password=[REDACTED:secret-value]" in saved["symptoms"]
    assert saved["actions"][0]["confirmed"] is False


async def test_prefill_from_the_current_alert(tmp_path: Path, incidents: Path) -> None:
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert "Record postmortem" in {c.title for c in app.get_system_commands(app.screen)}
        alert = "Checkout Service p99 latency up, intermittent database connection errors"
        await type_in(pilot, alert)
        await open_postmortem(pilot, app)
        assert value_of(app, "#pm-symptoms") == alert
        assert value_of(app, "#pm-service") == "checkout-service"
        assert "Pre-filled from the alert" in text_of(app, "#pm-heading")
        await pilot.press("escape")  # nothing typed: Esc goes straight back
        await pilot.pause()
        assert not isinstance(app.screen, PostmortemScreen)

        await pilot.press("ctrl+u")
        await type_in(pilot, "TLS certificate expired on internal gRPC mesh")
        await open_postmortem(pilot, app)
        assert value_of(app, "#pm-symptoms") == "TLS certificate expired on internal gRPC mesh"
        assert value_of(app, "#pm-service") == ""


def test_service_names_match_whole_words_only() -> None:
    services = ["payments-api", "api-gateway", "orders-db"]
    assert prefill_from_alert("PAYMENTS API 5xx rate", services)[1] == "payments-api"
    assert prefill_from_alert("gateway timeouts", services)[1] == ""
    assert prefill_from_alert("new-orders-db-replica lag", services)[1] == ""


async def test_rows_are_added_moved_removed_and_restored_by_keys(tmp_path: Path,
                                                                  incidents: Path) -> None:
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await open_postmortem(pilot, app)
        screen = app.screen
        assert isinstance(screen, PostmortemScreen)

        def rows() -> list[tuple[str, str]]:
            return [(r.action_id, r.values()["action"]) for r in screen.form.rows()]

        await type_in(pilot, "ab")  # outside a row, ctrl+d is still the input's delete-right
        await pilot.press("home", "ctrl+d")
        assert value_of(app, "#pm-title") == "b" and len(screen.form.rows()) == 1
        await pilot.press(*["tab"] * 6)  # title … tags, runbook → row id
        await pilot.press("tab")
        await type_in(pilot, "first")
        for word in ("second", "third"):
            await pilot.press("ctrl+n")
            await type_in(pilot, word)
        assert rows() == [("A1", "first"), ("A2", "second"), ("A3", "third")]
        await pilot.press("alt+up", "alt+up")
        assert rows() == [("A1", "third"), ("A2", "first"), ("A3", "second")]
        await pilot.press("ctrl+down")
        assert rows() == [("A1", "first"), ("A2", "third"), ("A3", "second")]
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert rows() == [("A1", "first"), ("A2", "second")]
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert rows() == [("A1", "first"), ("A2", "third"), ("A3", "second")]
        assert "Action 2 of 3" in str(screen.form.rows()[1].border_title)

        titles = {command.title for command in app.get_system_commands(screen)}
        assert {"Save postmortem", "Add action", "Reload memory", "Cancel postmortem"} <= titles
        assert "Focus alert" not in titles  # main-screen commands do not apply here
        await pilot.press("escape")  # the form changed: the first Esc only warns
        await pilot.pause()
        assert isinstance(app.screen, PostmortemScreen)
        assert "Esc again discards" in notifications(app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, PostmortemScreen)
    assert incidents.read_bytes() == (REPO / "incidents.yaml").read_bytes()


async def test_edit_a_recalled_incident_replaces_its_block(tmp_path: Path,
                                                          incidents: Path) -> None:
    before = yaml.safe_load(incidents.read_text(encoding="utf-8"))
    app = make_app(tmp_path, incidents)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await type_in(pilot, "payments service KeyError: 'amount' after deploy")
        await pilot.press("enter")
        await settle(pilot, app)
        await pilot.press("f4", "e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, PostmortemScreen) and screen.editing is not None
        edited_id, title = screen.editing.id, screen.editing.title
        assert value_of(app, "#pm-id") == edited_id
        assert "Edit incident" in text_of(app, "#pm-heading")
        await type_in(pilot, " (edited)")  # the cursor starts at the end of the title
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert not isinstance(app.screen, PostmortemScreen)
        assert "58 incidents" in text_of(app, "#status-line")
    after = yaml.safe_load(incidents.read_text(encoding="utf-8"))
    assert [i["id"] for i in after] == [i["id"] for i in before]
    for old, new in zip(before, after, strict=True):
        if old["id"] == edited_id:
            assert new == {**old, "title": f"{title} (edited)"}
        else:
            assert new == old
