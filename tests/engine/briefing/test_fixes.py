"""The "same fix" rule of the briefing, table by table, as the briefing's reader sees it.

Two wordings of one fix count once ("resolved 2 of 2", not two fixes resolved once each), a
chain of rewordings is one fix whatever order the recall returned them in, exactly 60 % word
overlap is still the same fix, an action whose wording has no meaningful words is never the
same fix as anything, and each incident counts with the best outcome it had for the fix.
The actions are the ``RecalledAction`` records a recall makes (tests/recalls.py).
"""

from __future__ import annotations

from itertools import permutations

import pytest

from console.engine.briefing.fixes import (
    SAME_FIX_OVERLAP,
    FixGroup,
    group_fixes,
    overlap,
    same_fix,
    same_fix_words,
)
from store.models import Incident
from store.recall import RecalledAction
from store.terms import terms
from tests.recalls import act, incident, recall_of

FLUSH = "Flushed the payment-schema cache"                       # flush payment schema cache
FLUSH_SHORT = "Flush payment-schema cache"                       # the same four words
FLUSH_REDIS = "Flushed the payment-schema cache in redis"        # + redi: 4/5 with FLUSH
CLEAR_REDIS = "Cleared the payment-schema cache in redis"        # 4/6 with FLUSH_REDIS, 3/6 FLUSH
FLUSH_ENTRIES = "Flushed the payment-schema entries"             # exactly 3/5 with FLUSH
RESTART = "Restarted the payments-api pods"                      # restart payment api pod
RESTART_SHORT = "Restarted payments-api pods"
ROLLBACK = "Rolled back the deploy"
RAISE_POOL = "Raised the pool limit on one instance"
DRAIN = "Raised the pool limit and drained traffic"              # 3/7 with RAISE_POOL
NOTHING = "Did it."                                              # stop words only: no terms


def recalled(*incidents: Incident) -> dict[str, RecalledAction]:
    """Every action a recall of ``incidents`` returns, by its citable id (INC-…/A…)."""
    return {action.action_id: action
            for item in recall_of(*incidents).incidents for action in item.actions}


def one(incident_id: str, wording: str, outcome: str = "RESOLVED") -> Incident:
    return incident(incident_id, act("A1", wording, outcome, "recorded"))


def ids(group: FixGroup) -> list[str]:
    return [member.action_id for member in group.members]


def test_the_premises_of_the_tables() -> None:
    """The wordings mean what the tables say: no term is lost or added by the term rules."""
    assert NOTHING and terms(NOTHING) == []
    assert set(terms(FLUSH)) == set(terms(FLUSH_SHORT)) == {"flush", "payment", "schema", "cache"}
    assert set(terms(RESTART)) == set(terms(RESTART_SHORT))
    assert SAME_FIX_OVERLAP == 0.6


# --- overlap: the Jaccard index of two word sets ------------------------------------------

@pytest.mark.parametrize(("left", "right", "expected"), [
    ({"a", "b"}, {"a", "b"}, 1.0),
    ({"a", "b", "c"}, {"a", "b", "d"}, 0.5),             # 2 shared of 4
    ({"a", "b", "c", "d"}, {"a", "b", "c", "e"}, 0.6),   # 3 shared of 5
    ({"a"}, {"a", "b", "c", "d"}, 0.25),
    ({"a", "b"}, {"c", "d"}, 0.0),                       # nothing shared
    ({"a"}, set(), 0.0),                                 # one side has no words
    (set(), {"a"}, 0.0),
    (set(), set(), 0.0),                                 # no words at all: no overlap, not 1
])
def test_overlap_is_shared_words_over_all_words(left: set[str], right: set[str],
                                                expected: float) -> None:
    assert overlap(left, right) == pytest.approx(expected)
    assert overlap(right, left) == pytest.approx(expected)


# --- same_fix / same_fix_words: overlap >= 0.6 ---------------------------------------------

SAME_FIX_TABLE = [
    # (name, left, right, same)
    ("identical wording", FLUSH, FLUSH, True),
    ("reworded, same words", FLUSH, FLUSH_SHORT, True),
    ("one extra word: 4/5", FLUSH, FLUSH_REDIS, True),
    ("exactly at 0.6 (3/5) is the same fix", FLUSH, FLUSH_ENTRIES, True),
    ("3/6 = 0.5 is another fix", FLUSH, CLEAR_REDIS, False),
    ("4/6 is the same fix", FLUSH_REDIS, CLEAR_REDIS, True),
    ("3/7 is another fix", RAISE_POOL, DRAIN, False),
    ("nothing shared", FLUSH, ROLLBACK, False),
    ("shared service name only", FLUSH, RESTART, False),
    ("empty wording vs a fix", NOTHING, FLUSH, False),
    ("a fix vs empty wording", FLUSH, NOTHING, False),
    ("two empty wordings", NOTHING, NOTHING, False),
]


@pytest.mark.parametrize(("left", "right", "same"), [row[1:] for row in SAME_FIX_TABLE],
                         ids=[row[0] for row in SAME_FIX_TABLE])
def test_same_fix_of_two_wordings(left: str, right: str, same: bool) -> None:
    assert same_fix(left, right) is same
    assert same_fix(right, left) is same
    assert same_fix_words(set(terms(left)), set(terms(right))) is same


@pytest.mark.parametrize(("left", "right", "same"), [
    ({"a", "b", "c", "d"}, {"a", "b", "c", "e"}, True),         # 0.6 exactly
    ({"a", "b", "c", "d", "e"}, {"a", "b", "c", "f", "g"}, False),  # 3/7
    ({"a", "b", "c", "d"}, {"a", "b", "c", "d", "e", "f"}, True),   # 4/6
    ({"a", "b"}, {"a", "c"}, False),                            # 1/3
    (set(), set(), False),
])
def test_same_fix_words_is_overlap_at_least_the_bar(left: set[str], right: set[str],
                                                    same: bool) -> None:
    assert same_fix_words(left, right) is same


# --- group_fixes: connected sets, order-independent, first member first --------------------

def test_two_wordings_of_one_fix_in_two_incidents_are_one_fix_resolved_twice() -> None:
    actions = recalled(one("INC-1", FLUSH), one("INC-2", FLUSH_SHORT))
    groups = group_fixes(list(actions.values()))
    assert [ids(g) for g in groups] == [["INC-1/A1", "INC-2/A1"]]
    assert sorted(groups[0].best_per_incident()) == ["INC-1", "INC-2"]


CHAIN = {"A": FLUSH, "B": FLUSH_REDIS, "C": CLEAR_REDIS}   # A~B, B~C, but A and C: 0.5


@pytest.mark.parametrize("order", ["".join(p) for p in permutations("ABC")])
def test_a_chain_is_one_fix_whatever_the_recall_order(order: str) -> None:
    assert same_fix(CHAIN["A"], CHAIN["B"]) and same_fix(CHAIN["B"], CHAIN["C"])
    assert not same_fix(CHAIN["A"], CHAIN["C"])
    actions = recalled(*(one(f"INC-{name}", CHAIN[name]) for name in "ABC"))
    ordered = [actions[f"INC-{name}/A1"] for name in order]
    groups = group_fixes(ordered)
    assert len(groups) == 1
    assert ids(groups[0]) == [f"INC-{name}/A1" for name in order]      # recall order kept
    assert groups[0].terms == set(terms(CHAIN[order[0]]))               # the first member's words


@pytest.mark.parametrize("order", ["".join(p) for p in permutations("ABCD")])
def test_two_chains_stay_two_fixes_in_the_order_of_their_first_member(order: str) -> None:
    wording = {"A": FLUSH, "B": CLEAR_REDIS, "C": FLUSH_REDIS, "D": ROLLBACK}
    actions = recalled(*(one(f"INC-{name}", wording[name]) for name in "ABCD"))
    groups = group_fixes([actions[f"INC-{name}/A1"] for name in order])
    expected = [[f"INC-{name}/A1" for name in order if name in "ABC"], ["INC-D/A1"]]
    if order.index("D") == 0:
        expected.reverse()
    assert [ids(g) for g in groups] == expected


GROUPING_TABLE = [
    # (name, wordings in recall order, expected groups as indexes into the wordings)
    ("nothing recalled", [], []),
    ("one action", [FLUSH], [[0]]),
    ("two fixes", [FLUSH, ROLLBACK], [[0], [1]]),
    ("exactly at 0.6 is grouped", [FLUSH, FLUSH_ENTRIES], [[0, 1]]),
    ("just under 0.6 is not", [FLUSH, CLEAR_REDIS], [[0], [1]]),
    ("interleaved fixes keep first-member order",
     [RESTART, FLUSH, RESTART_SHORT, ROLLBACK, FLUSH_SHORT], [[0, 2], [1, 4], [3]]),
    ("the last joins the first", [FLUSH, ROLLBACK, RAISE_POOL, FLUSH_SHORT],
     [[0, 3], [1], [2]]),
    ("empty wordings are never the same fix", [NOTHING, NOTHING], [[0], [1]]),
    ("an empty wording joins no fix", [FLUSH, NOTHING, FLUSH_SHORT], [[0, 2], [1]]),
    ("a late link merges two early groups", [FLUSH, CLEAR_REDIS, FLUSH_REDIS], [[0, 1, 2]]),
]


@pytest.mark.parametrize(("wordings", "expected"), [row[1:] for row in GROUPING_TABLE],
                         ids=[row[0] for row in GROUPING_TABLE])
def test_grouping(wordings: list[str], expected: list[list[int]]) -> None:
    actions = list(recalled(*(one(f"INC-{n}", w) for n, w in enumerate(wordings))).values())
    groups = group_fixes(actions)
    assert [ids(g) for g in groups] == [[f"INC-{n}/A1" for n in group] for group in expected]
    for group, members in zip(groups, expected, strict=True):
        assert group.terms == set(terms(wordings[members[0]]))
        assert all(isinstance(m, RecalledAction) for m in group.members)


def test_group_words_are_the_first_members_not_a_union() -> None:
    actions = recalled(one("INC-1", FLUSH_REDIS), one("INC-2", FLUSH))
    [group] = group_fixes(list(actions.values()))
    assert group.terms == {"flush", "payment", "schema", "cache", "redi"}
    [group] = group_fixes([actions["INC-2/A1"], actions["INC-1/A1"]])
    assert group.terms == {"flush", "payment", "schema", "cache"}


def test_grouping_does_not_change_the_recalled_actions() -> None:
    actions = list(recalled(one("INC-1", FLUSH), one("INC-2", FLUSH_SHORT)).values())
    before = list(actions)
    group_fixes(actions)
    assert actions == before


# --- best_per_incident: each incident counts with its best outcome for the fix -------------

BEST_TABLE = [
    # (name, outcomes of one incident's wordings of the fix, in order; index that counts)
    ("the later resolution beats an early failure", ["WORSENED", "RESOLVED"], 1),
    ("an early resolution is not undone by a later failure", ["RESOLVED", "WORSENED"], 0),
    ("mitigated beats no effect", ["NO_EFFECT", "MITIGATED"], 1),
    ("no effect beats worsened", ["WORSENED", "NO_EFFECT"], 1),
    ("resolved beats mitigated", ["MITIGATED", "RESOLVED"], 1),
    ("mitigated is kept over a later no effect", ["MITIGATED", "NO_EFFECT"], 0),
    ("best in the middle", ["NO_EFFECT", "RESOLVED", "MITIGATED", "WORSENED"], 1),
    ("best last of four", ["WORSENED", "NO_EFFECT", "MITIGATED", "RESOLVED"], 3),
    ("a tie: the first of them counts", ["MITIGATED", "MITIGATED"], 0),
    ("a tie after a worse one: the first of the tie", ["WORSENED", "RESOLVED", "RESOLVED"], 1),
    ("only one", ["NO_EFFECT"], 0),
]
WORDINGS = [RESTART, RESTART_SHORT, "Restarted all payments-api pods", "Restarted payments-api pod"]


@pytest.mark.parametrize(("outcomes", "best"), [row[1:] for row in BEST_TABLE],
                         ids=[row[0] for row in BEST_TABLE])
def test_best_outcome_per_incident(outcomes: list[str], best: int) -> None:
    item = incident("INC-7", *(act(f"A{n}", WORDINGS[n], outcome, "recorded")
                               for n, outcome in enumerate(outcomes)))
    [group] = group_fixes(list(recalled(item).values()))
    assert len(group.members) == len(outcomes)
    chosen = group.best_per_incident()
    assert list(chosen) == ["INC-7"]
    assert chosen["INC-7"].action_id == f"INC-7/A{best}"
    assert chosen["INC-7"] is group.members[best]


def test_best_per_incident_keeps_each_incident_apart() -> None:
    worse_then_fixed = incident("INC-1", act("A1", RESTART, "WORSENED", "storm"),
                                act("A2", RESTART_SHORT, "RESOLVED", "one by one"))
    only_failed = incident("INC-2", act("A1", RESTART, "NO_EFFECT", "same errors"))
    mitigated = incident("INC-3", act("A1", RESTART_SHORT, "MITIGATED", "for a while"),
                         act("A2", RESTART, "NO_EFFECT", "again"))
    [group] = group_fixes(list(recalled(worse_then_fixed, only_failed, mitigated).values()))
    chosen = group.best_per_incident()
    assert {k: v.action_id for k, v in chosen.items()} == {
        "INC-1": "INC-1/A2", "INC-2": "INC-2/A1", "INC-3": "INC-3/A1"}
    assert [v.outcome for v in chosen.values()] == ["RESOLVED", "NO_EFFECT", "MITIGATED"]


def test_a_group_built_by_hand_has_no_members_until_given() -> None:
    group = FixGroup({"flush"})
    assert group.members == []
    assert group.best_per_incident() == {}
    assert FixGroup(set()).members is not group.members
