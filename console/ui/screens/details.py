"""F12: how the briefing on screen was worked out — every fact the main screen says in words
only: the confidence rule's derivation, floor, cap and model claim, what was searched for (the
terms as the index stems them) and the gate's arithmetic, the evidence hashes, each record's
score components, the model's attempts and the guards' changes. Esc closes it."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from console.engine.briefing.confidence import ELSEWHERE_CAP, ELSEWHERE_FLOOR, HARD_CAP
from console.engine.briefing.models import Briefing, RecalledRecord
from console.ui.screens.dialog import Dialog

# The seed's rule, as the confidence module applies it (confidence.py tier_rule).
RULE = (f"tiers on the count of proofs: 0 → min(model, 30) · 1 → clamp(model, 55, 74) · "
        f"2 → clamp(model, 75, 89) · 3+ → min({HARD_CAP}, max(model, 88+2·count)); a fix proven "
        f"only on other services → clamp(model, {ELSEWHERE_FLOOR}, {ELSEWHERE_CAP}). The count "
        "is the strong incidents the lead fix resolved, less one for each where it failed; a "
        "missing model claim counts as 0.")


def heading(text: Text, title: str) -> None:
    text.append(f"\n{title}\n", style="bold underline")


def field(text: Text, name: str, value: str) -> None:
    text.append(f"  {name}: ", style="bold")
    text.append(value + "\n")


def confidence_section(text: Text, briefing: Briefing, track_record: str) -> None:
    c = briefing.confidence
    heading(text, f"Confidence {c.value} — the rule's derivation")
    field(text, "derivation", c.derivation or "(none recorded)")
    field(text, "in words", c.explanation)
    claim = "none" if c.model_claim is None else str(c.model_claim)
    field(text, "inputs", f"model claim {claim} · tier {c.tier} · floor {c.floor} · cap {c.cap} · "
                          f"proven {c.proven} · failed {c.failed} · failed in this failure "
                          f"{c.failed_strong} · proven elsewhere {c.proven_elsewhere}")
    field(text, "cited incidents", ", ".join(c.cited) or "none")
    if briefing.state == "no_prior_incident":
        field(text, "track record", "none: no fix was recommended, so no tier's record applies")
    elif track_record:
        field(text, "track record", track_record)
    field(text, "the rule", RULE)


def search_section(text: Text, briefing: Briefing) -> None:
    search = briefing.search
    if search is None:
        return
    heading(text, "Search")
    field(text, "alert as searched (secrets redacted)", " ".join(search.query.split()))
    field(text, "mode", f"{search.mode} · {search.memory_incidents} incidents in memory")
    field(text, "terms, as the index stems them", ", ".join(search.terms) or "(none)")
    field(text, "relevance floor", f"stands out {search.floor:g} spreads · best left out "
                                   f"{search.best_rejected:g}")
    if search.gate:
        field(text, "gate", search.gate)
    if search.redacted:
        field(text, "redacted before search", ", ".join(search.redacted))


def evidence_section(text: Text, briefing: Briefing) -> None:
    if not briefing.coverage:
        return
    heading(text, "Evidence used (sha256, first 12 hex digits)")
    recalled = bool(briefing.recalled)
    for use in briefing.coverage:
        line = f"  {use.source}: {use.status.replace('_', ' ')}"
        if use.sha256:
            empty = use.source == "memory" and not recalled
            line += f" · #{use.sha256}" + (" (of nothing: no record was recalled)" if empty
                                           else "")
        if use.detail:
            line += f" · {use.detail}"
        text.append(line + "\n")


def record_line(record: RecalledRecord) -> str:
    label = (f"{record.action_id} {record.outcome}" if record.action_id
             else f"{record.incident_id} (no actions recorded)")
    parts = [f"score {record.score:.3f}"]
    if record.cosine is not None:
        parts.append(f"cosine {record.cosine:.3f}")
    if record.bm25 is not None:
        parts.append(f"BM25 {record.bm25:.2f}")
    parts += [f"applicability {record.applicability:.3f}", f"match {record.match}"]
    if record.quarantined:
        parts.append("quarantined")
    return f"  {label} · " + " · ".join(parts)


def recalled_section(text: Text, briefing: Briefing) -> None:
    if not briefing.recalled:
        return
    heading(text, "Recalled records: scores and their components")
    for record in briefing.recalled:
        text.append(record_line(record) + "\n")


def fixes_section(text: Text, briefing: Briefing) -> None:
    if not briefing.recommendations:
        return
    heading(text, "Fixes, as the verdict ranked them")
    for number, rec in enumerate(briefing.recommendations, 1):
        text.append(f"  {number}. {rec.action}\n")
        text.append(f"     applies {rec.applies} · proven on {', '.join(rec.proven_on) or '—'}"
                    f" · resolved {rec.resolved} of {rec.tried} tried\n", style="dim")


def model_section(text: Text, briefing: Briefing) -> None:
    heading(text, "Who wrote it")
    field(text, "source", briefing.source + (f" (model {briefing.model})" if briefing.model
                                             else ""))
    if briefing.degraded:
        field(text, "why not the model", briefing.degraded)
    for attempt in briefing.attempts:
        field(text, f"attempt {attempt.n}", f"{attempt.result}"
              + (f" — {attempt.reason}" if attempt.reason else "")
              + f" · output sha256 {attempt.output_sha256}")
    if briefing.source == "model" or briefing.guard_log:
        field(text, "guard changes", str(len(briefing.guard_log)))
    for entry in briefing.guard_log:
        text.append(f"    {entry.rule}: {entry.detail}\n", style="dim")


def details_text(briefing: Briefing, track_record: str = "") -> Text:
    """Every fact behind the briefing that the main screen no longer spells out."""
    text = Text()
    text.append("The main screen says these in words; here is how each was worked out. "
                "All of it is also in `triage brief --json`.\n", style="dim")
    confidence_section(text, briefing, track_record)
    search_section(text, briefing)
    evidence_section(text, briefing)
    recalled_section(text, briefing)
    fixes_section(text, briefing)
    model_section(text, briefing)
    return text


class DetailsScreen(Dialog):
    """The derivation of the briefing on screen; Esc (or F12, or q) closes it."""

    BINDINGS = [Binding("escape,f12,q", "dismiss", "Close", tooltip="Back to the briefing",
                        id="details-close")]
    DEFAULT_CSS = """
    DetailsScreen > VerticalScroll#dialog-scroll { width: 96%; max-width: 110; height: 90%;
                                                   max-height: 90%; }
    """
    dialog_title = "Details · how this briefing was worked out"

    def __init__(self, briefing: Briefing, track_record: str = "") -> None:
        super().__init__()
        self.briefing = briefing
        self.track_record = track_record

    def body(self) -> Iterable[Widget]:
        yield Static(details_text(self.briefing, self.track_record), markup=False,
                     id="details-text")

    def on_mount(self) -> None:
        scroll = self.query_one("#dialog-scroll", VerticalScroll)
        scroll.border_subtitle = "Esc closes · ↑ ↓ PgUp PgDn scroll"
        scroll.focus()
