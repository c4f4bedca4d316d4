"""Progress lines on stderr for the long runs: embedding the memory, replaying it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

Progress = Callable[[int, int], None]


def embedding_progress(what: str) -> Progress:
    """A progress line on stderr for long embedding runs (first builds): done/total, rate and
    time left; a resumed build says how much the embedding cache already held."""
    started = [time.monotonic(), -1]

    def show(done: int, total: int) -> None:
        if total < 32 or not sys.stderr.isatty():
            return
        now = time.monotonic()
        if started[1] < 0:
            started[:] = [now, done]
            if 0 < done < total:
                print(f"{what}: {done}/{total} already embedded (cache), resuming", file=sys.stderr)
        rate = (done - started[1]) / (now - started[0]) if now > started[0] else 0.0
        left = f", ~{(total - done) / rate / 60:.0f} min left" if rate > 0 and done < total else ""
        print(f"\r{what} {done}/{total} ({100 * done / total:.0f}%{left})  ",
              end="" if done < total else "\n", file=sys.stderr)
    return show


def replay_progress() -> Progress:
    """``replaying done/total`` on stderr: redrawn in place on a terminal, else a line per 10%.
    Timed from its first call: the replays, not the index built before them."""
    started: list[float] = []
    tty = sys.stderr.isatty()
    shown = [-1]

    def show(done: int, total: int) -> None:
        started[:] = started or [time.monotonic()]
        step = max(1, total // (100 if tty else 10))
        if done < total and (done % step or done == shown[0]):
            return
        shown[0] = done
        elapsed = time.monotonic() - started[0]
        left = (f", ~{elapsed / done * (total - done):.0f} s left" if done and done < total
                else f", {elapsed:.1f} s" if done == total else "")
        print(f"{chr(13) if tty else ''}replaying {done}/{total} "
              f"({100 * done / max(total, 1):.0f}%{left})  ",
              end="" if tty and done < total else "\n", file=sys.stderr, flush=True)
    return show
