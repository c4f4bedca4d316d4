"""The guards, rule by rule: what a model's draft becomes before anything is shown.

Each row scripts one draft against one recall (tests/recalls.py) and says what the engineer
sees: the recommendations and what backs them, the warnings, the confidence and the guard log.
The end-to-end versions of these (real CLI, fake Ollama server) are in tests/model/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from console.engine.model.draft import DraftRejected
from console.engine.model.guards import GuardedDraft, guard_draft
from store.models import Incident
from tests.recalls import (
    BARE,
    CACHE_A,
    CACHE_B,
    CACHE_C,
    CACHE_D,
    MEMORY,
    POOL,
    act,
    incident,
    recall_of,
)

REMOVED = "[unverified reference removed]"


def ev(action_id: str, incident_id: str | None = None) -> dict[str, str]:
    return {"incident_id": action_id.split("/")[0] if incident_id is None else incident_id,
            "action_id": action_id}


def rec(action: str, *evidence: dict[str, str]) -> dict[str, Any]:
    return {"action": action, "evidence": list(evidence)}


def warn(action_id: str, text: str = "Do not do this again") -> dict[str, str]:
    return {"text": text, **ev(action_id)}


def answer(recs: list[Any] | None = None, warnings: list[Any] | None = None,
           confidence: Any = 60, summary: str = "Pool exhaustion after the deploy",
           **extra: Any) -> str:
    return json.dumps({"summary": summary, "recommendations": recs or [],
                       "warnings": warnings or [], "confidence": confidence, **extra})


def guard(raw: str, *incidents: Incident) -> GuardedDraft:
    return guard_draft(raw, recall_of(*(incidents or MEMORY)))


def shown(result: GuardedDraft) -> list[tuple[str, list[str]]]:
    """Each recommendation as the model worded it (its note, else the stored text it repeated)
    and the action ids backing it."""
    return [(r.model_note or r.action, [e.action_id for e in r.evidence])
            for r in result.recommendations]


def stored_texts_shown(result: GuardedDraft, *incidents: Incident) -> None:
    """The rule under every row: a recommendation's action is its first citation's stored text."""
    stored = {a.action_id: a.action for a in recall_of(*(incidents or MEMORY)).actions}
    for recommendation in result.recommendations:
        assert recommendation.action == stored[recommendation.evidence[0].action_id]


def rules(result: GuardedDraft) -> list[str]:
    return [entry.rule for entry in result.log]


# --- recommendations: which evidence counts --------------------------------------------

@dataclass(frozen=True)
class Row:
    id: str
    draft: str
    recommendations: list[tuple[str, list[str]]]
    log: list[str]
    proven: int
    value: int
    incidents: tuple[Incident, ...] = MEMORY
    outcomes: dict[str, str] = field(default_factory=dict)


FLUSH = "Flush the payment-schema cache"
TWO_FIXES = incident(
    "INC-1990",
    act("A1", "Flushed the payment-schema cache", "RESOLVED", "Old entries were gone"),
    act("A2", "Redeployed with versioned cache keys", "RESOLVED", "New keys, no old entries"),
    act("A3", "Restarted payments-api pods", "MITIGATED", "Errors dropped for a while"),
    act("A4", "Scaled payments-api out", "MITIGATED", "Errors dropped for a while"),
)
POOL_FIX = "Raise the pool limit on one instance"

EVIDENCE_ROWS = [
    Row("recalled_fixes_are_kept_and_counted_once_per_incident",
        answer([rec(FLUSH, ev("INC-1518/A2"), ev("INC-1619/A1"), ev("INC-1853/A1"))], [],
               confidence=90),
        [(FLUSH, ["INC-1518/A2", "INC-1619/A1", "INC-1853/A1"])],
        ["warning_added", "warning_added", "confidence_bounded"], proven=3, value=94),
    Row("citation_not_recalled_is_dropped_and_the_rest_kept",
        answer([rec(FLUSH, ev("INC-9999/A1"), ev("INC-1619/A1"))]),
        [(FLUSH, ["INC-1619/A1"])],
        ["citation_not_recalled", "warning_added", "warning_added"], proven=1, value=60),
    Row("worsened_action_is_never_evidence_for_a_recommendation",
        answer([rec("Restart all pods", ev("INC-2041/A1"))], confidence=100),
        [], ["evidence_not_a_fix", "recommendation_unbacked", "warning_added", "warning_added",
             "confidence_bounded"], proven=0, value=30),
    Row("no_effect_action_is_never_evidence_for_a_recommendation",
        answer([rec("Raise the timeout", ev("INC-2041/A2"), ev("INC-2041/A3"))]),
        [("Raise the timeout", ["INC-2041/A3"])],
        ["evidence_not_a_fix", "warning_added", "warning_added"], proven=1, value=60),
    Row("mitigated_action_backs_a_recommendation_but_proves_nothing",
        answer([rec("Restart the pods", ev("INC-1518/A1"))], confidence=80),
        [("Restart the pods", ["INC-1518/A1"])],
        ["warning_added", "warning_added", "confidence_bounded"], proven=0, value=30,
        outcomes={"INC-1518/A1": "MITIGATED"}),
    Row("recommendation_without_any_good_evidence_is_dropped",
        answer([rec(FLUSH, ev("INC-9999/A1")), rec(POOL_FIX, ev("INC-2041/A3"))]),
        [(POOL_FIX, ["INC-2041/A3"])],
        ["citation_not_recalled", "recommendation_unbacked", "warning_added", "warning_added"],
        proven=1, value=60),
    Row("recommendation_with_no_action_text_is_dropped_and_its_evidence_not_counted",
        answer([rec("   ", ev("INC-1518/A2"), ev("INC-1619/A1")), rec(POOL_FIX, ev("INC-2041/A3"))]),
        [(POOL_FIX, ["INC-2041/A3"])],
        ["recommendation_empty", "warning_added", "warning_added"], proven=1, value=60),
    Row("the_same_action_cited_three_times_counts_once",
        answer([rec(FLUSH, ev("INC-1518/A2"), ev("inc-1518/a2"), ev("#1518/A2", "#1518"),
                    ev("INC-1619/A1"))]),
        [(FLUSH, ["INC-1518/A2", "INC-1619/A1"])],
        ["duplicate_citation", "duplicate_citation", "warning_added", "warning_added",
         "confidence_bounded"], proven=2, value=75),
    Row("mitigated_then_resolved_in_one_incident_counts_as_resolved",
        answer([rec(FLUSH, ev("INC-1518/A1"), ev("INC-1518/A2"), ev("INC-1619/A1"),
                    ev("INC-1853/A1"))], confidence=0),
        [(FLUSH, ["INC-1518/A2", "INC-1619/A1", "INC-1853/A1"])],
        ["duplicate_citation", "warning_added", "warning_added", "confidence_bounded"],
        proven=3, value=94, outcomes={"INC-1518/A2": "RESOLVED"}),
    Row("resolved_then_mitigated_in_one_incident_stays_resolved",
        answer([rec(FLUSH, ev("INC-1518/A2"), ev("INC-1518/A1"))], confidence=70),
        [(FLUSH, ["INC-1518/A2"])],
        ["duplicate_citation", "warning_added", "warning_added"], proven=1, value=70,
        outcomes={"INC-1518/A2": "RESOLVED"}),
    Row("mitigated_twice_in_one_incident_stays_one_mitigation",
        answer([rec("Restart the pods", ev("INC-1518/A1"), ev("INC-1518/A1"))], confidence=20),
        [("Restart the pods", ["INC-1518/A1"])],
        ["duplicate_citation", "warning_added", "warning_added"], proven=0, value=20,
        outcomes={"INC-1518/A1": "MITIGATED"}),
    Row("two_fixes_of_one_incident_count_once_as_the_first_cited",
        answer([rec(FLUSH, ev("INC-1990/A2"), ev("INC-1990/A1"), ev("INC-1990/A4"))],
               confidence=70),
        [(FLUSH, ["INC-1990/A2"])],
        ["duplicate_citation", "duplicate_citation"], proven=1, value=70,
        incidents=(TWO_FIXES,)),
    Row("two_mitigations_of_one_incident_count_once_as_the_first_cited",
        answer([rec(FLUSH, ev("INC-1990/A4"), ev("INC-1990/A3"))], confidence=20),
        [(FLUSH, ["INC-1990/A4"])],
        ["duplicate_citation"], proven=0, value=20, incidents=(TWO_FIXES,)),
    Row("confidence_follows_the_best_backed_recommendation",
        answer([rec(POOL_FIX, ev("INC-2041/A3")),
                rec(FLUSH, ev("INC-1518/A2"), ev("INC-1619/A1"), ev("INC-1853/A1"),
                    ev("INC-1745/A2")),
                rec("Restart the pods", ev("INC-1518/A1"))], confidence=50),
        [(POOL_FIX, ["INC-2041/A3"]),
         (FLUSH, ["INC-1518/A2", "INC-1619/A1", "INC-1853/A1", "INC-1745/A2"]),
         ("Restart the pods", ["INC-1518/A1"])],
        ["warning_added", "warning_added", "confidence_bounded"], proven=4, value=96),
    Row("spellings_of_recalled_ids_are_normalised",
        answer([rec(FLUSH, ev("#1518/A2", "#1518"), ev("a1", "incident 1619"),
                    ev("INC_1853 / A1", ""), ev("INC-１７４５/Ａ２", "INC-１７４５"))],
               confidence=97),
        [(FLUSH, ["INC-1518/A2", "INC-1619/A1", "INC-1853/A1", "INC-1745/A2"])],
        ["warning_added", "warning_added"], proven=4, value=97),
    Row("an_action_id_naming_another_incident_is_not_laundered_onto_this_one",
        answer([rec(POOL_FIX, ev("INC-9999/A3", "INC-2041"))]),
        [], ["citation_not_recalled", "recommendation_unbacked", "warning_added",
             "warning_added", "confidence_bounded"], proven=0, value=30),
]


@pytest.mark.parametrize("row", EVIDENCE_ROWS, ids=[row.id for row in EVIDENCE_ROWS])
def test_recommendation_evidence(row: Row) -> None:
    result = guard(row.draft, *row.incidents)
    assert shown(result) == row.recommendations
    stored_texts_shown(result, *row.incidents)
    assert rules(result) == row.log, result.log
    assert (result.confidence.proven, result.confidence.value) == (row.proven, row.value), \
        result.confidence
    outcomes = {e.action_id: e.outcome for r in result.recommendations for e in r.evidence}
    for action_id, outcome in row.outcomes.items():
        assert outcomes[action_id] == outcome


def test_each_recommendation_says_how_many_incidents_it_resolved() -> None:
    result = guard(answer([rec(FLUSH, ev("INC-1518/A2"), ev("INC-1619/A1")),
                           rec("Restart the pods", ev("INC-1518/A1"))]))
    assert [(r.resolved, r.tried) for r in result.recommendations] == [(2, 2), (0, 1)]
    assert [[e.outcome for e in r.evidence] for r in result.recommendations] == [
        ["RESOLVED", "RESOLVED"], ["MITIGATED"]]
    assert [e.incident_id for e in result.recommendations[0].evidence] == ["INC-1518",
                                                                           "INC-1619"]


# --- the guard log says what was removed and why ---------------------------------------

LOG_ROWS = [
    ("citation_not_recalled",
     answer([rec(FLUSH, ev("INC-9999/A1"), ev("INC-1619/A1"))]),
     "'INC-9999 INC-9999/A1' in recommendation 1 dropped"),
    ("evidence_not_a_fix",
     answer([rec(POOL_FIX, ev("INC-2041/A3")), rec("Restart", ev("INC-2041/A1"))]),
     "INC-2041/A1 is WORSENED: evidence for a warning, never for recommendation 2; dropped"),
    ("recommendation_unbacked",
     answer([rec("Restart", ev("INC-2041/A1"))]),
     "recommendation 1 has no recalled RESOLVED or MITIGATED action as evidence; dropped"),
    ("recommendation_empty",
     answer([rec(POOL_FIX, ev("INC-2041/A3")), rec("", ev("INC-1619/A1"))]),
     "recommendation 2 has no action text; dropped"),
    ("duplicate_citation",
     answer([rec(FLUSH, ev("INC-1619/A1"), ev("INC-1619/A1"))]),
     "INC-1619 cited again in recommendation 1; counted once"),
    ("citation_not_recalled",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], [warn("INC-9999/A1")]),
     "warning 1 cites 'INC-9999 INC-9999/A1'; dropped"),
    ("warning_not_worsened",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], [warn("INC-2041/A2")]),
     "warning 1 cites INC-2041/A2 which is NO_EFFECT, not WORSENED; dropped"),
    ("duplicate_citation",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], [warn("INC-2041/A1"), warn("inc-2041/a1")]),
     "warning 2 repeats INC-2041/A1; dropped"),
    ("warning_added",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))]),
     "INC-2041/A1 WORSENED was recalled but not warned about; added from memory"),
    ("citation_not_recalled",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], summary="As in INC-9999."),
     "'INC-9999' in summary removed (not in this recall)"),
    ("confidence_invalid",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], confidence="high"),
     "model claim 'high' is not a number in 0–100; counted as 0"),
    ("confidence_bounded",
     answer([rec(POOL_FIX, ev("INC-2041/A3"))], confidence=99),
     "model claimed 99; proven 1 (INC-2041) → tier 1: clamp(model 99, 55, 74) = 74"),
]


@pytest.mark.parametrize(("rule", "raw", "detail"), LOG_ROWS,
                         ids=[f"{n}-{rule}" for n, (rule, _, _) in enumerate(LOG_ROWS)])
def test_guard_log_names_the_rule_and_what_it_removed(rule: str, raw: str, detail: str) -> None:
    result = guard(raw, POOL, CACHE_B)
    assert any(e.rule == rule and e.detail == detail for e in result.log), result.log


# --- warnings ---------------------------------------------------------------------------

@dataclass(frozen=True)
class WarningRow:
    id: str
    warnings: list[dict[str, str]]
    warned: list[str]
    log: list[str]
    incidents: tuple[Incident, ...] = (POOL,)


WARNING_ROWS = [
    WarningRow("worsened_action_is_warned_about", [warn("INC-2041/A1")], ["INC-2041/A1"], []),
    WarningRow("warning_citing_an_unrecalled_action_is_dropped",
               [warn("INC-9999/A1"), warn("INC-2041/A1")], ["INC-2041/A1"],
               ["citation_not_recalled"]),
    WarningRow("warning_citing_a_fix_is_dropped", [warn("INC-2041/A3"), warn("INC-2041/A1")],
               ["INC-2041/A1"], ["warning_not_worsened"]),
    WarningRow("warning_citing_no_effect_is_dropped", [warn("INC-2041/A2"), warn("INC-2041/A1")],
               ["INC-2041/A1"], ["warning_not_worsened"]),
    WarningRow("the_same_warning_twice_is_shown_once",
               [warn("INC-2041/A1"), warn("inc-2041/a1", "again")], ["INC-2041/A1"],
               ["duplicate_citation"]),
    WarningRow("warning_citing_a_local_action_id_with_its_incident",
               [{"text": "Do not", "incident_id": "INC-2041", "action_id": "A1"}],
               ["INC-2041/A1"], []),
    WarningRow("a_repeated_warning_does_not_stop_the_ones_after_it",
               [warn("INC-2041/A1"), warn("inc-2041/a1"), warn("INC-1745/A1", "No rollback")],
               ["INC-2041/A1", "INC-1745/A1"], ["duplicate_citation"], (POOL, CACHE_C)),
    WarningRow("worsened_action_left_out_by_the_model_is_added_from_memory", [],
               ["INC-2041/A1"], ["warning_added"]),
    WarningRow("only_the_worsened_actions_the_model_left_out_are_added",
               [warn("INC-1745/A1")], ["INC-1745/A1", "INC-2041/A1"], ["warning_added"],
               (POOL, CACHE_C)),
]


@pytest.mark.parametrize("row", WARNING_ROWS, ids=[row.id for row in WARNING_ROWS])
def test_warnings_cite_a_recalled_worsened_action(row: WarningRow) -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))], row.warnings), *row.incidents)
    assert [w.action_id for w in result.warnings] == row.warned
    assert [w.incident_id for w in result.warnings] == [a.split("/")[0] for a in row.warned]
    assert rules(result) == row.log, result.log


def test_warning_shows_the_stored_explanation_of_what_went_wrong() -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))],
                          [warn("INC-2041/A1", "Never restart every pod together")]), POOL)
    [warning] = result.warnings
    assert warning.text == ("Never restart every pod together — INC-2041/A1 WORSENED: Every pod "
                            "reconnected at once and exhausted Postgres max_connections")
    assert warning.explanation == ("Every pod reconnected at once and exhausted Postgres "
                                   "max_connections")


def test_warning_on_an_unconfirmed_explanation_says_it_is_suspected() -> None:
    result = guard(answer([rec(FLUSH, ev("INC-1745/A2"))],
                          [warn("INC-1745/A1", "Do not roll back the migration")]), CACHE_C)
    [warning] = result.warnings
    assert warning.text == ("Do not roll back the migration — INC-1745/A1 WORSENED: Half-migrated "
                            "rows failed to parse (explanation suspected, not confirmed)")
    assert warning.explanation == "Half-migrated rows failed to parse"


def test_warning_with_no_text_of_its_own_shows_the_stored_action() -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))], [warn("INC-2041/A1", "  ")]), POOL)
    assert result.warnings[0].text.startswith("Restarted all payments-api pods at once — "
                                              "INC-2041/A1 WORSENED: Every pod")


def test_fabricated_id_in_a_warning_text_is_removed() -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))],
                          [warn("INC-2041/A1", "Same mistake as INC-2041/A99 and #9999")]), POOL)
    assert result.warnings[0].text.startswith(f"Same mistake as {REMOVED} and {REMOVED} — ")
    assert [e.detail for e in result.log] == [
        "'INC-2041/A99' in warning 1 removed (not in this recall)",
        "'#9999' in warning 1 removed (not in this recall)"]


# --- free text: every field the engineer reads is scrubbed of ids outside the recall ----

FREE_TEXT = "Same as INC-2041, unlike INC-9999, incident #8888 and INC-７７７７"
SCRUBBED = f"Same as INC-2041, unlike {REMOVED}, {REMOVED} and {REMOVED}"


@pytest.mark.parametrize("where", ["summary", "likely_cause", "recommendation"])
def test_ids_outside_the_recall_are_removed_from_every_text_shown(where: str) -> None:
    recommendation_text = FREE_TEXT if where == "recommendation" else POOL_FIX
    extra: dict[str, Any] = {}
    if where in ("summary", "likely_cause"):
        extra[where] = FREE_TEXT
    result = guard(answer([rec(recommendation_text, ev("INC-2041/A3"))], **extra), POOL)
    text = {"summary": result.summary, "likely_cause": result.likely_cause,
            "recommendation": result.recommendations[0].model_note}[where]
    assert text == SCRUBBED
    label = "recommendation 1" if where == "recommendation" else where
    removed = [e.detail for e in result.log if e.rule == "citation_not_recalled"]
    assert removed == [f"{m!r} in {label} removed (not in this recall)"
                       for m in ("INC-9999", "incident #8888", "INC-７７７７")]


def test_free_text_naming_only_recalled_ids_is_left_as_written() -> None:
    text = "INC-2041/A3 worked; INC-2041 is the closest match"
    result = guard(answer([rec(text, ev("INC-2041/A3"))], summary=text, likely_cause=text),
                   POOL)
    assert (result.summary, result.likely_cause, result.recommendations[0].model_note) == \
        (text, text, text)
    assert "citation_not_recalled" not in rules(result)


# --- steps: each cites a recalled action and is shown as that action's stored text --------

def test_steps_are_the_stored_text_of_the_actions_they_cite() -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))], steps=[
        "First do what INC-2041/A3 did, but faster",                  # cited in its text
        {"text": "Then this", "incident_id": "INC-2041", "action_id": "INC-2041/A3"},  # again
        "Drain one instance",                                         # cites nothing
        {"text": "Restart every pod", "incident_id": "INC-2041", "action_id": "INC-2041/A1"},
        {"text": "Invent", "incident_id": "INC-9999", "action_id": "INC-9999/A1"}]), POOL)
    stored = {a.action_id: a.action for a in recall_of(POOL).actions}
    assert [(s.text, s.action_id) for s in result.steps] == [
        (stored["INC-2041/A3"], "INC-2041/A3")]
    assert [(e.rule, e.detail) for e in result.log
            if e.rule.startswith("step") or e.rule == "duplicate_citation"] == [
        ("duplicate_citation", "step 2 repeats INC-2041/A3; dropped"),
        ("step_uncited", "step 3 cites no recalled action; dropped"),
        ("step_cites_worsened", "step 4 cites INC-2041/A1, which made things worse; dropped "
                                "(it is a warning)"),
        ("step_uncited", "step 5 cites no recalled action; dropped")]


def test_a_step_may_cite_by_local_id_and_its_first_recalled_citation_counts() -> None:
    result = guard(answer([rec(POOL_FIX, ev("INC-2041/A3"))], steps=[
        {"text": "Drain", "incident_id": "INC-2041", "action_id": "A3"},
        {"text": "Then", "evidence": [ev("INC-9999/A1"), ev("INC-2041/A2")]}]), POOL)
    assert [s.action_id for s in result.steps] == ["INC-2041/A3", "INC-2041/A2"]


# --- drafts that cannot be used at all ------------------------------------------------

def test_draft_whose_every_citation_is_outside_the_recall_is_rejected() -> None:
    with pytest.raises(DraftRejected) as rejected:
        guard(answer([rec(FLUSH, ev("INC-9999/A1"), ev("INC-8888/A3"))]), CACHE_A, CACHE_B)
    assert rejected.value.rule == "no_valid_citation"
    assert rejected.value.detail == (
        "every citation in the draft was outside this recall or had the wrong outcome: "
        "'INC-9999 INC-9999/A1' in recommendation 1 dropped; "
        "'INC-8888 INC-8888/A3' in recommendation 1 dropped; "
        "recommendation 1 has no recalled RESOLVED or MITIGATED action as evidence; dropped")


def test_rejection_names_the_first_six_problems() -> None:
    fabricated = [ev(f"INC-{9990 + n}/A1") for n in range(8)]
    with pytest.raises(DraftRejected) as rejected:
        guard(answer([rec(FLUSH, *fabricated)]), CACHE_A)
    assert rejected.value.detail.count("dropped") == 6
    assert "INC-9995" in rejected.value.detail and "INC-9996" not in rejected.value.detail


def test_draft_whose_only_warning_is_fabricated_is_rejected() -> None:
    with pytest.raises(DraftRejected) as rejected:
        guard(answer([], [warn("INC-9999/A1")]), CACHE_A, CACHE_B)
    assert rejected.value.rule == "no_valid_citation"


def test_draft_citing_nothing_is_kept_as_a_summary() -> None:
    result = guard(answer([], [], summary="No fix recorded for this"), CACHE_A)
    assert (result.summary, result.recommendations, result.warnings) == (
        "No fix recorded for this", [], [])
    assert result.confidence.value == 30


def test_bad_citations_are_not_rejected_when_memory_warnings_remain() -> None:
    result = guard(answer([rec(FLUSH, ev("INC-9999/A1"))]), POOL)
    assert result.recommendations == []
    assert [w.action_id for w in result.warnings] == ["INC-2041/A1"]


def test_bad_citations_are_not_rejected_when_nothing_recalled_has_actions() -> None:
    result = guard(answer([rec(FLUSH, ev("INC-9999/A1"))]), BARE)
    assert result.recommendations == [] and result.warnings == []
    assert rules(result) == ["citation_not_recalled", "recommendation_unbacked",
                             "confidence_bounded"]


# --- the model's confidence claim ------------------------------------------------------

CLAIM_ROWS = [
    # (claim, recalled fixes cited, shown value, model_claim recorded, log)
    (70, 1, 70, 70, []),
    (70.4, 1, 70, 70, []),
    (99, 1, 74, 99, ["confidence_bounded"]),
    (10, 2, 75, 10, ["confidence_bounded"]),
    (100, 4, 98, 100, ["confidence_bounded"]),
    ("95%", 1, 55, 0, ["confidence_invalid"]),
    (None, 1, 55, 0, ["confidence_invalid"]),
    (-5, 0, 0, 0, ["confidence_invalid"]),
    (101, 2, 75, 0, ["confidence_invalid"]),
    (True, 1, 55, 0, ["confidence_invalid"]),
]


@pytest.mark.parametrize(("claim", "fixes", "value", "model_claim", "log"), CLAIM_ROWS,
                         ids=[f"claim-{n}-fixes-{f}" for n, (_, f, *_) in enumerate(CLAIM_ROWS)])
def test_confidence_claim(claim: Any, fixes: int, value: int, model_claim: int,
                          log: list[str]) -> None:
    evidence = [ev(a) for a in ("INC-1518/A2", "INC-1619/A1", "INC-1853/A1", "INC-1745/A2")]
    recs = [rec(FLUSH, *evidence[:fixes])] if fixes else []
    result = guard(answer(recs, [], confidence=claim), CACHE_A, CACHE_B, CACHE_D,
                   CACHE_C.model_copy(update={"actions": CACHE_C.actions[1:]}))
    assert result.confidence.value == value
    assert result.confidence.model_claim == model_claim
    assert result.confidence.proven == fixes
    assert [r for r in rules(result) if r.startswith("confidence")] == log
