"""Rate-limited progress: a fast stream or a long build must not redraw on every step.

One rule for every front end: at most one report per ``interval`` seconds, and always the final
one (``done == total``) so a finished build is never left showing 99 %.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# How often each kind of progress may redraw (seconds).
STREAM_INTERVAL = 0.1   # the model's answer streaming in
REPLAY_INTERVAL = 0.2   # replays of every incident
INDEX_INTERVAL = 0.25   # embedding the memory (a first build of thousands is minutes)


class Throttle:
    """Says whether a report is due: the first always, then one per ``interval`` seconds."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._clock = clock
        self._last = float("-inf")

    def due(self, final: bool = False) -> bool:
        now = self._clock()
        if final or now - self._last >= self.interval:
            self._last = now
            return True
        return False


def throttled(report: Callable[[int, int], None], interval: float,
              clock: Callable[[], float] = time.monotonic) -> Callable[[int, int], None]:
    """``report(done, total)`` at most once per ``interval`` seconds, and always at the end."""
    throttle = Throttle(interval, clock)

    def progress(done: int, total: int) -> None:
        if throttle.due(final=done == total):
            report(done, total)

    return progress
