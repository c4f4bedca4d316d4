"""The route of one alert, top to bottom: recall → quarantine → draft or fallback → assemble.

A multi-alert payload is recalled group by group (console/engine/briefing/batch.py); the rest of the
route is that of the one group briefed — the strongest, or the one the engineer chose.

Each briefing is a request with an id. Its worker reads a snapshot taken when it started
(the memory and the index as loaded then, the settings), reports through one ``Hooks`` object,
and checks its ``CancelToken`` between stages and between streamed chunks. The Briefing is
assembled once, at the end, and never changed afterwards; whoever receives it compares the
request id with the one it is waiting for and drops a stale answer.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from console.engine.briefing.alert import Alert
from console.engine.briefing.applicability import ServiceRead, read_service
from console.engine.briefing.audit import AuditLog
from console.engine.briefing.batch import GroupRecall, batch_entries, strongest
from console.engine.briefing.deterministic import (
    deterministic_briefing,
    recalled_records,
    shown_score,
)
from console.engine.briefing.instructions import looks_like_instructions
from console.engine.briefing.models import Briefing, RecalledRecord, SourceUse, State
from console.engine.briefing.request import BriefingRequest, CancelToken
from console.engine.briefing.verdict import Verdict, verdict
from console.engine.config import Settings
from console.engine.model.client import ModelClient, Progress
from console.engine.model.merge import model_briefing
from console.engine.model.prompts import best_first
from console.engine.model.steer import SteerResult, run_model
from console.engine.progress import STREAM_INTERVAL, Throttle
from store.index import MemoryIndex
from store.loader import LoadedMemory
from store.recall import Recall, recall

# The provisional briefing's note: what the engineer reads while the model drafts.
DRAFTING = ("the model is drafting — this is the memory's own briefing until its draft passes "
            "the guards")


@dataclass(frozen=True)
class MemorySnapshot:
    """What a request reads: the memory and its index as they were when it started."""

    memory: LoadedMemory
    index: MemoryIndex
    settings: Settings


class Hooks:
    """Where a request reports: recalled records, the memory's own briefing while a model
    drafts, draft progress (rate-limited), the audit.

    The defaults do nothing; the console passes callbacks that post tagged messages.
    """

    def __init__(self, on_recall: Callable[[list[RecalledRecord]], None] | None = None,
                 on_progress: Callable[[Progress], None] | None = None,
                 audit: AuditLog | None = None, interval: float = STREAM_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 on_provisional: Callable[[Briefing], None] | None = None) -> None:
        self._on_recall = on_recall
        self._on_progress = on_progress
        self._on_provisional = on_provisional
        self.audit = audit
        self._throttle = Throttle(interval, clock)

    @property
    def wants_provisional(self) -> bool:
        return self._on_provisional is not None

    def recalled(self, records: list[RecalledRecord]) -> None:
        if self._on_recall is not None:
            self._on_recall(records)

    def provisional(self, briefing: Briefing) -> None:
        """The memory's own briefing, shown while the model drafts (replaced by the final)."""
        if self._on_provisional is not None:
            self._on_provisional(briefing)

    def progress(self, progress: Progress) -> None:
        if self._on_progress is not None and self._throttle.due():
            self._on_progress(progress)


@dataclass(frozen=True)
class Routed:
    """A briefing with what it was built from: the alert briefed (a batch's chosen group) and
    the recall every path cited (quarantined actions already removed). Verification audits
    this recall, never a fresh one that might differ."""

    briefing: Briefing
    alert: Alert
    recall: Recall


def route(request: BriefingRequest, snapshot: MemorySnapshot, hooks: Hooks | None = None,
          client: ModelClient | None = None) -> Routed:
    """:func:`run`, keeping the alert briefed and the recall it used."""
    hooks = hooks or Hooks()
    cancel = request.cancel
    cancel.check()
    alert, recalled, groups = recall_alert(request.alert, snapshot, cancel)    # 1. recall
    quarantined = quarantine(recalled)                                          # 2. quarantine
    usable = without(recalled, quarantined)
    now = snapshot.settings.now()
    judged = verdict(usable, service_of(alert, snapshot.memory), now)           # 3. verdict
    records = [r.model_copy(update={"quarantined": r.action_id in quarantined})
               for r in recalled_records(recalled, judged.matches, now)]
    hooks.recalled(records)
    cancel.check()
    notices = _notices(snapshot, alert, quarantined, groups, judged.service)
    if client is not None and usable.incidents and hooks.wants_provisional:
        # A CPU model takes a minute: the memory's own briefing is read meanwhile, and the
        # final one (the model's, if its draft passes the guards) replaces it.
        hooks.provisional(assemble(usable, records, quarantined, list(notices), DRAFTING,
                                   snapshot, alert, None, groups, judged))
    steered = draft(usable, snapshot, hooks, client, cancel, judged)            # 4. draft
    cancel.check()
    briefing = assemble(usable, records, quarantined, notices, steered,         # 5. assemble
                        snapshot, alert, client, groups, judged)
    return Routed(briefing, alert, usable)


def service_of(alert: Alert, memory: LoadedMemory) -> ServiceRead:
    """The service the alert is about, as the verdict, the verification and the postmortem
    form read it: its labels first, then its text, matched to the memory's services by
    spelling, services.yaml and words (console/engine/briefing/services.py)."""
    return read_service(alert.text, alert.service, memory.services,
                        labels=alert.service_labels, aliases=memory.service_aliases)


def recall_alert(alert: Alert, snapshot: MemorySnapshot, cancel: CancelToken,
                 ) -> tuple[Alert, Recall, list[GroupRecall]]:
    """The alert to brief and its recall; for a batch, every group's recall as well.

    A batch briefs the group the engineer chose, else the strongest (see batch.py). Each
    group is searched on its own text, never the payload's texts run together.
    """
    hidden = hidden_from_recall(snapshot)
    if not alert.groups:
        return alert, recall(snapshot.index, alert.text, hidden), []
    groups = []
    for group in alert.groups:
        cancel.check()
        recalled = recall(snapshot.index, group.text, hidden)
        service = read_service(group.text, group.service, snapshot.memory.services,
                               labels=group.service_labels,
                               aliases=snapshot.memory.service_aliases)
        judged = verdict(without(recalled, quarantine(recalled)), service,
                         snapshot.settings.now())
        groups.append(GroupRecall(group, recalled, judged.state, judged.lead_match))
    chosen = alert.group if alert.group is not None else strongest(groups)
    return alert.for_group(chosen), groups[chosen].recall, groups


@dataclass(frozen=True)
class FirstLook:
    """What the memory alone says of an alert, before anyone briefs it: the state its verdict
    gives, the top incident recalled and its score as a briefing shows it (None: no incident
    was recalled). The incoming list (``triage --listen``) shows one per page received."""

    state: State
    top_incident_id: str | None = None
    score: float | None = None


def first_look(alert: Alert, snapshot: MemorySnapshot, cancel: CancelToken) -> FirstLook:
    """Recall and verdict only — no model, no briefing: the group a briefing would brief
    (the strongest of a payload's), with quarantined actions left out as always."""
    chosen, recalled, _groups = recall_alert(alert, snapshot, cancel)
    usable = without(recalled, quarantine(recalled))
    judged = verdict(usable, service_of(chosen, snapshot.memory), snapshot.settings.now())
    if not usable.incidents:
        return FirstLook(judged.state)
    top = usable.incidents[0]
    return FirstLook(judged.state, top.incident_id, shown_score(top.score))


def hidden_from_recall(snapshot: MemorySnapshot) -> frozenset[str]:
    """Incidents no briefing may recall: game-day drills, unless the settings include them."""
    return snapshot.settings.hidden_drills(snapshot.memory.drill_ids)


def quarantine(recalled: Recall) -> set[str]:
    """Recalled records that read like instructions to a model: never evidence, never prompted."""
    return {a.action_id for a in recalled.actions if looks_like_instructions(a.text)}


def without(recalled: Recall, quarantined: set[str]) -> Recall:
    """The recall less its quarantined actions: what every path may cite, prompt or recommend.

    The sidebar still lists them (flagged); the incident itself stays recalled.
    """
    if not quarantined:
        return recalled
    return dataclasses.replace(recalled, incidents=tuple(
        dataclasses.replace(incident, actions=tuple(
            a for a in incident.actions if a.action_id not in quarantined))
        for incident in recalled.incidents))


def draft(recalled: Recall, snapshot: MemorySnapshot, hooks: Hooks,
          client: ModelClient | None, cancel: CancelToken,
          judged: Verdict) -> SteerResult | str:
    """The model's guarded draft (with every attempt), or why the model was not asked.

    ``recalled`` is already without quarantined actions: they are neither prompted nor citable.
    The prompt lists the memory's fixes in ``judged``'s rank, lead first.
    """
    settings = snapshot.settings
    if client is None:
        return ("offline (TRIAGE_OFFLINE=1) — deterministic briefing" if settings.offline
                else "no model configured (set TRIAGE_MODEL) — deterministic briefing")
    if not recalled.incidents:
        return "no prior incident — the model was not asked (nothing it could cite)"
    audit = hooks.audit or AuditLog(settings.audit_path)
    fix_order = [e.action_id for r in judged.ranked for e in r.recommendation.evidence]
    return run_model(client, recalled.query, recalled, best_first(recalled.actions, fix_order),
                     audit, budget=settings.budget_seconds, on_progress=hooks.progress,
                     cancelled=lambda: cancel.cancelled)


def assemble(recalled: Recall, records: list[RecalledRecord], quarantined: set[str],
             notices: list[str], steered: SteerResult | str, snapshot: MemorySnapshot,
             alert: Alert, client: ModelClient | None,
             groups: list[GroupRecall] | None = None, judged: Verdict | None = None) -> Briefing:
    """The one place a Briefing is built: from the memory's verdict, worded by the model's
    accepted draft or by the memory alone. The model may lower the verdict, never raise it.

    ``groups`` (a batch's recalls) become ``batch``, the briefed group marked."""
    size = len(snapshot.memory.incidents)
    judged = judged or verdict(recalled, service_of(alert, snapshot.memory),
                               snapshot.settings.now())
    if isinstance(steered, SteerResult) and steered.audit_error:
        notices.append(steered.audit_error)
    if isinstance(steered, str) or steered.accepted is None:
        degraded = steered if isinstance(steered, str) else steered.degraded
        attempts = [] if isinstance(steered, str) else steered.attempts
        guard_log = [] if isinstance(steered, str) else steered.guard_log
        briefing = deterministic_briefing(recalled, size, degraded, notices, records=records,
                                          attempts=attempts, guard_log=guard_log, judged=judged)
    else:
        assert client is not None
        briefing = model_briefing(judged, steered, recalled, records, notices, size, client.model)
    return briefing.model_copy(update={
        "recurrence": judged.recurrence,
        "coverage": coverage(alert, recalled, briefing, quarantined, snapshot),
        "batch": batch_entries(groups or [], alert.group, briefing.state),
        "input": alert.input(judged.service.reading())})


def _notices(snapshot: MemorySnapshot, alert: Alert, quarantined: set[str],
             groups: list[GroupRecall], service: ServiceRead) -> list[str]:
    notices = list(alert.notices)
    if service.assumed:
        notices.append(service.assumed)
    if snapshot.memory.service_problems:
        first = snapshot.memory.service_problems[0]
        notices.append(f"{first.file} was not read ({first.message}"
                       f"{f', line {first.line}' if first.line else ''}): no service aliases "
                       "— run `triage check`")
    meta = snapshot.index.meta
    if meta and meta.embed_error:
        notices.append(f"recall is lexical only: {meta.embed_error}")
    # What the other groups' searches reported (an index repair is reported once, to the
    # search that met it): the briefed group's own notices are in its search info already.
    briefed = groups[alert.group].recall.notices if groups and alert.group is not None else ()
    for group in groups:
        notices.extend(n for n in group.recall.notices
                       if n not in briefed and n not in notices)
    if alert.truncated:
        notices.append("alert was longer than 20,000 characters; only the start was searched")
    if quarantined:
        notices.append(f"{len(quarantined)} recalled record(s) read like instructions to a "
                       f"model and were kept out of the prompt: {', '.join(sorted(quarantined))}")
    return notices


def _count(count: int, noun: str) -> str:
    """"1 incident", "4 records"."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _short_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def coverage(alert: Alert, recalled: Recall, briefing: Briefing, quarantined: set[str],
             snapshot: MemorySnapshot) -> list[SourceUse]:
    """Which sources of evidence this briefing used, and which were missing (and why)."""
    memory_text = "\n".join(a.text for a in recalled.actions) + "\n".join(
        i.document for i in recalled.incidents if not i.actions)
    record_count = sum(max(1, len(i.actions)) for i in recalled.incidents)
    uses = [
        SourceUse(source="alert", status="truncated" if alert.truncated else "used",
                  sha256=_short_sha(recalled.query),
                  detail=f"{len(recalled.redacted)} secret(s) redacted" if recalled.redacted
                  else ""),
        SourceUse(source="memory", status="used", sha256=_short_sha(memory_text),
                  detail=f"{_count(record_count, 'record')} from "
                         f"{_count(len(recalled.incidents), 'incident')} ({recalled.mode} recall)"),
    ]
    if quarantined:
        uses.append(SourceUse(source="quarantined records", status="excluded",
                              detail=", ".join(sorted(quarantined))))
    index = snapshot.index
    if index.embedder_id is None:
        uses.append(SourceUse(source="embeddings", status="not_configured",
                              detail="TRIAGE_EMBED_MODEL=none: lexical recall only"))
    elif recalled.mode != "hybrid":
        reason = (index.meta.embed_error if index.meta and index.meta.embed_error
                  else "; ".join(recalled.notices))
        uses.append(SourceUse(source=f"embeddings {index.embedder_id}", status="unavailable",
                              detail=reason))
    else:
        uses.append(SourceUse(source=f"embeddings {index.embedder_id}", status="used"))
    model = snapshot.settings.model
    if briefing.source == "model":
        accepted = briefing.attempts[-1]
        uses.append(SourceUse(source=f"model {briefing.model}", status="used",
                              sha256=accepted.output_sha256[:12], detail=f"attempt {accepted.n}"))
    elif model:
        uses.append(SourceUse(source=f"model {model}", status="unavailable",
                              detail=briefing.degraded or ""))
    else:
        uses.append(SourceUse(source="model", status="not_configured"))
    return uses
