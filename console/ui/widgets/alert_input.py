"""The alert box: an Input that never holds a control character, and takes a whole paste.

Whatever is typed, pasted or set (an alert copied from a terminal may carry ESC/OSC/CSI
sequences, C1 controls or bidi overrides) is cleaned as the value is set, so the box never
sends an escape sequence to the terminal. The engine cleans the alert it briefs as well.
A terminal escape sequence goes whole (store/sequences.py): a coloured log line pasted as
``ESC[31mERROR ESC[0m`` reads "ERROR", not "[31mERROR [0m", and a cursor move (``ESC[H``)
or an OSC 52 clipboard write leaves nothing behind.

A one-line Input keeps only the first line of a paste; an alert is often several lines (a
pretty-printed Alertmanager payload, a pager message). Here a paste's lines are joined with
spaces: the text reads the same, and JSON stays JSON (a newline between tokens is a space).
A paste is under the same 1 MB cap as an alert file or stdin (MAX_ALERT_BYTES in
console/engine/briefing/alert.py): a longer one is cut there, and the console says so.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from store.sequences import strip_sequences


def as_pasted(text: str) -> str:
    """``text`` as the alert box holds a paste of it: one line, its lines joined by spaces."""
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


class AlertInput(Input):
    """The one-line alert box."""

    def validate_value(self, value: str) -> str:
        return strip_sequences(value)

    def _on_paste(self, event: events.Paste) -> None:
        from console.engine.briefing.alert import capped, cut_notice  # off the first paint

        pasted = capped(strip_sequences(event.text), "the pasted alert")
        text = as_pasted(pasted.text)
        if text:
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        if pasted.cut:
            self.notify(cut_notice(pasted), title="Paste cut", severity="warning", timeout=8)
        event.stop()
        event.prevent_default()  # Input's own handler would insert the first line again
