"""Model prose held to the rule the deterministic briefing keeps: never recommend what the
memory warns against, never credit what failed.

The deterministic briefing never recommends a fix that is the same fix (fixes.py's same-fix
rule: the actions' words overlap ≥ 0.6) as an action that made things worse; the model's own
words are held to the same rule, in every text it writes — the note under a recommendation,
the summary, the likely cause, the none-applies reading — sentence by sentence (as
claims.py does), and in the steps it picks:

- ``recommends_warned`` — a sentence naming an action the briefing warns against (the
  verdict's warnings: recalled WORSENED actions) that does not tell it as a warning ("don't",
  "avoid", "made things worse" …): "Restart all payments-api pods at once".
- ``credits_failed`` — a sentence crediting (resolved, mitigated, fixed …) an action the
  recalled records say made things worse or had no effect: "the restart of all payments-api
  pods mitigated the issue", "resolved by restarting the pods, … rolling back …".

A clause names an action when the same-fix rule holds between their words, leaving out the
action's service name (the model says "the pods" of the alert's service), versions and the
words of outcome ("resolved", "the issue"); or when it holds every one of at least two of the action's
words. A clause that names a fix the memory offers as well is left alone (the verdict keeps a
warned fix and an offered one apart). Each removal is logged; an emptied note, summary or
likely cause is dropped (the memory's summary is shown instead), an emptied none-applies
reading stays a marker, as in claims.py. A step whose stored text names a warned action is
dropped.

What is not caught: an action named in words the record does not use ("bounce the fleet"), a
recommendation and its warning cue in one clause ("restart all pods at once, not gradually"
reads as a warning), and prose praising a failed action without an outcome verb.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

from console.engine.briefing.fixes import same_fix_words
from console.engine.briefing.instructions import skeleton
from console.engine.briefing.models import GuardEntry
from console.engine.briefing.verdict import Verdict
from console.engine.model.grounding import REMOVED, drop_sentences
from console.engine.model.guards import GuardedDraft
from store.models import ActionOutcome
from store.recall import Recall, RecalledAction
from store.terms import terms

RECOMMENDS_WARNED = "recommends_warned"
CREDITS_FAILED = "credits_failed"

# Words of outcome and filler, left out when a clause is compared with an action.
_OUTCOME_WORDS = frozenset(terms(
    "resolve resolved resolves resolving resolution mitigate mitigated mitigates mitigating "
    "mitigation fix fixed fixes fixing restore restored restores restoring recover recovered "
    "recovers recovering recovery help helped helps helping work worked works solve solved "
    "solves cleared stabilise stabilised stabilize stabilized end ended stop stopped issue "
    "issues problem problems incident incidents outage outages service services situation "
    "error errors recommend recommended recommends should must need needs try tried first "
    "again instead way quickly immediately right now"))
_CLAUSE = re.compile(r"[,;:()]|\s(?:and|but|then|while|whereas|although|though|or|after|"
                     r"before|followed by)\s")
# Told as a warning: a negation or caution opening the clause (within its first words), or
# a bad outcome of the action in the sentence.
_CAUTION = re.compile(r"\b(?:don'?t|do not|does not|did not|didn'?t|never|avoid\w*|not|"
                      r"instead of|rather than|without|against|refrain|stop|prevent\w*|"
                      r"caution|careful|beware|unlike)\b")
_CAUTION_WORDS = 5
_BAD_OUTCOME = re.compile(
    r"\b(?:worse|worsen\w*|backfir\w*|harmful|no effect|without effect|had no|not help\w*|"
    r"(?:did not|didn'?t|does not|doesn'?t|failed to) (?:help|work|resolve|fix|improve|"
    r"mitigate)|ineffective|unsuccessful|mistake|danger\w*|risky|warned)\b")
# Verbs only ("the pool fix" credits nothing).
_CREDIT = re.compile(r"\b(?:resolved|resolves|resolving|mitigated|mitigates|mitigating|fixed|"
                     r"restored|restores|recovered|helped|helps|worked|solved|cleared|"
                     r"stabili[sz]ed|brought \w+ back|ended|remedied|cured)\b")
# A contrast anywhere in the clause ("… the pool fix rather than rolling back").
_CONTRAST = re.compile(r"\b(?:instead of|rather than|unlike|versus|vs)\b")
_NEGATED = re.compile(r"\b(?:not|never|no|without|n't|failed to|did not|didn'?t|nothing)\s+"
                      r"(?:\w+\s+)?$")


@dataclass(frozen=True)
class _Action:
    action: RecalledAction
    words: frozenset[str]


def _words(text: str, service: str) -> frozenset[str]:
    """The words that say what was done: no service name, outcome word or version ("rolled
    back payments-api to 2025.01.26-3" is "rolled back")."""
    return frozenset(t for t in terms(text) if not any(ch.isdigit() for ch in t)) \
        - _OUTCOME_WORDS - frozenset(terms(service))


def _names(clause: str, action: _Action) -> bool:
    said = _words(clause, action.action.service)
    return bool(action.words) and (same_fix_words(set(said), set(action.words)) or (
        len(action.words) >= 2 and action.words <= said))


def _cautions(clause: str) -> bool:
    """A negation or caution among the clause's first words ("do not restart …", "we should
    never …"), or a contrast anywhere in it; a later negation ("restart all pods if the pool
    is not recovering") is no warning."""
    opening = " ".join(clause.split()[:_CAUTION_WORDS])
    return _CAUTION.search(opening) is not None or _CONTRAST.search(clause) is not None


class Warned:
    """What the memory warns against and what failed, for one briefing."""

    def __init__(self, judged: Verdict, recall: Recall) -> None:
        actions = {a.action_id: a for a in recall.actions}

        def of(items: Iterable[RecalledAction]) -> list[_Action]:
            return [_Action(a, _words(a.action, a.service)) for a in items]

        self.warned = of(actions[w.action_id] for w in judged.warnings
                         if w.action_id in actions)
        self.failed = of(a for a in recall.actions
                         if a.outcome in (ActionOutcome.WORSENED, ActionOutcome.NO_EFFECT))
        offered = {e.action_id for r in judged.ranked for e in r.recommendation.evidence}
        self.offered = of(actions[i] for i in offered if i in actions)

    def _named(self, clause: str, among: list[_Action]) -> RecalledAction | None:
        if any(_names(clause, fix) for fix in self.offered):
            return None
        return next((a.action for a in among if _names(clause, a)), None)

    def problem(self, sentence: str) -> tuple[str, RecalledAction] | None:
        """(rule, action) when ``sentence`` recommends a warned action or credits a failed one."""
        text = skeleton(sentence)
        bad_outcome = _BAD_OUTCOME.search(text) is not None
        clauses = [c for c in _CLAUSE.split(text) if c and c.strip()]
        credit = next((m for m in _CREDIT.finditer(text)
                       if not _NEGATED.search(text[max(0, m.start() - 40):m.start()])), None)
        if credit is not None:
            for clause in clauses:
                if _BAD_OUTCOME.search(clause) or _cautions(clause):
                    continue
                failed = self._named(clause, self.failed)
                if failed is not None:
                    return CREDITS_FAILED, failed
        if bad_outcome:
            return None
        for clause in clauses:
            if _cautions(clause):
                continue
            warned = self._named(clause, self.warned)
            if warned is not None:
                return RECOMMENDS_WARNED, warned
        return None


def _check(text: str, where: str, warned: Warned, log: list[GuardEntry]) -> str:
    """``text`` less each sentence that recommends a warned action or credits a failed one."""
    def drop(sentence: str) -> bool:
        found = warned.problem(sentence)
        if found is None:
            return False
        rule, action = found
        said = " ".join(sentence.split())[:160]
        if rule == CREDITS_FAILED:
            detail = (f"{where}: {said!r} credits {action.action_id} ({action.action!r}), "
                      f"which is {action.outcome}; its sentence was removed")
        else:
            detail = (f"{where}: {said!r} recommends {action.action_id} "
                      f"({action.action!r}), which made things worse and is warned "
                      "against; its sentence was removed")
        log.append(GuardEntry(rule=rule, detail=detail))
        return True

    return drop_sentences(text, drop)


def _unless_emptied(text: str) -> str:
    return "" if not text.replace(REMOVED, "").strip() else text


def warned_checked(draft: GuardedDraft, judged: Verdict, recall: Recall,
                   log: list[GuardEntry]) -> GuardedDraft:
    """``draft`` with every sentence recommending a warned action or crediting a failed one
    removed from its prose, and every step naming a warned action dropped; logged in ``log``."""
    warned = Warned(judged, recall)
    if not warned.warned and not warned.failed:
        return draft
    recommendations = [rec.model_copy(update={"model_note": _unless_emptied(_check(
        rec.model_note, f"recommendation {number} note", warned, log))})
        for number, rec in enumerate(draft.recommendations, 1)]
    steps = []
    for number, step in enumerate(draft.steps, 1):
        named = warned._named(step.text, warned.warned)
        if named is not None and named.action_id != step.action_id:
            log.append(GuardEntry(rule=RECOMMENDS_WARNED, detail=(
                f"step {number} ({step.action_id}: {step.text!r}) is the same fix as "
                f"{named.action_id}, which made things worse and is warned against; dropped")))
            continue
        steps.append(step)
    return replace(
        draft, recommendations=recommendations, steps=steps,
        summary=_unless_emptied(_check(draft.summary, "summary", warned, log)),
        likely_cause=_unless_emptied(_check(draft.likely_cause, "likely_cause", warned, log)),
        none_apply=_check(draft.none_apply, "none_apply", warned, log))
