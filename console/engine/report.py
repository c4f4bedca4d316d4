"""A briefing as plain text, for `triage brief` without --json."""

from __future__ import annotations

from typing import Any

from console.engine.briefing import AlertGroup, Briefing

STATE_LABEL = {
    "proven": "PROVEN FIX IN MEMORY",
    "unproven": "SIMILAR INCIDENTS, NO PROVEN FIX",
    "no_prior_incident": "NO PRIOR INCIDENT",
}
GROUP_STATE_LABEL = {"proven": "PROVEN", "unproven": "UNPROVEN", "no_prior_incident": "NO PRIOR"}


def briefing_text(briefing: Briefing) -> str:
    """Render a briefing for a terminal or a log; every line is grounded in the result."""
    lines = [f"[{STATE_LABEL[briefing.state]}] source: {briefing.source}"
             + (f" ({briefing.model})" if briefing.model else "")]
    briefed = next((n for n, g in enumerate(briefing.batch, 1) if g.selected), None)
    if briefed is not None:
        group = briefing.batch[briefed - 1]
        lines.append(f"alert group {briefed} of {len(briefing.batch)} ({_alerts(group.alerts)}): "
                     f"{group.alert}")
    if briefing.degraded:
        lines.append(f"note: {briefing.degraded}")
    reading = "the model's reading: " if briefing.source == "model" else ""
    lines += ["", reading + briefing.summary, ""]
    if briefing.warnings:
        lines.append("Warnings — recorded actions that made things worse:")
        lines += [f"  ⚠ {w.text}" for w in briefing.warnings]
        lines.append("")
    if briefing.recommendations:
        lines.append("Recommendations — what worked before:")
        for number, rec in enumerate(briefing.recommendations, 1):
            cites = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.evidence)
            lines.append(f"  {number}. {rec.action}")
            if rec.model_note:
                lines.append(f"     the model's words: {rec.model_note}")
            lines.append(f"     evidence: {cites} ({rec.resolved} of {rec.tried} resolved)")
            if rec.failed_elsewhere:
                failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_elsewhere)
                lines.append(f"     failed elsewhere: {failed}")
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
    lines.append(f"  {c.derivation}")
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
