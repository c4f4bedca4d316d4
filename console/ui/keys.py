"""A key binding that also names its palette command, so keys and palette share one list."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class Key(Binding):
    """A Binding whose ``title`` is its command-palette name (the footer keeps ``description``)."""

    title: str = ""

    @property
    def palette_title(self) -> str:
        return self.title or self.description
