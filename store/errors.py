"""One error shape for everything a user can cause or fix: a title, the lines, and a hint.

Worded once here (or in the subclass), shown the same by the CLI (stderr) and the console.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 1


class TriageError(Exception):
    """What went wrong (``title``), the details (``lines``), and what to do (``hint``)."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, title: str, lines: Sequence[str] = (), hint: str = "") -> None:
        self.title = title
        self.lines = list(lines)
        self.hint = hint
        super().__init__("\n".join([title, *self.lines]))

    def render(self) -> str:
        """The error as plain text: the title, each line indented, then the hint."""
        text = [self.title, *(f"  {line}" for line in self.lines)]
        if self.hint:
            text.append(self.hint)
        return "\n".join(text)
