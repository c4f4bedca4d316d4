"""The alert box: an Input that never holds a control character, and takes a whole paste.

Whatever is typed, pasted or set (an alert copied from a terminal may carry ESC/OSC/CSI
sequences, C1 controls or bidi overrides) is cleaned as the value is set, so the box never
sends an escape sequence to the terminal. The engine cleans the alert it briefs as well.

A one-line Input keeps only the first line of a paste; an alert is often several lines (a
pretty-printed Alertmanager payload, a pager message). Here a paste's lines are joined with
spaces: the text reads the same, and JSON stays JSON (a newline between tokens is a space).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

from store.text import clean


class AlertInput(Input):
    """The one-line alert box."""

    def validate_value(self, value: str) -> str:
        return clean(value)

    def _on_paste(self, event: events.Paste) -> None:
        text = " ".join(line.strip() for line in event.text.splitlines() if line.strip())
        if text:
            if self.selection.is_empty:
                self.insert_text_at_cursor(text)
            else:
                self.replace(text, *self.selection)
        event.stop()
        event.prevent_default()  # Input's own handler would insert the first line again
