"""The record of a verification: every fact the panel says in words, as it was computed —
the derivation of its confidence, the conclusion with question ids, each question's id,
category, probe, result and full evidence hash, the audit, skipped probes, the artifact."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widget import Widget
from textual.widgets import Static

from console.ui.screens.dialog import Dialog


class VerificationRecordScreen(Dialog):
    """A verification result in full, the highlighted question marked; Escape closes it."""

    BINDINGS = [Binding("escape,q", "dismiss", "Close", tooltip="Back to the verification",
                        id="verify-record-close")]

    def __init__(self, result: Mapping[str, Any], highlighted: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.highlighted = highlighted
        self.dialog_title = "Verification record"

    def on_mount(self) -> None:
        self.add_class("-wide")

    def body(self) -> Iterable[Widget]:
        yield Static(record_text(self.result, self.highlighted), markup=False,
                     id="verify-record-text")
        yield Static(Text("Esc to close", style="dim"), markup=False)


def record_text(result: Mapping[str, Any], highlighted: str | None = None) -> Text:
    """The result's facts, one per line, as the JSON and the artifact hold them."""
    confidence = result["confidence"]
    text = Text()
    text.append(f"{result['disposition'].upper()} · verification confidence "
                f"{confidence['value']} (cap {confidence['cap']}, "
                f"{confidence['layers']} layers)\n", style="bold")
    text.append("derivation: ", style="bold")
    text.append(confidence["derivation"] + "\n")
    text.append("conclusion: ", style="bold")
    text.append(result["conclusion"] + "\n")
    for gap in confidence.get("gaps", []):
        text.append(f"gap: {gap}\n", style="dim")
    for doubt in result.get("audit", []):
        text.append(f"audit: {doubt['category']} · {doubt['kind']} · {doubt['detail']}\n",
                    style="dim")
    said = (result.get("plain") or {}).get("questions", {})
    for question in result["questions"]:
        mark = "▸ " if question["id"] == highlighted else "  "
        text.append(f"\n{mark}{question['id']} · {question['category']} · {question['probe']} "
                    f"probe {question['check']}" + (" · key" if question.get("key") else "")
                    + f" · {question['result']}\n", style="bold")
        text.append(f"  {question['text']}\n")
        if said.get(question["id"]):
            text.append(f"  {said[question['id']]}\n", style="italic")
        if question.get("phrased"):
            text.append(f"  the model's words: {question['phrased']}\n", style="dim italic")
        if question.get("missing"):
            text.append(f"  missing: {question['missing']}\n")
        if question.get("found"):
            text.append(f"  found: {question['found']}\n")
        if question.get("argv"):
            text.append(f"  argv: {' '.join(question['argv'])}\n")
        text.append(f"  evidence sha256 {question['evidence_sha256'] or 'none (not answered)'}\n",
                    style="dim")
    for skipped in result.get("skipped_probes", []):
        text.append(f"\nskipped probe: {skipped}", style="dim")
    for line in result.get("model_log", []):
        text.append(f"\nmodel: {line}", style="dim")
    if result.get("artifact"):
        text.append(f"\nartifact {result['artifact']}", style="dim")
    return text
