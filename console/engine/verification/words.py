"""A verification in plain words: what was checked, what it found, why the confidence is what
it is — sentences an engineer would say, with no question ids, hashes, probe names or formula.

The facts behind them stay where they were (the ``questions``, ``confidence.derivation`` and
``conclusion`` of the result, the artifact): :func:`plain` only says them. It reads the same
context and dispositions as the synthesis (console/engine/verification/method.py), so the words
cannot tell another story than the numbers.
"""

from __future__ import annotations

from typing import Any

from console.engine.briefing.fixes import same_fix
from console.engine.briefing.timeline import STALE_AFTER
from console.engine.verification.method import (
    NEEDS_ENGINEER,
    Answered,
    Context,
    Disposition,
    Limit,
    cause_and_impact,
    confidence_limits,
    layers,
    other_fix,
)
from store.models import ActionOutcome

# The recorded cause and symptoms, cut shorter than the conclusion's (the record has them whole).
GROUNDS_PART = 90
_NUMBERS = {0: "no", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}

# What each independent layer that agrees means (method.layers names them "memory: …").
LAYER_WORDS = {
    "memory": "another past incident was resolved by the same fix",
    "meaning": "its incident matched by meaning, not only by words",
    "engineer": "you confirmed it on the live system",
    "probe": "your team's check confirmed it on the live system",
}
LIMIT_WORDS: dict[Limit, str] = {
    "source_unchecked": "a question about a source the briefing lacked is open",
    "key_open": "a deciding question is still open",
    "stale": "the newest evidence is over a year old",
    "nothing_new": "nothing is confirmed on the live system yet, so it cannot exceed the "
                   "briefing's own",
    "revise": "a check spoke against the fix",
    "overturn": "deciding checks spoke against the fix",
}


def number(count: int) -> str:
    return _NUMBERS.get(count, str(count))


def counted(count: int, thing: str, things: str | None = None) -> str:
    """"one past incident", "two past incidents"."""
    return f"{number(count)} {thing if count == 1 else (things or thing + 's')}"


def _ids(ids: list[str]) -> str:
    return ids[0] if len(ids) == 1 else ", ".join(ids[:-1]) + " and " + ids[-1]


def confidence_words(answered: list[Answered], verdict: Disposition, ctx: Context,
                     value: int) -> str:
    """Why the verification confidence is ``value``: "Two independent checks agree with the
    briefing: …. Held at 60: …" (the number itself is the result's ``confidence.value``)."""
    agreeing = [LAYER_WORDS[a.split(":")[0]] for a in layers(answered)]
    if agreeing:
        said = (f"{counted(len(agreeing), 'independent check').capitalize()} "
                f"agree{'s' if len(agreeing) == 1 else ''} with the briefing: "
                f"{'; '.join(agreeing)}.")
    else:
        said = "No independent check agrees with the briefing yet."
    holding = [LIMIT_WORDS[why] for cap, why in confidence_limits(answered, verdict, ctx.briefing)
               if cap == value]
    if holding:
        said += f" Held at {value}: {'; '.join(holding)}."
    return said


def conclusion_words(ctx: Context, answered: list[Answered], verdict: Disposition) -> str:
    """The conclusion as lines: the recorded cause, what it looked like, what to do."""
    anchor, lead = ctx.anchor, ctx.lead
    if anchor is None or lead is None:
        return "There is no recalled fix to verify: follow the runbook."
    other = other_fix(answered)
    cause, impact = cause_and_impact(anchor, other, verdict, GROUNDS_PART)
    refuted = [a for a in answered if a.result.result == "refuted"]
    decisive = sum(a.question.key for a in refuted)
    against = (f"{len(refuted)} of the {len(answered)} checks spoke against it"
               + (f", {decisive} of them decisive" if decisive else ""))
    instead = (f" Searched again without the first incidents, the memory points to "
               f"{other.found}." if other is not None else "")
    # The open questions the engineer can still settle: theirs, and declared checks not run.
    open_count = sum(a.result.result == "unknown" and a.question.probe != "memory"
                     for a in answered)
    advice = {
        "maintain": f"The fix stands: apply “{lead.action}” ({anchor.action_id}).",
        "revise": f"Re-check “{lead.action}” ({anchor.action_id}) before applying it: "
                  f"{against}.{instead}",
        "overturn": f"Do not apply “{lead.action}” ({anchor.action_id}): {against}.{instead}",
        "undetermined": "Not settled yet: " + (
            f"answer the {counted(open_count, 'open question')} below." if open_count
            else "the memory alone cannot settle it, and nothing is left to ask."),
    }[verdict]
    return f"Recorded cause: {cause}\nWhat it looked like: {impact}\n{advice}"


def found_words(answered: Answered, ctx: Context) -> str:
    """What one check looked at and what it found, in a sentence or two."""
    q, r = answered.question, answered.result
    incident, fix = q.param("incident"), q.param("fix")
    actions = ctx.recall.actions
    if q.probe == "engineer":
        if r.result == "unknown" and r.missing == NEEDS_ENGINEER:
            return "Only you can answer this: y yes · n no · u don't know."
        return {"confirmed": "You answered yes.", "refuted": "You answered no."}.get(
            r.result, "You answered: don't know.")
    if q.probe == "declared":
        if not r.argv or r.missing.startswith("needs confirmation"):
            return "A check your team declared answers this; it runs only when you press c."
        return {"confirmed": "Your team's check ran: its output confirms it.",
                "refuted": "Your team's check ran: its output speaks against it."}.get(
            r.result, f"Your team's check ran but could not tell: {r.missing}.")
    if q.check == "second_incident":
        others = sorted({a.incident_id for a in actions if a.incident_id != incident})
        if not others:
            return "No other past incident was recalled, so there was nothing to check the " \
                   "fix against."
        checked = f"Checked against {counted(len(others), 'other past incident')}"
        same = [a for a in actions if a.incident_id != incident and same_fix(a.action, fix)]
        resolved = sorted({a.incident_id for a in same if a.outcome.is_proof})
        if r.result == "confirmed":
            agree = ("it agrees" if len(others) == 1 else "both agree" if len(resolved) == 2
                     == len(others) else f"all {len(others)} agree" if len(resolved)
                     == len(others) else f"{number(len(resolved))} agree ({_ids(resolved)})")
            return f"{checked}: {agree} — resolved by this fix too."
        if r.result == "refuted":
            tried = sorted({a.incident_id for a in same})
            return f"{checked}: this fix was tried in {_ids(tried)} and did not work there."
        return f"{checked}: none records this fix resolving it."
    if q.check == "same_service":
        anchor = next((a for a in actions if a.action_id == q.param("action")), None)
        if anchor is None or r.result == "unknown":
            return f"Could not check: {r.missing}."
        if r.result == "confirmed":
            return f"{anchor.incident_id} was on {anchor.service}, the service of this alert."
        return (f"{anchor.incident_id} was on {anchor.service}, but this alert is about "
                f"{q.param('alert_service')}.")
    if q.check == "no_worsened":
        like = [a for a in actions if same_fix(a.action, fix)]
        if r.result == "refuted":
            worse = sorted(a.action_id for a in like if a.outcome is ActionOutcome.WORSENED)
            return f"It made things worse in {_ids(worse)}."
        if len(like) == 1:
            return "The one recalled record of this fix did not make things worse."
        return f"None of the {len(like)} recalled records of this fix made things worse."
    if q.check == "second_layer":
        if r.result == "confirmed":
            return f"The memory found {incident} both by meaning and by its words."
        if ctx.recall.mode != "hybrid":
            return (f"Only a word search was run (no meaning layer), so {incident} could not be "
                    "found by meaning too.")
        return f"Could not check: {r.missing}."
    if q.check == "evidence_age":
        anchor = next((a for a in actions if a.action_id == q.param("action")), None)
        if anchor is None or r.result == "unknown" or not anchor.started_at:
            return f"Could not check: {r.missing}."
        started = anchor.started_at[:10]
        if r.result == "confirmed":
            return f"{anchor.incident_id} started {started}, within the last " \
                   f"{STALE_AFTER.days} days."
        return f"{anchor.incident_id} started {started}, more than {STALE_AFTER.days} days " \
               "ago: old evidence."
    if q.check == "grounded":
        return ("Every fix shown cites an action this memory search returned."
                if r.result == "confirmed"
                else "A fix shown cites an action this memory search did not return.")
    if q.check == "rerecall":
        hidden = _ids(q.param("hidden").split(","))
        searched = f"Searched the memory again without {hidden}"
        if r.result == "confirmed":
            return f"{searched}: it points to the same fix ({r.found})."
        if r.result == "refuted":
            return f"{searched}: it points to another fix, {r.found}."
        return f"{searched}: {r.missing}."
    return f"Could not check: {r.missing}." if r.missing else ""


def plain(ctx: Context, answered: list[Answered], verdict: Disposition,
          confidence: dict[str, Any]) -> dict[str, Any]:
    """The ``plain`` part of a verification result: the same facts as sentences."""
    return {
        "confidence": confidence_words(answered, verdict, ctx, confidence["value"]),
        "conclusion": conclusion_words(ctx, answered, verdict),
        "questions": {a.question.id: found_words(a, ctx) for a in answered},
    }
