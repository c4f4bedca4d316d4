"""Messages that workers post to the UI; handlers on the main screen own every change."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from console.engine.briefing import Briefing, RecalledRecord
from console.engine.engine import MemoryStatus


@dataclass
class MemoryLoaded(Message):
    status: MemoryStatus


@dataclass
class MemoryFailed(Message):
    """The memory could not be loaded; ``problems`` are lines to show as they are."""

    title: str
    problems: list[str]


@dataclass
class RecallReady(Message):
    records: list[RecalledRecord]


@dataclass
class BriefingReady(Message):
    briefing: Briefing


@dataclass
class BriefingFailed(Message):
    reason: str
