"""The footer of keys, rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Hashable

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's Footer rebuilds every key widget on each bindings signal; the main screen sends
    five or more while it starts (mount, focus, app focus), each after the last had landed, and
    those rebuilds were most of the screen's cost before first paint. This one composes its keys
    at once and rebuilds once per burst of signals, only when a key, its label, tooltip or
    enabled state changed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[Hashable, ...] | None = None
        self._pending = False

    def _mark_bindings_ready(self) -> None:
        """The one place this touches Footer's internals. ``Footer.compose`` yields no keys
        until its private reactive ``_bindings_ready`` is set, which Footer does itself only on
        the first bindings signal (Footer.bindings_changed). Textual 8.2.8 has no public way to
        say the bindings are ready (checked in textual/widgets/_footer.py): without this the
        first compose is empty and the first signal rebuilds the footer before the first frame.
        If a Textual upgrade renames it, the footer still works, one rebuild later."""
        self.set_reactive(Footer._bindings_ready, True)

    def compose(self) -> ComposeResult:
        # The keys from the first compose (see _mark_bindings_ready).
        self._mark_bindings_ready()
        self._shown = self._keys()
        yield from super().compose()

    def _keys(self) -> tuple[Hashable, ...]:
        return tuple((binding.key, binding.description, binding.action, enabled, tooltip)
                     for _, binding, enabled, tooltip in self.screen.active_bindings.values()
                     if binding.show)

    def bindings_changed(self, screen: Screen[object]) -> None:
        # Replaces Footer.bindings_changed, which would recompose on every signal.
        self._mark_bindings_ready()
        if not screen.app.app_focus or self._pending:
            return
        if self.is_attached and screen is self.screen:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys != self._shown:
            self._shown = keys  # before the await: a signal meanwhile compares with these
            await self.recompose()
