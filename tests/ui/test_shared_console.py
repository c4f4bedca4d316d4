"""The console on a team's shared index (moto's S3 server on 127.0.0.1, real LanceDB): when
the store stops answering mid-session, the status line says what recall reads instead."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.s3_server import S3Server, free_port
from tests.store.test_shared_index import ALERTS, NEW, publish_from, settings
from tests.ui.test_verification_console import SIZE, settle


def status_line(app: TriageApp) -> str:
    return str(app.screen.query_one("#status-line", Static).content)


async def test_the_status_line_follows_a_store_that_stops_answering(
        bundled_data_dir: Path, tmp_path: Path) -> None:
    server = S3Server(free_port())
    server.start()
    try:
        server.make_bucket("team")
        env = server.env("team")
        publish_from(settings(env, tmp_path / "ci", BUNDLED_INCIDENTS), when=NEW)
        # The laptop has an up-to-date local index (the bundled one) to fall back on.
        app = TriageApp(settings(env, bundled_data_dir, BUNDLED_INCIDENTS))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot, app)
            assert "shared v1" in status_line(app)
            server.stop()
            await pilot.press("f2")
            app.screen.query_one("#alert-input", Input).value = ALERTS[0]
            await pilot.press("enter")
            await settle(pilot, app)
            body = str(app.screen.query_one("#briefing-body", Static).content)
            assert "stopped answering" in body and "built on this laptop" in body
            assert "local (shared index not used)" in status_line(app)
            assert "shared v1" not in status_line(app)
    finally:
        server.stop()
