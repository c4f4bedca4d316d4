"""F1: what the console shows and every key."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from console.ui.screens.dialog import Dialog

# (heading, [(term, what it is)]): a table, so that a narrow terminal wraps each explanation
# under itself, beside its term, instead of cutting it at the dialog's edge.
SECTIONS: list[tuple[str, list[tuple[str, str]]]] = [
    ("What you see", [
        ("Alert", "type or paste the alert text (or an Alertmanager JSON line), Enter to brief."),
        ("Briefing", "warnings first (recorded actions that made things WORSE, with why), then "
                     "what worked before, each line citing INCIDENT/ACTION and its outcome. A "
                     "model's words are labelled as its reading; every fix and step shown is the "
                     "stored text of the action it cites."),
        ("Recalled", "the raw records recall found, exactly as stored, with outcome and score. "
                     "Nothing below the relevance floor is shown: an empty list means \"never "
                     "seen\"."),
        ("Confidence", "a rule on evidence, not a probability: proven fixes set the tier "
                       "(0 → ≤30, 1 → 55–74, 2 → 75–89, 3+ → 88+2·proven, never above 98)."),
        ("Verify (F6)", "an audit of the briefing, beside it (the briefing never changes): "
                        "questions that confirm or refute what it stands on, then maintain / "
                        "revise / overturn / undetermined, with a confidence of its own and its "
                        "derivation."),
    ]),
    ("Keys", [
        ("Enter", "brief the alert (in the alert box) / open a record (in Recalled)"),
        ("F2 / F3 / F4", "focus alert / briefing / recalled memory (Tab also cycles)"),
        ("F5", "reload the incidents file and bring the index up to date"),
        ("F8 / Shift+F8", "brief the next / previous alert group of a multi-alert payload"),
        ("F9", "focus the alert-group list (Enter briefs the highlighted group)"),
        ("F6", "verify the briefing (F6 again closes); in the panel, on the highlighted "
               "question: y / n / u answer yes / no / don't know, c runs a declared probe (its "
               "exact argv is shown first; nothing runs before c)"),
        ("F7", "drill: replay past incidents with each hidden (a replays all; Enter a replay's "
               "briefing); the chart shows how often each tier's lead fix was right"),
        ("F10", "show / hide the recalled memory (it folds away below 100 columns)"),
        ("F12", "details: how the briefing was worked out (the confidence rule's derivation, "
                "what was searched for, evidence hashes, score components); Esc closes"),
        ("Ctrl+T", "\"about to do…\": type the action you intend — warned at once if it "
                   "resembles one that made things worse; Enter notes it (Ctrl+R carries it "
                   "into this alert's postmortem; a new alert starts with none)"),
        ("Ctrl+O", "export the briefing as Markdown, starting with the alert it briefs (a "
                   "file, and the clipboard where supported)"),
        ("Ctrl+G", "game day only (triage --drill): end it and write the drill report"),
        ("Ctrl+R", "record a postmortem (symptoms, service and start time come from the alert; "
                   "with the verification open, its results come along as action rows)"),
        ("e", "edit the incident of the highlighted record (in Recalled)"),
        ("Ctrl+P", "command palette: every action by name"),
        ("Esc", "cancel the briefing being prepared (in the alert box) / close a dialog"),
        ("F1", "this help"),
        ("Ctrl+Q", "quit"),
    ]),
    ("Postmortem form (Ctrl+R)", [
        ("Tab / Shift+Tab", "next / previous field; Enter next field; → accepts a suggestion"),
        ("Outcome", "r / m / n / w pick RESOLVED / MITIGATED / NO_EFFECT / WORSENED; or Enter "
                    "opens the list (↑/↓ or a letter, then Enter)"),
        ("confirmed", "Space toggles; clear it when the explanation is only suspected"),
        ("Ctrl+N", "add an action row after the focused one"),
        ("Ctrl+D", "remove the focused action row (Ctrl+Z brings it back)"),
        ("Alt+↑ / Alt+↓", "move the focused action row (Ctrl+↑ / Ctrl+↓ also work)"),
        ("Ctrl+S", "check and save: problems are listed under each field and at the bottom; "
                   "secrets are redacted before anything is written"),
        ("Ctrl+L", "reload the memory (after someone else edited the file); the form is kept"),
        ("Esc", "back without saving (press twice if the form has changes)"),
    ]),
]
TERM_WIDTH = max(len(term) for _, rows in SECTIONS for term, _ in rows)


def help_text() -> str:
    """The help as plain text (one line per entry), e.g. to search it."""
    return "\n".join(f"{heading}\n" + "\n".join(f"  {term:<{TERM_WIDTH}}  {what}"
                                               for term, what in rows)
                     for heading, rows in SECTIONS)


def help_renderable() -> Group:
    """Each section a heading and a two-column table whose explanations wrap to the width."""
    parts: list[Text | Table] = []
    for number, (heading, rows) in enumerate(SECTIONS):
        parts.append(Text(("\n" if number else "") + heading, style="bold"))
        table = Table(box=None, show_header=False, padding=(0, 1), pad_edge=True, expand=True)
        table.add_column(no_wrap=True, min_width=TERM_WIDTH, style="bold")
        table.add_column(ratio=1, overflow="fold")
        for term, what in rows:
            table.add_row(Text(term), Text(what))
        parts.append(table)
    return Group(*parts)


class HelpScreen(Dialog):
    """F1: what the console shows and every key."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "Close", tooltip="Close help", id="help-close")]
    DEFAULT_CSS = """
    HelpScreen > VerticalScroll { max-width: 100%; }
    """
    dialog_title = "Help"

    def on_mount(self) -> None:
        self.add_class("-wide")

    def body(self) -> Iterable[Widget]:
        yield Static(help_renderable(), id="help-text")
