"""The verification overlay (F6), driven by keys through Pilot on the bundled memory.

The overturn case: an alert naming no service whose lead fix, more workers, resolved a close
match (INC-2321, image-service) and made things worse in a looser one (INC-2324,
transcode-worker). The maintain case: auth-service key rotation, two incidents resolved by the
same fix (INC-1561 / INC-1838). Declared probes need the alert's service: they run on the
ledger-api alert (its own mitigation, INC-2318/A2, leads).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.main import MainScreen
from console.ui.screens.postmortem import PostmortemScreen
from console.ui.widgets.action_row import ActionRow
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from console.ui.widgets.verification_panel import VerificationPanel
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief, settle

SIZE = (120, 40)
OVERTURN = ("media queue: jobs waiting, backlog growing, workers falling behind, pods near "
            "memory limit")
OVERTURN_FIX = "Raised the worker concurrency from 8 to 32"
LEDGER = ("statement timeout errors: queries timing out after 30s, canceling statement due "
          "to statement timeout (service ledger-api)")
MAINTAIN = "auth-service logins failing after key rotation"


def app_on(incidents: Path, data_dir: Path) -> TriageApp:
    return TriageApp(Settings(incidents_path=incidents, data_dir=data_dir))


def briefing_text(app: TriageApp) -> str:
    return str(app.screen.query_one("#briefing-body", Static).content)


def panel(app: TriageApp) -> VerificationPanel:
    return app.screen.query_one(VerificationPanel)


def head(app: TriageApp) -> str:
    return str(panel(app).query_one("#verify-head", Static).content)


def detail(app: TriageApp) -> str:
    return str(panel(app).query_one("#verify-detail", Static).content)


def question(app: TriageApp, qid: str) -> dict[str, Any]:
    return next(q for q in panel(app).questions if q["id"] == qid)


async def highlight(pilot: Pilot[None], app: TriageApp, qid: str) -> None:
    """Move the highlight to question ``qid`` with the arrow keys, as a user would."""
    listing = panel(app).question_list
    assert app.focused is listing
    target = [q["id"] for q in panel(app).questions].index(qid)
    while listing.highlighted != target:
        await pilot.press("down" if (listing.highlighted or 0) < target else "up")


async def test_overturn_beside_the_unchanged_briefing_with_two_answers_by_key(
        bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        before = briefing_text(app)
        confidence_title = app.screen.query_one("#confidence").border_title
        assert OVERTURN_FIX in before
        await pilot.press("f6")
        await settle(pilot, app)

        # Beside the briefing, never in its place: both on screen, the recalled list makes room.
        assert panel(app).display and app.screen.query_one("#briefing").display
        assert not app.screen.query_one(RecalledSidebar).display
        assert panel(app).region.x >= app.screen.query_one("#briefing").region.right
        # Nothing confirmed yet: held at the briefing's own figure (a weak lead, 0, since issue 33).
        assert "OVERTURN" in head(app) and "confidence 0" in head(app)

        engineer = [q for q in panel(app).questions if q["probe"] == "engineer"]
        assert len(engineer) == 3 and all(q["result"] == "unknown" for q in engineer)
        service, symptoms, cause = engineer
        assert "Is this alert about image-service" in service["text"]
        await highlight(pilot, app, symptoms["id"])
        await pilot.press("n")
        await settle(pilot, app)
        await highlight(pilot, app, cause["id"])
        await pilot.press("y")
        await settle(pilot, app)

        assert question(app, symptoms["id"])["result"] == "refuted"
        assert question(app, cause["id"])["result"] == "confirmed"
        assert question(app, service["id"])["result"] == "unknown"
        result = panel(app).result
        assert result is not None and result["disposition"] == "overturn"
        assert result["confidence"]["value"] == 30  # confirmed by the engineer: the overturn cap
        assert "OVERTURN" in head(app) and "confidence 30" in head(app)
        assert "engineer" in result["confidence"]["derivation"]
        assert f"Do not apply “{OVERTURN_FIX}”" in head(app)
        assert "Moved long videos to a dedicated batch pool" in head(app)
        # The original is exactly as it was.
        assert briefing_text(app) == before
        assert app.screen.query_one("#confidence").border_title == confidence_title
        assert Path(result["artifact"]).is_file()

        await pilot.press("f6")
        await pilot.pause()
        assert not panel(app).display and app.screen.query_one(RecalledSidebar).display


async def test_maintained_once_the_engineer_confirms_the_cause(bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, MAINTAIN)
        await pilot.press("f6")
        await settle(pilot, app)
        assert "UNDETERMINED" in head(app)
        (asked,) = [q for q in panel(app).questions if q["probe"] == "engineer"]
        assert "needs an engineer" in asked["missing"]
        await highlight(pilot, app, asked["id"])
        assert "Only you can answer this" in detail(app)
        await pilot.press("y")
        await settle(pilot, app)
        assert "MAINTAIN" in head(app) and "confidence 85" in head(app)
        assert "apply “Republished the previous signing key" in head(app)


async def test_memory_questions_take_no_answer(bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, MAINTAIN)
        await pilot.press("f6")
        await settle(pilot, app)
        memory = next(q for q in panel(app).questions if q["probe"] == "memory")
        await highlight(pilot, app, memory["id"])
        await pilot.press("n")
        await settle(pilot, app)
        assert question(app, memory["id"])["result"] == memory["result"]
        assert "UNDETERMINED" in head(app)


async def test_ctrl_r_carries_the_results_into_the_postmortem_form(
        bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        await pilot.press("f6")
        await settle(pilot, app)
        result = panel(app).result
        assert result is not None
        settled = [q for q in result["questions"] if q["result"] != "unknown"]
        await pilot.press("ctrl+r")
        await settle(pilot, app)
        assert isinstance(app.screen, PostmortemScreen)
        rows = [row.values() for row in app.screen.query(ActionRow)]
        checks = [r for r in rows if r["kind"] == "verify"]
        assert len(checks) == len(settled)
        assert all(r["outcome"] == "NO_EFFECT" for r in checks)
        assert all(q["text"] in r["explanation"] and q["result"] in r["explanation"]
                   and q["evidence_sha256"][:16] in r["explanation"]
                   for q, r in zip(settled, checks, strict=True))
        (fix,) = [r for r in rows if r["kind"] != "verify"]
        assert fix["action"] == OVERTURN_FIX
        assert fix["outcome"] == "WORSENED" and fix["confirmed"] is False


async def test_a_new_briefing_closes_the_verification_of_the_old_one(
        bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        await pilot.press("f6")
        await settle(pilot, app)
        assert panel(app).display
        await brief(pilot, app, MAINTAIN)
        assert not panel(app).display
        assert app.state.verifying is None
        await pilot.press("f6")
        await settle(pilot, app)
        assert "UNDETERMINED" in head(app)  # the new briefing's verification, not the old one


async def test_f6_before_any_briefing_says_what_to_do(bundled_data_dir: Path) -> None:
    app = app_on(BUNDLED_INCIDENTS, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        await pilot.press("f6")
        await pilot.pause()
        assert not panel(app).display
        assert any("brief an alert" in n.message for n in app._notifications)


PROBE_SCRIPT = """\
import pathlib, sys
pathlib.Path(sys.argv[1]).write_text(" ".join(sys.argv[2:]))
print("connections=12 of 100 [bold red]x[/] password=hunter2")
"""


def memory_with_probe(tmp_path: Path, probes: str) -> Path:
    folder = tmp_path / "memory"
    folder.mkdir()
    incidents = folder / "incidents.yaml"
    shutil.copy(BUNDLED_INCIDENTS, incidents)
    (folder / "probes.yaml").write_text(probes)
    return incidents


async def test_a_declared_probe_runs_only_after_c_with_its_argv_on_screen(
        tmp_path: Path, bundled_data_dir: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(PROBE_SCRIPT)
    marker = tmp_path / "ran"
    incidents = memory_with_probe(tmp_path, f"""\
- name: db-connections
  description: connections in use on the service's database
  question: Is the connection count of {{service}} below its limit?
  argv: [{sys.executable}, {script}, {marker}, "--service={{service}}"]
  params:
    service: {{type: service}}
  confirmed_if: 'connections=[0-9] of|connections=[1-7][0-9] of'
  refuted_if: 'connections=(8|9)[0-9] of'
""")
    app = app_on(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, LEDGER)
        await pilot.press("f6")
        await settle(pilot, app)
        (probe,) = [q for q in panel(app).questions if q["probe"] == "declared"]
        assert probe["result"] == "unknown" and probe["missing"].startswith("needs confirmation")
        await highlight(pilot, app, probe["id"])
        assert f"{script} {marker} --service=ledger-api" in detail(app)
        assert not marker.exists()  # shown, not run
        await pilot.press("c")
        await settle(pilot, app)
        assert marker.read_text() == "--service=ledger-api"
        ran = question(app, probe["id"])
        assert ran["result"] == "confirmed"
        assert "hunter2" not in ran["output"] and "[bold red]x[/]" in ran["output"]
        assert "[bold red]x[/]" in detail(app)  # markup shown literally
        assert "hunter2" not in detail(app)


async def test_a_broken_probes_file_fails_the_pass_and_leaves_the_briefing(
        tmp_path: Path, bundled_data_dir: Path) -> None:
    incidents = memory_with_probe(tmp_path, "- name: x\n  argv: [ls]\n  shell: true\n")
    app = app_on(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, OVERTURN)
        before = briefing_text(app)
        await pilot.press("f6")
        await settle(pilot, app)
        assert "probes.yaml" in head(app) and "unchanged" in head(app)
        assert panel(app).result is None
        assert briefing_text(app) == before
        assert isinstance(app.screen, MainScreen)


WAITING_SCRIPT = """\
import pathlib, sys, time
release = pathlib.Path(sys.argv[1])
for _ in range(600):
    if release.exists():
        break
    time.sleep(0.05)
print("connections=12 of 100")
"""


async def test_the_console_answers_while_a_probe_runs(tmp_path: Path,
                                                      bundled_data_dir: Path) -> None:
    """A probe that has not finished holds nothing up: the engineer's answer is concluded
    and shown meanwhile, and the probe's own result joins when it ends."""
    script = tmp_path / "waiting.py"
    script.write_text(WAITING_SCRIPT)
    release = tmp_path / "release"
    incidents = memory_with_probe(tmp_path, f"""\
- name: db-connections
  description: connections in use on the service's database
  question: Is the connection count of {{service}} below its limit?
  argv: [{sys.executable}, {script}, {release}, "--service={{service}}"]
  params:
    service: {{type: service}}
  timeout: 60
  confirmed_if: 'connections=[0-7]?[0-9] of'
""")
    app = app_on(incidents, bundled_data_dir)
    async with app.run_test(size=SIZE) as pilot:
        await brief(pilot, app, LEDGER)
        await pilot.press("f6")
        await settle(pilot, app)
        (probe,) = [q for q in panel(app).questions if q["probe"] == "declared"]
        symptoms = next(q for q in panel(app).questions if q["probe"] == "engineer")
        await highlight(pilot, app, probe["id"])
        await pilot.press("c")
        await pilot.pause()
        assert panel(app).states == {probe["id"]: "running"}
        await highlight(pilot, app, symptoms["id"])
        await pilot.press("n")
        for _ in range(200):  # until the answer is concluded — the probe is still waiting
            await pilot.pause(0.02)
            if question(app, symptoms["id"])["result"] == "refuted":
                break
        assert question(app, symptoms["id"])["result"] == "refuted"
        assert question(app, probe["id"])["result"] == "unknown"
        assert panel(app).states == {probe["id"]: "running"}
        release.touch()
        await settle(pilot, app)
        assert question(app, probe["id"])["result"] == "confirmed"
        assert question(app, symptoms["id"])["result"] == "refuted"  # the answer is kept
        assert panel(app).states == {}
