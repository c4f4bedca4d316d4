"""Terminal escape sequences in stored incidents, alerts and model answers never reach the
terminal: not in `triage brief` (text or JSON), not on the console's screen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from textual.widgets import Static

from console.__main__ import main
from console.engine.config import Settings
from console.engine.model.draft import Draft
from console.ui.app import TriageApp
from console.ui.widgets.recalled_sidebar import RecalledSidebar
from store.text import clean
from tests.ui.driving import brief_and_wait

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Double-quoted YAML: \e is ESC, \a BEL, \x9b the one-byte CSI.
HOSTILE_FILE = r'''
- id: INC-66
  title: "Ledger drift \e]0;pwned\a after release"
  service: "ledger\e[2J"
  symptoms: "Ledger totals drift from the bank feed \e]8;;http://evil.example\e\\click\e]8;;\e\\
    after the release \x9b31m"
  actions:
    - id: A1
      action: "Re-ran the reconciliation job \e[5m"
      outcome: RESOLVED
      explanation: "Totals matched again \x1b[?1049h"
'''
ALERT = "ledger totals drift from the bank feed after release \x1b]0;alert-title\x07"


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(HOSTILE_FILE, encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    return path


@pytest.mark.parametrize("text, expected", [
    ("a\x1b[2Jb", "a[2Jb"), ("t\x1b]0;x\x07", "t]0;x"), ("c\x9b31m", "c31m"),
    ("keep\nnew\tlines", "keep\nnew\tlines"), ("del\x7f", "del"), ("nul\x00", "nul"),
    ("[b]markup[/b] stays literal", "[b]markup[/b] stays literal"),
    # bidi overrides and isolates make a line read other than it is ("Trojan source")
    ("ok \u202edne\u202c", "ok dne"), ("\u2066rm\u2069 x", "rm x"),
    ("accents é and ü stay", "accents é and ü stay"),
])
def test_clean_removes_c0_del_and_c1_but_keeps_newline_and_tab(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_brief_output_carries_no_control_characters(hostile: Path, flag: list[str],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["brief", ALERT, *flag]) == 0
    out = capsys.readouterr().out
    assert "INC-66" in out and "Re-ran the reconciliation job" in out
    assert not CONTROL.search(out.replace("\n", "").replace("\t", ""))
    if flag:
        # JSON escapes would be decoded by a consumer that prints them: none may be there.
        assert "\\u001b" not in out and "\\u009b" not in out and "\\u0007" not in out
        json.loads(out)


def test_model_answers_are_cleaned_before_any_guard_sees_them() -> None:
    draft = Draft.model_validate({
        "summary": "pool exhausted \x1b[2J", "confidence": 50, "likely_cause": "x\x9b1m",
        "recommendations": [{"action": "raise the pool \x1b]0;t\x07", "evidence": []}],
        "warnings": [{"text": "do not \x1b[5m restart", "incident_id": "I", "action_id": "A"}],
        "steps": [{"text": "step \x1b[1m", "incident_id": "I", "action_id": "A"}]})
    rendered = draft.model_dump_json()
    assert not CONTROL.search(json.loads(json.dumps(rendered)))
    assert draft.summary == "pool exhausted [2J"


async def test_console_screen_shows_no_control_characters(hostile: Path, tmp_path: Path) -> None:
    app = TriageApp(Settings.from_env())
    async with app.run_test(size=(120, 40)) as pilot:
        await brief_and_wait(pilot, ALERT)
        body = str(app.screen.query_one("#briefing-body", Static).content)
        assert "INC-66" in body
        sidebar = app.screen.query_one(RecalledSidebar)
        options = [str(sidebar.get_option_at_index(i).prompt) for i in range(sidebar.option_count)]
        await pilot.press("f4", "enter")
        await pilot.pause()
        record = str(app.screen.query_one("#record-text", Static).content)
        for shown in (body, *options, record):
            assert not CONTROL.search(shown.replace("\n", "").replace("\t", "")), shown
