"""A briefing as plain text, for `triage brief` without --json."""

from __future__ import annotations

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
