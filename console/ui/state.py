"""What the console knows, in one place: the App owns it, screens read it.

Only the App's handlers (on its event loop) change a ``ConsoleState``; workers read the
immutable things it points to (a request, a routed briefing) and post messages; the main
screen reads it to decide which keys apply (``check_action``) and never writes to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from console.engine.briefing.alert import Alert
    from console.engine.briefing.request import BriefingRequest
    from console.engine.briefing.tripwire import Tripwire, TripwireHit
    from console.engine.engine import MemoryStatus
    from console.engine.listen import ReceivedAlert
    from console.engine.pipeline import FirstLook, Routed
    from console.engine.practice.replay import ReplayReport, TrackRecord
    from console.engine.verification.passes import Plan
    from console.engine.verification.probe_run import ProbeRun


@dataclass
class Verifying:
    """The verification on screen: the briefing it audits (and what that was built from), its
    plan, the engineer's answers, the probes run or running. ``seq`` counts answer rounds: a
    conclusion of an older round arriving late is dropped."""

    id: int
    routed: Routed
    plan: Plan | None = None
    result: dict[str, Any] | None = None
    answers: dict[str, str] = field(default_factory=dict)
    runs: dict[str, ProbeRun] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)
    seq: int = 0
    # The model (if configured) is still phrasing the questions: shown as a note meanwhile.
    assisting: bool = False


@dataclass(frozen=True)
class SavedReplay:
    """The last saved `replay all` (DATA/drill.json) as a thread worker read it: its report
    and the per-tier record (stale when the memory changed since); ``readable`` False when
    reading it failed (nothing is said about the track record then)."""

    report: ReplayReport | None = None
    record: TrackRecord | None = None
    readable: bool = True

    def line(self, tier: str) -> str:
        """The confidence tier's record in the last drill on this memory, or why there is none."""
        if not self.readable:
            return ""
        if self.record is None:
            return "no drill run on this memory yet (F7 replays it)"
        return self.record.line(tier)


# Pages kept in the incoming list (newest first); older ones leave it (the audit log has all).
MAX_LISTED = 200


@dataclass
class Incoming:
    """A page received by ``triage --listen``: what the memory alone says of it once recalled
    (``look``; ``failed`` says why there is none), and whether it has been briefed."""

    received: ReceivedAlert
    look: FirstLook | None = None
    failed: str = ""
    seen: bool = False


@dataclass
class ConsoleState:
    """The console's state. Changed only by the App's handlers, on its event loop."""

    memory_status: MemoryStatus | None = None
    model_state: str | None = None
    # The briefing being prepared (None: none is) and the id the last request was given.
    request: BriefingRequest | None = None
    last_request_id: int = 0
    # The multi-alert payload whose groups are on screen (None: no batch shown), the group
    # whose briefing is shown, and the group shown or being briefed.
    batch_alert: Alert | None = None
    batch_shown: int | None = None
    batch_group: int | None = None
    # The briefing on screen (``shown``, below) with its recall, and the verification of it.
    _shown: Routed | None = field(default=None, repr=False)
    verifying: Verifying | None = None
    last_verification_id: int = 0
    # The tripwire of the briefing on screen (built in a worker) and the actions the engineer
    # noted on the "about to do…" line under it, with the warnings each raised: they belong
    # to that alert — another alert's briefing starts with none (``shown``), and a saved
    # postmortem takes them (``noted_saved``).
    tripwire: Tripwire | None = None
    noted: list[tuple[str, list[TripwireHit]]] = field(default_factory=list)
    _noted_under: str | None = field(default=None, repr=False)  # the alert they were noted for
    # The saved drill, read off the event loop when the memory loads, after a save and after
    # a replay of every incident; None until the first read has come back.
    saved_replay: SavedReplay | None = None
    # Pages received by `--listen`, newest first; the numbers still to be recalled (a worker
    # takes them as a batch, ``looking`` while it runs); the page whose briefing is on screen.
    incoming: list[Incoming] = field(default_factory=list)
    listening: str = ""  # the receiver's address (http://HOST:PORT/), "" when not listening
    to_look: list[int] = field(default_factory=list)
    looking: bool = False
    incoming_shown: int | None = None

    def received(self, received: ReceivedAlert) -> Incoming:
        """A page came in: listed first (the oldest beyond MAX_LISTED leave the list)."""
        page = Incoming(received)
        self.incoming.insert(0, page)
        del self.incoming[MAX_LISTED:]
        self.to_look.append(received.number)
        return page

    def page(self, number: int) -> Incoming | None:
        return next((p for p in self.incoming if p.received.number == number), None)

    def incoming_words(self) -> str:
        """What the status line says of the receiver: the newest page not yet briefed, and how
        many are waiting; else where it listens."""
        new = [page for page in self.incoming if not page.seen]
        if new:
            more = f", {len(new)} new" if len(new) > 1 else ""
            return f"new page #{new[0].received.number}{more} (F11)"
        if self.listening:
            return f"listening {self.listening.removeprefix('http://').rstrip('/')}"
        return ""

    @property
    def shown(self) -> Routed | None:
        """The briefing on screen, with the recall and alert it was built from."""
        return self._shown

    @shown.setter
    def shown(self, routed: Routed | None) -> None:
        # Notes follow the alert, not the request: briefing the same alert again (after F5,
        # say) keeps them; another alert, or another group of a payload, starts with none.
        alert = routed.alert.text if routed is not None else None
        if alert != self._noted_under:
            self.noted = []
            self._noted_under = alert
        self._shown = routed

    def noted_saved(self) -> None:
        """A postmortem carrying the noted actions was saved: they are in the memory now, and
        the next postmortem of this alert does not bring them again."""
        self.noted = []
