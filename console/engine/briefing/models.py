"""The briefing result: the ``triage brief --json`` contract, as pydantic models."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from console.engine.briefing.payloads import AlertFormat
from store.models import ActionOutcome, without_absent
from store.text import CleanStr

State = Literal["proven", "unproven", "no_prior_incident"]
# How a recalled incident applies to this alert (console/engine/briefing/applicability.py): the same
# failure (strong), the same failure mode on another service (elsewhere), or only recalled.
Match = Literal["strong", "elsewhere", "weak"]


class RecalledRecord(BaseModel):
    """A recalled action exactly as stored, with its relevance and the evidence behind it.

    An incident with no actions recorded is one record with ``action_id`` and ``outcome`` None:
    seen before, nothing proven. ``score`` is the fused relevance; ``cosine`` (dense) and
    ``bm25`` (full text) are its components, None when that layer did not find the incident.
    """

    incident_id: str
    action_id: str | None
    service: CleanStr
    outcome: ActionOutcome | None
    score: float
    text: CleanStr
    cosine: float | None = None
    bm25: float | None = None
    title: CleanStr = ""
    action: CleanStr = ""
    explanation: CleanStr = ""
    kind: CleanStr = ""
    confirmed: bool = True
    quarantined: bool = False
    match: Match = "weak"
    applicability: float = 0.0
    # When its incident started (ISO, "" undated) and how long before the briefing's "now".
    started_at: str = ""
    age: CleanStr = ""
    # The runbook its incident's postmortem recorded (None: none): shown, never fetched.
    runbook: CleanStr | None = None

    @model_serializer(mode="wrap")
    def _without_absent_runbook(self, handler: SerializerFunctionWrapHandler) -> object:
        # A record without a runbook dumps exactly as before the field existed (--json, the
        # briefing's hash in a verification artifact, what the model is shown).
        return without_absent(handler(self), "runbook")


class Evidence(BaseModel):
    incident_id: str
    action_id: str
    outcome: ActionOutcome


class FixHistory(BaseModel):
    """A fix's evidence in time order (console/engine/briefing/timeline.py): how often and until
    when it worked, whether the most recent strong incident where it was tried is one where it
    failed after earlier successes (``failed_last``), and whether its newest success is older
    than the verification's window (``old_evidence``). ``text`` is the line shown next to it
    ("worked 2× until 2025-11, failed on 2026-07-24 in INC-2233"), empty when neither holds."""

    worked: int
    first_worked: str | None = None
    last_worked: str | None = None
    failed_last: bool = False
    failed_on: str | None = None
    failed_incident_id: str | None = None
    failed_outcome: str | None = None
    old_evidence: bool = False
    text: CleanStr = ""


class Recurrence(BaseModel):
    """The earlier occurrences of this failure in memory (the alert not counted): strongly
    matching incidents on one service, in time order. ``same_fix``: one recommended fix
    RESOLVED every one of them (``fix``, its stored text) — it resolves the failure and does
    not keep it away; ``root_causes`` are what each postmortem recorded."""

    count: int
    first: str | None
    last: str | None
    last_incident_id: str | None
    days_since_last: int | None
    median_interval_days: float | None
    same_fix: bool
    fix: CleanStr | None
    root_causes: list[CleanStr] = Field(default_factory=list)
    service: CleanStr = ""
    incident_ids: list[str] = Field(default_factory=list)
    undated: int = 0
    fix_resolved: int = 0
    fix_action_ids: list[str] = Field(default_factory=list)


class Recommendation(BaseModel):
    """``action`` is always the stored text of the first cited action; ``model_note`` is the
    model's own phrasing of it (shown dimmed, labelled as the model's), empty when none."""

    action: CleanStr
    evidence: list[Evidence]
    resolved: int = 0
    tried: int = 0
    failed_elsewhere: list[Evidence] = Field(default_factory=list)
    model_note: CleanStr = ""
    # The strongest match class among the incidents this fix resolved or mitigated, and the
    # services of the incidents it RESOLVED (where it is proven).
    applies: Match = "weak"
    proven_on: list[CleanStr] = Field(default_factory=list)
    # Where the same fix made no difference or made things worse, in strong incidents (these
    # lower the count that sets the tier) and elsewhere (shown beside it, not counted).
    failed_strong: list[Evidence] = Field(default_factory=list)
    # Its evidence in time order: a fix that stopped working, or that only worked long ago.
    history: FixHistory | None = None


class Step(BaseModel):
    """One next step: the stored text of the recalled action it cites (never model words)."""

    text: CleanStr
    incident_id: str
    action_id: str
    outcome: ActionOutcome


class BriefingWarning(BaseModel):
    """A recalled action that made things worse: never repeat it without reading why."""

    text: CleanStr
    incident_id: str
    action_id: str
    explanation: CleanStr = ""
    match: Match | None = None


class Confidence(BaseModel):
    """A rule on evidence, not a probability — with the derivation that produced it."""

    value: int
    model_claim: int | None
    proven: int
    failed: int
    tier: Literal["3+", "2", "1", "0"]
    floor: int
    cap: int
    explanation: CleanStr
    derivation: CleanStr = ""
    cited: list[CleanStr] = Field(default_factory=list)
    # Strong incidents where the lead fix made no difference or made things worse (each lowers
    # the count that sets the tier by one), and incidents on other services it resolved.
    failed_strong: int = 0
    proven_elsewhere: int = 0


class TriedWithoutEffect(BaseModel):
    """A NO_EFFECT action of a strong incident: what was tried and did not help, with why."""

    text: CleanStr
    incident_id: str
    action_id: str
    explanation: CleanStr = ""


class RunnerUp(BaseModel):
    """The next fix when its incident matched nearly as well as the lead's: check both."""

    action: CleanStr
    incident_id: str
    action_id: str
    applies: Match


class GuardEntry(BaseModel):
    rule: str
    detail: CleanStr


class Attempt(BaseModel):
    n: int
    result: CleanStr
    reason: CleanStr
    output_sha256: str


class SearchInfo(BaseModel):
    """What was searched, so "no prior incident" can say exactly that."""

    query: CleanStr
    terms: list[CleanStr]
    mode: CleanStr
    floor: float
    best_rejected: float
    memory_incidents: int
    gate: CleanStr = ""
    redacted: list[CleanStr] = Field(default_factory=list)
    notices: list[CleanStr] = Field(default_factory=list)


class SourceUse(BaseModel):
    """One source of evidence and whether this briefing used it (the coverage line)."""

    source: str
    status: Literal["used", "unavailable", "truncated", "excluded", "not_configured"]
    sha256: str = ""
    detail: CleanStr = ""


class AlertGroup(BaseModel):
    """One alert group of a multi-alert payload (alerts with the same labels, less instance
    labels) with the state its own recall reached; ``selected`` marks the one briefed."""

    key: CleanStr
    alerts: int
    alert: CleanStr
    state: State
    top_incident_id: str | None = None
    score: float | None = None
    selected: bool = False
    match: Match | None = None


class ServiceReading(BaseModel):
    """How the alert's service was read (console/engine/briefing/services.py): the service
    (null: none), whether the memory knows it, how (label, alias — by services.yaml or by its
    words —, text, unsure, none), from what, whether it demotes a strong match on another
    service, and the line the briefing shows when it was assumed (null when read as written)."""

    service: CleanStr | None = None
    known: bool = False
    how: Literal["label", "alias", "text", "unsure", "none"] = "none"
    source: CleanStr = ""
    demotes: bool = False
    assumed: CleanStr | None = None


class AlertInput(BaseModel):
    """What the alert was read from: its format, the service it names, its runbook's address
    (carried, never fetched), the key its tool dedups it by, whether it still fires, and the
    links it carries (generator, dashboard, incident, …). Null where the payload says nothing.
    ``service_read``: the service as the briefing read it (from the labels or the text)."""

    format: AlertFormat
    service: CleanStr | None = None
    runbook_url: CleanStr | None = None
    dedup_key: CleanStr | None = None
    status: Literal["firing", "acknowledged", "resolved"] | None = None
    links: dict[str, CleanStr] = Field(default_factory=dict)
    service_read: ServiceReading | None = None


class Briefing(BaseModel):
    state: State
    source: Literal["model", "deterministic"]
    model: CleanStr | None
    degraded: CleanStr | None
    recalled: list[RecalledRecord]
    summary: CleanStr
    recommendations: list[Recommendation]
    warnings: list[BriefingWarning]
    confidence: Confidence
    guard_log: list[GuardEntry] = Field(default_factory=list)
    attempts: list[Attempt] = Field(default_factory=list)
    verification: dict[str, Any] | None = None
    search: SearchInfo | None = None
    likely_cause: CleanStr = ""
    steps: list[CleanStr] = Field(default_factory=list)
    step_citations: list[Step] = Field(default_factory=list)
    coverage: list[SourceUse] = Field(default_factory=list)
    batch: list[AlertGroup] = Field(default_factory=list)
    tried_without_effect: list[TriedWithoutEffect] = Field(default_factory=list)
    runner_up: RunnerUp | None = None
    # The alert's service as the verdict read it, and the model's explicit demotion (its
    # reading that none of the recalled fixes applies), shown as the model's words.
    alert_service: CleanStr | None = None
    model_reading: CleanStr = ""
    # The earlier occurrences of this failure (null when nothing recurs), as of ``now``.
    recurrence: Recurrence | None = None
    # What the alert was read from (null for a Briefing not built from a parsed alert).
    input: AlertInput | None = None
