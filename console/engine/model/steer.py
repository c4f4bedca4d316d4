"""Draft, guard, and — when a draft is rejected — regenerate, steered by what failed."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from console.engine.briefing.audit import AuditLog
from console.engine.briefing.models import Attempt, GuardEntry
from console.engine.briefing.request import BriefingCancelled
from console.engine.model.client import ModelClient, ModelUnavailable, Progress
from console.engine.model.draft import Draft, DraftRejected
from console.engine.model.guards import GuardedDraft, guard_draft
from console.engine.model.prompts import GENERATOR_VERSION, Contract, build_messages, read_goal
from store.recall import Recall, RecalledAction

EVIDENCE_CAP = 600


@dataclass
class SteerResult:
    """The accepted draft (or None), every attempt, and why the model was not used if so."""

    accepted: GuardedDraft | None
    attempts: list[Attempt] = field(default_factory=list)
    guard_log: list[GuardEntry] = field(default_factory=list)
    degraded: str | None = None
    audit_error: str | None = None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def evidence_slice(rejection: DraftRejected) -> tuple[str, bool]:
    """The lines naming the problem, capped; deterministic for the same failure."""
    lines = [f"rule: {rejection.rule}", *rejection.detail.splitlines()]
    text = "\n".join(line[:300] for line in lines)
    truncated = len(text) > EVIDENCE_CAP
    return text[:EVIDENCE_CAP], truncated


def steer_note(contract: Contract, contract_sha256: str, rejection: DraftRejected,
               output_sha256: str) -> str:
    """The regeneration request: the goal re-read from the contract plus what failed."""
    evidence, truncated = evidence_slice(rejection)
    return (f"Your previous answer (sha256 {output_sha256}) was rejected by the checks.\n"
            f"Failure (truncated: {str(truncated).lower()}):\n{evidence}\n\n"
            f"Generator: {GENERATOR_VERSION}. Answer again from the goal below, not from your "
            f"previous answer.\n\n{read_goal(contract, contract_sha256)}")


def run_model(client: ModelClient, alert_text: str, recall: Recall,
              prompt_records: list[RecalledAction], audit: AuditLog, max_attempts: int = 3,
              budget: float = 120.0,
              on_progress: Callable[[Progress], None] | None = None,
              cancelled: Callable[[], bool] | None = None) -> SteerResult:
    """Up to ``max_attempts`` drafts; stop early on the same failure twice or the budget.

    ``cancelled`` is polled by the model client between streamed chunks: once it is true the
    stream is abandoned and BriefingCancelled raised (the attempt is audited as cancelled).
    """
    contract = Contract()
    contract_sha256 = contract.sha256
    schema = Draft.model_json_schema()
    deadline = time.monotonic() + budget
    result = SteerResult(accepted=None)
    alert_sha = _sha(alert_text)
    steer: str | None = None
    seen_digests: set[str] = set()
    for number in range(1, max_attempts + 1):
        if time.monotonic() >= deadline:
            result.degraded = (f"model time budget of {budget:g}s spent after {number - 1} "
                               "attempts (TRIAGE_MODEL_BUDGET)")
            break
        messages = build_messages(contract, contract_sha256, alert_text, prompt_records, steer)
        started = time.monotonic()
        entry = {"alert_sha256": alert_sha, "contract_sha256": contract_sha256, "attempt": number,
                 "model": client.model, "generator": GENERATOR_VERSION,
                 "prompt_sha256": _sha("\n".join(m["content"] for m in messages))}
        try:
            output = client.chat(messages, schema, number, on_progress, deadline, cancelled)
        except BriefingCancelled:
            audit.append({**entry, "result": "cancelled",
                          "duration_ms": round((time.monotonic() - started) * 1000)})
            raise
        except ModelUnavailable as exc:
            result.degraded = str(exc)
            result.attempts.append(Attempt(n=number, result="unavailable", reason=str(exc),
                                           output_sha256=""))
            audit.append({**entry, "result": "unavailable", "reason": str(exc),
                          "duration_ms": round((time.monotonic() - started) * 1000)})
            break
        output_sha = _sha(output)
        timing = {"duration_ms": round((time.monotonic() - started) * 1000),
                  "output_sha256": output_sha, "output_chars": len(output)}
        try:
            guarded = guard_draft(output, recall)
        except DraftRejected as rejection:
            digest = _sha(f"{rejection.rule}\n{rejection.detail}")
            result.attempts.append(Attempt(n=number, result="rejected", reason=str(rejection)[:300],
                                           output_sha256=output_sha))
            result.guard_log.append(GuardEntry(rule=rejection.rule,
                                               detail=f"attempt {number}: {rejection.detail}"[:300]))
            audit.append({**entry, **timing, "result": "rejected", "rule": rejection.rule,
                          "reason": str(rejection)[:1000], "failure_digest": digest})
            if digest in seen_digests:
                result.degraded = (f"model drafts rejected {number}×, the same failure twice "
                                   f"({rejection.rule}) — deterministic briefing")
                break
            seen_digests.add(digest)
            steer = steer_note(contract, contract_sha256, rejection, output_sha)
            continue
        result.attempts.append(Attempt(n=number, result="accepted", reason="passed the guards",
                                       output_sha256=output_sha))
        audit.append({**entry, **timing, "result": "accepted",
                      "guard_log": [g.model_dump() for g in guarded.log]})
        result.accepted = guarded
        result.guard_log.extend(guarded.log)
        result.audit_error = audit.error
        return result
    if result.degraded is None:
        result.degraded = (f"model drafts rejected {len(result.attempts)}× — deterministic "
                           "briefing")
    result.audit_error = audit.error
    return result
