"""Warnings: recalled actions that made things worse, worded once for every path.

Both the deterministic briefing and the guarded model draft show a warning as the text,
then the citation, the outcome and the stored causal explanation (and whether it is only
suspected), so an engineer reads the same shape whoever wrote the first words.
"""

from __future__ import annotations

from console.engine.briefing.models import BriefingWarning
from store.models import ActionOutcome
from store.recall import Recall, RecalledAction


def warning_for(action: RecalledAction, text: str | None = None) -> BriefingWarning:
    """The warning for one WORSENED action; ``text`` is the lead words (default: the action)."""
    lead = (text or "").strip() or f"Don't repeat: {action.action}"
    suspected = "" if action.confirmed else " (explanation suspected, not confirmed)"
    return BriefingWarning(
        text=f"{lead} — {action.action_id} WORSENED: {action.explanation}{suspected}",
        incident_id=action.incident_id, action_id=action.action_id,
        explanation=action.explanation)


def warnings_from(recall: Recall) -> list[BriefingWarning]:
    """Every recalled action that made things worse, with why."""
    return [warning_for(action) for action in recall.actions
            if action.outcome is ActionOutcome.WORSENED]
