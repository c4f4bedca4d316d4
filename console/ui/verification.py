"""Verification (F6) in the console: the App owns it, the panel renders it.

``VerificationMixin`` is part of :class:`console.ui.app.TriageApp` (kept in its own file to
keep the App readable). Its workers plan and conclude a pass and run declared probes on
threads, through the engine's front door (``TriageEngine.verification_*``); they only post
messages tagged with the verification's id (and answer round), and the handlers here are the
only place the ``Verifying`` state (console/ui/state.py) changes. A result for a verification
that is no longer on screen, or for an older answer round, is dropped (and the audit log says
so). The memory's results are shown first; a model's phrasings join later.

What it shows goes to a :class:`VerificationView` — the main screen, which this module does
not import (the App hands it over as ``main_screen``).
"""

from __future__ import annotations

import dataclasses
import threading
from typing import TYPE_CHECKING, Any, Protocol

from textual import work

from console.ui.messages import (
    ProbeFinished,
    ProbeRunConfirmed,
    QuestionAnswered,
    VerificationAssisted,
    VerificationConcluded,
    VerificationFailed,
    VerifyRequested,
)
from console.ui.state import Verifying

if TYPE_CHECKING:
    from textual.message import Message
    from textual.notifications import SeverityLevel

    from console.engine.briefing.audit import AuditLog
    from console.engine.config import Settings
    from console.engine.engine import TriageEngine
    from console.engine.pipeline import Routed
    from console.engine.practice.gameday import Timeline
    from console.engine.verification.passes import Declared, Plan
    from console.engine.verification.probe_run import ProbeRun
    from console.ui.state import ConsoleState

# Declared probes running at once, whoever confirmed them (issue 10: at most 6).
PROBE_SLOTS = 6


class VerificationView(Protocol):
    """Where the verification is shown: the panel beside the briefing."""

    @property
    def verification_open(self) -> bool: ...

    def open_verification(self, working: str | None = None) -> None: ...

    def show_verification(self, result: dict[str, Any], states: dict[str, str],
                          not_needed: str = "") -> None: ...

    def verification_failed(self, reason: str) -> None: ...

    def close_verification(self) -> None: ...


def failure(exc: Exception) -> str:
    """A crash, said in one line: a failed pass, the briefing stands."""
    return f"verification failed: {type(exc).__name__}: {str(exc)[:200]}"


class VerificationMixin:
    """The App's verification: workers, what the panel's keys ask, and the handlers."""

    if TYPE_CHECKING:  # provided by TriageApp
        settings: Settings
        timeline: Timeline | None
        state: ConsoleState
        _probe_slots: threading.BoundedSemaphore

        @property
        def engine(self) -> TriageEngine: ...

        @property
        def audit(self) -> AuditLog: ...

        @property
        def main_screen(self) -> VerificationView | None: ...

        def post_message(self, message: Message) -> bool: ...

        def notify(self, message: str, *, title: str = "",
                   severity: SeverityLevel = "information", timeout: float | None = None,
                   markup: bool = True) -> None: ...

    # --- workers: never touch widgets or App state, only post messages ---------------------

    @work(thread=True, group="verify", exit_on_error=False)
    def verify_plan(self, verification_id: int, routed: Routed) -> None:
        """Plan a verification (memory probes, re-recall) and conclude it with no answers."""
        from console.engine.verification.probes import ProbeFileError

        try:
            probes = self.engine.probes()
        except ProbeFileError as exc:
            self.post_message(VerificationFailed(exc.render(), verification_id))
            return
        try:
            made = self.engine.verification_plan(routed, probes)
        except Exception as exc:  # noqa: BLE001 — a crash is a failed pass; the briefing stands
            self.post_message(VerificationFailed(failure(exc), verification_id))
            return
        # The memory's results are shown first; a model (if any) may take up to its timeout
        # to phrase the questions and pick probes, and changes no result when it answers.
        assisting = made.ctx.lead is not None and self.engine.model_client() is not None
        concluded = self._conclude(verification_id, 0, made, {}, {}, routed,
                                   assisting=assisting)
        if not assisting or not concluded:
            return
        try:
            # None only if the model went away meanwhile: the plan as it was ends the note.
            helped = self.engine.verification_assisted(made, routed, probes) or made
        except Exception as exc:  # noqa: BLE001 — the model's part is optional: say so, go on
            helped = dataclasses.replace(made, model_log=[
                f"the model's part failed: {type(exc).__name__}: {str(exc)[:200]}"])
        self.post_message(VerificationAssisted(helped, verification_id))

    @work(thread=True, group="verify", exit_on_error=False)
    def verify_conclude(self, verification_id: int, seq: int, made: Plan,
                        answers: dict[str, str], runs: dict[str, ProbeRun],
                        routed: Routed) -> None:
        # The plan is the App's: the worker concludes on its own copy and posts that back.
        self._conclude(verification_id, seq, dataclasses.replace(
            made, answered=list(made.answered)), answers, runs, routed)

    def _conclude(self, verification_id: int, seq: int, made: Plan, answers: dict[str, str],
                  runs: dict[str, ProbeRun], routed: Routed, *,
                  assisting: bool = False) -> bool:
        """(On a worker thread.) Synthesis and the artifact; posts the result or the failure
        and says whether it concluded."""
        try:
            result = self.engine.verification_concluded(made, routed, answers, runs)
        except Exception as exc:  # noqa: BLE001 — a crash is a failed pass; the briefing stands
            result = {"status": "failed", "error": failure(exc)}
        if result["status"] == "failed":
            self.post_message(VerificationFailed(result["error"], verification_id))
            return False
        self.post_message(VerificationConcluded(made, result, verification_id, seq, assisting))
        return True

    @work(thread=True, group="verify-probe", exit_on_error=False)
    def verify_probe(self, verification_id: int, question_id: str, declared: Declared) -> None:
        from console.engine.verification.probe_run import run_probe

        with self._probe_slots:
            run = run_probe(declared.probe, declared.argv, confirmed=True)
        self.post_message(ProbeFinished(question_id, run, verification_id))

    # --- what the panel's keys ask, and the handlers: state changes only here -------------

    def on_verify_requested(self, message: VerifyRequested) -> None:
        """F6: open the verification of the briefing on screen beside it (or close it)."""
        main, state = self.main_screen, self.state
        if main is None:
            return
        if main.verification_open:
            main.close_verification()
            return
        if state.shown is None or state.request is not None:
            self.notify("Nothing to verify yet: brief an alert (Enter in the alert box) and wait "
                        "for its briefing, then press F6.", title="Verify", timeout=5)
            return
        current = state.verifying
        if current is not None and current.routed is state.shown and current.result is not None:
            main.open_verification()
            self._show_verification(current)
            return
        state.last_verification_id += 1
        state.verifying = Verifying(state.last_verification_id, state.shown)
        main.open_verification("Auditing the briefing: memory probes and, if the direction "
                               "looks wrong, an independent re-recall…")
        self.verify_plan(state.verifying.id, state.shown)

    def _current_verification(self, verification_id: int, what: str) -> Verifying | None:
        current = self.state.verifying
        if current is not None and current.id == verification_id:
            return current
        self.audit.append({"event": "stale_result_dropped", "what": what,
                           "verification": verification_id,
                           "current": current.id if current else None})
        return None

    def _show_verification(self, current: Verifying) -> None:
        if self.main_screen is None or current.result is None:
            return
        value = current.routed.briefing.confidence.value
        notes = [f"The briefing's confidence is {value}, high enough not to need this check: "
                 "it ran because you asked." if value >= 85 else "",
                 f"the model is phrasing the questions (up to {self.settings.model_timeout:g} s)"
                 " — these results are the memory's; its answer changes none of them"
                 if current.assisting else ""]
        note = "\n".join(n for n in notes if n)
        self.main_screen.show_verification(
            current.result, dict.fromkeys(current.running, "running"), note)

    def on_question_answered(self, message: QuestionAnswered) -> None:
        current = self.state.verifying
        if current is None or current.plan is None:
            return
        current.answers[message.question_id] = message.answer
        self._reconclude(current)

    def on_probe_run_confirmed(self, message: ProbeRunConfirmed) -> None:
        """The engineer saw the argv and pressed c: run that probe, once."""
        current, question_id = self.state.verifying, message.question_id
        if current is None or current.plan is None or question_id in current.running \
                or question_id in current.runs:
            return
        declared = next((d for d in current.plan.declared if d.question.id == question_id), None)
        if declared is None:
            return
        current.running.add(question_id)
        self._show_verification(current)
        self.verify_probe(current.id, question_id, declared)

    def _reconclude(self, current: Verifying) -> None:
        assert current.plan is not None
        current.seq += 1
        self.verify_conclude(current.id, current.seq, current.plan, dict(current.answers),
                             dict(current.runs), current.routed)

    def on_verification_concluded(self, message: VerificationConcluded) -> None:
        current = self._current_verification(message.verification_id, "verification")
        if current is None or message.seq != current.seq:
            return
        current.plan, current.result = message.plan, message.result
        if message.seq == 0:
            current.assisting = message.assisting
        if self.timeline is not None:
            self.timeline.verification(message.result)
        self._show_verification(current)

    def on_verification_assisted(self, message: VerificationAssisted) -> None:
        current = self._current_verification(message.verification_id, "model assist")
        if current is None or current.plan is None:
            return
        current.assisting = False
        helped = message.assisted
        have = {d.question.id for d in current.plan.declared}
        current.plan = dataclasses.replace(
            current.plan, phrased=dict(helped.phrased), model_log=list(helped.model_log),
            declared=[*current.plan.declared,
                      *(d for d in helped.declared if d.question.id not in have)])
        self._reconclude(current)

    def on_verification_failed(self, message: VerificationFailed) -> None:
        current = self._current_verification(message.verification_id, "verification failure")
        if current is None:
            return
        self.state.verifying = None  # F6 twice runs it again from the start
        if self.main_screen is not None:
            self.main_screen.verification_failed(message.reason)

    def on_probe_finished(self, message: ProbeFinished) -> None:
        current = self._current_verification(message.verification_id, "probe")
        if current is None:
            return
        current.running.discard(message.question_id)
        current.runs[message.question_id] = message.run
        self._reconclude(current)
