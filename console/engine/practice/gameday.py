"""Game day: a drill run with the console exactly as in production, recorded as a timeline.

``triage --drill`` / ``TRIAGE_DRILL=1`` (``Settings.game_day``) turns it on. A :class:`Timeline`
appends one JSON line per event to ``DATA/drills/<drill id>.jsonl`` — alert received, briefing
shown, verification, each action the engineer notes (with the tripwire's hits), resolution —
under an advisory lock, fsynced, so two consoles on one drill never lose or garble a line.
:func:`game_day_report` turns it into Markdown: the timeline with durations, the briefing as
shown, the actions with outcomes, and what the memory got right and wrong.

Text the engineer types (alerts, actions, notes) is cleaned and redacted before it is stored.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from console.engine.briefing.fixes import overlap, same_fix_words
from console.engine.briefing.models import Briefing
from console.engine.briefing.tripwire import TRIPWIRE_THRESHOLD, TripwireHit, combined, safe_intent
from console.engine.render.markdown import briefing_markdown, cite, literal
from store.models import ActionOutcome
from store.terms import terms
from store.text import CleanStr

if TYPE_CHECKING:
    from store.embedder import Embedder

DRILLS_DIR = "drills"
_DRILL_ID = "drill-%Y%m%dT%H%M%SZ"



def game_day_audit_tags(drill_id: str) -> dict[str, Any]:
    """What every audit line of a drill carries, so practice is never read as production."""
    return {"drill": True, "drill_id": drill_id}



class EventKind(StrEnum):
    ALERT_RECEIVED = "alert_received"
    BRIEFING_SHOWN = "briefing_shown"
    VERIFICATION = "verification"
    ACTION_NOTED = "action_noted"
    RESOLUTION = "resolution"

    @property
    def label(self) -> str:
        return self.value.replace("_", " ")


class NotedHit(BaseModel):
    """A tripwire warning shown when the action was noted."""

    model_config = ConfigDict(frozen=True)

    incident_id: str
    action_id: str
    similarity: float
    explanation: CleanStr = ""


class GameDayEvent(BaseModel):
    """One line of the timeline. ``monotonic`` orders and times events on one machine; ``at``
    (UTC) is for people and for a timeline written from two machines."""

    model_config = ConfigDict(frozen=True)

    drill_id: str
    seq: int
    kind: EventKind
    at: datetime
    monotonic: float
    text: CleanStr = ""
    outcome: ActionOutcome | None = None
    amends: int | None = None  # an action_noted that sets the outcome of an earlier one
    hits: list[NotedHit] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class Timeline:
    """An append-only drill timeline in one JSON-lines file; any thread or process may append.

    A line torn by a crash is skipped on reading (``skipped`` counts them), never fatal."""

    def __init__(self, path: Path, drill_id: str | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.path = path
        self.drill_id = drill_id or path.stem
        self._clock, self._wall = clock, wall
        self.skipped = 0

    @classmethod
    def start(cls, data_dir: Path, drill_id: str | None = None, **clocks: Any) -> Timeline:
        """A new drill's timeline in ``data_dir/drills`` (the id from the UTC time if not given)."""
        wall = clocks.get("wall") or (lambda: datetime.now(UTC))
        chosen = drill_id or f"{wall().strftime(_DRILL_ID)}-{uuid.uuid4().hex[:6]}"
        if not chosen.replace("-", "").replace("_", "").replace(".", "").isalnum():
            raise ValueError(f"a drill id is letters, digits, '.', '_' and '-': {chosen!r}")
        return cls(data_dir / DRILLS_DIR / f"{chosen}.jsonl", chosen, **clocks)

    @property
    def events(self) -> list[GameDayEvent]:
        """Every event recorded so far, in order (read from the file: other writers included)."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        events, self.skipped = [], 0
        for line in lines:
            try:
                events.append(GameDayEvent.model_validate_json(line))
            except ValidationError:
                self.skipped += 1
        return sorted(events, key=lambda e: e.seq)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a+b") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def record(self, kind: EventKind, **fields: Any) -> GameDayEvent:
        """Append one event (seq = one past the last in the file), fsynced before returning."""
        with self._locked():
            return self._append(self.events, kind, **fields)

    def _append(self, events: list[GameDayEvent], kind: EventKind, **fields: Any) -> GameDayEvent:
        """(Under the lock.) Append one event after ``events``, the file as just read."""
        last = max((e.seq for e in events), default=0)
        event = GameDayEvent(drill_id=self.drill_id, seq=last + 1, kind=kind, at=self._wall(),
                             monotonic=self._clock(), **fields)
        line = json.dumps(event.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n"
        with self.path.open("ab") as handle:
            if handle.tell() and not self._ends_with_newline():
                handle.write(b"\n")  # a torn last line stays torn alone
            handle.write(line.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        return event

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def alert_received(self, alert_text: str, via: str = "") -> GameDayEvent:
        """An alert to brief: typed or pasted, or ``via`` a webhook (`triage --listen`)."""
        detail = {"via": safe_intent(via)} if via else {}
        return self.record(EventKind.ALERT_RECEIVED, text=safe_intent(alert_text), detail=detail)

    def briefing_shown(self, briefing: Briefing) -> GameDayEvent:
        """The briefing exactly as shown (kept whole, so the report can show it again)."""
        return self.record(EventKind.BRIEFING_SHOWN, text=briefing.state, detail={
            "briefing": briefing.model_dump(mode="json"),
            "confidence": briefing.confidence.value})

    def verification(self, verification: Mapping[str, Any]) -> GameDayEvent:
        return self.record(EventKind.VERIFICATION,
                           text=str(verification.get("disposition")
                                    or verification.get("status") or ""),
                           detail={"confidence": (verification.get("confidence") or {}
                                                  ).get("value")})

    def action_noted(self, text: str, outcome: ActionOutcome | None = None,
                     hits: Sequence[TripwireHit] = (), amends: int | None = None) -> GameDayEvent:
        """An action the engineer took (or is taking), its outcome if known, and the tripwire
        warnings it raised. ``amends`` names an earlier note whose outcome this one sets."""
        noted = [NotedHit(incident_id=h.incident_id, action_id=h.action_id,
                          similarity=h.similarity, explanation=h.explanation) for h in hits]
        return self.record(EventKind.ACTION_NOTED, text=safe_intent(text), outcome=outcome,
                           hits=noted, amends=amends)

    @property
    def ended(self) -> GameDayEvent | None:
        """The drill's resolution if it has ended (by this console or another on the drill)."""
        return next((e for e in self.events if e.kind is EventKind.RESOLUTION), None)

    def resolution(self, note: str = "") -> GameDayEvent | None:
        """End the drill — once: None, and nothing recorded, if it has ended already (checked
        under the lock, so two consoles on one drill record one resolution between them)."""
        with self._locked():
            events = self.events
            if any(e.kind is EventKind.RESOLUTION for e in events):
                return None
            return self._append(events, EventKind.RESOLUTION, text=safe_intent(note))


# --- the report ---------------------------------------------------------------------------


class _Noted(BaseModel):
    seq: int
    text: str
    outcome: ActionOutcome | None
    hits: list[NotedHit]


def _actions(events: list[GameDayEvent]) -> list[_Noted]:
    """Noted actions in order, each with its latest outcome (amendments applied)."""
    noted: dict[int, _Noted] = {}
    for event in events:
        if event.kind is not EventKind.ACTION_NOTED:
            continue
        if event.amends is not None and event.amends in noted:
            earlier = noted[event.amends]
            noted[event.amends] = earlier.model_copy(update={
                "outcome": event.outcome or earlier.outcome,
                "hits": earlier.hits + [h for h in event.hits if h not in earlier.hits]})
        else:
            noted[event.seq] = _Noted(seq=event.seq, text=event.text, outcome=event.outcome,
                                      hits=list(event.hits))
    return list(noted.values())


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return (f"{hours}:" if hours else "") + f"{rest // 60:02d}:{rest % 60:02d}"


def _elapsed(events: list[GameDayEvent]) -> list[float]:
    """Seconds since the first event: monotonic when it only moves forward (one machine, one
    boot), else wall time."""
    monotonic = [e.monotonic for e in events]
    if all(b >= a for a, b in zip(monotonic, monotonic[1:], strict=False)):
        return [m - monotonic[0] for m in monotonic]
    return [(e.at - events[0].at).total_seconds() for e in events]


def _describe(event: GameDayEvent) -> str:
    if event.kind is EventKind.BRIEFING_SHOWN:
        return f"{literal(event.text)}, confidence {event.detail.get('confidence')}"
    if event.kind is EventKind.VERIFICATION:
        return f"{literal(event.text)}, confidence {event.detail.get('confidence')}"
    if event.kind is EventKind.ACTION_NOTED:
        outcome = event.outcome.value if event.outcome else "outcome not noted yet"
        tripped = "".join(f"; tripwire: {cite(h.action_id)} {h.similarity:.2f}"
                          for h in event.hits)
        if event.amends is not None:
            return f"outcome of #{event.amends}: {outcome}{tripped}"
        return f"{literal(event.text)} → {outcome}{tripped}"
    if event.kind is EventKind.ALERT_RECEIVED and event.detail.get("via"):
        return f"{literal(event.text)} (via {literal(str(event.detail['via']))})"
    return literal(event.text)


class _Matcher:
    """Is a noted action the same as a stored one? The tripwire's calibrated similarity with an
    embedder; without one, word overlap at the deterministic briefing's same-fix rule."""

    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder

    def same(self, noted: str, stored: str) -> bool:
        noted_words, stored_words = set(terms(noted)), set(terms(stored))
        if self.embedder is None:
            return same_fix_words(noted_words, stored_words)
        shared = overlap(noted_words, stored_words)
        vectors = self.embedder.embed([noted, stored])
        return combined(float(vectors[0] @ vectors[1]), shared) >= TRIPWIRE_THRESHOLD


def game_day_report(timeline: Timeline | Sequence[GameDayEvent], briefing: Briefing | None = None,
                 embedder: Embedder | None = None) -> str:
    """The drill in Markdown: timeline with durations, the briefing as shown (the last one
    recorded unless ``briefing`` is given), actions noted with outcomes, and what the memory
    got right and wrong."""
    events = timeline.events if isinstance(timeline, Timeline) else sorted(
        timeline, key=lambda e: e.seq)
    drill_id = events[0].drill_id if events else (
        timeline.drill_id if isinstance(timeline, Timeline) else "drill")
    if briefing is None:
        shown = [e for e in events if e.kind is EventKind.BRIEFING_SHOWN]
        if shown and "briefing" in shown[-1].detail:
            briefing = Briefing.model_validate(shown[-1].detail["briefing"])
    lines = [f"# DRILL report — {literal(drill_id)}", "",
             "_Game day: practice, not a real incident. Postmortems saved in it carry "
             "`drill: true` and are not evidence in real briefings._", "", "## Timeline", ""]
    elapsed = _elapsed(events) if events else []
    for n, event in enumerate(events):
        since = elapsed[n] - elapsed[n - 1] if n else 0.0
        lines.append(f"- T+{_clock(elapsed[n])} (+{_clock(since)}) **{event.kind.label}** — "
                     f"{_describe(event)}")
    lines += ["", *_durations(events, elapsed), ""]
    lines += ["## The briefing as shown", ""]
    lines.append(briefing_markdown(briefing) if briefing else "_No briefing was shown._\n")
    actions = _actions(events)
    lines += ["## Actions noted", ""]
    for n, action in enumerate(actions, 1):
        outcome = action.outcome.value if action.outcome else "outcome not noted"
        lines.append(f"{n}. {literal(action.text)} — **{outcome}**")
        lines += [f"   - tripwire warned: {cite(h.action_id)} WORSENED "
                  f"(similarity {h.similarity:.2f}): {literal(h.explanation)}"
                  for h in action.hits]
    if not actions:
        lines.append("_No actions were noted._")
    right, wrong, open_ = _verdicts(actions, briefing, _Matcher(embedder))
    lines += ["", "## What the memory got right and wrong", "", "**Right**", ""]
    lines += [f"- {line}" for line in right] or ["- nothing confirmed"]
    lines += ["", "**Wrong**", ""]
    lines += [f"- {line}" for line in wrong] or ["- nothing contradicted"]
    if open_:
        lines += ["", "**Open**", "", *[f"- {line}" for line in open_]]
    return "\n".join(lines).rstrip() + "\n"


def _durations(events: list[GameDayEvent], elapsed: list[float]) -> list[str]:
    def first(kind: EventKind) -> float | None:
        return next((elapsed[n] for n, e in enumerate(events) if e.kind is kind), None)

    alert = first(EventKind.ALERT_RECEIVED)
    spans = [("alert → briefing shown", alert, first(EventKind.BRIEFING_SHOWN)),
             ("alert → first action noted", alert, first(EventKind.ACTION_NOTED)),
             ("alert → resolution", alert, first(EventKind.RESOLUTION))]
    found = [f"{name} {_clock(end - start)}" for name, start, end in spans
             if start is not None and end is not None]
    if first(EventKind.RESOLUTION) is None:
        found.append("not resolved when this report was written")
    return ["**Durations:** " + "; ".join(found)] if found else []


def _verdicts(actions: list[_Noted], briefing: Briefing | None, matcher: _Matcher,
              ) -> tuple[list[str], list[str], list[str]]:
    right: list[str] = []
    wrong: list[str] = []
    open_: list[str] = []
    recommendations = briefing.recommendations if briefing else []
    warnings = briefing.warnings if briefing else []
    stored = {r.action_id: r.action for r in briefing.recalled if r.action_id} if briefing else {}
    repeated: set[str] = set()
    for action in actions:
        quoted = f"“{literal(action.text)}”"
        outcome = action.outcome
        fixes = [r for r in recommendations if matcher.same(action.text, r.action)]
        warned = {h.action_id for h in action.hits} | {
            w.action_id for w in warnings if matcher.same(action.text, stored.get(
                w.action_id) or w.text.split(" — ")[0].removeprefix("Don't repeat: "))}
        repeated |= warned
        cites = ", ".join(cite(a) for a in sorted(warned))
        if outcome is None:
            open_.append(f"{quoted}: no outcome noted — the report cannot judge it")
            continue
        for fix in fixes:
            evidence = ", ".join(cite(e.action_id) for e in fix.evidence)
            if outcome.is_fix:
                right.append(f"recommended fix ({evidence}) done as {quoted}: {outcome.value}")
            else:
                wrong.append(f"recommended fix ({evidence}) done as {quoted}: {outcome.value} "
                             "this time — record it, the fix may have stopped working")
        if warned and outcome is ActionOutcome.WORSENED:
            right.append(f"warned against {quoted} ({cites}) and it did make things worse")
        elif warned and outcome.is_fix:
            wrong.append(f"warned against {quoted} ({cites}) but it {outcome.value} — the "
                         "recorded condition did not hold here")
        if outcome is ActionOutcome.WORSENED and not warned:
            wrong.append(f"{quoted} made things worse and the memory had no warning for it — "
                         "record it (WORSENED, with why) in the postmortem")
        if outcome is ActionOutcome.RESOLVED and not fixes:
            wrong.append(f"{quoted} resolved it and no recommendation named it — the memory "
                         "had no proven fix for this")
    for warning in warnings:
        if warning.action_id not in repeated:
            right.append(f"warning {cite(warning.action_id)} heeded: no noted action repeated "
                         "it")
    return right, wrong, open_
