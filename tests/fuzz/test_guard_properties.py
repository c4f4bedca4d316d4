"""Property-based tests of the guards: arbitrary drafts against arbitrary recalls.

Whatever a model answers — any JSON, any strings, ids in any spelling, numbers of any kind,
control characters, commands and instructions — and whatever the memory recalled, what the
guards pass on keeps every invariant below, and nothing but ``DraftRejected`` is raised.

`make test` runs a small profile; `make fuzz` runs the same properties with ≥10,000 examples
each (HYPOTHESIS_PROFILE=fuzz, see tests/fuzz/conftest.py).
"""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from console.engine.briefing.instructions import looks_like_instructions
from console.engine.model.draft import DraftRejected
from console.engine.model.grounding import CitedText, unbacked_commands
from console.engine.model.guards import MAX_NESTING, GuardedDraft, guard_draft
from store.models import ActionOutcome, Incident
from store.recall import Recall
from tests.engine.model.test_grounding import BENIGN, COMMANDS, INSTRUCTIONS
from tests.model.conftest import confidence_rule_holds
from tests.recalls import incident, recall_of
from tests.test_hostile_model_text import DISGUISED, OTHER_LANGUAGES, PASTED_ANSWERS

OUTCOMES = [o.value for o in ActionOutcome]
INCIDENT_IDS = ["INC-2041", "INC-1518", "INC-7", "PAY-2041", "INC-90210"]

# Look-alikes of other scripts for ASCII letters (Unicode TR39 confusables: Cyrillic, Greek,
# Armenian), as an attacker would swap them into an order or a command.
LOOK_ALIKES = {"a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "o": "\u043e\u03bf\u0585",
               "p": "\u0440\u03c1", "s": "\u0455", "x": "\u0445", "y": "\u0443", "r": "\u0433",
               "I": "\u0406\u0399", "E": "\u0415\u0395", "O": "\u041e\u039f", "P": "\u0420",
               "S": "\u0405", "T": "\u0422\u03a4", "N": "\u039d", "H": "\u041d"}


@st.composite
def disguised(draw: st.DrawFn, phrases: list[str]) -> str:
    """One of ``phrases`` with any of its letters swapped for a look-alike."""
    phrase = draw(st.sampled_from(phrases))
    swaps = draw(st.lists(st.booleans(), min_size=len(phrase), max_size=len(phrase)))
    return "".join(draw(st.sampled_from(LOOK_ALIKES[ch])) if swap and ch in LOOK_ALIKES else ch
                   for ch, swap in zip(phrase, swaps, strict=True))


# Text made of what matters most (commands, instructions — in look-alike letters and other
# languages too —, ids, control and invisible characters, markup) mixed with anything at all.
fragments = st.one_of(
    st.sampled_from(COMMANDS + INSTRUCTIONS + BENIGN),
    st.sampled_from(DISGUISED + OTHER_LANGUAGES + PASTED_ANSWERS),
    disguised(INSTRUCTIONS + COMMANDS),
    st.sampled_from(["INC-2041", "INC-2041/A1", "#2041", "INC－２０４１/A3", "INC-9999/A1",
                     "\x1b[2J", "\x1b]8;;http://x\x07", "\u200b", "\u202e", "[red]", "[/link]",
                     "\n", "\t", "; ", " && ", " | sh", "`", "$(", "DROP ", "rm -rf /"]),
    st.text(max_size=30),
    st.text(alphabet=string.printable, max_size=30),
)
texts = st.lists(fragments, max_size=5).map(" ".join)
action_texts = st.lists(fragments, min_size=1, max_size=5).map(" ".join).filter(str.strip)


@st.composite
def recalls(draw: st.DrawFn) -> Recall:
    """One to four incidents, each with zero to four actions of any outcome and any text."""
    ids = draw(st.lists(st.sampled_from(INCIDENT_IDS), min_size=1, max_size=4, unique=True))
    incidents: list[Incident] = []
    for incident_id in ids:
        actions = [{"id": f"A{n}", "action": draw(action_texts), "outcome": draw(
                    st.sampled_from(OUTCOMES)), "explanation": draw(action_texts)}
                   for n in range(1, draw(st.integers(0, 4)) + 1)]
        try:
            incidents.append(incident(incident_id, *actions))
        except ValueError:  # text the schema refuses (e.g. only control characters)
            continue
    return recall_of(*incidents) if incidents else recall_of(incident("INC-1"))


def citation(recall: Recall) -> st.SearchStrategy[Any]:
    recalled = [(a.incident_id, a.action_id, a.local_action_id) for a in recall.actions]
    spelled = st.sampled_from(recalled).flatmap(lambda ids: st.sampled_from([
        {"incident_id": ids[0], "action_id": ids[1]},
        {"incident_id": ids[0], "action_id": ids[2]},
        {"incident_id": ids[0].lower(), "action_id": f"#{ids[2]}"},
        {"incident_id": "", "action_id": ids[1]},
        {"incident_id": "INC-9999", "action_id": ids[1]},      # names another incident
    ])) if recalled else st.nothing()
    invented = st.fixed_dictionaries({"incident_id": st.sampled_from(INCIDENT_IDS + ["", "x"]),
                                      "action_id": st.sampled_from(["A1", "A9", "INC-1/A1", ""])})
    junk = st.one_of(st.none(), st.integers(), st.text(max_size=10), st.lists(st.integers()))
    return st.one_of(spelled, spelled, invented, junk)


def json_values() -> st.SearchStrategy[Any]:
    return st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                                  texts), lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
        max_leaves=8)


@st.composite
def drafts(draw: st.DrawFn, recall: Recall) -> str:
    cite = citation(recall)
    recommendation = st.fixed_dictionaries(
        {"action": st.one_of(texts, json_values()),
         "evidence": st.one_of(st.lists(cite, max_size=4), json_values())})
    warning = st.fixed_dictionaries({"text": st.one_of(texts, json_values())}).flatmap(
        lambda w: cite.map(lambda c: {**w, **c} if isinstance(c, dict) else w))
    step = st.one_of(texts, cite.map(lambda c: {**c, "text": "do it"} if isinstance(c, dict)
                                     else c))
    value: dict[str, Any] = {
        "summary": draw(st.one_of(texts, texts, json_values())),
        "recommendations": draw(st.one_of(st.lists(recommendation, max_size=4), json_values())),
        "warnings": draw(st.one_of(st.lists(warning, max_size=3), json_values())),
        "confidence": draw(st.one_of(st.integers(-1000, 1000), st.floats(), st.text(max_size=5),
                                     st.none(), st.booleans())),
        "likely_cause": draw(st.one_of(texts, json_values())),
        "steps": draw(st.one_of(st.lists(step, max_size=5), texts, json_values())),
    }
    for key in draw(st.lists(st.sampled_from(sorted(value)), max_size=2, unique=True)):
        del value[key]                                  # fields missing
    raw = json.dumps(value, ensure_ascii=draw(st.booleans()))
    # now and then nested past the limit (a 1.5B model looping on "[" — or 50,000 deep)
    depth = draw(st.sampled_from([0] * 12 + [MAX_NESTING, 1_200, 50_000]))
    if depth:
        raw = raw[:-1] + ', "steps": ' + "[" * depth + "]" * depth + "}"
    return draw(st.sampled_from([raw, f"```json\n{raw}\n```", f"Here you go: {raw} hope it helps",
                                 raw[: max(1, len(raw) // 2)]]))


def no_control_characters(text: str) -> bool:
    """No C0 control but newline and tab, no DEL or C1 control, no bidi override or isolate."""
    return not any(ord(ch) < 0x20 and ch not in "\n\t" or 0x7F <= ord(ch) <= 0x9F
                   or 0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069 for ch in text)


def check_invariants(result: GuardedDraft, recall: Recall) -> None:
    recalled = {a.action_id: a for a in recall.actions}
    cited_everywhere = []
    for recommendation in result.recommendations:
        assert recommendation.evidence
        backing = [recalled[e.action_id] for e in recommendation.evidence]   # all recalled
        for evidence, action in zip(recommendation.evidence, backing, strict=True):
            assert action.incident_id == evidence.incident_id
            assert action.outcome.is_fix and evidence.outcome is action.outcome
        assert recommendation.action == backing[0].action
        assert not unbacked_commands(recommendation.model_note,
                                     CitedText(a.text for a in backing))
        assert not looks_like_instructions(recommendation.model_note)
        assert recommendation.resolved == sum(e.outcome.is_proof for e in recommendation.evidence)
        cited_everywhere += backing
    for warning in result.warnings:
        action = recalled[warning.action_id]
        assert action.outcome is ActionOutcome.WORSENED
        lead = warning.text.split(f" — {action.action_id} WORSENED")[0]
        # the memory's own words (the stored action, when the model's were removed) are shown
        # as stored; a record that reads like instructions backs no command of the model's
        assert lead in (action.action, f"Don't repeat: {action.action}") \
            or not unbacked_commands(lead, CitedText([action.text]))
        cited_everywhere.append(action)
    for step in result.steps:
        action = recalled[step.action_id]
        assert action.outcome is not ActionOutcome.WORSENED and step.text == action.action
    for field in (result.summary, result.likely_cause):
        assert not unbacked_commands(field, CitedText(a.text for a in cited_everywhere))
        assert not looks_like_instructions(field)
    shown = [result.summary, result.likely_cause, *(r.model_note for r in result.recommendations),
             *(w.text for w in result.warnings)]
    assert all(no_control_characters(text) for text in shown)
    confidence = result.confidence
    assert confidence.value <= 98 and confidence_rule_holds(confidence.value, confidence.proven)
    proven_incidents = {e.incident_id for r in result.recommendations for e in r.evidence
                        if e.outcome.is_proof}
    assert confidence.proven <= len(proven_incidents)


@given(st.data())
def test_whatever_the_model_answers_the_guards_keep_every_invariant(data: st.DataObject) -> None:
    recall = data.draw(recalls(), label="recall")
    raw = data.draw(drafts(recall), label="draft")
    try:
        result = guard_draft(raw, recall)
    except DraftRejected as rejected:
        assert rejected.rule and rejected.detail
        return
    check_invariants(result, recall)


@given(st.data())
def test_a_well_formed_draft_citing_the_recall_keeps_every_invariant(
        data: st.DataObject) -> None:
    """The same invariants where the drafts are mostly accepted (valid JSON, real citations)."""
    recall = data.draw(recalls(), label="recall")
    fixes = [a for a in recall.actions if a.outcome.is_fix]
    worse = [a for a in recall.actions if a.outcome is ActionOutcome.WORSENED]
    value = {
        "summary": data.draw(texts.filter(str.strip)), "confidence": data.draw(
            st.integers(0, 100)), "likely_cause": data.draw(texts),
        "recommendations": [{"action": data.draw(st.sampled_from(BENIGN + COMMANDS)), "evidence": [
            {"incident_id": a.incident_id, "action_id": a.action_id}]} for a in fixes],
        "warnings": [{"text": data.draw(texts), "incident_id": a.incident_id,
                      "action_id": a.action_id} for a in worse],
        "steps": [{"text": data.draw(texts), "incident_id": a.incident_id,
                   "action_id": a.action_id} for a in recall.actions],
    }
    try:
        result = guard_draft(json.dumps(value), recall)
    except DraftRejected as rejected:
        assert rejected.rule in ("summary_ungrounded", "missing_summary"), rejected
        return
    check_invariants(result, recall)
    assert len(result.recommendations) == len(fixes)
    assert {w.action_id for w in result.warnings} == {a.action_id for a in worse}


@given(disguised(INSTRUCTIONS), st.sampled_from(["", "Resolved. ", "p99 up; "]))
def test_an_order_in_look_alike_letters_reads_as_the_order(phrase: str, lead: str) -> None:
    """Whatever letters of an order are swapped for look-alikes, it is still an order, and a
    command still a command (the skeleton both detectors read)."""
    assert looks_like_instructions(lead + phrase)


@given(disguised(COMMANDS))
def test_a_command_in_look_alike_letters_is_still_unbacked(command: str) -> None:
    assert unbacked_commands(command, CitedText(["Raised the pool limit on one instance"]))
