"""The briefing as Markdown for the incident channel: every citation, nothing that pings.

Briefings come from the real pipeline over the bundled memory; the hostile one is rendered
with markdown-it (CommonMark + GFM tables, strikethrough and linkify), which reads it as a
chat client would.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from console.engine.briefing.alert import parse_alert
from console.engine.briefing.models import Briefing, Evidence, RunnerUp, Step, TriedWithoutEffect
from console.engine.engine import TriageEngine
from console.engine.render.markdown import ZERO_WIDTH, briefing_markdown, literal, write_markdown
from console.engine.render.text import briefing_text
from console.engine.verification.method import verify
from store.models import ActionOutcome

CITATION = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")
PAYMENTS_ALERT = "payments-api: connection timeouts to Postgres, HikariPool exhausted, p99 4s"
HOSTILE = ("@channel @here <!here> <!channel> <@U024BE7LH> [click](https://evil.example/x) "
           "![img](http://evil.example/p.png) `rm -rf /` ```fence``` | a | b | *bold* _it_ "
           "~~gone~~ <b>html</b> <!-- hidden --> &lt;!here&gt; www.evil.example \\escaped")
HOSTILE_LINE = "# not a heading\n> not a quote\n- not a list\n1. not ordered\n---"


def parser() -> MarkdownIt:
    return MarkdownIt("gfm-like")


def shown(briefing: Briefing) -> set[str]:
    """Every citation the screen shows for this briefing's warnings, fixes, steps, evidence."""
    found = {w.action_id for w in briefing.warnings}
    for rec in briefing.recommendations:
        found |= {e.action_id for e in rec.evidence + rec.failed_strong + rec.failed_elsewhere}
    found |= {s.action_id for s in briefing.step_citations}
    found |= {t.action_id for t in briefing.tried_without_effect}
    if briefing.runner_up is not None:
        found.add(briefing.runner_up.action_id)
    for text in [*(w.text for w in briefing.warnings), briefing.confidence.explanation,
                 briefing.confidence.derivation]:
        found |= set(CITATION.findall(text))
    return {c for c in found if c.startswith("INC-")}


@pytest.fixture(scope="module")
def proven(readonly_engine: TriageEngine) -> Briefing:
    briefing = readonly_engine.brief(parse_alert(PAYMENTS_ALERT)).briefing
    assert briefing.state == "proven" and briefing.warnings and briefing.recommendations
    steps = [Step(text=r.action, incident_id=r.incident_id, action_id=r.action_id or "",
                  outcome=r.outcome) for r in briefing.recalled if r.outcome is not None]
    return briefing.model_copy(update={"step_citations": steps})


def test_every_citation_shown_on_screen_is_in_the_markdown(proven: Briefing) -> None:
    markdown = briefing_markdown(proven)

    cited = shown(proven)
    assert {"INC-2041/A1", "INC-2041/A4"} <= cited
    for citation in cited:
        assert citation in markdown, citation
    for record in proven.recalled:
        assert f"`{record.action_id}`" in markdown


def test_the_markdown_keeps_the_reports_order_and_figures(proven: Briefing) -> None:
    markdown = briefing_markdown(proven)
    text = briefing_text(proven)

    assert markdown.index("Warnings") < markdown.index("Recommendations") < markdown.index(
        "Confidence")
    assert f"Confidence {proven.confidence.value}" in markdown
    assert "PROVEN FIX IN MEMORY" in markdown and "PROVEN FIX IN MEMORY" in text
    for rec in proven.recommendations:
        assert f"({rec.resolved} of {rec.tried} resolved)" in markdown
    assert "WORSENED" in markdown.split("Recommendations")[0]
    for warning in proven.warnings:
        assert render_text(literal(warning.explanation)) == warning.explanation


def test_a_verification_is_exported_with_its_disposition_and_questions(
        readonly_engine: TriageEngine) -> None:
    routed = readonly_engine.brief(parse_alert(PAYMENTS_ALERT))
    verification = verify(routed.briefing, routed.recall, alert_service="payments-api")
    assert verification["questions"]
    briefing = routed.briefing.model_copy(update={"verification": verification})

    markdown = briefing_markdown(briefing)

    assert "Verification — an audit" in markdown
    assert verification["disposition"].upper() in markdown
    for question in verification["questions"]:
        assert question["id"] in markdown
        assert f"**{question['result']}**" in markdown


def hostile_briefing(base: Briefing) -> Briefing:
    first = base.warnings[0]
    rec = base.recommendations[0]
    verification: dict[str, Any] = {
        "disposition": "revise", "conclusion": HOSTILE, "artifact": None,
        "confidence": {"value": 40, "derivation": HOSTILE_LINE},
        "questions": [{"id": "q1", "text": HOSTILE, "probe": "memory", "result": "unknown",
                       "missing": HOSTILE_LINE}]}
    return base.model_copy(update={
        "summary": HOSTILE_LINE + " " + HOSTILE,
        "degraded": HOSTILE,
        "likely_cause": HOSTILE_LINE,
        "model": "qwen @channel",
        "warnings": [first.model_copy(update={"text": f"{HOSTILE_LINE} {HOSTILE}",
                                              "explanation": HOSTILE})],
        "recommendations": [rec.model_copy(update={"action": HOSTILE_LINE,
                                                   "model_note": HOSTILE})],
        "verification": verification,
        "recalled": [r.model_copy(update={"action": HOSTILE, "service": HOSTILE_LINE})
                     for r in base.recalled],
        "tried_without_effect": [TriedWithoutEffect(
            text=HOSTILE_LINE, incident_id=first.incident_id, action_id=first.action_id,
            explanation=HOSTILE)],
        "runner_up": RunnerUp(action=HOSTILE_LINE, incident_id=rec.evidence[0].incident_id,
                              action_id=rec.evidence[0].action_id, applies="strong"),
        "model_reading": HOSTILE,
    })


def inline_tokens(tokens: list[Token]) -> list[Token]:
    found = []
    for token in tokens:
        found.append(token)
        found.extend(inline_tokens(token.children or []))
    return found


def render_text(markdown: str) -> str:
    """What a reader sees: the rendered text content, zero-width spaces dropped."""
    tokens = inline_tokens(parser().parse(markdown))
    return "".join(t.content for t in tokens if t.type in ("text", "code_inline")
                   ).replace(ZERO_WIDTH, "")


def test_hostile_text_renders_literally_and_cannot_ping_or_inject(proven: Briefing) -> None:
    briefing = hostile_briefing(proven)
    markdown = briefing_markdown(briefing)
    tokens = inline_tokens(parser().parse(markdown))
    kinds = {t.type for t in tokens}

    # Nothing from the stored or model text became a link, image, HTML, table or fence.
    assert not kinds & {"link_open", "image", "html_inline", "html_block", "table_open",
                        "fence", "s_open", "em_open", "blockquote_open", "hr"}
    headings = [tokens[n + 1].content for n, t in enumerate(tokens) if t.type == "heading_open"]
    assert all(h.startswith(("Triage briefing", "⚠ Warnings", "Recommendations", "Confidence",
                             "Verification", "Recalled memory", "Sources", "Steps",
                             "Tried without effect"))
               for h in headings)
    code = [t.content for t in tokens if t.type == "code_inline"]
    assert all(re.fullmatch(r"[A-Za-z0-9._/-]+", c) for c in code), code
    # Nothing that pings, as raw text a chat server scans for mentions.
    for mention in ("@channel", "@here", "<!here>", "<!channel>", "<@U024BE7LH>"):
        assert mention not in markdown
    # And a reader sees every hostile string exactly as it was stored.
    seen = render_text(markdown)
    assert HOSTILE in seen
    assert f"none of these fixes applies — {HOSTILE}" in seen  # the model's reading, as written
    for line in HOSTILE_LINE.splitlines():
        assert line in seen
    for citation in shown(proven):
        assert citation in markdown


@pytest.mark.parametrize("text", [HOSTILE, HOSTILE_LINE, "1) numbered", "+ plus", "=====",
                                  "ping <!subteam^S123> now", "a ＠channel full-width",
                                  "# heading", "__init__ _x_ a_b_c snake_ é_x_é (_y_) *z*",
                                  "[a](b) ![c](d) [e]: /f", "~~gone~~ ~x~ `code`"])
def test_literal_round_trips_through_a_markdown_renderer(text: str) -> None:
    escaped = literal(text)
    assert "\n" not in escaped
    assert render_text(escaped) == " ".join(text.split())


@pytest.mark.parametrize("text", [
    "Raised the pool size (max 50 -> 200) on db_pool_size: p99 {4s} fell, see #incidents!",
    "Restarted payments-api's HikariPool (3 of 5 pods) ~ 10 min after the page",
])
def test_ordinary_prose_reaches_the_channel_without_backslashes(text: str) -> None:
    # Slack shows a backslash escape as written: parentheses, braces, "!", "#" mid-line and
    # snake_case cannot start any markup, so they go out exactly as the engineer wrote them.
    assert literal(text) == text.replace(">", "&gt;")


def test_write_markdown_is_atomic_and_never_overwrites(proven: Briefing, tmp_path: Path) -> None:
    moment = datetime(2026, 3, 14, 2, 5, 9, tzinfo=UTC)
    first = write_markdown(proven, tmp_path / "exports", now=moment)
    second = write_markdown(proven, tmp_path / "exports", now=moment)

    assert first.read_text(encoding="utf-8") == briefing_markdown(proven)
    assert re.fullmatch(r"briefing-20260314T020509Z-[0-9a-f]{12}\.md", first.name)
    assert second != first and second.read_text(encoding="utf-8") == briefing_markdown(proven)
    assert sorted(p.name for p in (tmp_path / "exports").iterdir()) == sorted(
        [first.name, second.name])  # no temp file left behind


CHECKOUT_ALERT = "checkout-service p99 latency up, intermittent database connection errors"
KEYERROR_ALERT = "payments service KeyError: 'amount' after deploy"
LEDGER_ALERT = ("statement timeout errors: queries timing out after 30s, canceling statement due "
                "to statement timeout (service ledger-api)")

FIX_LINE = re.compile(r"^ *\d+\. ([✓~?]) ", re.MULTILINE)


def marks(shown: str) -> list[str]:
    """The mark of each numbered fix, in order (✓ proven here, ~ not yet here, ? a lead)."""
    return FIX_LINE.findall(shown.split("Recommendations")[1].split("Confidence")[0])


def test_a_fix_proven_only_on_another_service_says_so_in_text_and_markdown(
        readonly_engine: TriageEngine) -> None:
    briefing = readonly_engine.brief(parse_alert(CHECKOUT_ALERT)).briefing
    assert briefing.recommendations[0].applies == "elsewhere"
    text, markdown = briefing_text(briefing), briefing_markdown(briefing)

    label = "SIMILAR INCIDENTS, PROVEN ON payments-api, NOT YET HERE"
    assert text.startswith(f"[{label}]") and markdown.startswith(f"### Triage briefing — {label}")
    for shown in (text, markdown):
        assert "proven on payments-api, not yet on checkout-service" in shown
        assert "(same failure, other service) Don't repeat" in shown  # the warning's class
        assert marks(shown) == ["~"]
    assert "  1. ~ Raised the connection pool limit" in text


def test_what_was_tried_without_effect_is_one_cited_line_each(
        readonly_engine: TriageEngine) -> None:
    briefing = readonly_engine.brief(parse_alert(KEYERROR_ALERT)).briefing
    assert briefing.state == "proven" and len(briefing.tried_without_effect) >= 3
    text, markdown = briefing_text(briefing), briefing_markdown(briefing)

    assert "  1. ✓ Flushed the payment-schema cache" in text
    assert marks(text)[0] == marks(markdown)[0] == "✓" and set(marks(text)[1:]) == {"~"}
    block = text.split("Tried without effect in this failure:\n")[1].split("\n\n")[0]
    assert len(block.splitlines()) == len(briefing.tried_without_effect)
    for line, tried in zip(block.splitlines(), briefing.tried_without_effect, strict=True):
        assert line.startswith(f"  · {tried.text} — {tried.action_id}")
        assert len(line) <= len(f"  · {tried.text} — {tried.action_id}: ") + 90
        assert f"{literal(tried.text)} — `{tried.action_id}`" in markdown
    assert markdown.index("Recommendations") < markdown.index("Tried without effect") < (
        markdown.index("Confidence"))


def test_a_fix_that_made_things_worse_here_is_a_warning_and_never_a_recommendation(
        readonly_engine: TriageEngine) -> None:
    briefing = readonly_engine.brief(parse_alert(LEDGER_ALERT)).briefing
    (warning,) = [w for w in briefing.warnings if "statement timeout" in w.text]
    assert "made things worse here" in warning.text
    text, markdown = briefing_text(briefing), briefing_markdown(briefing)

    for shown in (text, markdown):
        fixes = shown.split("Recommendations")[1].split("Confidence")[0]
        assert "statement timeout" not in fixes
        assert "✓" not in marks(shown)  # the lead only mitigated
    assert "a lead to check — similar incident, not proof" in text  # (weak since issue 33)


def test_runner_up_model_reading_weak_lead_and_strong_failures_are_rendered(
        readonly_engine: TriageEngine) -> None:
    base = readonly_engine.brief(parse_alert(KEYERROR_ALERT)).briefing
    lead, second = base.recommendations[0], base.recommendations[1]
    failure = base.tried_without_effect[0]
    briefing = base.model_copy(update={
        "state": "unproven",
        "recommendations": [
            lead.model_copy(update={"applies": "weak"}),
            second.model_copy(update={"failed_strong": [Evidence(
                incident_id=failure.incident_id, action_id=failure.action_id,
                outcome=ActionOutcome.NO_EFFECT)]})],
        "runner_up": RunnerUp(action=second.action, incident_id=second.evidence[0].incident_id,
                              action_id=second.evidence[0].action_id, applies="strong"),
        "model_reading": "the alert is about refunds, the fixes about captures",
    })
    text, markdown = briefing_text(briefing), briefing_markdown(briefing)

    assert f"  1. ? {lead.action}" in text
    assert "a lead to check — similar incident, not proof" in text
    assert f"did not work in this failure: {failure.action_id} NO_EFFECT" in text
    assert (f"Runner-up (nearly as close a match): {second.action} — "
            f"{second.evidence[0].action_id}") in text
    assert ("The model's reading: none of these fixes applies — the alert is about refunds, "
            "the fixes about captures") in text
    assert f"did not work in this failure: `{failure.action_id}` NO_EFFECT" in markdown
    assert f"— `{second.evidence[0].action_id}`" in markdown.split("Runner-up")[1]
    assert "none of these fixes applies** — the alert is about refunds" in markdown
