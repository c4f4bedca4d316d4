"""Messages that workers post to the App; its handlers own every change of state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from console.engine.briefing.models import Briefing, RecalledRecord
from console.engine.engine import MemoryStatus
from console.engine.model.client import Progress
from store.errors import TriageError

if TYPE_CHECKING:
    from console.engine.pipeline import Routed
    from console.engine.verification.passes import Plan
    from console.engine.verification.probe_run import ProbeRun


@dataclass
class MemoryLoaded(Message):
    status: MemoryStatus


@dataclass
class IndexProgress(Message):
    """How far the first build of the index has come: documents embedded of all."""

    done: int
    total: int


@dataclass
class MemoryFailed(Message):
    """The memory could not be loaded; ``problems`` are lines to show as they are, ``hint``
    what to do; ``about_file``: the incidents file has problems (else the data dir or index)."""

    title: str
    problems: list[str]
    hint: str = ""
    about_file: bool = True

    @classmethod
    def from_error(cls, error: TriageError) -> MemoryFailed:
        from store.loader import IncidentFileError

        return cls(error.title.rstrip(":"), list(error.lines), error.hint,
                   isinstance(error, IncidentFileError))


@dataclass
class RecallReady(Message):
    records: list[RecalledRecord]
    request_id: int


@dataclass
class BriefingReady(Message):
    briefing: Briefing
    request_id: int
    routed: Routed | None = None  # what it was built from (the recall verification audits)


@dataclass
class BriefingFailed(Message):
    reason: str
    request_id: int


@dataclass
class ModelState(Message):
    label: str


@dataclass
class DraftProgress(Message):
    """How far the model's draft has come — size and time only, never its text."""

    progress: Progress
    request_id: int


@dataclass
class VerificationConcluded(Message):
    """A verification pass (re)concluded: the plan as it now stands (the re-recall may have
    joined it) and the result, for verification ``verification_id``, answer round ``seq``."""

    plan: Plan
    result: dict[str, Any]
    verification_id: int
    seq: int
    # The model is still phrasing the questions (its results come as VerificationAssisted).
    assisting: bool = False


@dataclass
class VerificationAssisted(Message):
    """The model's part of verification ``verification_id`` came (after the memory's results
    were shown): ``assisted`` is the first plan with its phrasings, picks and guard log."""

    assisted: Plan
    verification_id: int


@dataclass
class VerificationFailed(Message):
    reason: str
    verification_id: int


@dataclass
class ProbeFinished(Message):
    question_id: str
    run: ProbeRun
    verification_id: int


@dataclass
class TripwireReady(Message):
    """The tripwire of briefing ``request_id``: its WORSENED candidates embedded once."""

    tripwire: Any
    request_id: int


@dataclass
class TripwireChecked(Message):
    """What ``text`` resembles among the WORSENED candidates of briefing ``request_id``."""

    text: str
    hits: list[Any]
    request_id: int


@dataclass
class Exported(Message):
    path: str
    markdown: str


@dataclass
class DrillReported(Message):
    path: str
