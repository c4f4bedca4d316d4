"""Issue 22 item 1 in the console: an incidents file with one broken incident still briefs.

The real app by Pilot on a copy of the bundled memory with one half-typed incident appended:
a banner names the problem (file:line) and the incident not searched, and an alert matching
an incident that still loads is briefed from it. F5 after the fix takes the banner away.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from textual.widgets import Static

from console.engine.config import Settings
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.ui.driving import brief_and_wait

SIZE = (120, 40)
CHECKOUT = "payments-api p99 latency up, intermittent database connection errors"
BROKEN = "- id: INC-9001\n  service: [oops\n  symptoms: half-typed edit\n"


def text(app: TriageApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


async def test_a_broken_incident_shows_a_banner_and_the_others_still_brief(
        tmp_path: Path, bundled_index_dir: Path) -> None:
    incidents = tmp_path / "incidents.yaml"
    good = BUNDLED_INCIDENTS.read_text(encoding="utf-8")
    incidents.write_text(good + BROKEN, encoding="utf-8")
    data = tmp_path / "data"
    data.mkdir()  # no index yet; the embeddings cached (fast)
    shutil.copyfile(bundled_index_dir / "embeddings.sqlite", data / "embeddings.sqlite")
    app = TriageApp(Settings(incidents_path=incidents, data_dir=data, offline=True))
    async with app.run_test(size=SIZE) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        banner = app.screen.query_one("#memory-banner", Static)
        assert banner.display, "the banner is hidden"
        shown = text(app, "#memory-banner")
        assert "partial memory — the incidents file has 1 problem" in shown
        assert f"{incidents}:" in shown and "not valid YAML" in shown
        assert "not searched: INC-9001" in shown
        assert "partial, in memory only" in text(app, "#status-line")
        assert "cannot be loaded" not in text(app, "#briefing-body")

        await brief_and_wait(pilot, CHECKOUT)
        body = text(app, "#briefing-body")
        assert "INC-2041" in body, body
        assert not (data / "index").exists()  # never an index built from a partial memory

        incidents.write_text(good, encoding="utf-8")
        await pilot.press("f5")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not app.screen.query_one("#memory-banner", Static).display
        assert "58 incidents" in text(app, "#status-line")
