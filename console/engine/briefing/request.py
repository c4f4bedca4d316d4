"""A briefing request: its id, its alert, and the token that cancels it."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from console.engine.briefing.alert import Alert


class BriefingCancelled(Exception):
    """The request was cancelled (a newer alert, or Esc) before its briefing was ready."""


class CancelToken:
    """Set by the owner of a request; read by its worker, down to the model stream."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        """Raise BriefingCancelled once cancelled: called between stages and chunks."""
        if self._event.is_set():
            raise BriefingCancelled()


@dataclass(frozen=True)
class BriefingRequest:
    """One submitted alert; ``id`` (given by the request's owner) tags all its worker reports."""

    alert: Alert
    id: int = 0
    cancel: CancelToken = field(default_factory=CancelToken, compare=False)
