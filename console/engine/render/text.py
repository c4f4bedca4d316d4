"""A briefing as plain text, for `triage brief` without --json."""

from __future__ import annotations

from typing import Any, NamedTuple

from console.engine.briefing.applicability import MATCH_WORDS
from console.engine.briefing.confidence import confidence_words
from console.engine.briefing.models import AlertGroup, Briefing, Match, Recommendation
from console.engine.briefing.timeline import recurrence_sentence, root_cause_lines

STATE_LABEL = {
    "proven": "PROVEN FIX IN MEMORY",
    "unproven": "SIMILAR INCIDENTS, NO PROVEN FIX",
    "no_prior_incident": "NO PRIOR INCIDENT",
}
GROUP_STATE_LABEL = {"proven": "PROVEN", "unproven": "UNPROVEN", "no_prior_incident": "NO PRIOR"}
# What was tried without effect is one short line: the explanation is cut to this many characters.
TRIED_WHY = 90


def state_label(briefing: Briefing) -> str:
    """The state's label; a lead proven only on other services says where, and not here."""
    lead = briefing.recommendations[0] if briefing.recommendations else None
    if (briefing.state == "unproven" and lead is not None and lead.applies == "elsewhere"
            and lead.proven_on):
        return f"SIMILAR INCIDENTS, PROVEN ON {', '.join(lead.proven_on)}, NOT YET HERE"
    return STATE_LABEL[briefing.state]


def fix_mark(rec: Recommendation) -> str:
    """✓ only for a fix that resolved this same failure; ~ proven elsewhere or only mitigated;
    ? a lead from a merely similar incident."""
    if rec.applies == "strong" and rec.resolved > 0:
        return "✓"
    return "?" if rec.applies == "weak" else "~"


def applies_words(rec: Recommendation, alert_service: str | None) -> str:
    """How the fix applies to this alert, in words."""
    if rec.applies == "elsewhere":
        return (f"proven on {', '.join(rec.proven_on) or 'another service'}, not yet on "
                f"{alert_service or 'this service'}")
    if rec.applies == "weak":
        return "a lead to check — similar incident, not proof"
    if rec.resolved:
        return "same failure — proven"
    return "same failure — mitigated only, not a proven fix"


def match_tag(match: Match | None) -> str:
    """A warning's class in words when it is not the same failure (empty otherwise)."""
    return f"({MATCH_WORDS[match]}) " if match in ("weak", "elsewhere") else ""


def shorten(text: str, room: int) -> str:
    """``text`` on one line, cut with "…" to ``room`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= room else flat[:max(room - 1, 0)].rstrip() + "…"


class RunbookLine(NamedTuple):
    """A runbook to show: the alert's own (``alert``) or one a recalled incident's postmortem
    recorded (``incident_id``, "used last time"), or both when they are the same address."""

    url: str
    alert: bool
    incident_id: str | None

    def label(self, incident: str | None = None) -> str:
        """"Runbook", or where it was used last time (``incident``: the id as to be shown)."""
        shown = incident or self.incident_id
        if self.alert:
            return f"Runbook (used last time too, {shown})" if shown else "Runbook"
        return f"Runbook used last time ({shown})"


# How many of the top recalled incidents are looked at for a runbook used last time.
RUNBOOK_INCIDENTS = 2


def runbook_lines(briefing: Briefing) -> list[RunbookLine]:
    """The alert's runbook (carried from its payload, never fetched), and the runbook the
    first of the top recalled incidents to record one used (quarantined records are never
    shown as guidance); empty when neither exists. The same address is said once."""
    alert_url = briefing.input.runbook_url if briefing.input is not None else None
    seen: list[str] = []
    used: tuple[str, str] | None = None
    for record in briefing.recalled:
        if record.incident_id in seen or record.quarantined:
            continue
        seen.append(record.incident_id)
        if len(seen) > RUNBOOK_INCIDENTS:
            break
        if record.runbook:
            used = (record.incident_id, record.runbook)
            break
    lines = []
    if alert_url:
        same = used is not None and used[1] == alert_url
        lines.append(RunbookLine(alert_url, True, used[0] if same and used else None))
        if same:
            used = None
    if used is not None:
        lines.append(RunbookLine(used[1], False, used[0]))
    return lines


def briefing_text(briefing: Briefing) -> str:
    """Render a briefing for a terminal or a log; every line is grounded in the result."""
    lines = [f"[{state_label(briefing)}] source: {briefing.source}"
             + (f" ({briefing.model})" if briefing.model else "")]
    briefed = next((n for n, g in enumerate(briefing.batch, 1) if g.selected), None)
    if briefed is not None:
        group = briefing.batch[briefed - 1]
        lines.append(f"alert group {briefed} of {len(briefing.batch)} ({_alerts(group.alerts)}): "
                     f"{group.alert}")
    lines += [f"{line.label()}: {line.url}" for line in runbook_lines(briefing)]
    if briefing.degraded:
        lines.append(f"note: {briefing.degraded}")
    reading = "the model's reading: " if briefing.source == "model" else ""
    lines += ["", reading + briefing.summary, ""]
    if briefing.warnings:
        lines.append("Warnings — recorded actions that made things worse:")
        lines += [f"  ⚠ {match_tag(w.match)}{w.text}" for w in briefing.warnings]
        lines.append("")
    if briefing.recommendations:
        lines.append("Recommendations — what worked before (✓ proven here, ~ not yet proven "
                     "here, ? a lead to check):")
        for number, rec in enumerate(briefing.recommendations, 1):
            cites = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.evidence)
            lines.append(f"  {number}. {fix_mark(rec)} {rec.action}")
            lines.append(f"     applies: {applies_words(rec, briefing.alert_service)}")
            if rec.model_note:
                lines.append(f"     the model's words: {rec.model_note}")
            lines.append(f"     evidence: {cites} ({rec.resolved} of {rec.tried} resolved)")
            if rec.failed_strong:
                failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_strong)
                lines.append(f"     did not work in this failure: {failed}")
            if rec.failed_elsewhere:
                failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_elsewhere)
                lines.append(f"     failed elsewhere: {failed}")
            if rec.history is not None and rec.history.text:
                lines.append(f"     in time: {rec.history.text}")
        lines.append("")
    lines += recurrence_lines(briefing)
    if briefing.runner_up is not None:
        runner = briefing.runner_up
        lines += [f"Runner-up (nearly as close a match): {runner.action} — {runner.action_id}",
                  ""]
    if briefing.model_reading:
        lines += [f"The model's reading: none of these fixes applies — {briefing.model_reading}",
                  ""]
    if briefing.tried_without_effect:
        lines.append("Tried without effect in this failure:")
        lines += [f"  · {t.text} — {t.action_id}" + (f": {shorten(t.explanation, TRIED_WHY)}"
                                                       if t.explanation else "")
                  for t in briefing.tried_without_effect]
        lines.append("")
    if briefing.likely_cause:
        lines += [f"Likely cause (the model's reading): {briefing.likely_cause}", ""]
    if briefing.step_citations:
        lines.append("Steps — each a recorded action:")
        lines += [f"  {n}. {s.text} — {s.action_id} {s.outcome}"
                  for n, s in enumerate(briefing.step_citations, 1)]
        lines.append("")
    c = briefing.confidence
    lines.append(f"Confidence {c.value} — a rule on evidence, not a probability")
    lines += [f"  {line}" for line in confidence_words(c, briefing.state)]
    lines.append(f"  worked out: {c.derivation}")
    lines.append(f"  {c.explanation}")
    if briefing.state == "no_prior_incident" and briefing.search and briefing.search.gate:
        lines.append(f"  recall: {briefing.search.gate}")
    if briefing.verification is not None:
        lines += ["", *verification_lines(briefing.verification)]
    if briefing.batch:
        lines += ["", *batch_lines(briefing.batch)]
    if briefing.search and briefing.search.notices:
        lines.append("")
        lines += [f"notice: {n}" for n in briefing.search.notices]
    return "\n".join(lines)


def recurrence_lines(briefing: Briefing) -> list[str]:
    """"Keeps coming back": the earlier occurrences, and — when one fix closed them all — the
    root causes each postmortem recorded (what was never fixed). Empty when nothing recurs."""
    found = briefing.recurrence
    if found is None:
        return []
    lines = [f"Recurrence: {recurrence_sentence(found)}"]
    if found.same_fix and found.root_causes:
        lines.append("  Recorded root causes:")
        lines += [f"  · {cause}" for cause in root_cause_lines(found)]
    return [*lines, ""]


def batch_lines(batch: list[AlertGroup]) -> list[str]:
    """The payload's alert groups, one a line, the briefed one marked ▶, and how to switch."""
    total = sum(group.alerts for group in batch)
    lines = [f"Alert groups — {len(batch)} groups of {_alerts(total)}, each recalled on its "
             "own; ▶ briefed. Brief another: the same command with --group N"]
    for number, group in enumerate(batch, 1):
        top = (f"{group.top_incident_id} {group.score:.2f}" if group.top_incident_id
               and group.score is not None else "—")
        lines.append(f"  {'▶' if group.selected else ' '} {number:>2}. "
                     f"{GROUP_STATE_LABEL[group.state]:<8} {_alerts(group.alerts):>10}  "
                     f"{top:<15} {group.alert}")
    return lines


def _alerts(count: int) -> str:
    return f"{count} alert{'s' if count != 1 else ''}"


def verification_lines(verification: dict[str, Any]) -> list[str]:
    """The verification below the briefing it audits: disposition, confidence and its
    derivation, the conclusion, each question with its result, the artifact."""
    status = verification.get("status")
    if status == "not_needed":
        return [f"Verification: {verification['reason']}"]
    if status == "failed":
        return [f"Verification: {verification['error']}"]
    c = verification["confidence"]
    lines = ["Verification — an audit of the briefing above (which it does not change)",
             f"  {verification['disposition'].upper()} · verification confidence {c['value']}",
             f"  {c['derivation']}",
             f"  {verification['conclusion']}",
             "  Questions (confirmed supports the briefing, refuted undermines it):"]
    for q in verification["questions"]:
        why = f" — {q['missing']}" if q["result"] == "unknown" else ""
        found = f" — found {q['found']}" if q.get("found") else ""
        lines.append(f"    [{q['result']:<9}] {q['id']} ({q['probe']}) {q['text']}{why}{found}")
        if q.get("phrased"):
            lines.append(f"                 the model's words: {q['phrased']}")
        if q.get("argv"):
            lines.append(f"                 argv: {' '.join(q['argv'])}")
        if q.get("output"):
            lines += [f"                 | {line}" for line in q["output"].splitlines()[:10]]
    lines += [f"  skipped probe {s}" for s in verification.get("skipped_probes", [])]
    lines += [f"  model: {line}" for line in verification.get("model_log", [])]
    lines.append(f"  artifact: {verification['artifact']}")
    return lines


def open_question_lines(verification: dict[str, Any]) -> list[str]:
    """What a headless run leaves open, and the exact flag that answers each (for stderr)."""
    waiting = [q for q in verification.get("questions", [])
               if q["result"] == "unknown" and q["probe"] in ("engineer", "declared")
               and q["missing"] != "the engineer does not know"]
    if not waiting:
        return []
    lines = [f"triage: verification: {len(waiting)} open question(s) — answer and run again:"]
    for q in waiting:
        if q["probe"] == "engineer":
            lines.append(f"  --answer {q['id']}=yes|no|unknown   {q['text']}")
        else:
            lines.append(f"  --allow-probe {q['check']}   {q['text']} "
                         f"(runs: {' '.join(q.get('argv') or [])})")
    return lines
