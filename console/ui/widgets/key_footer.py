"""The footer of keys: as many as fit the width, the least needed left out first (each stays
on its key, in F1 help and in the palette), rebuilt only when the keys it shows change."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

# Always shown, whatever the width: the way to help and the way out.
KEEP = ("help", "quit")


class KeyFooter(Footer):
    """Textual's Footer rebuilds every key widget on each bindings signal; the main screen sends
    five or more while it starts (mount, focus, app focus), each after the last had landed, and
    those rebuilds were most of the screen's cost before first paint. This one composes its keys
    at once and rebuilds once per burst of signals, only when a key, its label, tooltip or
    enabled state changed.

    Textual's Footer also lets keys run off its right edge (at 80 columns Help and Quit were
    cut, leaving a stray ``^`` under the palette key). This one shows only the keys that fit:
    it leaves out ``drop_first``'s actions first, in that order, then others from the end of
    the row; F1 Help and Ctrl+Q Quit always stay."""

    def __init__(self, *, drop_first: Sequence[str] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.drop_first = tuple(drop_first)
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

    # --- which keys fit ----------------------------------------------------------------------

    def _all_keys(self) -> list[tuple[Binding, bool, str]]:
        """The screen's shown keys, one per action (as Footer shows them), in their order."""
        keys: dict[str, tuple[Binding, bool, str]] = {}
        for _, binding, enabled, tooltip in self.screen.active_bindings.values():
            if binding.show:
                keys.setdefault(binding.action, (binding, enabled, tooltip))
        return list(keys.values())

    def _key_width(self, binding: Binding) -> int:
        """Columns one key takes (FooterKey's padding and margin, compact or not)."""
        display, description = self.app.get_key_display(binding), binding.description
        if self.compact:  # key, space, description, then a margin of one
            return len(display) + (1 + len(description) if description else 0) + 1
        return len(display) + 2 + (len(description) + 1 if description else 0)

    def _palette(self) -> tuple[Binding, bool, str] | None:
        if not (self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE):
            return None
        found = self.screen.active_bindings.get(self.app.COMMAND_PALETTE_BINDING)
        return None if found is None else (found[1], found[2], found[3])

    def _room(self) -> int:
        width = self.screen.size.width or self.app.size.width
        palette = self._palette()
        if palette is not None:  # docked right: a one-column bar, the key, one column after
            width -= self._key_width(palette[0]) + (1 if self.compact else 2)
        return width

    def fitted(self) -> list[tuple[Binding, bool, str]]:
        """The keys to show: all that fit, leaving out ``drop_first`` first, then from the end."""
        keys = self._all_keys()
        room = self._room()

        def used() -> int:
            return sum(self._key_width(binding) for binding, _, _ in keys)

        for action in self.drop_first:
            if used() <= room:
                return keys
            keys = [key for key in keys if key[0].action != action]
        while used() > room:
            droppable = [n for n, key in enumerate(keys) if key[0].action not in KEEP]
            if not droppable:
                break
            del keys[droppable[-1]]
        return keys

    def _keys(self) -> tuple[Hashable, ...]:
        return (self.compact, *((binding.key, binding.description, binding.action, enabled,
                                 tooltip) for binding, enabled, tooltip in self.fitted()))

    # --- composing and rebuilding ------------------------------------------------------------

    def compose(self) -> ComposeResult:
        self._mark_bindings_ready()
        keys = self.fitted()
        self._shown = self._keys()
        for binding, enabled, tooltip in keys:
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                            binding.action, disabled=not enabled,
                            tooltip=tooltip).data_bind(compact=Footer.compact)
        palette = self._palette()
        if palette is not None:
            binding, enabled, _tooltip = palette
            yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                            binding.action, classes="-command-palette", disabled=not enabled,
                            tooltip=binding.tooltip or binding.description)

    def bindings_changed(self, screen: Screen[object]) -> None:
        # Replaces Footer.bindings_changed, which would recompose on every signal.
        self._mark_bindings_ready()
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            self._schedule()

    def _schedule(self) -> None:
        if not self._pending and self.is_attached:
            self._pending = True
            self.call_after_refresh(self._recompose_if_changed)

    def on_resize(self, event: events.Resize) -> None:
        self._schedule()

    def watch_compact(self, compact: bool) -> None:
        self._schedule()

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached:
            return
        keys = self._keys()
        if keys != self._shown:
            self._shown = keys  # before the await: a signal meanwhile compares with these
            await self.recompose()
