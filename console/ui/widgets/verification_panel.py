"""The verification overlay: an audit of the briefing, shown beside it (never in its place).

It renders a ``verification`` result (console/engine/verification/passes.py) in words (its
``plain`` part) and turns keys into requests: y / n / u answer the highlighted engineer
question, c runs the highlighted declared probe after its exact argv has been on screen, Enter
opens the record (ids, evidence hashes, the derivation: screens/verification_record.py).
Every text here is stored memory, probe output or our own words: all of it is rendered
literally (no markup).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from console.ui.keys import Key

RESULT_STYLE = {"confirmed": "bold green", "refuted": "bold red", "unknown": "bold yellow"}
DISPOSITION_STYLE = {"maintain": "bold green", "revise": "bold yellow", "overturn": "bold red",
                     "undetermined": "bold"}
PROBE_LABEL = {"memory": "memory", "engineer": "you", "declared": "probe"}


def question_option(question: Mapping[str, Any], state: str = "") -> Text:
    """One question as a list row: result badge, who answers it, the question."""
    text = Text()
    shown = state or question["result"]
    text.append(f"{shown:<9}", style=RESULT_STYLE.get(shown, "bold cyan"))
    text.append(f" {PROBE_LABEL.get(question['probe'], question['probe']):<6}", style="dim")
    text.append(f" {question['text']}")
    return text


class VerificationPanel(Vertical):
    """Disposition, confidence and its derivation, conclusion; the questions; the one
    highlighted in full (with a declared probe's argv before it runs, and its output after)."""

    BORDER_TITLE = "Verification"
    BINDINGS = [
        Key("y", "answer('yes')", "Yes", tooltip="Answer the highlighted question: yes",
            id="verify-yes"),
        Key("n", "answer('no')", "No", tooltip="Answer the highlighted question: no",
            id="verify-no"),
        Key("u", "answer('unknown')", "Don't know",
            tooltip="Answer the highlighted question: don't know", id="verify-unknown"),
        Key("c", "confirm_probe", "Run probe", tooltip="Run the highlighted declared probe "
            "(its exact argv is shown below the list)", id="verify-run-probe"),
        Key("enter", "open_record", "Record", title="Verification record",
            tooltip="The verification in full: question ids, evidence hashes, the derivation "
            "of its confidence", id="verify-record"),
    ]
    DEFAULT_CSS = """
    VerificationPanel { width: 1fr; height: 1fr; border: round $warning; display: none; }
    VerificationPanel:focus-within { border: round $accent; }
    VerificationPanel > #verify-head { height: auto; max-height: 12; padding: 0 1; }
    VerificationPanel > #verify-questions { height: 1fr; border: none; }
    VerificationPanel > #verify-detail { height: auto; max-height: 14; padding: 0 1;
        border-top: solid $primary; }
    """

    @dataclass
    class Answered(Message):
        question_id: str
        answer: str

    @dataclass
    class ProbeConfirmed(Message):
        question_id: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.result: dict[str, Any] | None = None
        self.states: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Static("", markup=False, id="verify-head")
        yield OptionList(markup=False, id="verify-questions")
        yield Static("", markup=False, id="verify-detail")

    @property
    def questions(self) -> list[dict[str, Any]]:
        return list(self.result["questions"]) if self.result else []

    @property
    def question_list(self) -> OptionList:
        return self.query_one("#verify-questions", OptionList)

    def highlighted(self) -> dict[str, Any] | None:
        index = self.question_list.highlighted
        questions = self.questions
        return questions[index] if index is not None and index < len(questions) else None

    # --- rendering what the App decided ----------------------------------------------------

    def show_working(self, message: str) -> None:
        self.result = None
        self.states = {}
        self.border_title = "Verification — working"
        self.border_subtitle = ""
        self.query_one("#verify-head", Static).update(Text(message, style="italic"))
        self.question_list.clear_options()
        self.query_one("#verify-detail", Static).update("")

    def show_failure(self, message: str) -> None:
        self.result = None
        self.border_title = "Verification — failed"
        self.border_subtitle = ""
        text = Text(message, style="bold red")
        text.append("\nThe briefing on the left is unchanged. F6 closes this panel; F6 again "
                    "runs the verification again.", style="bold")
        self.query_one("#verify-head", Static).update(text)
        self.question_list.clear_options()
        self.query_one("#verify-detail", Static).update("")

    def show_result(self, result: dict[str, Any], states: Mapping[str, str],
                    not_needed: str = "") -> None:
        """``states``: question id → what is under way for it ("running", "answered …").

        Said in words (the result's ``plain``); the ids, hashes and the derivation are on the
        record screen (Enter)."""
        keep = self.question_list.highlighted
        self.result, self.states = result, dict(states)
        confidence = result["confidence"]
        plain = result.get("plain") or {}
        self.border_title = (f"Verification — {result['disposition'].upper()} · confidence "
                             f"{confidence['value']} (the briefing's own is unchanged)")
        questions = result["questions"]
        yours = sum(1 for q in questions if q["result"] == "unknown" and q["probe"] != "memory")
        self.border_subtitle = (f"{len(questions)} checks" + (f", {yours} to answer" if yours
                                                              else "")
                                + " · Enter: record · Ctrl+R: postmortem")
        # What to do first, then why the confidence is what it is, then the recorded grounds
        # (the head is cut at its height: the most needed line leads).
        *grounds, advice = (plain.get("conclusion") or result["conclusion"]).split("\n")
        head = Text()
        if not_needed:
            head.append(not_needed + "\n", style="dim")
        head.append(result["disposition"].upper(), style=DISPOSITION_STYLE[result["disposition"]])
        head.append(f" · confidence {confidence['value']} — ")
        head.append(advice + "\n", style="bold")
        head.append(f"Why {confidence['value']}: {plain.get('confidence', '')}")
        for line in grounds:
            head.append("\n" + line, style="dim")
        self.query_one("#verify-head", Static).update(head)
        listing = self.question_list
        listing.clear_options()
        listing.add_options([Option(question_option(q, self.states.get(q["id"], "")), id=q["id"])
                             for q in questions])
        if questions:
            listing.highlighted = min(keep or 0, len(questions) - 1)
        self._show_detail()

    def _show_detail(self) -> None:
        """The highlighted check: what it looked at and found, in a sentence."""
        question = self.highlighted()
        detail = self.query_one("#verify-detail", Static)
        if question is None or self.result is None:
            detail.update("")
            return
        said = (self.result.get("plain") or {}).get("questions", {}).get(question["id"], "")
        text = Text()
        text.append(said or (question.get("missing") or question["result"]))
        if question.get("key"):
            text.append("\nThis check decides whether the fix applies.", style="dim")
        if question.get("phrased"):
            text.append("\nthe model's words: ", style="dim")
            text.append(question["phrased"], style="dim italic")
        if question.get("argv"):
            text.append("\nruns (no shell): ", style="bold")
            text.append(" ".join(question["argv"]))
            if question["result"] == "unknown" and question["id"] not in self.states:
                text.append("\nc runs it as shown", style="bold")
        if question.get("output"):
            text.append("\noutput (redacted):\n", style="bold")
            text.append("\n".join(question["output"].splitlines()[:8]))
        detail.update(text)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._show_detail()
        self.refresh_bindings()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_open_record()

    # --- keys ----------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        question = self.highlighted()
        if action == "answer":
            return question is not None and question["probe"] == "engineer"
        if action == "open_record":
            return self.result is not None
        if action == "confirm_probe":
            return (question is not None and question["probe"] == "declared"
                    and question["id"] not in self.states)
        return True

    def action_answer(self, answer: str) -> None:
        question = self.highlighted()
        if question is not None and question["probe"] == "engineer":
            self.post_message(self.Answered(question["id"], answer))

    def action_confirm_probe(self) -> None:
        question = self.highlighted()
        if question is not None and question["probe"] == "declared":
            self.post_message(self.ProbeConfirmed(question["id"]))

    def action_open_record(self) -> None:
        """Enter: every fact behind the words, on a screen of its own."""
        if self.result is None:
            return
        from console.ui.screens.verification_record import VerificationRecordScreen

        question = self.highlighted()
        self.app.push_screen(VerificationRecordScreen(
            self.result, question["id"] if question else None))
