"""A briefing as Markdown for the incident channel (a console key, `triage brief --format md`).

Mirrors console/engine/render/text.py section for section, and also quotes the alert it
briefs (a channel reader has not seen it; a terminal user has just typed it). Every piece of
stored, alert or model text is escaped (:func:`literal`) so that Slack/Mattermost-style
Markdown shows it as written: it cannot ping (``@channel``, ``<!here>``), link, open code,
break a table or start a heading. Citations are ours (``INC-2041/A1``, ids restricted to
``[A-Za-z0-9._-]``) and are set in code spans, so every citation on screen appears verbatim
in the export.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from console.engine.briefing.applicability import MATCH_WORDS
from console.engine.briefing.models import Briefing, Evidence
from console.engine.briefing.timeline import recurrence_sentence
from console.engine.render.text import (
    GROUP_STATE_LABEL,
    TRIED_WHY,
    applies_words,
    fix_mark,
    match_tag,
    runbook_lines,
    shorten,
    state_label,
)
from store.text import clean

_ID = re.compile(r"[A-Za-z0-9._/-]+")
# Only the punctuation that can open code, emphasis, strikethrough, a link or a table is
# escaped: Slack shows a backslash escape as written, so every needless one is noise in the
# channel. "(" and "!" are safe once "[" and "]" are escaped (no "](" or "!["); "{}" mean
# nothing; "#" and ">" only start a heading or quote at the start of a line (_LEADING_BLOCK).
_PUNCTUATION = re.compile(r"([\\`*\[\]|])")
# "_" opens or closes emphasis only beside a non-alphanumeric: db_pool_size stays as written;
# "~" strikes through only touching a word: "~ 10 min" stays, "~10 min" is escaped.
_UNDERSCORE = re.compile(r"(?<![^\W_])_|_(?![^\W_])")
_TILDE = re.compile(r"(?<=\S)~|~(?=\S)")
_MENTION = re.compile(r"([@＠])(?=\w)")
_LEADING_BLOCK = re.compile(r"^(\s*)([-+=#])")
_LEADING_NUMBER = re.compile(r"^(\s*\d+)([.)])")  # "1." or "1)" would start a list
_AUTOLINK = re.compile(r"(?i)(://|\bwww\.|\bmailto:)")
# The alert quoted at the top of an export: as much as the model is shown of it.
ALERT_IN_EXPORT = 4_000
ZERO_WIDTH = "\u200b"  # between "@" and a name: shown as "@channel", read by no chat as a mention


def literal(text: str | None) -> str:
    """``text`` on one line, rendering literally in CommonMark/GFM, Slack and Mattermost."""
    flat = " ".join(clean(text or "").split())
    flat = flat.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    flat = _PUNCTUATION.sub(r"\\\1", flat)
    flat = _UNDERSCORE.sub(r"\\_", flat)
    flat = _TILDE.sub(r"\\~", flat)
    flat = _MENTION.sub(lambda m: m.group(1) + ZERO_WIDTH, flat)
    flat = _AUTOLINK.sub(lambda m: m.group(1)[:-1] + ZERO_WIDTH + m.group(1)[-1], flat)
    flat = _LEADING_NUMBER.sub(r"\1\\\2", flat)
    return _LEADING_BLOCK.sub(r"\1\\\2", flat)


def cite(action_id: str | None) -> str:
    """A citation as a code span (literal everywhere); anything not id-shaped is escaped."""
    if action_id and _ID.fullmatch(action_id):
        return f"`{action_id}`"
    return literal(action_id or "—")


def alert_line(query: str) -> str:
    """The alert the briefing answers, as recall searched it (secrets already redacted), on
    one line; a long one is cut at ALERT_IN_EXPORT characters, saying how much is left out."""
    flat = " ".join(clean(query).split())
    if len(flat) <= ALERT_IN_EXPORT:
        return literal(flat)
    return (literal(flat[:ALERT_IN_EXPORT].rstrip()) + f" … (cut: {len(flat) - ALERT_IN_EXPORT:,} "
            "characters more; `triage brief --json` has it whole, as search.query)")


def _evidence(items: list[Evidence]) -> str:
    return ", ".join(f"{cite(e.action_id)} {e.outcome}" for e in items)


def briefing_markdown(briefing: Briefing) -> str:
    """The briefing as Markdown: state, the alert it answers, warnings first, fixes with
    evidence, steps, confidence and its derivation, verification, alert groups, sources and
    notices, recalled memory."""
    model = f" ({literal(briefing.model)})" if briefing.model else ""
    lines = [f"### Triage briefing — {literal(state_label(briefing))}", ""]
    if briefing.search is not None and briefing.search.query.strip():
        lines.append(f"**Alert:** {alert_line(briefing.search.query)}")
    # The address as text (escaped like all alert text: no link, no breakout), never fetched.
    lines += [f"**{line.label(cite(line.incident_id) if line.incident_id else None)}:** "
              f"{literal(line.url)}" for line in runbook_lines(briefing)]
    lines.append(f"**Source:** {briefing.source}{model}")
    briefed = next((n for n, g in enumerate(briefing.batch, 1) if g.selected), None)
    if briefed is not None:
        group = briefing.batch[briefed - 1]
        lines.append(f"**Alert group {briefed} of {len(briefing.batch)}** "
                     f"({group.alerts} alerts): {literal(group.alert)}")
    if briefing.degraded:
        lines.append(f"**Note:** {literal(briefing.degraded)}")
    reading = "**The model's reading:** " if briefing.source == "model" else ""
    lines += ["", reading + literal(briefing.summary), ""]
    if briefing.warnings:
        lines += ["#### ⚠ Warnings — recorded actions that made things worse", ""]
        for warning in briefing.warnings:
            tag = match_tag(warning.match)
            line = (f"- ⚠ {literal(tag) + ' ' if tag else ''}{literal(warning.text)} — "
                    f"{cite(warning.action_id)} WORSENED")
            if warning.explanation and warning.explanation not in warning.text:
                line += f"; why: {literal(warning.explanation)}"
            lines.append(line)
        lines.append("")
    if briefing.recommendations:
        lines += ["#### Recommendations — what worked before", "",
                  "✓ proven here · ~ not yet proven here · ? a lead to check", ""]
        for number, rec in enumerate(briefing.recommendations, 1):
            lines.append(f"{number}. {fix_mark(rec)} {literal(rec.action)}")
            lines.append(f"   - applies: {literal(applies_words(rec, briefing.alert_service))}")
            if rec.model_note:
                lines.append(f"   - the model's words: {literal(rec.model_note)}")
            lines.append(f"   - evidence: {_evidence(rec.evidence)} "
                         f"({rec.resolved} of {rec.tried} resolved)")
            if rec.failed_strong:
                lines.append(f"   - did not work in this failure: {_evidence(rec.failed_strong)}")
            if rec.failed_elsewhere:
                lines.append(f"   - failed elsewhere: {_evidence(rec.failed_elsewhere)}")
            if rec.history is not None and rec.history.text:
                lines.append(f"   - in time: {literal(rec.history.text)}")
        lines.append("")
    if briefing.recurrence is not None:
        found = briefing.recurrence
        lines += [f"**Recurrence:** {literal(recurrence_sentence(found))}", ""]
        if found.same_fix and found.root_causes:
            lines += ["Recorded root causes:", ""]
            lines += [f"- {literal(cause)}" for cause in found.root_causes]
            lines.append("")
    if briefing.runner_up is not None:
        runner = briefing.runner_up
        lines += [f"**Runner-up (nearly as close a match):** {literal(runner.action)} — "
                  f"{cite(runner.action_id)}", ""]
    if briefing.model_reading:
        lines += [f"**The model's reading: none of these fixes applies** — "
                  f"{literal(briefing.model_reading)}", ""]
    if briefing.tried_without_effect:
        lines += ["#### Tried without effect in this failure", ""]
        lines += [f"- {literal(t.text)} — {cite(t.action_id)}"
                  + (f": {literal(shorten(t.explanation, TRIED_WHY))}" if t.explanation else "")
                  for t in briefing.tried_without_effect]
        lines.append("")
    if briefing.likely_cause:
        lines += [f"**Likely cause (the model's reading):** {literal(briefing.likely_cause)}", ""]
    if briefing.step_citations:
        lines += ["#### Steps — each a recorded action", ""]
        lines += [f"{n}. {literal(s.text)} — {cite(s.action_id)} {s.outcome}"
                  for n, s in enumerate(briefing.step_citations, 1)]
        lines.append("")
    c = briefing.confidence
    lines += [f"#### Confidence {c.value} — a rule on evidence, not a probability", "",
              f"- {literal(c.derivation)}", f"- {literal(c.explanation)}"]
    if briefing.state == "no_prior_incident" and briefing.search and briefing.search.gate:
        lines.append(f"- recall: {literal(briefing.search.gate)}")
    lines.append("")
    if briefing.verification is not None:
        lines += [*verification_markdown(briefing.verification), ""]
    if briefing.batch:
        lines += ["#### Alert groups (▶ briefed)", ""]
        for number, group in enumerate(briefing.batch, 1):
            top = (f"{cite(group.top_incident_id)} {group.score:.2f}" if group.top_incident_id
                   and group.score is not None else "—")
            lines.append(f"- {'▶ ' if group.selected else ''}{number}. "
                         f"{GROUP_STATE_LABEL[group.state]} · {group.alerts} alerts · {top} · "
                         f"{literal(group.alert)}")
        lines.append("")
    sources = briefing.coverage
    notices = briefing.search.notices if briefing.search else []
    if sources or notices:
        lines += ["#### Sources and notices", ""]
        lines += [f"- {literal(s.source)}: {s.status}" + (f" — {literal(s.detail)}" if s.detail
                                                          else "") for s in sources]
        lines += [f"- notice: {literal(n)}" for n in notices]
        lines.append("")
    if briefing.recalled:
        lines += [f"#### Recalled memory ({len(briefing.recalled)})", ""]
        for record in briefing.recalled:
            outcome = record.outcome.value if record.outcome else "no actions recorded"
            what = record.action or record.title
            flag = " · quarantined, never evidence" if record.quarantined else ""
            lines.append(f"- {cite(record.action_id or record.incident_id)} {outcome} "
                         f"{record.score:.2f} · {MATCH_WORDS[record.match]} — "
                         f"{literal(record.service)} · {literal(what)}{flag}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def verification_markdown(verification: dict[str, Any]) -> list[str]:
    """The verification below the briefing it audits (as report.verification_lines)."""
    status = verification.get("status")
    if status == "not_needed":
        return [f"**Verification:** {literal(str(verification.get('reason', '')))}"]
    if status == "failed":
        return [f"**Verification:** {literal(str(verification.get('error', '')))}"]
    if "disposition" not in verification:
        return []
    c = verification.get("confidence") or {}
    lines = ["#### Verification — an audit of the briefing above (which it does not change)", "",
             f"**{literal(str(verification['disposition']).upper())}** · verification "
             f"confidence {literal(str(c.get('value', '')))}",
             "", f"- {literal(str(c.get('derivation', '')))}",
             f"- {literal(str(verification.get('conclusion', '')))}", "",
             "Questions (confirmed supports the briefing, refuted undermines it):", ""]
    for q in verification.get("questions", []):
        result = literal(str(q.get("result", "")))
        why = f" — {literal(str(q['missing']))}" if q.get("result") == "unknown" and q.get(
            "missing") else ""
        found = f" — found {literal(str(q['found']))}" if q.get("found") else ""
        lines.append(f"- **{result}** {cite(str(q.get('id', '')))} ({literal(str(q.get('probe')))})"
                     f" {literal(str(q.get('text', '')))}{why}{found}")
        if q.get("phrased"):
            lines.append(f"  - the model's words: {literal(str(q['phrased']))}")
    if verification.get("artifact"):
        lines += ["", f"artifact: {cite(str(verification['artifact']))}"]
    return lines


def alert_hash(briefing: Briefing) -> str:
    """12 hex digits naming the alert briefed (its redacted text as searched)."""
    alert = briefing.search.query if briefing.search else briefing.summary
    return hashlib.sha256(alert.encode("utf-8", "replace")).hexdigest()[:12]


def write_markdown(briefing: Briefing, directory: Path, now: datetime | None = None) -> Path:
    """Write the Markdown to ``directory/briefing-<UTC time>-<alert hash>.md`` atomically
    (temp file, fsync, rename; never over an existing file) and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    stem = f"briefing-{stamp}-{alert_hash(briefing)}"
    data = briefing_markdown(briefing).encode("utf-8")
    handle, temp = tempfile.mkstemp(prefix=".briefing-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        for attempt in range(1, 1000):
            target = directory / (stem + (f"-{attempt}" if attempt > 1 else "") + ".md")
            try:
                os.link(temp, target)  # fails if the name is taken: never overwrite
            except FileExistsError:
                continue
            break
        else:
            raise FileExistsError(f"no free name for {stem}.md in {directory}")
    finally:
        Path(temp).unlink(missing_ok=True)
    _fsync_directory(directory)
    return target


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
