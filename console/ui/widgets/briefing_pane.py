"""The briefing pane: warnings first, then what worked, every line with its citation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:
    from console.engine.briefing.models import Briefing, Match, Recommendation

STATE_BANNER = {
    "proven": ("PROVEN FIX IN MEMORY", "bold green"),
    "unproven": ("SIMILAR INCIDENTS — NO PROVEN FIX", "bold yellow"),
    "no_prior_incident": ("NO PRIOR INCIDENT", "bold magenta"),
}
# A tried-without-effect line is kept to one row of the pane (76 columns at 80 and at 120
# wide, less its scrollbar): the stored action and its citation always, the explanation cut
# to what is left.
LINE_BUDGET = 72
# A runbook's address is shown whole up to this many characters (two rows of the pane); a
# longer one is cut with "…" so it cannot push the warnings off a small screen (the export
# and `triage brief --json` carry it whole).
RUNBOOK_SHOWN = 2 * LINE_BUDGET


@cache
def match_words() -> Mapping[Match, str]:
    """MATCH_WORDS, imported when a briefing is shown (not on the first paint's path)."""
    from console.engine.briefing.applicability import MATCH_WORDS

    return MATCH_WORDS


def state_banner(briefing: Briefing) -> tuple[str, str]:
    """The state's banner; a lead proven only on other services says where, and not here."""
    label, style = STATE_BANNER[briefing.state]
    lead = briefing.recommendations[0] if briefing.recommendations else None
    if (briefing.state == "unproven" and lead is not None and lead.applies == "elsewhere"
            and lead.proven_on):
        label = f"SIMILAR INCIDENTS — PROVEN ON {', '.join(lead.proven_on)}, NOT YET HERE"
    return label, style


def status_renderable(briefing: Briefing) -> Text:
    """The pane's one fixed line: the state, and who wrote the briefing. Said here once: the
    body below does not repeat it, and why the model was not used is the body's last line."""
    label, style = state_banner(briefing)
    text = Text(label, style=style)
    if briefing.source == "model":
        text.append(f" · written by model {briefing.model}, checked against memory",
                    style="dim")
    else:
        text.append(" · deterministic", style="bold cyan")
        text.append(", from the memory alone", style="dim")
    return text


# The reason's own tail, said already by the status line's "deterministic".
_DETERMINISTIC_TAIL = re.compile(r"\s*[—-]+\s*deterministic(?: briefing)?\.?\s*$", re.IGNORECASE)


def not_model_renderable(briefing: Briefing) -> Text:
    """Why the model did not write this briefing, once, in full (empty when it did, and after
    no prior incident, whose state already says there was nothing to ask it)."""
    if not briefing.degraded or briefing.degraded.startswith("no prior incident"):
        return Text()
    reason = _DETERMINISTIC_TAIL.sub("", briefing.degraded)
    if reason.startswith("the model is drafting"):  # (the provisional briefing: not yet)
        return Text(f"\n⚑ {reason}\n", style="yellow")
    return Text(f"\n⚑ Not written by a model: {reason}\n", style="yellow")


SEARCH_MODES = {"hybrid": "by words and by meaning", "lexical": "by words only"}


def searched_line(briefing: Briefing) -> str:
    """After no prior incident: how the memory was searched (the summary says how much; the
    terms as the index stems them, and the gate, are on the details view)."""
    assert briefing.search is not None
    how = SEARCH_MODES.get(briefing.search.mode, f"by {briefing.search.mode} search")
    return f"Searched {how} (F12: for which words, and how close the nearest came)."


def briefing_renderable(briefing: Briefing) -> Text:
    """The briefing as plain Text: stored and model text is never parsed as markup.

    Warnings come first and the lead fix right after them, so a terminal of 24 rows shows both
    (the state is on the pane's status line), then whether this failure keeps coming back; the
    other fixes, the runner-up, the model's reading, what was tried without effect, the summary
    and, when the model did not write it, why."""
    text = runbook_renderable(briefing)
    for warning in briefing.warnings:
        text.append("⚠ ", style="bold red")
        if warning.match in ("weak", "elsewhere"):  # the class first: how far it applies here
            text.append(f"({match_words()[warning.match]}) ", style="italic yellow")
        text.append(warning.text + "\n", style="red")
    if briefing.warnings:
        text.append("\n")
    for number, rec in enumerate(briefing.recommendations, 1):
        text.append_text(recommendation_renderable(number, rec, briefing.alert_service))
        if number == 1:  # that it keeps coming back is read with the lead, not below the list
            text.append_text(recurrence_renderable(briefing))
    if not briefing.recommendations:
        text.append_text(recurrence_renderable(briefing))
    elif briefing.recommendations[1:] or briefing.recurrence is None:
        text.append("\n")  # (the recurrence block ends in its own blank line)
    if briefing.runner_up is not None:
        runner = briefing.runner_up
        text.append("Runner-up (nearly as close a match): ", style="bold")
        text.append(runner.action)
        text.append(f" — {runner.action_id}\n", style="dim")
    if briefing.model_reading:
        text.append("The model's reading: none of these fixes applies — ", style="bold")
        text.append(briefing.model_reading + "\n")
    if briefing.runner_up is not None or briefing.model_reading:
        text.append("\n")
    text.append_text(tried_renderable(briefing))
    if briefing.source == "model":
        text.append("The model's reading: ", style="bold dim")
    text.append(shown_summary(briefing) + "\n")
    if briefing.likely_cause:
        text.append("Likely cause (the model's reading): ", style="bold")
        text.append(briefing.likely_cause + "\n")
    for number, step in enumerate(briefing.step_citations, 1):
        text.append(f"  step {number}: ")
        text.append(step.text)
        text.append(f" — {step.action_id} {step.outcome}\n", style="dim")
    if briefing.state == "no_prior_incident" and briefing.search:
        text.append(searched_line(briefing) + "\n", style="dim")
    if briefing.search:
        for notice in briefing.search.notices:
            text.append(f"notice: {notice}\n", style="dim")
        if briefing.search.redacted:
            text.append(f"redacted from the alert before search: "
                        f"{', '.join(briefing.search.redacted)}\n", style="dim")
    missing = missing_evidence(briefing)
    if missing:
        text.append("\nNot used: ", style="bold dim")
        text.append(missing + "\n", style="dim")
    text.append_text(not_model_renderable(briefing))
    return text


def runbook_renderable(briefing: Briefing) -> Text:
    """"Runbook: …" — the alert's, and the one used last time — first, where a tired engineer
    looks; the address is untrusted text shown as written (never markup, never fetched)."""
    from console.engine.render.text import runbook_lines

    text = Text()
    for line in runbook_lines(briefing):
        url = line.url if len(line.url) <= RUNBOOK_SHOWN \
            else line.url[:RUNBOOK_SHOWN - 1] + "…"
        text.append(f"{line.label()}: ", style="bold cyan")
        text.append(url + "\n")
    return text


NO_PRIOR_OPENING = "No prior incident: "


def shown_summary(briefing: Briefing) -> str:
    """The summary, less the state it opens with when the status line above says it already."""
    summary = briefing.summary
    if briefing.state == "no_prior_incident" and summary.startswith(NO_PRIOR_OPENING):
        rest = summary[len(NO_PRIOR_OPENING):]
        return rest[:1].upper() + rest[1:]
    return summary


def recommendation_renderable(number: int, rec: Recommendation, alert_service: str | None) -> Text:
    """One fix: ✓ only when it resolved the same failure; "~" when proven only on another
    service or only mitigated; "?" when its incident is only similar (a lead to check)."""
    proven = rec.applies == "strong" and rec.resolved > 0
    mark, style = ("✓", "bold green") if proven else (
        ("?", "bold magenta") if rec.applies == "weak" else ("~", "bold yellow"))
    text = Text(f"{mark} {number}. ", style=style)
    text.append(rec.action + "\n")
    if rec.applies == "elsewhere":
        text.append(f"     proven on {', '.join(rec.proven_on) or 'another service'}, not yet "
                    f"on {alert_service or 'this service'}\n", style="yellow")
    elif rec.applies == "weak":
        text.append("     a lead to check — similar incident, not proof\n", style="magenta")
    if rec.model_note:
        text.append(f"     the model's words: {rec.model_note}\n", style="dim italic")
    cites = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.evidence)
    only = "; mitigated only" if rec.applies == "strong" and not rec.resolved else ""
    text.append(f"     — {cites} ({rec.resolved} of {rec.tried} "
                f"incident{'' if rec.tried == 1 else 's'} resolved{only})\n",
                style="dim")
    if rec.failed_strong:
        failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_strong)
        text.append(f"     — did not work in this failure: {failed}\n", style="bold yellow")
    if rec.failed_elsewhere:
        failed = ", ".join(f"{e.action_id} {e.outcome}" for e in rec.failed_elsewhere)
        text.append(f"     — did not work elsewhere: {failed}\n", style="yellow")
    if rec.history is not None and rec.history.text:
        text.append(f"     — in time: {rec.history.text}\n",
                    style="bold yellow" if rec.history.failed_last else "yellow")
    return text


def recurrence_renderable(briefing: Briefing) -> Text:
    """"Keeps coming back": how often, the last time, and — when one fix closed every one —
    the root causes each postmortem recorded, so what was never fixed is in sight."""
    text = Text()
    found = briefing.recurrence
    if found is None:
        return text
    from console.engine.briefing.timeline import recurrence_sentence, root_cause_lines

    text.append("↻ Recurs: ", style="bold yellow")
    text.append(recurrence_sentence(found) + "\n")
    if found.same_fix and found.root_causes:
        text.append("  Recorded root causes:\n", style="bold")
        for cause in root_cause_lines(found):
            text.append(f"  · {cause}\n", style="dim")
    text.append("\n")
    return text


def tried_renderable(briefing: Briefing) -> Text:
    """What was tried in this failure and made no difference: one cited line each."""
    text = Text()
    if not briefing.tried_without_effect:
        return text
    text.append("Tried without effect in this failure:\n", style="bold")
    for tried in briefing.tried_without_effect:
        line = f"  · {tried.text} — {tried.action_id}"
        text.append(line)
        room = LINE_BUDGET - len(line) - 2  # ": "
        why = " ".join(tried.explanation.split())
        if why and room >= 12:
            text.append(": " + (why if len(why) <= room else why[:room - 1].rstrip() + "…"),
                        style="dim")
        text.append("\n")
    text.append("\n")
    return text


def coverage_line(briefing: Briefing) -> str:
    """Which sources this briefing used, which were unavailable or truncated, short hashes
    (the details view's line)."""
    parts = []
    for use in briefing.coverage:
        part = f"{use.source} {use.status.replace('_', ' ')}"
        if use.sha256:
            part += f" #{use.sha256[:8]}"
        if use.detail and use.status != "unavailable":
            part += f" ({use.detail})"
        parts.append(part)
    return " · ".join(parts)


def missing_evidence(briefing: Briefing) -> str:
    """The sources this briefing could not use, in words and without hashes (the main screen's
    line; the model's absence is said once, by ``not_model_renderable``)."""
    parts = []
    for use in briefing.coverage:
        if use.status not in ("unavailable", "truncated", "excluded") \
                or use.source.startswith("model"):
            continue
        said = {"unavailable": "unavailable", "truncated": "cut short",
                "excluded": "left out"}[use.status]
        parts.append(f"{use.source} {said}" + (f" ({use.detail})" if use.detail else ""))
    return " · ".join(parts)


class BriefingPane(VerticalScroll, can_focus=True):
    """Scrollable briefing under a one-line status that stays put; shows only finished,
    guarded briefings."""

    BORDER_TITLE = "Briefing"
    # The briefing on screen (None: none is), for the details view (F12).
    briefing: Briefing | None = None
    DEFAULT_CSS = """
    BriefingPane > #briefing-status { dock: top; height: 1; text-wrap: nowrap;
                                      text-overflow: ellipsis; display: none; }
    BriefingPane > #briefing-status.-shown { display: block; }
    """

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", markup=False, id="briefing-status")
        yield Static(Text("Type or paste an alert above and press Enter.\n\n"
                          "The briefing recalls what the team did in similar past incidents — "
                          "including what made things worse."),
                     markup=False, id="briefing-body")

    def show_text(self, text: Text, status: Text | None = None) -> None:
        """Anything but a briefing (working, failed, cancelled): the details view has none."""
        self.briefing = None
        self._show(text, status)

    def _show(self, text: Text, status: Text | None) -> None:
        line = self.query_one("#briefing-status", Static)
        line.update(status or "")
        line.set_class(status is not None, "-shown")
        self.query_one("#briefing-body", Static).update(text)
        self.scroll_home(animate=False)

    def show_briefing(self, briefing: Briefing) -> None:
        self._show(briefing_renderable(briefing), status_renderable(briefing))
        self.briefing = briefing

    def show_working(self, message: str) -> None:
        self.show_text(Text(message, style="italic"))
