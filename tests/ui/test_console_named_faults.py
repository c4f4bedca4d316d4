"""A console that cannot use its data dir names the fault and what to do — never "Something
went wrong", never an invitation to fix an incidents file that has nothing wrong with it."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from console.engine.config import Settings
from console.ui.app import TriageApp

REPO = Path(__file__).resolve().parents[2]


async def test_a_data_dir_that_is_a_file_is_named_on_screen(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.write_text("not a directory", encoding="utf-8")
    app = TriageApp(Settings(incidents_path=REPO / "incidents.yaml", data_dir=data_dir,
                             offline=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        body = str(app.screen.query_one("#briefing-body", Static).content)
        status = str(app.screen.query_one("#status-line", Static).content)
        assert "The memory cannot be loaded: the index could not be written" in body
        assert f"TRIAGE_DATA_DIR ({data_dir})" in body and "F5" in body
        assert "Fix the file" not in body and "Something went wrong" not in body
        assert "the index could not be written" in status
        assert data_dir.read_text(encoding="utf-8") == "not a directory"
