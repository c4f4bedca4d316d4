"""Messages to the App, its handlers own every change of state: what workers post (results,
tagged with their request or verification id) and what screens ask for (a request each).

Engine types are for annotations only: the main screen imports this module, and it is on first
paint's path (bench/first_paint.py), which must not import pydantic or the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from console.engine.briefing.models import Briefing, RecalledRecord
    from console.engine.briefing.tripwire import TripwireHit
    from console.engine.engine import MemoryStatus
    from console.engine.listen import ReceivedAlert
    from console.engine.model.client import Progress
    from console.engine.pipeline import FirstLook, Routed
    from console.engine.verification.passes import Plan
    from console.engine.verification.probe_run import ProbeRun
    from console.ui.state import SavedReplay
    from store.errors import TriageError


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
class ProvisionalBriefing(Message):
    """The memory's own briefing of request ``request_id``, shown while the model drafts."""

    briefing: Briefing
    request_id: int


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
class GameDayReported(Message):
    path: str


@dataclass
class SavedReplayRead(Message):
    """DATA/drill.json as a thread worker read it (see console/ui/state.py SavedReplay)."""

    saved: SavedReplay


@dataclass
class PageReceived(Message):
    """(From the webhook receiver's thread.) A page was accepted: list it."""

    received: ReceivedAlert


@dataclass
class PageLooked(Message):
    """(From the first-look worker.) What the memory alone says of page ``number``: ``look``,
    or ``failed`` with why there is none."""

    number: int
    look: FirstLook | None = None
    failed: str = ""


@dataclass
class PagesLooked(Message):
    """(From the first-look worker.) Its batch is done: the next one may start."""


# --- what screens ask of the App: each a request its handlers decide on ----------------------


@dataclass
class MemoryWanted(Message):
    """The main screen is mounted: load the memory once its first frame is out."""


@dataclass
class ReloadRequested(Message):
    """F5: re-read the incidents file."""


@dataclass
class AlertSubmitted(Message):
    """Enter in the alert box: brief this alert (a new request)."""

    raw_alert: str


@dataclass
class PageChosen(Message):
    """Enter on a page of the incoming list: brief page ``number`` (a new request)."""

    number: int


@dataclass
class GroupChosen(Message):
    """Brief group ``index`` (0-based, wrapping) of the multi-alert payload on screen."""

    index: int


@dataclass
class GroupStepped(Message):
    """Brief the group ``step`` places after the one shown or being briefed."""

    step: int


@dataclass
class CancelRequested(Message):
    """Esc: cancel the briefing being prepared."""


@dataclass
class VerifyRequested(Message):
    """F6: open the verification of the briefing on screen (or close it)."""


@dataclass
class QuestionAnswered(Message):
    question_id: str
    answer: str


@dataclass
class ProbeRunConfirmed(Message):
    """The engineer saw the argv of this question's declared probe and pressed c."""

    question_id: str


@dataclass
class IntentTyped(Message):
    """Check this intended action against the tripwire of the briefing on screen."""

    text: str


@dataclass
class ActionNoted(Message):
    """An action the engineer is about to take, with the warnings it raised on screen."""

    text: str
    hits: list[TripwireHit]


@dataclass
class ExportRequested(Message):
    """Ctrl+O: write the briefing on screen as Markdown."""


@dataclass
class GameDayEndRequested(Message):
    """Ctrl+G: end the game day and write its report."""


@dataclass
class ReplayScreenRequested(Message):
    """F7: open the drill screen on the memory the console shows."""


@dataclass
class PostmortemRequested(Message):
    """Ctrl+R: record a postmortem of ``alert_text`` (the alert box's text)."""

    alert_text: str


@dataclass
class EditRequested(Message):
    """e on a recalled record: edit the stored incident it belongs to."""

    incident_id: str


@dataclass
class ReplaysSaved(Message):
    """The drill screen saved a replay of every incident: DATA/drill.json changed."""
