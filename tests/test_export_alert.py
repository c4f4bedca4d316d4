"""The export (Ctrl+O in the console, `triage brief --format md`) quotes the alert it briefs, as
recall searched it: secrets redacted, control characters stripped, Markdown made literal."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input

from console.__main__ import main
from console.engine.config import Settings
from console.engine.render.markdown import ALERT_IN_EXPORT
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS

SECRET = "hunter2-s3cr3t-value"
ALERT = f"payments-api 5xx error rate above 5% after deploy password={SECRET}"


@pytest.fixture
def data_dir(bundled_data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The prebuilt index, for the CLI too (no index build per test)."""
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    return bundled_data_dir


def alert_line(markdown: str) -> str:
    (line,) = [line for line in markdown.splitlines() if line.startswith("**Alert:**")]
    return line


def test_brief_format_md_quotes_the_alert_redacted(capsys: pytest.CaptureFixture[str],
                                                   data_dir: Path) -> None:
    assert main(["brief", "--format", "md", ALERT]) == 0
    out = capsys.readouterr().out
    line = alert_line(out)
    assert "payments-api 5xx error rate above 5% after deploy" in line
    assert SECRET not in out
    assert "REDACTED" in line
    # Near the top, where a reader in the channel looks first (before the briefing's prose).
    assert out.splitlines().index(line) < out.splitlines().index("**Source:** deterministic")


def test_brief_format_md_strips_control_characters_and_markup_from_the_alert(
        capsys: pytest.CaptureFixture[str], data_dir: Path) -> None:
    hostile = "payments-api 5xx \x1b]0;owned\x07after deploy \x1b[2J@channel <!here> `rm -rf`"
    assert main(["brief", "--format", "md", hostile]) == 0
    line = alert_line(capsys.readouterr().out)
    assert "\x1b" not in line and "\x07" not in line
    assert "@channel" not in line and "<!here>" not in line  # no ping in the channel
    assert "\\`rm -rf\\`" in line  # shown as typed, not as code
    assert "payments-api 5xx" in line and "after deploy" in line


def test_a_very_long_alert_is_cut_and_says_so(capsys: pytest.CaptureFixture[str],
                                              data_dir: Path) -> None:
    long_alert = "payments-api 5xx error rate above 5% after deploy " + "x" * (ALERT_IN_EXPORT * 2)
    assert main(["brief", "--format", "md", long_alert]) == 0
    line = alert_line(capsys.readouterr().out)
    assert len(line) < ALERT_IN_EXPORT + 200
    assert "characters more" in line and "--json" in line


async def test_ctrl_o_export_starts_with_the_alert_briefed(bundled_data_dir: Path) -> None:
    app = TriageApp(Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=bundled_data_dir))
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.screen.query_one("#alert-input", Input).value = ALERT
        await pilot.press("enter")
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        await pilot.press("ctrl+o")
        for _ in range(3):
            await pilot.pause()
            await app.workers.wait_for_complete()
        (written,) = (bundled_data_dir / "exports").glob("briefing-*.md")
        markdown = written.read_text(encoding="utf-8")
    line = alert_line(markdown)
    assert "payments-api 5xx error rate above 5% after deploy" in line
    assert SECRET not in markdown
