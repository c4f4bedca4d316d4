"""A briefing as plain text, for `triage brief` without --json."""

from __future__ import annotations

from console.engine.briefing import Briefing

STATE_LABEL = {
    "proven": "PROVEN FIX IN MEMORY",
    "unproven": "SIMILAR INCIDENTS, NO PROVEN FIX",
    "no_prior_incident": "NO PRIOR INCIDENT",
}


def briefing_text(briefing: Briefing) -> str:
    """Render a briefing for a terminal or a log; every line is grounded in the result."""
    lines = [f"[{STATE_LABEL[briefing.state]}] source: {briefing.source}"
             + (f" ({briefing.model})" if briefing.model else "")]
    if briefing.degraded:
        lines.append(f"note: {briefing.degraded}")
    lines += ["", briefing.summary, ""]
    if briefing.warnings:
        lines.append("Warnings — recorded actions that made things worse:")
        lines += [f"  ⚠ {w.text}" for w in briefing.warnings]
        lines.append("")
    if briefing.recommendations:
        lines.append("Recommendations — what worked before:")
        for number, rec in enumerate(briefing.recommendations, 1):
            cites = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.evidence)
            lines.append(f"  {number}. {rec.action}")
            lines.append(f"     evidence: {cites} ({rec.resolved} of {rec.tried} resolved)")
            if rec.failed_elsewhere:
                failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_elsewhere)
                lines.append(f"     failed elsewhere: {failed}")
        lines.append("")
    c = briefing.confidence
    lines.append(f"Confidence {c.value} — a rule on evidence, not a probability")
    lines.append(f"  {c.derivation}")
    lines.append(f"  {c.explanation}")
    if briefing.state == "no_prior_incident" and briefing.search and briefing.search.gate:
        lines.append(f"  recall: {briefing.search.gate}")
    if briefing.search and briefing.search.notices:
        lines.append("")
        lines += [f"notice: {n}" for n in briefing.search.notices]
    return "\n".join(lines)
