"""The postmortem screen when the disk refuses: what was saved is said, and only that.

A real full disk (tmpfs filled to ENOSPC; injected at the OS-call level where mount is not
permitted — tests/disk_faults.py): the data dir full → the incident is saved in the file and
the screen says the index could not be updated (briefings in this session still find it);
the incidents disk full → "Not saved", the file byte-identical, the form kept.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from console.engine.config import Settings
from console.ui.app import TriageApp
from console.ui.screens.postmortem import PostmortemScreen
from store.loader import load_incidents
from store.writer import incident_block
from tests.conftest import BUNDLED_INCIDENTS
from tests.disk_faults import Disks, copy_tree, disks_fixture  # noqa: F401
from tests.ui.driving import brief_and_wait
from tests.ui.test_postmortem import (
    SIZE,
    fill_disk_postmortem,
    notifications,
    settle,
    text_of,
    value_of,
)


async def test_data_dir_full_the_incident_is_saved_and_the_index_problem_is_said(
        disks: Disks, bundled_index_dir: Path, tmp_path: Path) -> None:
    data = disks.make("data", size="2m")
    copy_tree(bundled_index_dir, data.path)
    incidents = tmp_path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, incidents)
    original = incidents.read_bytes()
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data.path))
    async with app.run_test(size=SIZE) as pilot:
        await fill_disk_postmortem(pilot, app)
        new_id = value_of(app, "#pm-id")
        data.fill()
        await pilot.press("ctrl+s")
        await settle(pilot, app)

        assert not isinstance(app.screen, PostmortemScreen)
        said = notifications(app)
        assert f"Saved {new_id} with 1 action(s)" in said
        assert (f"{new_id} is saved in {incidents}, but the index could not be updated on disk "
                f"(No space left on device at {data.path / 'index'})") in said
        assert "Something went wrong" not in said
        # The one toast shown (the newest: app.tcss) says both: saved, and the index problem.
        shown = str(list(app._notifications)[-1].message)
        assert f"Saved {new_id} with 1 action(s)" in shown and "could not be updated" in shown
        status = text_of(app, "#status-line")
        count = len(load_incidents(BUNDLED_INCIDENTS).incidents) + 1
        assert f"{count} incidents" in status and "index in memory only" in status

        # This session's recall has the new incident, and the briefing says how.
        await brief_and_wait(pilot, "orders-db volume full, writes rejected")
        body = text_of(app, "#briefing-body")
        assert f"{new_id}/A1 RESOLVED" in body
        assert "this recall searched an index held in memory" in body
    saved = app.engine.incident(new_id)
    assert saved is not None
    assert incidents.read_bytes() == original + b"\n" + incident_block(saved).encode()


async def test_incidents_disk_full_nothing_is_saved_and_the_form_is_kept(
        disks: Disks, bundled_data_dir: Path) -> None:
    memory = disks.make("memory", size="256k")
    incidents = memory.path / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, incidents)
    original = incidents.read_bytes()
    app = TriageApp(Settings(incidents_path=incidents, data_dir=bundled_data_dir))
    async with app.run_test(size=SIZE) as pilot:
        await fill_disk_postmortem(pilot, app)
        memory.fill()
        await pilot.press("ctrl+s")
        await settle(pilot, app)

        assert isinstance(app.screen, PostmortemScreen)
        problems = text_of(app, "#pm-problems")
        assert problems.startswith("Not saved — No space left on device; nothing was written, "
                                   "your form is kept")
        assert f"{incidents} is unchanged" in problems
        assert "Saved" not in notifications(app)
        assert value_of(app, "#pm-symptoms") == "orders-db volume full, writes rejected"
        assert app.engine.memory is not None
        assert len(app.engine.memory.incidents) == len(load_incidents(incidents).incidents)
    assert incidents.read_bytes() == original
    assert sorted(p.name for p in memory.path.iterdir() if p.name.endswith(".tmp")) == []
