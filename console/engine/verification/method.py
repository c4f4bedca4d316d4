"""Verification of a briefing (issue 10, the deterministic core): audit → questions → probes
→ synthesis, with no model, no probe file and no UI.

1. **Audit** (:func:`audit`) reads the briefing, its recall and its coverage list and raises
   doubts, each in one category: ``thin_evidence``, ``tool_gap``, ``suspicious_direction``
   or ``degraded_fallback``.
2. **Questions** (:class:`Question`): one claim, one object, one check, every parameter fixed
   before it runs; the id is derived from the content. Every question is phrased so that
   ``confirmed`` supports the briefing and ``refuted`` undermines it. A bundled claim is
   refused by :class:`Question` and split by :func:`split_claim`.
3. **Probes**: memory probes (always available, deterministic) and engineer probes (``unknown``
   — "needs an engineer" — until answered yes / no / unknown).
4. **Synthesis** (:func:`synthesise`) reads only the questions' dispositions.

Four memory probes are asked whenever the briefing has a lead fix (they cost nothing): a
second incident resolved by it, the service of its incident, no WORSENED record of it, and a
second (vector) layer behind its incident. The audit's doubts add the questions of their
category on top: the age of the evidence (stale), engineer probes that fill a tool gap (lexical
only or embeddings down → do the symptoms match; model not used → does the recorded cause fit;
alert cut; quarantined records), and the grounding of a fallback after rejected drafts.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from console.engine.briefing.fixes import same_fix
from console.engine.briefing.models import Briefing, Recommendation, SourceUse
from console.engine.briefing.timeline import STALE_AFTER
from store.models import ActionOutcome
from store.recall import Recall, RecalledAction

Category = Literal["thin_evidence", "tool_gap", "suspicious_direction", "degraded_fallback"]
ProbeKind = Literal["memory", "engineer", "declared"]
# Why a doubt was raised (the audit of :func:`audit`), as the artifact records it.
DoubtKind = Literal["single_incident", "stale", "other_service", "worsened", "lexical_only",
                    "embeddings", "model", "alert_truncated", "quarantined", "rejected_drafts"]
Result = Literal["confirmed", "refuted", "unknown"]
Disposition = Literal["maintain", "revise", "overturn", "undetermined"]

# Evidence whose incident started more than STALE_AFTER before "now" is stale: the one window,
# shared with the briefing's "old evidence" (console/engine/briefing/timeline.py).
NEEDS_ENGINEER = "needs an engineer"

# The confidence rule's numbers (see :func:`verification_confidence`).
LAYER_VALUE = {0: 20, 1: 50, 2: 70, 3: 85}
UNCHECKED_SOURCE_CAP = 80
KEY_GAP_CAP = 60
STALE_CAP = 60
REVISE_CAP = 50
OVERTURN_CAP = 30


# --- questions -------------------------------------------------------------------------------

# Words that make a side of "and" a clause of its own: an auxiliary or a finite verb.
_AUXILIARIES = frozenset(
    "did does do is was are were has have had can could will would should must".split())
_IRREGULAR = frozenset(
    "rose fell grew ran went came broke spiked dropped began kept hit".split())
_NOT_VERBS = frozenset("need speed feed seed bed red shed embed".split())
_JOINT = re.compile(r"(\s*(?:;|,?\s+and\s+|,\s+(?=(?:did|does|do|is|was|are|were|has|have|had)\b)))",
                    re.IGNORECASE)


# Quoted text (a stored action, a symptom) is one object: never split inside it. Quotes are
# hidden before parentheses, so a quote holding "(…)" — or a parenthesis holding a quote —
# stays whole.
_QUOTES = re.compile(r"“[^”]*”|\"[^\"]*\"")
_PARENS = re.compile(r"\([^()]*\)")
_HIDDEN = re.compile(r"\x00(\d+)\x00")


def _has_verb(clause: str) -> bool:
    words = re.findall(r"[a-z][a-z-]*", clause.lower())
    return any(w in _AUXILIARIES or w in _IRREGULAR
               or (w.endswith("ed") and len(w) > 4 and w not in _NOT_VERBS) for w in words)


def split_claim(text: str) -> list[str]:
    """The separate claims of a bundled one, split only at clause boundaries.

    A boundary is ``;``, ``and`` (optionally after a comma) or a comma before an auxiliary —
    and it splits only when the text on *each* side has its own verb (an auxiliary such as
    "did"/"is", a past tense in ``-ed`` or a common irregular one). So "did the burst happen and
    did QPS drop and did it self-heal" is three claims, while "read and write latency is high"
    stays one: "read" alone has no verb of its own. Quoted text (“…”, "…") and parentheses
    are one object and never split. Each claim keeps its own wording
    (trimmed, first letter kept as written, one trailing "?" added back when the whole had one).
    """
    whole = text.strip()
    question = whole.endswith("?")
    quoted: list[str] = []

    def hide(match: re.Match[str]) -> str:
        quoted.append(match.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    body = _QUOTES.sub(hide, whole.rstrip("?").strip())
    while _PARENS.search(body):  # innermost first: "(a (b) c)" is one object
        body = _PARENS.sub(hide, body)
    parts = [body]
    pieces = _JOINT.split(body)  # clause, joint, clause, joint, …
    if len(pieces) > 1:
        merged = [pieces[0]]
        for joint, piece in zip(pieces[1::2], pieces[2::2], strict=True):
            if _has_verb(merged[-1]) and _has_verb(piece):
                merged.append(piece)
            else:
                merged[-1] = f"{merged[-1]}{joint}{piece}"
        parts = merged
    def show(part: str) -> str:
        while _HIDDEN.search(part):  # a hidden object may hold hidden objects
            part = _HIDDEN.sub(lambda m: quoted[int(m.group(1))], part)
        return part

    cleaned = [show(p).strip(" ,") for p in parts if p.strip()]
    if len(cleaned) < 2:
        return [whole]
    return [f"{p[0].upper()}{p[1:]}{'?' if question else ''}" for p in cleaned]


@dataclass(frozen=True)
class Question:
    """One claim about one object, checked one way, with its parameters fixed in advance.

    ``id`` is the first 12 hex digits of sha256(category, text, probe): the same briefing asks
    the same ids on every run. ``check`` names the memory probe (``"ask"`` for an engineer),
    ``key`` marks a question that decides the direction of the briefing. A bundled claim is
    refused (split it with :func:`split_claim` first).
    """

    category: Category
    text: str
    probe: ProbeKind
    check: str
    params: tuple[tuple[str, str], ...] = ()
    key: bool = False

    def __post_init__(self) -> None:
        if len(split_claim(self.text)) > 1:
            raise ValueError(f"bundled question, split it first: {self.text!r}")

    @property
    def id(self) -> str:
        content = "\x1f".join((self.category, self.text, self.probe))
        return hashlib.sha256(content.encode()).hexdigest()[:12]

    def param(self, name: str) -> str:
        return dict(self.params).get(name, "")


@dataclass(frozen=True)
class ProbeResult:
    """A probe's answer; ``missing`` says why it is unknown, ``found`` what it found (e.g. the
    other fix an independent re-recall points to), ``output`` a declared probe's redacted
    output and ``argv`` the exact command it ran."""

    result: Result
    missing: str = ""
    evidence_sha256: str = ""
    found: str = ""
    output: str = ""
    argv: tuple[str, ...] = ()
    found_action: RecalledAction | None = None


@dataclass(frozen=True)
class Doubt:
    category: Category
    kind: DoubtKind
    detail: str


def _sha(*parts: str) -> str:
    if not parts:  # the hash of nothing (e3b0c442…) would pass for evidence
        raise ValueError("evidence to hash is empty")
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


# --- audit -----------------------------------------------------------------------------------

@dataclass
class Context:
    """What the audit and the probes read, fixed before anything runs."""

    briefing: Briefing
    recall: Recall
    alert_service: str | None
    now: datetime
    coverage: list[SourceUse]
    lead: Recommendation | None = None
    lead_actions: list[RecalledAction] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lead = self.briefing.recommendations[0] if self.briefing.recommendations else None
        if self.lead is not None:
            ids = {(e.incident_id, e.action_id) for e in self.lead.evidence}
            self.lead_actions = [a for a in self.recall.actions
                                 if (a.incident_id, a.action_id) in ids]

    @property
    def newest(self) -> RecalledAction | None:
        """The cited action of the lead fix whose incident started last (None: no dates)."""
        dated = [(s, a) for a in self.lead_actions if (s := _started(a)) is not None]
        return max(dated, key=lambda pair: pair[0])[1] if dated else None

    @property
    def anchor(self) -> RecalledAction | None:
        """The cited action the lead fix's stored text comes from."""
        return self.lead_actions[0] if self.lead_actions else None


def _started(action: RecalledAction) -> datetime | None:
    if not action.started_at:
        return None
    started = datetime.fromisoformat(action.started_at)
    return started if started.tzinfo else started.replace(tzinfo=UTC)


def audit(ctx: Context) -> list[Doubt]:
    """Every doubt the briefing, its recall and its coverage give reason for."""
    doubts: list[Doubt] = []
    briefing, recall = ctx.briefing, ctx.recall
    if ctx.lead is not None:
        incidents = {e.incident_id for e in ctx.lead.evidence if e.outcome.is_proof}
        if len(incidents) <= 1:
            behind = ", ".join(sorted(incidents)) or "none resolved"
            doubts.append(Doubt("thin_evidence", "single_incident",
                                f"one incident behind the lead fix ({behind})"))
        newest = ctx.newest
        started = _started(newest) if newest is not None else None
        if newest is not None and started is not None and ctx.now - started > STALE_AFTER:
            doubts.append(Doubt("thin_evidence", "stale",
                                f"the newest incident behind the lead fix, {newest.incident_id}, "
                                f"started {newest.started_at}, over {STALE_AFTER.days} days ago"))
        anchor = ctx.anchor
        if anchor is not None and ctx.alert_service and anchor.service != ctx.alert_service:
            doubts.append(Doubt("suspicious_direction", "other_service",
                                f"the lead fix comes from {anchor.incident_id} ({anchor.service}), "
                                f"the alert is about {ctx.alert_service}"))
        for rec in briefing.recommendations:
            worse = [a for a in recall.actions if a.outcome is ActionOutcome.WORSENED
                     and same_fix(a.action, rec.action)]
            if worse:
                doubts.append(Doubt("suspicious_direction", "worsened",
                                    f"“{rec.action}” made things worse in {worse[0].action_id}"))
    if recall.incidents and recall.mode != "hybrid":
        doubts.append(Doubt("thin_evidence", "lexical_only",
                            "recall matched words only (no meaning layer)"))
    for use in ctx.coverage:
        if use.source.startswith("embeddings") and use.status in ("unavailable", "not_configured"):
            doubts.append(Doubt("tool_gap", "embeddings", use.detail or use.status))
        elif use.source.startswith("model") and use.status in ("unavailable", "not_configured"):
            doubts.append(Doubt("tool_gap", "model", use.detail or use.status))
        elif use.source == "alert" and use.status == "truncated":
            doubts.append(Doubt("tool_gap", "alert_truncated", "the alert was cut"))
        elif use.source == "quarantined records" and use.status == "excluded":
            doubts.append(Doubt("tool_gap", "quarantined", use.detail))
    quarantined = sorted({r.incident_id for r in briefing.recalled if r.quarantined})
    if quarantined and not any(d.kind == "quarantined" for d in doubts):
        doubts.append(Doubt("tool_gap", "quarantined", ", ".join(quarantined)))
    if briefing.source == "deterministic" and any(a.result == "rejected" for a in briefing.attempts):
        doubts.append(Doubt("degraded_fallback", "rejected_drafts",
                            f"{sum(a.result == 'rejected' for a in briefing.attempts)} model "
                            "draft(s) rejected; the briefing is the deterministic fallback"))
    return doubts


def questions(ctx: Context, doubts: list[Doubt]) -> list[Question]:
    """The questions: the memory probes for the lead fix, then those the doubts call for."""
    asked: list[Question] = []
    anchor, lead = ctx.anchor, ctx.lead
    if lead is None or anchor is None:
        return asked
    fix = (("fix", lead.action), ("incident", anchor.incident_id),
           ("action", anchor.action_id))
    asked.append(Question("thin_evidence",
                          f"Did a second recalled incident besides {anchor.incident_id} get "
                          f"resolved by “{lead.action}”?", "memory", "second_incident", fix))
    if ctx.alert_service:
        asked.append(Question("suspicious_direction",
                              f"Is the service of {anchor.incident_id} ({anchor.service}) the "
                              f"alert's service ({ctx.alert_service})?",
                              "memory", "same_service",
                              (*fix, ("alert_service", ctx.alert_service)), key=True))
    else:  # the alert names no service the memory knows: only the engineer can say
        asked.append(Question("suspicious_direction",
                              f"Is this alert about {anchor.service}, the service of "
                              f"{anchor.incident_id}?", "engineer", "ask", fix, key=True))
    asked.append(Question("suspicious_direction",
                          f"Is “{lead.action}” free of a recorded WORSENED outcome in this "
                          "recall?", "memory", "no_worsened", fix, key=True))
    asked.append(Question("thin_evidence",
                          f"Was {anchor.incident_id} found by meaning (vector) as well as by "
                          "words?", "memory", "second_layer", fix))
    kinds = {d.kind for d in doubts}
    if "stale" in kinds and (newest := ctx.newest) is not None:
        asked.append(Question("thin_evidence",
                              f"Did {newest.incident_id}, the newest incident behind the fix, "
                              f"start within the last {STALE_AFTER.days} days?", "memory",
                              "evidence_age",
                              (*fix, ("incident", newest.incident_id),
                               ("action", newest.action_id), ("now", ctx.now.isoformat()))))
    if kinds & {"embeddings", "lexical_only", "single_incident"}:
        # A missing meaning layer is a tool gap; one incident alone is thin evidence, widened
        # along the same direction by the one observer who can: the engineer.
        gap = bool(kinds & {"embeddings", "lexical_only"})
        asked.append(Question("tool_gap" if gap else "thin_evidence",
                              f"Do the symptoms of {anchor.incident_id} (“{anchor.symptoms}”) "
                              "match what you see now?", "engineer", "ask", fix, key=True))
    if "model" in kinds:
        cause = anchor.root_cause or anchor.explanation
        asked.append(Question("tool_gap",
                              f"Does the recorded cause of {anchor.incident_id} (“{cause}”) fit "
                              "this alert?", "engineer", "ask", fix, key=True))
    if "alert_truncated" in kinds:
        asked.append(Question("tool_gap",
                              "Does the cut-off part of the alert describe the same problem as "
                              "its first part?", "engineer", "ask"))
    if "quarantined" in kinds:
        detail = next(d.detail for d in doubts if d.kind == "quarantined")
        asked.append(Question("tool_gap",
                              f"Were the quarantined records ({detail}) rightly left out of this "
                              "briefing?", "engineer", "ask", (("records", detail),)))
    if "rejected_drafts" in kinds:
        asked.append(Question("degraded_fallback",
                              "Does every recommendation of the fallback cite an action of this "
                              "recall?", "memory", "grounded"))
    unique: dict[str, Question] = {}
    for question in asked:
        unique.setdefault(question.id, question)
    return list(unique.values())


# --- probes ----------------------------------------------------------------------------------

def _evidence(actions: list[RecalledAction], searched: list[RecalledAction] | None = None) -> str:
    """The hash of the records a probe's answer rests on: ``actions`` (what it found), or —
    when it found none — the ``searched`` records it looked through (marked so, so "found
    nothing among these" never hashes like "found these"). Never the hash of nothing: an
    answer always rests on some record of this recall."""
    if actions:
        return _sha(*sorted(f"{a.action_id}\x1e{a.text}" for a in actions))
    if searched:
        return _sha("searched, none matched",
                    *sorted(f"{a.action_id}\x1e{a.text}" for a in searched))
    raise ValueError("a probe's evidence needs at least one record")


def probe_memory(question: Question, ctx: Context) -> ProbeResult:
    """Run one memory probe on the recall; deterministic, exactly once per question."""
    fix, incident = question.param("fix"), question.param("incident")
    actions = ctx.recall.actions
    if question.check == "second_incident":
        same = [a for a in actions if a.incident_id != incident and same_fix(a.action, fix)]
        if any(a.outcome.is_proof for a in same):
            return ProbeResult("confirmed", evidence_sha256=_evidence(
                [a for a in same if a.outcome.is_proof]))
        if same and all(a.outcome.is_failure for a in same):
            return ProbeResult("refuted", evidence_sha256=_evidence(same))
        # What was looked through: the other incidents' records; with none recalled, the one
        # incident there is (its own records are why nothing else could be checked).
        others = [a for a in actions if a.incident_id != incident]
        return ProbeResult("unknown", "no other recalled incident records this fix resolving it",
                           _evidence(same, others or list(actions)))
    anchor = next((a for a in actions if a.action_id == question.param("action")), None)
    if anchor is None and question.check in ("same_service", "evidence_age", "second_layer"):
        return ProbeResult("unknown", f"{incident} is no longer in this recall", _sha(incident))
    if question.check == "same_service":
        assert anchor is not None
        # (asked only when the alert names a service: else the engineer is asked instead)
        result: Result = "confirmed" if anchor.service == question.param("alert_service") \
            else "refuted"
        return ProbeResult(result, evidence_sha256=_evidence([anchor]))
    if question.check == "no_worsened":
        worse = [a for a in actions
                 if a.outcome is ActionOutcome.WORSENED and same_fix(a.action, fix)]
        if worse:
            return ProbeResult("refuted", evidence_sha256=_evidence(worse))
        return ProbeResult("confirmed", evidence_sha256=_evidence(
            [a for a in actions if same_fix(a.action, fix)], list(actions)))
    if question.check == "evidence_age":
        assert anchor is not None
        started = _started(anchor)
        if started is None:
            return ProbeResult("unknown", f"{incident} has no start time recorded",
                               _evidence([anchor]))
        now = datetime.fromisoformat(question.param("now"))
        result = "confirmed" if now - started <= STALE_AFTER else "refuted"
        return ProbeResult(result, evidence_sha256=_sha(anchor.action_id, anchor.started_at))
    if question.check == "second_layer":
        found = next((i for i in ctx.recall.incidents if i.incident_id == incident), None)
        if found is not None and found.cosine is not None and found.bm25 is not None:
            return ProbeResult("confirmed", evidence_sha256=_sha(
                incident, str(found.cosine), str(found.bm25)))
        reason = ("embeddings were not used (lexical recall)" if ctx.recall.mode != "hybrid"
                  else "the vector layer did not find it")
        return ProbeResult("unknown", reason, _sha(incident, ctx.recall.mode))
    if question.check == "grounded":
        cited = {(e.incident_id, e.action_id) for r in ctx.briefing.recommendations
                 for e in r.evidence}
        recalled = {(a.incident_id, a.action_id) for a in actions}
        result = "confirmed" if cited <= recalled else "refuted"
        return ProbeResult(result, evidence_sha256=_sha(*sorted("/".join(c) for c in cited)))
    return ProbeResult("unknown", f"no memory probe named {question.check!r}")


def escalates(doubts: list[Doubt], answered: list[Answered]) -> str | None:
    """Why an independent re-recall is due, or None: only a suspicious direction in the audit
    or a refuted key fact — never "there might be a better cause"."""
    suspicious = [d for d in doubts if d.category == "suspicious_direction"]
    if suspicious:
        return f"the audit found a suspicious direction: {suspicious[0].detail}"
    refuted = [a for a in answered if a.question.key and a.result.result == "refuted"]
    if refuted:
        return f"a key fact was refuted: {refuted[0].question.text}"
    return None


def escalation_question(ctx: Context, reason: str) -> Question | None:
    """The re-recall question, its parameters (the anchors to ignore) fixed before it runs."""
    anchor, lead = ctx.anchor, ctx.lead
    if anchor is None or lead is None:
        return None
    hidden = sorted({e.incident_id for e in lead.evidence})
    return Question("suspicious_direction",
                    f"Does an independent re-recall without {', '.join(hidden)} point to "
                    f"“{lead.action}” as well?", "memory", "rerecall",
                    (("fix", lead.action), ("hidden", ",".join(hidden)), ("reason", reason)),
                    key=True)


def probe_rerecall(question: Question, rerecall: Recall | None) -> ProbeResult:
    """Confirmed when the re-recall (anchors hidden) leads to the same fix in another incident;
    refuted when it leads to another fix (``found`` names it, stored text and citation)."""
    if rerecall is None:
        return ProbeResult("unknown", "the index could not be searched again")
    fixes = [a for a in rerecall.actions if a.outcome.is_fix]
    if not fixes:
        return ProbeResult("unknown", "the re-recall found no other fix that worked",
                           _evidence(list(rerecall.actions)) if rerecall.actions
                           else _sha("re-recall found nothing without", question.param("hidden")))
    best = next((a for a in fixes if a.outcome.is_proof), fixes[0])
    same = [a for a in fixes if same_fix(a.action, question.param("fix"))]
    if same:
        return ProbeResult("confirmed", evidence_sha256=_evidence(same),
                           found=f"{same[0].action_id} {same[0].outcome.value}")
    return ProbeResult("refuted", evidence_sha256=_evidence([best]),
                       found=f"“{best.action}” ({best.action_id} {best.outcome.value})",
                       found_action=best)


def probe_engineer(question: Question, answers: Mapping[str, str]) -> ProbeResult:
    """yes → confirmed, no → refuted, unknown / no answer → unknown (with what is missing)."""
    answer = answers.get(question.id)
    if answer is None:
        return ProbeResult("unknown", NEEDS_ENGINEER)
    digest = _sha(question.id, answer)
    if answer == "yes":
        return ProbeResult("confirmed", evidence_sha256=digest)
    if answer == "no":
        return ProbeResult("refuted", evidence_sha256=digest)
    if answer == "unknown":
        return ProbeResult("unknown", "the engineer does not know", digest)
    raise ValueError(f"answer to {question.id} must be yes, no or unknown, not {answer!r}")


# --- synthesis -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Answered:
    question: Question
    result: ProbeResult


def layers(answered: list[Answered]) -> list[str]:
    """The independent layers of evidence that agree with the briefing: memory (a second
    incident resolved by the fix), meaning (found by vector as well as words), engineer (any
    engineer probe confirmed)."""
    confirmed = {a.question.check for a in answered if a.result.result == "confirmed"}
    found = []
    if "second_incident" in confirmed:
        found.append("memory: a second incident resolved by the fix")
    if "second_layer" in confirmed:
        found.append("meaning: found by vector as well as by words")
    if any(a.question.probe == "engineer" and a.result.result == "confirmed" for a in answered):
        found.append("engineer: confirmed on the live system")
    if any(a.question.probe == "declared" and a.result.result == "confirmed" for a in answered):
        found.append("probe: a declared probe confirmed it on the live system")
    return found


def against_direction(answered: Answered) -> bool:
    """A refuted question that speaks against the briefing's direction: a key fact, or what the
    engineer or a declared probe saw on the live system. A thin-evidence fact of the memory (no
    second incident, evidence over a year old) lowers the confidence, not the direction."""
    return answered.result.result == "refuted" and (
        answered.question.key or answered.question.probe in ("engineer", "declared"))


def disposition(answered: list[Answered]) -> Disposition:
    """From the dispositions only.

    - ``overturn``: two or more *key* questions refuted (the direction was wrong);
    - ``revise``: a question against the direction refuted (:func:`against_direction`), short
      of that;
    - ``maintain``: nothing against the direction refuted, at least two independent layers
      agree and no key question is unknown;
    - ``undetermined``: otherwise (including no question at all).

    Measured on the bundled memory (each incident briefed as its own alert, 2026-12-01): with
    every refutation revising, 20 of 38 passes said ``revise`` — nearly all only because the
    evidence was over a year old.
    """
    refuted = [a for a in answered if a.result.result == "refuted"]
    if sum(a.question.key for a in refuted) >= 2:
        return "overturn"
    if any(against_direction(a) for a in refuted):
        return "revise"
    key_unknown = any(a.question.key and a.result.result == "unknown" for a in answered)
    if answered and len(layers(answered)) >= 2 and not key_unknown:
        return "maintain"
    return "undetermined"


# Why the verification confidence is held below its base (:func:`confidence_limits`), and
# how the derivation names each.
Limit = Literal["source_unchecked", "key_open", "stale", "nothing_new", "revise", "overturn"]
LIMIT_NAMES: dict[str, str] = {
    "source_unchecked": "a needed source unchecked", "key_open": "a key question open",
    "stale": "the newest evidence over a year old",
    "nothing_new": "nothing new confirmed (the briefing's own)",
    "revise": "revise", "overturn": "overturn"}


def confidence_limits(answered: list[Answered], verdict: Disposition,
                      briefing: Briefing) -> list[tuple[int, Limit]]:
    """The caps on the verification confidence, each with why (see
    :func:`verification_confidence`), in the order the derivation lists them."""
    caps: list[tuple[int, Limit]] = []
    if any(a.question.category == "tool_gap" and a.result.result == "unknown" for a in answered):
        caps.append((UNCHECKED_SOURCE_CAP, "source_unchecked"))
    if any(a.question.key and a.result.result == "unknown" for a in answered):
        caps.append((KEY_GAP_CAP, "key_open"))
    if any(a.question.check == "evidence_age" and a.result.result == "refuted"
           for a in answered):
        caps.append((STALE_CAP, "stale"))
    if not any(a.question.probe in ("engineer", "declared") and a.result.result == "confirmed"
               for a in answered):
        caps.append((briefing.confidence.value, "nothing_new"))
    if verdict == "revise":
        caps.append((REVISE_CAP, "revise"))
    if verdict == "overturn":
        caps.append((OVERTURN_CAP, "overturn"))
    return caps


def verification_confidence(answered: list[Answered], verdict: Disposition,
                            briefing: Briefing) -> dict[str, Any]:
    """The verification confidence — evidence only, never pushed up to clear a threshold.

    value = min(base, caps), where base = 20 / 50 / 70 / 85 for 0 / 1 / 2 / 3 independent
    layers agreeing (:func:`layers`), and the caps are:

    - a tool-gap question left unknown (a needed source not checked): 80;
    - a key question left unknown (a key gap): 60;
    - the newest evidence behind the fix over a year old: 60;
    - nothing new confirmed (no engineer or declared probe confirmed — the memory probes only
      restate what the briefing already read): the briefing's own confidence;
    - ``revise``: 50; ``overturn``: 30 (confidence that the lead fix still stands).
    """
    agreeing = layers(answered)
    base = LAYER_VALUE[len(agreeing)]
    gaps = [f"{a.question.id}: {a.result.missing}" for a in answered
            if a.result.result == "unknown"]
    caps = confidence_limits(answered, verdict, briefing)
    cap = min([c for c, _ in caps], default=100)
    value = min(base, cap)
    named = ", ".join(a.split(":")[0] for a in agreeing) or "none"
    capped = ", ".join(f"{LIMIT_NAMES[why]} {c}" for c, why in caps) or "none"
    derivation = (f"{len(agreeing)} layer{'s' if len(agreeing) != 1 else ''} agreeing ({named}) "
                  f"→ base {base}; caps: {capped} → min = {value}")
    return {"value": value, "layers": len(agreeing), "gaps": gaps, "cap": cap,
            "derivation": derivation}


CONCLUSION_PART = 120


def _first_sentence(text: str, limit: int = CONCLUSION_PART) -> str:
    """The first sentence of stored text, at most ``limit`` characters (cut with …)."""
    first = re.split(r"(?<=[.;])\s", " ".join(text.split()), maxsplit=1)[0].rstrip(".;")
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def other_fix(answered: list[Answered]) -> ProbeResult | None:
    """The re-recall's answer when it pointed to another fix (``found`` names it)."""
    return next((a.result for a in answered
                 if a.question.check == "rerecall" and a.result.result == "refuted"), None)


def cause_and_impact(anchor: RecalledAction, other: ProbeResult | None,
                     verdict: Disposition, limit: int = CONCLUSION_PART) -> tuple[str, str]:
    """The first sentences of the recorded cause and symptoms the conclusion stands on: the
    lead fix's incident, or — overturned, with another fix found — that fix's incident."""
    source = anchor
    if verdict == "overturn" and other is not None and other.found_action is not None:
        source = other.found_action
    return (_first_sentence(source.root_cause or source.explanation, limit),
            _first_sentence(source.symptoms, limit))


def conclusion(ctx: Context, answered: list[Answered], verdict: Disposition) -> str:
    """One line, "cause → impact → suggestion", from stored text and the dispositions.

    Cause and impact are the first sentences of the lead fix's incident (its root cause and
    symptoms) — or, once the direction is overturned and an independent re-recall found
    another fix, of that fix's incident."""
    anchor, lead = ctx.anchor, ctx.lead
    if anchor is None or lead is None:
        return "no recalled fix to verify → nothing to conclude → follow the runbook"
    refuted_all = [a for a in answered if a.result.result == "refuted"]
    refuted = (f"{len(refuted_all)} of {len(answered)} questions refuted "
               f"({sum(a.question.key for a in refuted_all)} key)")
    open_ids = [a.question.id for a in answered if a.result.result == "unknown"]
    other = other_fix(answered)
    cause, impact = cause_and_impact(anchor, other, verdict)
    instead = (f"; consider {other.found}, recalled without the first anchors"
               if other is not None else "")
    suggestion = {
        "maintain": f"apply “{lead.action}” ({anchor.action_id})",
        "revise": (f"re-check “{lead.action}” ({anchor.action_id}) before applying — "
                   f"{refuted}{instead}"),
        "overturn": f"do not apply “{lead.action}” ({anchor.action_id}) — {refuted}{instead}",
        "undetermined": ("not settled — answer the open questions "
                         f"({', '.join(open_ids) or 'none'})"),
    }[verdict]
    return f"{cause} → {impact} → {suggestion}"


def question_record(answered: Answered) -> dict[str, Any]:
    """One question as the ``verification`` JSON shows it."""
    q, r = answered.question, answered.result
    record: dict[str, Any] = {
        "id": q.id, "text": q.text, "category": q.category, "probe": q.probe, "check": q.check,
        "key": q.key, "result": r.result, "missing": r.missing,
        "evidence_sha256": r.evidence_sha256}
    if r.found:
        record["found"] = r.found
    if q.probe == "declared":
        record["argv"] = list(r.argv)
        record["output"] = r.output
    return record


def synthesise(ctx: Context, answered: list[Answered],
               doubts: list[Doubt] | None = None) -> dict[str, Any]:
    """The conclusion from the questions' dispositions only: nothing is probed here."""
    from console.engine.verification.words import plain  # (it reads this module)

    verdict = disposition(answered)
    confidence = verification_confidence(answered, verdict, ctx.briefing)
    return {
        "status": "done",
        "disposition": verdict,
        "conclusion": conclusion(ctx, answered, verdict),
        "confidence": confidence,
        # The same facts in sentences, for the console's panel (no ids, hashes or formula).
        "plain": plain(ctx, answered, verdict, confidence),
        "audit": [{"category": d.category, "kind": d.kind, "detail": d.detail}
                  for d in doubts or []],
        "questions": [question_record(a) for a in answered],
        "artifact": None,
    }


def verify(briefing: Briefing, recall: Recall, answers: Mapping[str, str] | None = None,
           *, alert_service: str | None = None, coverage: list[SourceUse] | None = None,
           now: datetime | None = None,
           rerecall: Callable[[frozenset[str]], Recall] | None = None) -> dict[str, Any]:
    """The ``verification`` object of `triage brief --json` for ``briefing``, with memory and engineer
    probes only (``artifact`` is None here; console/engine/verification/passes.py adds declared
    probes and writes the artifact).

    ``coverage`` defaults to the briefing's own; ``now`` (for the age of the evidence) to the
    current UTC time; ``rerecall(hidden)`` searches the memory again without the ``hidden``
    incidents (the escalation), None when the index is not at hand.
    """
    ctx = Context(briefing, recall, alert_service, now or datetime.now(UTC),
                  briefing.coverage if coverage is None else coverage)
    doubts = audit(ctx)
    answered = probe_all(ctx, doubts, questions(ctx, doubts), answers or {}, rerecall)
    return synthesise(ctx, answered, doubts)


def probe_all(ctx: Context, doubts: list[Doubt], asked: list[Question],
              answers: Mapping[str, str],
              rerecall: Callable[[frozenset[str]], Recall] | None) -> list[Answered]:
    """Memory probes, then the escalation if the audit or a refuted key fact calls for it,
    then the engineer's answers; each question probed exactly once."""
    answered = [Answered(q, probe_memory(q, ctx)) for q in asked if q.probe == "memory"]
    reason = escalates(doubts, answered)
    if reason is not None and (escalation := escalation_question(ctx, reason)) is not None:
        hidden = frozenset(escalation.param("hidden").split(","))
        again = rerecall(hidden) if rerecall is not None else None
        answered.append(Answered(escalation, probe_rerecall(escalation, again)))
    answered.extend(Answered(q, probe_engineer(q, answers)) for q in asked
                    if q.probe == "engineer")
    return answered
