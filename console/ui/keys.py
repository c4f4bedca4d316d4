"""A key binding that also names its palette command, so keys and palette share one list."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

from textual.actions import parse as parse_action
from textual.app import SystemCommand
from textual.binding import Binding
from textual.screen import Screen


@dataclass(frozen=True)
class Key(Binding):
    """A Binding whose ``title`` is its command-palette name (the footer keeps ``description``)."""

    title: str = ""

    @property
    def palette_title(self) -> str:
        return self.title or self.description


def binding_commands(screen: Screen[object]) -> Iterable[SystemCommand]:
    """A palette command for every key binding of ``screen`` that has an id and a tooltip,
    offered only while the screen would run it (its ``check_action``): the palette and the
    keys cannot drift apart, because there is only the list of bindings."""
    seen: set[str] = set()
    for binding in screen.BINDINGS:
        if not isinstance(binding, Binding) or not binding.id or not binding.tooltip \
                or binding.action in seen:
            continue
        seen.add(binding.action)
        _, name, parameters = parse_action(binding.action)
        if screen.check_action(name, parameters) is not True:
            continue
        key = binding.key_display or binding.key.split(",")[0]
        title = binding.palette_title if isinstance(binding, Key) else binding.description
        yield SystemCommand(title, f"{binding.tooltip} ({key})",
                            partial(screen.run_action, binding.action))
