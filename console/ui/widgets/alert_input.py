"""The alert box: an Input that never holds a control character.

Whatever is typed, pasted or set (an alert copied from a terminal may carry ESC/OSC/CSI
sequences, C1 controls or bidi overrides) is cleaned as the value is set, so the box never
sends an escape sequence to the terminal. The engine cleans the alert it briefs as well.
"""

from __future__ import annotations

from textual.widgets import Input

from store.text import clean


class AlertInput(Input):
    """The one-line alert box."""

    def validate_value(self, value: str) -> str:
        return clean(value)
