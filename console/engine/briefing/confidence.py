"""The confidence rule: bounded by proven fixes, with its derivation spelled out."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from console.engine.briefing.models import Confidence

HARD_CAP = 98
FAILED_OUTCOMES = frozenset({"WORSENED", "NO_EFFECT"})


@dataclass(frozen=True)
class Cited:
    """One piece of cited evidence: which incident, and what the cited action did there."""

    incident_id: str
    outcome: str


def claim_is_valid(claim: object) -> bool:
    """A number in [0, 100] (not a bool, NaN, infinity or text)."""
    if isinstance(claim, bool) or not isinstance(claim, int | float):
        return False
    if isinstance(claim, float) and not math.isfinite(claim):
        return False
    return 0 <= claim <= 100


def model_claim_value(claim: object) -> int:
    """A model's claimed confidence as an int in [0, 100]; anything else counts as 0."""
    if not claim_is_valid(claim):
        return 0
    assert isinstance(claim, int | float)
    return int(round(claim))


Tier = Literal["3+", "2", "1", "0"]


def tier_rule(count: int, claim: int) -> tuple[Tier, int, int, int, str]:
    """The seed's tiers on a count of proofs: (tier, floor, cap, value, the rule in words)."""
    if count >= 3:
        floor = min(HARD_CAP, 88 + 2 * count)
        return ("3+", floor, HARD_CAP, min(HARD_CAP, max(claim, 88 + 2 * count)),
                f"min(98, max(model {claim}, 88+2·{count}={88 + 2 * count}))")
    if count in (1, 2):
        tier: Tier = "2" if count == 2 else "1"
        floor, cap = (75, 89) if count == 2 else (55, 74)
        return tier, floor, cap, min(cap, max(floor, claim)), f"clamp(model {claim}, {floor}, {cap})"
    return "0", 0, 30, min(30, claim), f"min(model {claim}, 30)"


def compute_confidence(model_claim: object, cited: Iterable[Cited],
                       claim_given: bool = True) -> Confidence:
    """Apply the confidence rule (README "What the state and the figure claim") to a model's
    claim and the cited evidence."""
    claim = model_claim_value(model_claim)
    outcomes: dict[str, set[str]] = {}
    for item in cited:
        outcomes.setdefault(item.incident_id, set()).add(item.outcome)
    proven_ids = sorted(i for i, o in outcomes.items() if "RESOLVED" in o)
    failed_ids = sorted(i for i, o in outcomes.items() if "RESOLVED" not in o and o & FAILED_OUTCOMES)
    proven = len(proven_ids)
    tier, floor, cap, value, rule = tier_rule(proven, claim)
    named = f" ({', '.join(proven_ids)})" if proven_ids else ""
    derivation = f"proven {proven}{named} → tier {tier}: {rule} = {value}"
    return Confidence(
        value=value, model_claim=claim if claim_given else None, proven=proven,
        failed=len(failed_ids), tier=tier, floor=floor, cap=cap,
        explanation=_sentence(proven, len(outcomes), failed_ids),
        derivation=derivation, cited=sorted(outcomes),
    )


def _sentence(proven: int, cited: int, failed_ids: list[str]) -> str:
    if cited == 0:
        return "no recalled incident backs a recommendation"
    sentence = f"{proven} of {cited} matching incidents were resolved by this action"
    if failed_ids:
        sentence += (f"; it failed (no effect or worse) in {len(failed_ids)} of them: "
                     f"{', '.join(failed_ids)}")
    return sentence


WEAK_SENTENCE = "the recalled incidents are only similar: they prove no fix for this alert"
# A fix proven only on other services reads below tier 1's floor: never like a fix proven here.
ELSEWHERE_FLOOR, ELSEWHERE_CAP = 35, 50


def verdict_confidence(model_claim: object, resolved_strong: Sequence[str],
                       failed_strong: Sequence[str], resolved_elsewhere: Sequence[str],
                       claim_given: bool = True, nothing: bool = False,
                       cited: Iterable[str] = (), weak: bool = False) -> Confidence:
    """The seed's tier rule on the count that applies to this alert: strong incidents the lead
    fix resolved, less one for each strong incident where the same fix failed. A fix proven
    only elsewhere is held to 35–50; a weak match to ≤ 30, like no proof at all."""
    claim = model_claim_value(model_claim)
    resolved = sorted(set(resolved_strong))
    failed = sorted(set(failed_strong))
    elsewhere = sorted(set(resolved_elsewhere))
    count = len(resolved) - len(failed)
    if elsewhere and not weak and not (resolved and count >= 1):
        tier: Tier = "0"
        floor, cap = ELSEWHERE_FLOOR, ELSEWHERE_CAP
        value = min(cap, max(floor, claim))
        rule = f"proven elsewhere only: clamp(model {claim}, {floor}, {cap})"
    else:
        tier, floor, cap, value, rule = tier_rule(count if resolved else 0, claim)
    derivation = (f"resolved in {len(resolved)} strong incident(s)"
                  f"{' (' + ', '.join(resolved) + ')' if resolved else ''}")
    if failed:
        derivation += f" − {len(failed)} where the same fix failed ({', '.join(failed)})"
    derivation += f" = {count} → tier {tier}: {rule} = {value}"
    return Confidence(
        value=value, model_claim=claim if claim_given else None, proven=len(resolved),
        failed=len(failed), tier=tier, floor=floor, cap=cap,
        explanation=_verdict_sentence(resolved, failed, elsewhere, count, nothing, weak),
        derivation=derivation, cited=sorted(set(cited) | set(resolved) | set(failed)),
        failed_strong=len(failed), proven_elsewhere=len(elsewhere))


def _verdict_sentence(resolved: list[str], failed: list[str], elsewhere: list[str], count: int,
                      nothing: bool, weak: bool) -> str:
    if nothing:
        return "no prior incident matched this alert — nothing to be confident in"
    if resolved:
        tried = len(resolved) + len(failed)
        sentence = (f"{len(resolved)} of {tried} past incident{'s' if tried != 1 else ''} of "
                    f"this failure {'were' if len(resolved) != 1 else 'was'} resolved by this fix")
        if failed:
            sentence += (f"; it failed in {len(failed)} ({', '.join(failed)}), so it counts "
                         f"{count}")
        return sentence
    if elsewhere and not weak:
        return (f"proven on other services only ({', '.join(elsewhere)}): not yet proven for "
                "this alert")
    if weak:
        return WEAK_SENTENCE
    return "no recalled incident of this failure was resolved by a recorded action"


# --- the figure in words (the console's main screen; the derivation is for the details view) ---

_NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                 "ten")


def number_word(count: int) -> str:
    """"one" … "ten", then digits ("no" for 0)."""
    return _NUMBER_WORDS[count] if 0 <= count < len(_NUMBER_WORDS) else str(count)


def count_words(count: int, noun: str) -> str:
    """"one past incident", "two past incidents", "12 past incidents"."""
    return f"{number_word(count)} {noun}{'' if count == 1 else 's'}"


def is_elsewhere_only(confidence: Confidence) -> bool:
    """The figure was held to the proven-elsewhere band (a fix proven only on other services)."""
    return (confidence.tier == "0" and confidence.proven_elsewhere > 0
            and (confidence.floor, confidence.cap) == (ELSEWHERE_FLOOR, ELSEWHERE_CAP))


def confidence_words(confidence: Confidence, state: str | None = None) -> list[str]:
    """The figure as an engineer would say it: what it stands on and what would change it,
    first line first (a short screen shows only that one). No formula, floor or cap: those
    are the derivation's (``confidence.derivation``, the details view and ``--json``).

    ``state``: the briefing's; after no prior incident there is no fix to be confident in."""
    value = confidence.value
    if state == "no_prior_incident":
        return [f"{value} — nothing to be confident in: no past incident resembles this alert, "
                "so there is no fix, and no track record to go by."]
    claim = confidence.model_claim or 0
    count = max(confidence.proven - confidence.failed_strong, 0) if confidence.proven else 0
    next_value = tier_rule(count + 1, claim)[3]
    if is_elsewhere_only(confidence):
        where = count_words(confidence.proven_elsewhere, "incident")
        lines = [f"{value} — this fix is proven only on other services ({where}), not yet on "
                 f"this one; once it works here it would be {next_value}."]
    elif confidence.proven:
        resolved = count_words(confidence.proven, "past incident")
        verb = "was" if confidence.proven == 1 else "were"
        head = f"{value} — {resolved} of this failure {verb} resolved by this fix"
        if confidence.failed_strong:
            counts = f"it counts as {number_word(count)}" if count else "it proves nothing here"
            head = (f"{value} — this fix resolved {resolved} of this failure but failed in "
                    f"{count_words(confidence.failed_strong, 'other')}, so {counts}")
        if value >= HARD_CAP:
            lines = [f"{head}; {HARD_CAP} is as high as it goes."]
        elif next_value > value:
            lines = [f"{head}; with one more it would be {next_value}."]
        else:
            lines = [f"{head}."]
    else:
        if confidence.explanation == WEAK_SENTENCE:
            lines = [f"{value} — {WEAK_SENTENCE}; one incident of this same failure resolved "
                     f"by a fix would make it {next_value}."]
        else:
            lines = [f"{value} — no past incident of this failure was resolved by a recorded "
                     f"action; one that is would make it {next_value}."]
    if confidence.model_claim is not None and confidence.model_claim != value:
        held = "holds it to" if confidence.model_claim > value else "lifts it to"
        lines.append(f"The model said {confidence.model_claim}; the memory's evidence {held} "
                     f"{value}.")
    return lines
