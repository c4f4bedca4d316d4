"""A verification pass over one briefing, end to end: plan → probe → synthesise → artifact.

console/engine/verification/method.py holds the method (audit, questions, memory and engineer probes,
synthesis). This module runs it for a real briefing:

- **Needed?** Below confidence 85 only, unless asked ``always`` (:func:`not_needed`).
- **Plan** (:func:`plan`): the audit and its questions, the memory probes and the escalation
  (an independent re-recall, anchors hidden) — all read from the recall the briefing cited,
  with every parameter fixed before anything runs. Declared probes from ``probes.yaml`` join
  as questions with their exact argv; a probe whose parameters cannot be filled from the alert
  is listed as skipped, with why.
- **Answer** (:func:`conclude`): engineer answers (``yes``/``no``/``unknown`` by question id) and
  the declared probes the engineer confirmed; a probe never confirmed stays ``unknown`` —
  "needs confirmation".
- **Artifact** (:func:`write_artifact`): the whole pass as pydantic-validated JSON in
  ``DATA/verifications/`` (beside the audit log). The pass counts only once a valid artifact
  is on disk and read back; otherwise the result has ``status: failed`` and says why, and the
  briefing itself is never touched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from console.engine.briefing.alert import Alert
from console.engine.briefing.audit import AuditLog
from console.engine.briefing.models import Briefing
from console.engine.briefing.services import read_service
from console.engine.model.client import ModelClient
from console.engine.verification.method import (
    Answered,
    Category,
    Context,
    Disposition,
    Doubt,
    DoubtKind,
    ProbeKind,
    ProbeResult,
    Question,
    Result,
    audit,
    escalates,
    escalation_question,
    probe_all,
    probe_engineer,
    probe_rerecall,
    questions,
    synthesise,
)
from console.engine.verification.probe_run import ProbeRun, run_all
from console.engine.verification.probes import DeclaredProbe, render_argv
from console.engine.verification.probes import question_text as probe_question_text
from store.models import Action, ActionOutcome
from store.recall import Recall

# A pass's result as the CLI prints it and the console shows it: the artifact's fields as a
# JSON object (``status`` ok | failed, ``questions``, ``disposition``, ``artifact``, …).
VerificationResult = dict[str, Any]

NEEDED_BELOW = 85
NEEDS_CONFIRMATION = "needs confirmation"
ARTIFACT_DIR = "verifications"


def not_needed(briefing: Briefing) -> dict[str, Any]:
    """The ``verification`` of a briefing confident enough not to need one."""
    value = briefing.confidence.value
    return {"status": "not_needed", "disposition": None, "conclusion": None, "confidence": None,
            "questions": [], "artifact": None,
            "reason": f"confidence {value} ≥ {NEEDED_BELOW}: verification not needed "
                      "(--verify=always runs it anyway)"}


def failed(why: str) -> dict[str, Any]:
    """A pass that produced no valid artifact: nothing of it counts; the briefing stands."""
    return {"status": "failed", "disposition": None, "conclusion": None, "confidence": None,
            "questions": [], "artifact": None,
            "error": f"verification failed: {why} — the briefing above is unchanged; run it "
                     "again, and report the error if it repeats"}


def needed(briefing: Briefing) -> bool:
    return briefing.confidence.value < NEEDED_BELOW


def alert_service(alert: Alert, services: Sequence[str],
                  aliases: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """The alert's service as the verdict reads it (console/engine/briefing/services.py);
    None when it names none or the read is unsure (then the engineer is asked)."""
    read = read_service(alert.text, alert.service, services, labels=alert.service_labels,
                        aliases=aliases)
    return read.named if read.demotes else None


# --- the plan --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Declared:
    """A declared probe asked as a question: its exact argv fixed before anything runs."""

    question: Question
    probe: DeclaredProbe
    argv: tuple[str, ...]


@dataclass
class Plan:
    """Everything a verification pass reads and has probed already (memory probes and the
    re-recall); engineer questions and declared probes wait for answers and confirmations."""

    ctx: Context
    doubts: list[Doubt]
    answered: list[Answered]
    engineer: list[Question]
    declared: list[Declared]
    skipped: list[str] = field(default_factory=list)
    # The model's plainer wording of questions (by id; shown as its words) and what its
    # answer's guards dropped or refused (console/engine/verification/assist.py).
    phrased: dict[str, str] = field(default_factory=dict)
    model_log: list[str] = field(default_factory=list)


def _fill(probe: DeclaredProbe, known: Mapping[str, str]) -> dict[str, str]:
    return {name: known[name] for name in probe.params if name in known}


def _declare(probe: DeclaredProbe, params: Mapping[str, str]) -> Declared:
    """A declared probe as a question; ProbeParamError / ValueError (bundled) if it can't be."""
    argv = render_argv(probe, params)
    question = Question(probe.category, probe_question_text(probe, params), "declared",
                        probe.name, tuple(sorted(params.items())))
    return Declared(question, probe, tuple(argv))


def plan(briefing: Briefing, recall: Recall, *, service: str | None, now: datetime | None = None,
         rerecall: Callable[[frozenset[str]], Recall] | None = None,
         probes: Sequence[DeclaredProbe] = (), client: ModelClient | None = None) -> Plan:
    """Audit, ask, run the memory probes and (if due) the re-recall; declare the rest. With a
    ``client``, the model may phrase questions and pick declared probes (guarded)."""
    ctx = Context(briefing, recall, service, now or datetime.now(UTC), briefing.coverage)
    doubts = audit(ctx)
    asked = questions(ctx, doubts)
    answered = probe_all(ctx, doubts, [q for q in asked if q.probe == "memory"], {}, rerecall)
    engineer = [q for q in asked if q.probe == "engineer"]
    known = {"service": service or "", "alert_service": service or ""}
    if ctx.anchor is not None:
        known.update(incident=ctx.anchor.incident_id, action=ctx.anchor.action_id,
                     incident_service=ctx.anchor.service)
    known = {k: v for k, v in known.items() if v}
    declared: list[Declared] = []
    skipped: list[str] = []
    for probe in probes if ctx.lead is not None else ():
        if probe.services and (service is None or service not in probe.services):
            continue
        try:
            declared.append(_declare(probe, _fill(probe, known)))
        except ValueError as exc:  # ProbeParamError, or a question the values made bundled
            skipped.append(f"{probe.name}: {exc}")
    made = Plan(ctx, doubts, answered, engineer, declared, skipped)
    return assisted(made, client, probes, recall, service) if client is not None else made


def assisted(made: Plan, client: ModelClient, probes: Sequence[DeclaredProbe], recall: Recall,
             service: str | None) -> Plan:
    """``made`` with the model's plainer wording of its questions and the declared probes the
    model picked (guarded; console/engine/verification/assist.py), as a new plan: ``made`` is not
    touched, so the console can show the memory's results first and add these when they come.
    Nothing here changes a result. Without a lead fix there is nothing to ask the model."""
    if made.ctx.lead is None:
        return made
    from console.engine.verification.assist import assist

    asked = [*(a.question for a in made.answered), *made.engineer,
             *(d.question for d in made.declared)]
    helped = assist(client, asked, probes, recall)
    log = list(helped.log)
    declared = list(made.declared)
    have = {d.question.id for d in declared}
    for probe, params in helped.picks:
        if probe.services and (service is None or service not in probe.services):
            log.append(f"refused a probe pick: {probe.name} is declared for "
                       f"{', '.join(probe.services)} only")
            continue
        try:
            picked = _declare(probe, params)
        except ValueError as exc:
            log.append(f"refused a probe pick: {probe.name}: {exc}")
            continue
        if picked.question.id not in have:
            have.add(picked.question.id)
            declared.append(picked)
    return dataclasses.replace(made, declared=declared, phrased=dict(helped.phrased),
                               model_log=log)


# --- answers ---------------------------------------------------------------------------------

def run_confirmed(plan: Plan, confirmed: set[str],
                  on_done: Callable[[str, ProbeRun], None] | None = None,
                  ) -> dict[str, ProbeRun]:
    """Run the declared probes the engineer confirmed (by probe name), at most 6 at a time;
    results by question id. A probe not confirmed is not run."""
    chosen = [d for d in plan.declared if d.probe.name in confirmed]

    def done(position: int, run: ProbeRun) -> None:
        if on_done is not None:
            on_done(chosen[position].question.id, run)

    runs = run_all([(d.probe, d.argv) for d in chosen], confirmed=True, on_done=done)
    return {d.question.id: run for d, run in zip(chosen, runs, strict=True)}


def declared_result(declared: Declared, run: ProbeRun | None) -> ProbeResult:
    if run is None:
        return ProbeResult("unknown", f"{NEEDS_CONFIRMATION}: confirm it runs "
                                      f"{' '.join(declared.argv)}", argv=declared.argv)
    return ProbeResult(run.result, run.missing, run.evidence_sha256, output=run.output,
                       argv=run.argv)


def answered(plan: Plan, answers: Mapping[str, str],
             runs: Mapping[str, ProbeRun]) -> list[Answered]:
    return [*plan.answered,
            *(Answered(q, probe_engineer(q, answers)) for q in plan.engineer),
            *(Answered(d.question, declared_result(d, runs.get(d.question.id)))
              for d in plan.declared)]


def escalate_late(plan: Plan, answers: Mapping[str, str], runs: Mapping[str, ProbeRun],
                  rerecall: Callable[[frozenset[str]], Recall] | None) -> None:
    """An engineer's or a probe's answer that refutes a key fact calls for the re-recall the
    memory probes did not: run it once, into the plan (it is never run twice)."""
    if any(a.question.check == "rerecall" for a in plan.answered):
        return
    reason = escalates([], answered(plan, answers, runs))
    if reason is None or (question := escalation_question(plan.ctx, reason)) is None:
        return
    hidden = frozenset(question.param("hidden").split(","))
    again = rerecall(hidden) if rerecall is not None else None
    plan.answered.append(Answered(question, probe_rerecall(question, again)))


def conclude(plan: Plan, answers: Mapping[str, str],
             runs: Mapping[str, ProbeRun]) -> dict[str, Any]:
    """Synthesis from the dispositions: the memory probes already run, the engineer's answers,
    the declared probes' runs. Nothing is probed here."""
    result = synthesise(plan.ctx, answered(plan, answers, runs), plan.doubts)
    for question in result["questions"]:
        if question["id"] in plan.phrased:
            question["phrased"] = plan.phrased[question["id"]]
    if plan.model_log:
        result["model_log"] = list(plan.model_log)
    if plan.skipped:
        result["skipped_probes"] = list(plan.skipped)
    return result


# --- the artifact ----------------------------------------------------------------------------

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ArtifactDoubt(_Strict):
    category: Category
    kind: DoubtKind
    detail: str


class ArtifactQuestion(_Strict):
    id: str = Field(pattern=r"^[0-9a-f]{12}$")
    text: str = Field(min_length=1)
    category: Category
    probe: ProbeKind
    check: str
    key: bool
    result: Result
    missing: str
    evidence_sha256: str
    found: str = ""
    argv: list[str] | None = None
    output: str | None = None
    phrased: str = ""  # the model's plainer wording, guarded (never the question itself)

    @model_validator(mode="after")
    def _unknown_says_why(self) -> ArtifactQuestion:
        if self.result == "unknown" and not self.missing:
            raise ValueError(f"question {self.id} is unknown without saying what is missing")
        return self


class ArtifactConfidence(_Strict):
    value: int = Field(ge=0, le=100)
    layers: int = Field(ge=0)
    gaps: list[str]
    cap: int = Field(ge=0, le=100)
    derivation: str = Field(min_length=1)

    @model_validator(mode="after")
    def _within_cap(self) -> ArtifactConfidence:
        if self.value > self.cap:
            raise ValueError(f"confidence {self.value} above its cap {self.cap}")
        return self


class VerificationArtifact(_Strict):
    """The whole pass, as written beside the audit log; nothing counts until it validates."""

    version: Literal[1] = 1
    created_at: datetime
    briefing_sha256: str
    recall_sha256: str
    disposition: Disposition
    conclusion: str = Field(min_length=1)
    confidence: ArtifactConfidence
    audit: list[ArtifactDoubt]
    questions: list[ArtifactQuestion]
    skipped_probes: list[str] = Field(default_factory=list)
    model_log: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> VerificationArtifact:
        ids = [q.id for q in self.questions]
        if len(ids) != len(set(ids)):
            raise ValueError("two questions share an id")
        refuted = [q for q in self.questions if q.result == "refuted"]
        if self.disposition == "maintain" and any(
                q.key or q.probe in ("engineer", "declared") for q in refuted):
            raise ValueError("maintained while a question against its direction was refuted")
        if self.disposition == "overturn" and sum(q.key for q in refuted) < 2:
            raise ValueError("overturned with fewer than two key questions refuted")
        return self


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def recall_digest(recall: Recall) -> str:
    return _sha("\x1e".join(f"{a.action_id}\x1f{a.outcome.value}\x1f{a.text}"
                            for a in recall.actions))


def write_artifact(result: dict[str, Any], briefing: Briefing, recall: Recall,
                   data_dir: Path, now: datetime | None = None) -> dict[str, Any]:
    """Validate ``result`` as an artifact, write it atomically, read it back and validate that;
    the result with ``artifact`` set — or :func:`failed` saying why."""
    created = now or datetime.now(UTC)
    briefing_sha = _sha(briefing.model_copy(update={"verification": None}).model_dump_json())
    try:
        artifact = VerificationArtifact(
            created_at=created, briefing_sha256=briefing_sha,
            recall_sha256=recall_digest(recall), disposition=result["disposition"],
            conclusion=result["conclusion"], confidence=result["confidence"],
            audit=result["audit"], questions=result["questions"],
            skipped_probes=result.get("skipped_probes", []),
            model_log=result.get("model_log", []))
    except ValidationError as exc:
        return failed(f"the result is not a valid artifact ({_first_error(exc)})")
    folder = data_dir / ARTIFACT_DIR
    name = f"{created:%Y%m%dT%H%M%S%fZ}-{briefing_sha[:12]}.json"
    path = folder / name
    tmp = folder / f".{name}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(artifact.model_dump_json(indent=2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        VerificationArtifact.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        with contextlib.suppress(OSError):  # e.g. the folder is a file: nothing to clean up
            tmp.unlink(missing_ok=True)
        return failed(f"the artifact could not be written ({exc.strerror or exc}: {folder})")
    except ValidationError as exc:
        return failed(f"the artifact read back is not valid ({_first_error(exc)}: {path})")
    AuditLog(data_dir / "audit.jsonl").append({
        "event": "verification", "artifact": str(path), "disposition": artifact.disposition,
        "confidence": artifact.confidence.value, "briefing_sha256": briefing_sha})
    return {**result, "artifact": str(path)}


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])


# --- one pass, headless ----------------------------------------------------------------------

ANSWERS = ("yes", "no", "unknown")


def parse_answers(given: Sequence[str]) -> dict[str, str]:
    """``QID=yes|no|unknown`` pairs (from ``--answer``); ValueError says which one is wrong."""
    answers: dict[str, str] = {}
    for item in given:
        qid, sep, answer = item.partition("=")
        answer = answer.strip().lower()
        if not sep or not qid.strip() or answer not in ANSWERS:
            raise ValueError(f"--answer {item!r}: expected QID=yes, QID=no or QID=unknown "
                             "(the ids are listed by a run without answers)")
        answers[qid.strip()] = answer
    return answers


def run_pass(briefing: Briefing, recall: Recall, *, service: str | None, data_dir: Path,
             rerecall: Callable[[frozenset[str]], Recall] | None = None,
             probes: Sequence[DeclaredProbe] = (), answers: Mapping[str, str] | None = None,
             allowed: set[str] | None = None, now: datetime | None = None,
             client: ModelClient | None = None) -> tuple[dict[str, Any], Plan | None]:
    """One whole pass: plan, run the allowed declared probes, conclude, write the artifact.

    Never raises: a crash anywhere is a ``failed`` verification (the briefing stands)."""
    try:
        made = plan(briefing, recall, service=service, now=now, rerecall=rerecall,
                    probes=probes, client=client)
        runs = run_confirmed(made, allowed or set())
        escalate_late(made, answers or {}, runs, rerecall)
        result = conclude(made, answers or {}, runs)
        # ``now`` dates the evidence; the artifact is stamped when it is written (a fixed
        # TRIAGE_NOW must not make two passes share one file name).
        return write_artifact(result, briefing, recall, data_dir), made
    except Exception as exc:  # noqa: BLE001 — any crash leaves the briefing untouched
        return failed(f"{type(exc).__name__}: {str(exc)[:200]}"), None


# --- into the postmortem ---------------------------------------------------------------------

CARRIED_KIND = "verify"
_KEY_FACTS_OF_THE_FIX = ("same_service", "no_worsened", "rerecall")


def carry_rows(result: Mapping[str, Any], briefing: Briefing) -> list[Action]:
    """Action rows for the postmortem form from a verification: one per question that was
    confirmed or refuted (kind ``verify``, outcome NO_EFFECT — a check changes nothing on the
    system; the explanation holds the question, the result and the evidence hash), and, when a
    key fact behind the lead fix was refuted, that fix's stored text with its outcome pre-filled
    as unconfirmed (NO_EFFECT, or WORSENED when memory says it made things worse), for the
    engineer to accept or change."""
    rows: list[Action] = []
    for q in result.get("questions", []):
        if q["result"] not in ("confirmed", "refuted"):
            continue
        found = f"; found {q['found']}" if q.get("found") else ""
        rows.append(Action(
            id=f"A{len(rows) + 1}", action=f"Verified: {q['text']}", outcome=ActionOutcome.NO_EFFECT,
            kind=CARRIED_KIND,
            explanation=f"{q['text']} — {q['result']} by the {q['probe']} probe {q['check']}"
                        f"{found} (evidence sha256 {q['evidence_sha256'][:16] or 'none'})"))
    refuted = [q for q in result.get("questions", [])
               if q["result"] == "refuted" and q["check"] in _KEY_FACTS_OF_THE_FIX]
    if refuted and briefing.recommendations:
        lead = briefing.recommendations[0]
        worse = any(q["check"] == "no_worsened" for q in refuted)
        rows.append(Action(
            id=f"A{len(rows) + 1}", action=lead.action,
            outcome=ActionOutcome.WORSENED if worse else ActionOutcome.NO_EFFECT, kind=None,
            confirmed=False,
            explanation="pre-filled by verification, not observed — it refuted: "
                        + "; ".join(q["text"] for q in refuted)
                        + ". Set the outcome you saw, or remove this row."))
    return rows
