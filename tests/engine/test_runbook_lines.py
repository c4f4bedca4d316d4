"""Runbooks in the briefing (issue 24, item 2): the alert's runbook is shown as "Runbook: …"
near the top of `triage brief` (text and Markdown) and of the console's pane, never fetched,
and shown as inert text however hostile; the runbook a recalled incident's postmortem recorded
is shown as "used last time". No runbook: no line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.models import Briefing
from console.engine.engine import TriageEngine
from console.engine.render.markdown import ZERO_WIDTH, briefing_markdown
from console.engine.render.text import briefing_text, runbook_lines
from console.ui.widgets.briefing_pane import briefing_renderable
from tests.test_cli import call_cli

PAYLOADS = Path(__file__).resolve().parents[1] / "data" / "payloads"
RUNBOOK = "https://runbooks.example.internal/payments-api/5xx"
PLAIN = "payments-api 5xx error rate above 5% after deploy"
# Markup, terminal escapes (clear screen, retitle the window), a Markdown link breakout and a
# mention, in one annotation.
HOSTILE = ("https://rb.example.internal/[bold]x[/bold]\x1b[2J\x1b]0;owned\x07"
           "](javascript:alert(1)) <b>hi</b> @channel `code`")
# What is left of it once the parser has removed the control characters: shown as written.
HOSTILE_SHOWN = ("https://rb.example.internal/[bold]x[/bold][2J]0;owned"
                 "](javascript:alert(1)) <b>hi</b> @channel `code`")


def alertmanager(runbook: str | None) -> str:
    """The fixture's firing alerts as one Alertmanager webhook, with ``runbook`` as their
    runbook_url annotation (None: no annotation)."""
    payload = json.loads((PAYLOADS / "alertmanager.json").read_text(encoding="utf-8"))
    payload["alerts"] = [a for a in payload["alerts"] if a["status"] == "firing"]
    for item in payload["alerts"]:
        item["annotations"].pop("runbook_url", None)
        if runbook is not None:
            item["annotations"]["runbook_url"] = runbook
    return json.dumps(payload)


@pytest.fixture(scope="module")
def data_dir(bundled_index_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("runbooks") / "data"
    shutil.copytree(bundled_index_dir, copy)
    return copy


def brief_cli(tmp: Path, data_dir: Path, alert: str, *fmt: str) -> str:
    path = tmp / "alert.json"
    path.write_text(alert, encoding="utf-8")
    ran = call_cli("brief", "--alert-file", str(path), *fmt, data_dir=data_dir)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_brief_text_shows_the_alerts_runbook_under_the_state_line(tmp_path: Path,
                                                                   data_dir: Path) -> None:
    lines = brief_cli(tmp_path, data_dir, alertmanager(RUNBOOK)).splitlines()
    # The payload's text names no failure ("5xx after deploy"): similar incidents, nothing proven.
    assert lines[0].startswith("[SIMILAR INCIDENTS, NO PROVEN FIX]")
    assert lines[1] == f"Runbook: {RUNBOOK}"  # before the summary, the warnings, the fixes
    assert sum("Runbook" in line for line in lines) == 1


def test_brief_markdown_keeps_the_runbook_beside_the_alert(tmp_path: Path,
                                                           data_dir: Path) -> None:
    markdown = brief_cli(tmp_path, data_dir, alertmanager(RUNBOOK), "--format", "md")
    lines = markdown.splitlines()
    runbook = next(n for n, line in enumerate(lines) if line.startswith("**Runbook:**"))
    assert lines[runbook - 1].startswith("**Alert:**")
    assert lines[runbook + 1].startswith("**Source:**")
    # As a channel reader sees it: the address as written, not a link (never fetched).
    assert RUNBOOK in rendered(markdown)
    assert "link_open" not in {t.type for t in tokens(lines[runbook])}


@pytest.mark.parametrize("fmt", [(), ("--format", "md")])
def test_no_runbook_means_no_runbook_line(tmp_path: Path, data_dir: Path,
                                          fmt: tuple[str, ...]) -> None:
    for alert in (PLAIN, alertmanager(None)):
        out = brief_cli(tmp_path, data_dir, alert, *fmt)
        assert "Runbook" not in out and "runbook" not in out


# --- hostile addresses -------------------------------------------------------------------------

def tokens(markdown: str) -> list[Token]:
    def walk(found: list[Token]) -> list[Token]:
        return [t for token in found for t in [token, *walk(token.children or [])]]
    return walk(MarkdownIt("gfm-like").parse(markdown))


def rendered(markdown: str) -> str:
    return "".join(t.content for t in tokens(markdown) if t.type in ("text", "code_inline")
                   ).replace(ZERO_WIDTH, "")


@pytest.fixture(scope="module")
def hostile(readonly_engine: TriageEngine) -> Briefing:
    briefing = readonly_engine.brief(parse_alert(alertmanager(HOSTILE))).briefing
    assert briefing.input is not None and briefing.input.runbook_url == HOSTILE_SHOWN
    return briefing


def test_a_hostile_runbook_is_plain_text_in_the_terminal(hostile: Briefing) -> None:
    text = briefing_text(hostile)
    assert f"Runbook: {HOSTILE_SHOWN}" in text.splitlines()
    assert not any(ord(c) < 32 and c != "\n" or 0x7f <= ord(c) <= 0x9f for c in text)


def test_a_hostile_runbook_cannot_break_out_of_the_markdown(hostile: Briefing) -> None:
    markdown = briefing_markdown(hostile)
    line = next(x for x in markdown.splitlines() if x.startswith("**Runbook:**"))
    kinds = {t.type for t in tokens(line)}
    assert not kinds & {"link_open", "html_inline", "code_inline", "image", "em_open"}
    assert "@channel" not in line  # no ping in the raw text a chat server scans
    assert rendered(line) == f"Runbook: {HOSTILE_SHOWN}"  # a reader sees it as it was sent


def test_a_hostile_runbook_is_not_markup_in_the_pane(hostile: Briefing) -> None:
    pane = briefing_renderable(hostile)
    first = pane.plain.splitlines()[0]
    assert first == f"Runbook: {HOSTILE_SHOWN}"  # "[bold]" kept: never parsed as markup
    start = pane.plain.index("https://rb.")
    styled = [s for s in pane.spans if s.start < start + len(HOSTILE_SHOWN) and s.end > start]
    assert styled == []  # the address carries no style of its own making


def test_the_pane_cuts_a_very_long_runbook_so_the_warnings_stay_in_sight(
        hostile: Briefing) -> None:
    assert hostile.input is not None
    long = hostile.model_copy(update={"input": hostile.input.model_copy(
        update={"runbook_url": "https://rb.example.internal/" + "y" * 1500})})
    first = briefing_renderable(long).plain.splitlines()[0]
    assert first.startswith("Runbook: https://rb.example.internal/yyy") and first.endswith("…")
    assert len(first) < 160
    assert "y" * 1500 in briefing_text(long)  # the terminal and the export keep it whole


# --- the runbook used last time -----------------------------------------------------------------

def with_runbooks(briefing: Briefing, runbooks: dict[str, Any]) -> Briefing:
    """``briefing`` as if the recalled incidents named in ``runbooks`` had recorded one."""
    records = [r.model_copy(update={"runbook": runbooks.get(r.incident_id, r.runbook)})
               for r in briefing.recalled]
    return briefing.model_copy(update={"recalled": records})


@pytest.fixture(scope="module")
def proven(readonly_engine: TriageEngine) -> Briefing:
    briefing = readonly_engine.brief(parse_alert(alertmanager(RUNBOOK))).briefing
    assert len({r.incident_id for r in briefing.recalled}) >= 3
    assert all(r.runbook is None for r in briefing.recalled)  # the bundled memory has none
    return briefing


def incidents_of(briefing: Briefing) -> list[str]:
    return list(dict.fromkeys(r.incident_id for r in briefing.recalled))


def test_the_runbook_the_top_incident_used_is_shown_beside_the_alerts(proven: Briefing) -> None:
    top = incidents_of(proven)[0]
    used = with_runbooks(proven, {top: "https://wiki.example.internal/payments/cache-flush"})
    text = briefing_text(used).splitlines()
    assert text[1:3] == [f"Runbook: {RUNBOOK}", f"Runbook used last time ({top}): "
                         "https://wiki.example.internal/payments/cache-flush"]
    assert f"**Runbook used last time (`{top}`):** https:/" in briefing_markdown(used)
    assert briefing_renderable(used).plain.splitlines()[1].startswith(
        f"Runbook used last time ({top}): ")


def test_the_same_runbook_as_last_time_is_said_once(proven: Briefing) -> None:
    top = incidents_of(proven)[0]
    text = briefing_text(with_runbooks(proven, {top: RUNBOOK}))
    assert f"Runbook (used last time too, {top}): {RUNBOOK}" in text.splitlines()
    assert text.count(RUNBOOK) == 1


def test_only_the_top_incidents_runbooks_count_and_never_a_quarantined_one(
        proven: Briefing) -> None:
    first, second, third = incidents_of(proven)[:3]
    far = with_runbooks(proven, {third: "https://wiki.example.internal/far"})
    assert [line.url for line in runbook_lines(far)] == [RUNBOOK]
    near = with_runbooks(proven, {second: "https://wiki.example.internal/second"})
    assert runbook_lines(near)[1].incident_id == second
    quarantined = near.model_copy(update={"recalled": [
        r.model_copy(update={"quarantined": r.incident_id == second}) for r in near.recalled]})
    assert [line.url for line in runbook_lines(quarantined)] == [RUNBOOK]
    assert first != second


def test_a_record_without_a_runbook_dumps_as_before(proven: Briefing) -> None:
    dumped = json.loads(proven.model_dump_json())
    assert all("runbook" not in record for record in dumped["recalled"])
    used = with_runbooks(proven, {incidents_of(proven)[0]: "https://wiki.example.internal/x"})
    assert json.loads(used.model_dump_json())["recalled"][0]["runbook"] == \
        "https://wiki.example.internal/x"
