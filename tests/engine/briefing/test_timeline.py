"""Time in the memory (console/engine/briefing/timeline.py), rule by rule, on hand-built recalls.

Each recall is built straight from incidents (tests/recalls.py: every recalled incident clears
the strong bar, margin weight 0), with the dates, root causes and links each row needs, and is
judged by the verdict as of a fixed ``NOW``. A broken rule names itself: each test asserts one
rule of the recurrence line or of a fix's history, on figures that change when it breaks.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from console.engine.briefing.applicability import ServiceRead
from console.engine.briefing.models import Recurrence
from console.engine.briefing.timeline import (
    ROOT_CAUSE_SHOWN,
    STALE_AFTER,
    age,
    clock,
    day,
    fix_history,
    moment,
    month,
    recurrence_sentence,
    root_cause_lines,
)
from console.engine.briefing.verdict import Verdict, verdict
from store.models import Incident
from store.recall import Recall
from tests.recalls import act, recall_of

HERE = "payments-api"
OTHER = "ledger-api"
ALERT_HERE = ServiceRead(HERE, True)
NO_SERVICE = ServiceRead()
NOW = datetime(2026, 12, 2, tzinfo=UTC)

FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"
OTHER_FIX = "Rolled the feature flag for the new checkout flow back to off"
THIRD_FIX = "Scaled the payments-api deployment from 6 to 12 replicas"


def inc(number: int, *actions: dict[str, Any], when: str | None = None, service: str = HERE,
        root_cause: str | None = None, related: tuple[str, ...] = ()) -> Incident:
    """An incident with a start (``when``, ISO; None: undated), a root cause and links."""
    fields: dict[str, Any] = {
        "id": f"INC-{number}", "title": "Payments API errors after deploy", "service": service,
        "symptoms": "Errors and latency after a deploy", "actions": list(actions),
        "related": list(related)}
    if when is not None:
        fields["started_at"] = when
    if root_cause is not None:
        fields["root_cause"] = root_cause
    return Incident.model_validate(fields)


def did(number: int, when: str | None, text: str = FIX, outcome: str = "RESOLVED",
        **fields: Any) -> Incident:
    """An incident whose one action was ``text`` with ``outcome``."""
    return inc(number, act("A1", text, outcome, f"{outcome.lower()} in INC-{number}"),
               when=when, **fields)


def judge(*incidents: Incident, service: ServiceRead = ALERT_HERE,
          now: datetime | None = NOW) -> Verdict:
    return verdict(recall_of(*incidents), service, now)


def recurs(*incidents: Incident, service: ServiceRead = ALERT_HERE,
           now: datetime | None = NOW) -> Recurrence:
    found = judge(*incidents, service=service, now=now).recurrence
    assert found is not None, "no recurrence"
    return found


def rec_of(judged: Verdict, text: str) -> Any:
    return next(r for r in judged.recommendations if r.action == text)


def undated(recall: Recall) -> Recall:
    """The same recall with every start removed (incidents and their actions)."""
    incidents = tuple(dataclasses.replace(
        i, started_at="", actions=tuple(dataclasses.replace(a, started_at="")
                                        for a in i.actions)) for i in recall.incidents)
    return dataclasses.replace(recall, incidents=incidents)


def with_scores(recall: Recall, scores: dict[str, float], strong: float) -> Recall:
    incidents = tuple(dataclasses.replace(i, score=scores.get(i.incident_id, i.score))
                      for i in recall.incidents)
    return dataclasses.replace(recall, incidents=incidents, strong=strong)


# --- 1. what recurs: two or more strong incidents on one service ---------------------------

def test_one_strong_incident_is_no_recurrence() -> None:
    assert judge(did(1, "2026-01-01T00:00:00Z")).recurrence is None


def test_no_recall_is_no_recurrence() -> None:
    assert judge().recurrence is None


def test_strong_incidents_on_different_services_are_no_recurrence() -> None:
    # No service named: both are strong (no demotion), but on two services — one each.
    judged = judge(did(1, "2026-01-01T00:00:00Z"),
                   did(2, "2026-02-01T00:00:00Z", service=OTHER), service=NO_SERVICE)
    assert {m.match for m in judged.matches.values()} == {"strong"}
    assert judged.recurrence is None


def test_two_strong_incidents_on_one_service_are_a_recurrence_of_two() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"))
    assert found.count == 2 and found.service == HERE


def test_only_strong_incidents_count_not_weak_nor_elsewhere() -> None:
    # INC-3 has no fix in common with the others (a shared fix would make it their family).
    recall = recall_of(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                       inc(3, when="2026-03-01T00:00:00Z"),
                       did(4, "2026-04-01T00:00:00Z", service=OTHER))
    recall = with_scores(recall, {"INC-3": 0.1}, strong=0.5)   # INC-3 weak, INC-4 elsewhere
    judged = verdict(recall, ALERT_HERE, NOW)
    assert judged.matches["INC-3"].match == "weak"
    assert judged.matches["INC-4"].match == "elsewhere"
    assert judged.recurrence is not None
    assert judged.recurrence.count == 2
    assert judged.recurrence.incident_ids == ["INC-1", "INC-2"]
    assert judged.recurrence.last_incident_id == "INC-2"


def test_strong_incidents_must_number_two_before_the_service_is_read() -> None:
    # One strong on HERE, one weak on HERE: the weak one does not make a pair.
    recall = with_scores(recall_of(did(1, "2026-01-01T00:00:00Z"),
                                   inc(2, when="2026-02-01T00:00:00Z")), {"INC-2": 0.1}, 0.5)
    assert verdict(recall, ALERT_HERE, NOW).recurrence is None


def test_a_weak_incident_related_to_a_strong_one_is_strong_and_counted() -> None:
    recall = recall_of(did(1, "2026-01-01T00:00:00Z"),
                       did(2, "2026-02-01T00:00:00Z", related=("INC-1",)))
    recall = with_scores(recall, {"INC-2": 0.1}, strong=0.5)
    found = verdict(recall, ALERT_HERE, NOW).recurrence
    assert found is not None and found.count == 2


def test_the_family_is_on_the_leads_service_not_the_most_common_one() -> None:
    # No service named: all strong. Three bare incidents on OTHER, two on HERE with the fix.
    found = recurs(inc(1, when="2026-01-01T00:00:00Z", service=OTHER),
                   inc(2, when="2026-01-02T00:00:00Z", service=OTHER),
                   inc(3, when="2026-01-03T00:00:00Z", service=OTHER),
                   did(4, "2026-02-01T00:00:00Z"), did(5, "2026-03-01T00:00:00Z"),
                   service=NO_SERVICE)
    assert found.service == HERE and found.count == 2
    assert found.incident_ids == ["INC-4", "INC-5"]


def test_without_a_lead_the_family_is_on_the_service_most_strong_incidents_are_on() -> None:
    found = recurs(inc(1, when="2026-01-01T00:00:00Z"),
                   inc(2, when="2026-01-02T00:00:00Z", service=OTHER),
                   inc(3, when="2026-01-03T00:00:00Z", service=OTHER),
                   service=NO_SERVICE)
    assert found.service == OTHER and found.count == 2


def test_equal_services_without_a_lead_take_the_best_recalled_first() -> None:
    found = recurs(inc(1, when="2026-01-01T00:00:00Z", service=OTHER),
                   inc(2, when="2026-01-02T00:00:00Z"),
                   inc(3, when="2026-01-03T00:00:00Z", service=OTHER),
                   inc(4, when="2026-01-04T00:00:00Z"), service=NO_SERVICE)
    assert found.service == OTHER and found.incident_ids == ["INC-1", "INC-3"]


def test_the_service_is_compared_without_case() -> None:
    found = recurs(inc(1, when="2026-01-01T00:00:00Z", service="Payments-API"),
                   inc(2, when="2026-01-02T00:00:00Z"), inc(3, when="2026-01-03T00:00:00Z",
                                                            service=OTHER),
                   inc(4, when="2026-01-04T00:00:00Z", service=OTHER),
                   inc(5, when="2026-01-05T00:00:00Z", service=OTHER), service=NO_SERVICE)
    # OTHER has three; "Payments-API" and "payments-api" are one service of two.
    assert found.service == OTHER and found.count == 3
    found = recurs(inc(3, when="2026-01-03T00:00:00Z", service=OTHER),
                   inc(1, when="2026-01-01T00:00:00Z", service="Payments-API"),
                   inc(2, when="2026-01-02T00:00:00Z"), service=NO_SERVICE)
    assert found.service == "Payments-API" and found.count == 2


# --- 2. the figures: count, span, the last one, how long ago, the interval -----------------

def test_count_first_last_and_days_since_last_in_time_order_whatever_the_recall_order() -> None:
    found = recurs(did(3, "2026-03-02T12:00:00Z"), did(1, "2026-01-01T00:00:00Z"),
                   did(4, "2026-03-01T00:00:00Z"), did(2, "2026-01-11T00:00:00Z"))
    assert found.count == 4
    assert found.first == "2026-01-01T00:00:00+00:00"
    assert found.last == "2026-03-02T12:00:00+00:00"
    assert found.last_incident_id == "INC-3"
    assert found.incident_ids == ["INC-1", "INC-2", "INC-4", "INC-3"]
    # 2026-03-02T12:00 to 2026-12-02T00:00 is 274.5 days: whole days, rounded down.
    assert found.days_since_last == 274
    assert found.undated == 0


def test_median_interval_with_an_odd_number_of_gaps() -> None:
    # gaps 10, 20, 30.5 days → the middle one
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-01-11T00:00:00Z"),
                   did(3, "2026-01-31T00:00:00Z"), did(4, "2026-03-02T12:00:00Z"))
    assert found.median_interval_days == 20.0


def test_median_interval_with_an_even_number_of_gaps_is_the_mean_of_the_middle_two() -> None:
    # gaps 10, 25.25 days → 17.625, shown to one decimal
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-01-11T00:00:00Z"),
                   did(3, "2026-02-05T06:00:00Z"))
    assert found.median_interval_days == 17.6
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-01-03T12:00:00Z"))
    assert found.median_interval_days == 2.5


def test_the_last_one_after_now_is_zero_days_ago_not_negative() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-06-01T00:00:00Z"),
                   now=datetime(2026, 5, 1, tzinfo=UTC))
    assert found.days_since_last == 0


def test_days_since_last_is_measured_from_now() -> None:
    incidents = (did(1, "2026-01-01T00:00:00Z"), did(2, "2026-04-09T08:55:00Z"))
    assert recurs(*incidents, now=datetime(2026, 4, 19, tzinfo=UTC)).days_since_last == 9
    assert recurs(*incidents, now=datetime(2026, 4, 19, 9, tzinfo=UTC)).days_since_last == 10
    assert recurs(*incidents, now=datetime(2026, 12, 2)).days_since_last == 236  # naive: UTC


def test_undated_members_are_counted_and_said_but_not_in_the_span() -> None:
    found = recurs(did(1, None), did(2, "2026-01-01T00:00:00Z"), did(3, "2026-02-01T00:00:00Z"))
    assert found.count == 3 and found.undated == 1
    assert found.first == "2026-01-01T00:00:00+00:00"
    assert found.last == "2026-02-01T00:00:00+00:00"
    assert found.last_incident_id == "INC-3"
    assert found.incident_ids == ["INC-2", "INC-3", "INC-1"]   # dated in time order, then undated
    assert found.median_interval_days == 31.0


def test_one_dated_member_has_a_last_but_no_interval() -> None:
    found = recurs(did(1, None), did(2, "2026-11-30T00:00:00Z"))
    assert found.first == found.last == "2026-11-30T00:00:00+00:00"
    assert found.days_since_last == 2 and found.median_interval_days is None
    assert found.undated == 1


def test_an_all_undated_recurrence_has_no_span() -> None:
    found = recurs(did(1, None), did(2, None))
    assert found.count == 2 and found.undated == 2
    assert (found.first, found.last, found.last_incident_id, found.days_since_last,
            found.median_interval_days) == (None, None, None, None, None)
    assert found.incident_ids == ["INC-1", "INC-2"]


# --- 3. the same fix every time -------------------------------------------------------------

def test_same_fix_when_one_fix_resolved_every_member() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z"))
    assert found.same_fix is True
    assert found.fix == FIX and found.fix_resolved == 3
    assert sorted(found.fix_action_ids) == ["INC-1/A1", "INC-2/A1", "INC-3/A1"]


def test_a_mitigation_is_not_a_member_closed_by_the_fix() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z", outcome="MITIGATED"))
    assert found.same_fix is False
    assert found.fix == FIX and found.fix_resolved == 2
    assert sorted(found.fix_action_ids) == ["INC-1/A1", "INC-2/A1"]


def test_one_member_closed_differently_is_not_the_same_fix() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z", text=OTHER_FIX))
    assert found.same_fix is False
    assert found.fix == FIX and found.fix_resolved == 2


def test_the_fix_named_is_the_one_that_closed_most_not_the_lead() -> None:
    # FIX resolved 1-3 and failed in 4-5 (net 1); OTHER_FIX resolved 4-5 (net 2): the lead.
    incidents = [did(n, f"2026-0{n}-01T00:00:00Z") for n in (1, 2, 3)]
    incidents += [inc(n, act("A1", FIX, "NO_EFFECT", "nothing"),
                      act("A2", OTHER_FIX, "RESOLVED", "gone"), when=f"2026-0{n}-01T00:00:00Z")
                  for n in (4, 5)]
    judged = judge(*incidents)
    assert judged.lead is not None and judged.lead.recommendation.action == OTHER_FIX
    found = judged.recurrence
    assert found is not None and found.count == 5
    assert found.fix == FIX and found.fix_resolved == 3 and found.same_fix is False


def test_a_fix_resolving_members_only_in_part_with_another_fix_on_the_rest() -> None:
    # Every member resolved, but by two fixes: not "the same fix".
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z", text=OTHER_FIX))
    assert found.same_fix is False and found.fix_resolved == 1


def test_no_fix_resolved_any_member() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z", outcome="MITIGATED"),
                   did(2, "2026-02-01T00:00:00Z", outcome="NO_EFFECT", text=OTHER_FIX))
    assert found.same_fix is False and found.fix is None
    assert found.fix_resolved == 0 and found.fix_action_ids == []
    found = recurs(inc(1, when="2026-01-01T00:00:00Z"), inc(2, when="2026-02-01T00:00:00Z"))
    assert found.same_fix is False and found.fix is None and found.fix_action_ids == []


def test_a_fix_resolving_outside_the_family_does_not_close_it() -> None:
    # No service named: FIX also resolved on OTHER, which is not a member of the HERE family.
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z", service=OTHER),
                   did(4, "2026-03-02T00:00:00Z", service=OTHER, text=THIRD_FIX),
                   did(5, "2026-03-03T00:00:00Z", service=OTHER, text=THIRD_FIX),
                   service=NO_SERVICE)
    assert found.service == HERE and found.count == 2
    assert found.fix_resolved == 2 and found.same_fix is True


def test_the_closing_fix_action_ids_are_the_members_only() -> None:
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-02-01T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z", service=OTHER),
                   did(4, "2026-03-02T00:00:00Z", service=OTHER, text=THIRD_FIX),
                   did(5, "2026-03-03T00:00:00Z", service=OTHER, text=THIRD_FIX),
                   service=NO_SERVICE)
    assert sorted(found.fix_action_ids) == ["INC-1/A1", "INC-2/A1"]


# --- 4. root causes -------------------------------------------------------------------------

def test_root_causes_in_time_order_each_once_blanks_dropped_undated_last() -> None:
    found = recurs(
        did(4, None, root_cause="Undated cause"),
        did(3, "2026-03-01T00:00:00Z", root_cause="  Keys not versioned  "),
        did(1, "2026-01-01T00:00:00Z", root_cause="Keys not versioned"),
        did(2, "2026-02-01T00:00:00Z", root_cause="Callback cache outside the prefix"),
        did(5, "2026-04-01T00:00:00Z"),
        did(6, "2026-05-01T00:00:00Z", root_cause="   "))
    assert found.root_causes == ["Keys not versioned", "Callback cache outside the prefix",
                                 "Undated cause"]


# --- 5. a fix's history: decay and old evidence ----------------------------------------------

def test_a_fix_that_failed_after_its_successes_failed_last_naming_the_failure() -> None:
    judged = judge(did(1, "2026-01-05T00:00:00Z"), did(2, "2026-02-10T00:00:00Z"),
                   did(3, "2026-07-24T16:50:00Z", outcome="NO_EFFECT"),
                   now=datetime(2026, 8, 1, tzinfo=UTC))
    history = rec_of(judged, FIX).history
    assert history.failed_last is True
    assert history.failed_incident_id == "INC-3"
    assert history.failed_on == "2026-07-24T16:50:00+00:00"
    assert history.failed_outcome == "NO_EFFECT"
    assert history.worked == 2
    assert history.first_worked == "2026-01-05T00:00:00+00:00"
    assert history.last_worked == "2026-02-10T00:00:00+00:00"
    assert history.old_evidence is False
    assert history.text == "worked 2× until 2026-02, failed on 2026-07-24 in INC-3"


def test_one_success_then_a_failure_says_once() -> None:
    judged = judge(did(1, "2025-12-10T10:40:00Z"),
                   did(2, "2026-08-28T10:05:00Z", outcome="NO_EFFECT"))
    assert rec_of(judged, FIX).history.text == (
        "worked once until 2025-12, failed on 2026-08-28 in INC-2")


def test_a_failure_before_the_successes_is_not_decay() -> None:
    judged = judge(did(1, "2026-01-05T00:00:00Z", outcome="NO_EFFECT"),
                   did(2, "2026-02-10T00:00:00Z"), did(3, "2026-03-10T00:00:00Z"))
    history = rec_of(judged, FIX).history
    assert history.failed_last is False and history.text == ""
    assert history.failed_on is None and history.failed_incident_id is None
    assert history.failed_outcome is None
    assert history.worked == 2


def test_a_failure_between_successes_is_not_decay() -> None:
    judged = judge(did(1, "2026-01-05T00:00:00Z"),
                   did(2, "2026-02-10T00:00:00Z", outcome="NO_EFFECT"),
                   did(3, "2026-03-10T00:00:00Z"))
    assert rec_of(judged, FIX).history.failed_last is False


def test_a_failure_at_the_same_moment_as_the_last_success_is_not_after_it() -> None:
    judged = judge(did(1, "2026-02-10T09:00:00Z"),
                   did(2, "2026-02-10T09:00:00Z", outcome="NO_EFFECT"))
    assert rec_of(judged, FIX).history.failed_last is False


def test_a_failure_later_the_same_day_is_after_it() -> None:
    judged = judge(did(1, "2026-02-10T09:00:00Z"),
                   did(2, "2026-02-10T11:00:00Z", outcome="NO_EFFECT"))
    history = rec_of(judged, FIX).history
    assert history.failed_last is True and history.failed_incident_id == "INC-2"


def test_the_failure_named_is_the_latest_whatever_the_recall_order() -> None:
    judged = judge(did(4, "2026-06-01T00:00:00Z", outcome="NO_EFFECT"),
                   did(1, "2026-01-05T00:00:00Z"),
                   did(3, "2026-03-01T00:00:00Z", outcome="NO_EFFECT"),
                   did(2, "2026-02-10T00:00:00Z"),
                   now=datetime(2026, 7, 1, tzinfo=UTC))
    history = rec_of(judged, FIX).history
    assert history.failed_incident_id == "INC-4"
    assert history.failed_on == "2026-06-01T00:00:00+00:00"
    assert history.text == "worked 2× until 2026-02, failed on 2026-06-01 in INC-4"


def test_an_undated_failure_is_not_the_most_recent() -> None:
    judged = judge(did(1, "2026-01-05T00:00:00Z"), did(2, None, outcome="NO_EFFECT"))
    assert rec_of(judged, FIX).history.failed_last is False


def test_a_fix_with_no_dated_evidence_has_no_history() -> None:
    judged = judge(did(1, None), did(2, None, outcome="NO_EFFECT"))
    assert rec_of(judged, FIX).history is None


def test_a_weak_failure_is_not_set_against_a_strong_fix() -> None:
    recall = recall_of(did(1, "2026-01-05T00:00:00Z"), did(2, "2026-02-10T00:00:00Z"),
                       did(3, "2026-06-01T00:00:00Z", outcome="NO_EFFECT"))
    recall = with_scores(recall, {"INC-3": 0.1}, strong=0.5)
    history = rec_of(verdict(recall, ALERT_HERE, NOW), FIX).history
    assert history.failed_last is False


def test_a_fix_proven_elsewhere_decays_on_its_failures_elsewhere() -> None:
    # The alert is on HERE; the fix's evidence is all on OTHER ("elsewhere"): its failures there
    # are set against its successes there.
    judged = judge(did(1, "2026-01-05T00:00:00Z", service=OTHER),
                   did(2, "2026-02-10T00:00:00Z", service=OTHER, outcome="NO_EFFECT"))
    rec = rec_of(judged, FIX)
    assert rec.applies == "elsewhere"
    assert rec.history.failed_last is True and rec.history.failed_incident_id == "INC-2"


@pytest.mark.parametrize(("since", "old"), [
    (timedelta(days=364), False),
    (STALE_AFTER, False),                               # exactly 365 days: not yet old
    (STALE_AFTER + timedelta(seconds=1), True),
    (timedelta(days=366), True),
])
def test_old_evidence_past_365_days_from_the_newest_success(since: timedelta, old: bool) -> None:
    newest = datetime(2025, 9, 16, 4, 30, tzinfo=UTC)
    judged = judge(did(1, "2025-03-01T00:00:00Z"), did(2, newest.isoformat()),
                   now=newest + since)
    history = rec_of(judged, FIX).history
    assert history.old_evidence is old
    assert history.failed_last is False
    assert history.text == (
        f"old evidence: last worked 2025-09-16, {age(newest, newest + since)}" if old else "")


def test_a_fix_failed_last_and_old_says_both() -> None:
    judged = judge(did(1, "2025-09-16T04:30:00Z"),
                   did(2, "2026-08-22T03:10:00Z", outcome="NO_EFFECT"))
    history = rec_of(judged, FIX).history
    assert history.failed_last and history.old_evidence
    assert history.text == ("worked once until 2025-09, failed on 2026-08-22 in INC-2; "
                            "old evidence: last worked 2025-09-16, 14 months ago")


def test_decay_changes_neither_state_nor_tier_nor_lead() -> None:
    # One failure lowers the tier once (the count): being the most recent is not a second
    # penalty. The same recall undated judges the same.
    dated = recall_of(did(1, "2025-08-31T20:05:00Z"), did(2, "2025-11-18T19:35:00Z"),
                      did(3, "2026-07-24T16:50:00Z", outcome="NO_EFFECT"),
                      did(4, "2026-07-24T16:50:00Z", text=OTHER_FIX))
    timed, flat = verdict(dated, ALERT_HERE, NOW), verdict(undated(dated), ALERT_HERE, NOW)
    assert rec_of(timed, FIX).history.failed_last is True
    assert rec_of(flat, FIX).history is None
    assert timed.state == flat.state == "proven"
    assert timed.confidence == flat.confidence
    assert timed.confidence.tier == "1" and timed.confidence.failed_strong == 1
    assert [r.action for r in timed.recommendations] == [r.action for r in flat.recommendations]
    assert timed.recommendations[0].action == FIX


# --- 6. fix_history directly: the outcomes it is given ---------------------------------------

def test_fix_history_names_a_worsened_failure() -> None:
    found = fix_history([("INC-1", "2026-01-01T00:00:00Z")],
                        [("INC-2", "2026-02-01T00:00:00Z", "WORSENED")], NOW)
    assert found is not None and found.failed_outcome == "WORSENED"
    assert found.failed_incident_id == "INC-2"


def test_fix_history_of_failures_only_is_neither_decayed_nor_old() -> None:
    found = fix_history([], [("INC-2", "2020-02-01T00:00:00Z", "NO_EFFECT")], NOW)
    assert found is not None
    assert (found.worked, found.first_worked, found.last_worked) == (0, None, None)
    assert not found.failed_last and not found.old_evidence and found.text == ""


def test_fix_history_skips_unreadable_dates() -> None:
    assert fix_history([("INC-1", "not a date")], [("INC-2", "", "NO_EFFECT")], NOW) is None
    found = fix_history([("INC-1", "2026-01-01T00:00:00Z"), ("INC-3", "soon")],
                        [("INC-2", "later", "NO_EFFECT")], NOW)
    assert found is not None and found.worked == 1 and not found.failed_last


def test_fix_history_without_now_measures_from_the_clock() -> None:
    recent = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    found = fix_history([("INC-1", recent)], [], None)
    assert found is not None and found.old_evidence is False
    found = fix_history([("INC-1", "2000-01-01T00:00:00Z")], [], None)
    assert found is not None and found.old_evidence is True


# --- 7. words: ages, sentences, root-cause lines ---------------------------------------------

@pytest.mark.parametrize(("days", "words"), [
    (0, "today"), (1, "yesterday"), (2, "2 days ago"), (14, "14 days ago"),
    (59, "59 days ago"), (60, "2 months ago"), (91, "3 months ago"), (200, "7 months ago"),
    (364, "12 months ago"), (365, "12 months ago"), (400, "13 months ago"),
    (729, "24 months ago"), (730, "2 years ago"), (1094, "2 years ago"), (1095, "3 years ago"),
    (-1, "after now"),
])
def test_age_in_words(days: int, words: str) -> None:
    then = datetime(2024, 1, 1, 12, tzinfo=UTC)
    assert age(then, then + timedelta(days=days, hours=1)) == words


def test_age_of_nothing_and_against_the_clock() -> None:
    assert age(None, NOW) == ""
    assert age(datetime.now(UTC) - timedelta(days=14, hours=1), None) == "14 days ago"
    assert age(datetime(2026, 12, 1, 12, tzinfo=UTC), datetime(2026, 12, 2, 13)) == "yesterday"


def test_moment_reads_iso_text_as_aware_and_refuses_the_rest() -> None:
    assert moment("2026-03-14T02:05:00Z") == datetime(2026, 3, 14, 2, 5, tzinfo=UTC)
    assert moment("2026-03-14T02:05:00") == datetime(2026, 3, 14, 2, 5, tzinfo=UTC)
    assert moment("2026-03-14T04:05:00+02:00") == datetime(2026, 3, 14, 2, 5, tzinfo=UTC)
    assert moment("2026-03-14T04:05:00+02:00").utcoffset() == timedelta(hours=2)  # type: ignore[union-attr]
    assert moment("") is None and moment(None) is None and moment("yesterday") is None


def test_clock_day_and_month() -> None:
    assert clock(datetime(2026, 1, 2)) == datetime(2026, 1, 2, tzinfo=UTC)
    east = datetime(2026, 1, 2, 2, tzinfo=timezone(timedelta(hours=2)))
    assert clock(east) == datetime(2026, 1, 2, tzinfo=UTC)
    assert clock(east).utcoffset() == timedelta(hours=2)
    before = datetime.now(UTC)
    assert before <= clock(None) <= datetime.now(UTC)
    assert day(datetime(2026, 3, 4, 23, 59, tzinfo=UTC)) == "2026-03-04"
    assert month(datetime(987, 3, 4, tzinfo=UTC)) == "0987-03"


def shaped(**fields: Any) -> Recurrence:
    base: dict[str, Any] = {
        "count": 5, "first": "2025-01-27T15:12:00+00:00", "last": "2026-04-09T08:55:00+00:00",
        "last_incident_id": "INC-2077", "days_since_last": 236, "median_interval_days": 115.7,
        "same_fix": True, "fix": FIX, "fix_resolved": 5, "undated": 0}
    return Recurrence(**{**base, **fields})


def test_the_recurrence_sentence_of_the_same_fix_every_time() -> None:
    assert recurrence_sentence(shaped()) == (
        "Seen 5 times before, 2025-01 to 2026-04 (about every 116 days). "
        "Last time: INC-2077 on 2026-04-09, 236 days ago. "
        f"“{FIX}” resolved it every time (5 of 5) — it resolves it, does not keep it away: "
        "the recorded root causes show what was never fixed.")


def test_the_recurrence_sentence_of_a_fix_that_closed_some() -> None:
    said = recurrence_sentence(shaped(count=3, same_fix=False, fix_resolved=2))
    assert said.endswith(f"“{FIX}” resolved 2 of the 3; the other was closed differently.")
    said = recurrence_sentence(shaped(count=4, same_fix=False, fix_resolved=2))
    assert said.endswith(f"“{FIX}” resolved 2 of the 4; the others were closed differently.")


def test_the_recurrence_sentence_without_a_fix_dates_or_interval() -> None:
    said = recurrence_sentence(shaped(count=2, first=None, last=None, last_incident_id=None,
                                      days_since_last=None, median_interval_days=None,
                                      same_fix=False, fix=None, fix_resolved=0, undated=2))
    assert said == "Seen 2 times before. 2 of them undated. No recorded fix resolved them."


@pytest.mark.parametrize(("days", "median", "said"), [
    (0, 0.4, "(about every day). Last time: INC-2077 on 2026-04-09, today."),
    (1, 1.4, "(about every day). Last time: INC-2077 on 2026-04-09, yesterday."),
    (2, 1.6, "(about every 2 days). Last time: INC-2077 on 2026-04-09, 2 days ago."),
])
def test_the_recurrence_sentence_says_short_intervals_and_ages_in_words(
        days: int, median: float, said: str) -> None:
    assert said in recurrence_sentence(shaped(days_since_last=days, median_interval_days=median))


def test_the_recurrence_sentence_of_a_last_time_without_an_age() -> None:
    said = recurrence_sentence(shaped(days_since_last=None, undated=1))
    assert "Last time: INC-2077 on 2026-04-09. 1 of them undated. " in said


def test_root_cause_lines_are_flattened_and_cut_to_one_line() -> None:
    exact = "x" * ROOT_CAUSE_SHOWN
    longer = "word " * 40   # 200 characters
    lines = root_cause_lines(shaped(root_causes=["Keys\n  not   versioned", exact, longer]))
    assert lines[0] == "Keys not versioned"
    assert lines[1] == exact
    assert len(lines[2]) == ROOT_CAUSE_SHOWN and lines[2] == ("word " * 32).rstrip() + "…"
    # cut on a space: the space does not stay before the ellipsis
    spaced = "a" * (ROOT_CAUSE_SHOWN - 2) + " " + "b" * 10
    assert root_cause_lines(shaped(root_causes=[spaced])) == ["a" * (ROOT_CAUSE_SHOWN - 2) + "…"]


# --- 8. rules the mutation run found unpinned --------------------------------------------------

def test_the_interval_is_in_days_of_86400_seconds() -> None:
    # a gap of 10 days 1 h 12 min is 10.05 days: shown as 10.1
    found = recurs(did(1, "2026-01-01T00:00:00Z"), did(2, "2026-01-11T01:12:00Z"))
    assert found.median_interval_days == 10.1


def test_history_is_ordered_by_date_not_by_incident_id() -> None:
    # Ids run against time: INC-9 is the oldest success, INC-1 the newest failure.
    judged = judge(did(9, "2026-01-05T00:00:00Z"), did(5, "2026-03-10T00:00:00Z"),
                   did(7, "2026-04-01T00:00:00Z", outcome="NO_EFFECT"),
                   did(1, "2026-06-01T00:00:00Z", outcome="NO_EFFECT"),
                   now=datetime(2026, 7, 1, tzinfo=UTC))
    history = rec_of(judged, FIX).history
    assert history.first_worked == "2026-01-05T00:00:00+00:00"
    assert history.last_worked == "2026-03-10T00:00:00+00:00"
    assert history.failed_incident_id == "INC-1"
    assert history.failed_on == "2026-06-01T00:00:00+00:00"
    found = fix_history([("INC-1", "2026-03-10T00:00:00Z"), ("INC-2", "2026-01-05T00:00:00Z")],
                        [("INC-3", "2026-02-01T00:00:00Z", "NO_EFFECT")], NOW)
    assert found is not None and found.failed_last is False   # INC-1 is the newest success


def test_a_fix_that_resolved_only_outside_the_family_is_not_its_fix() -> None:
    # No service named, all strong. The lead is a mitigation on HERE (net 0, two incidents),
    # so the family is HERE's; OTHER_FIX resolved once on OTHER and failed twice there (net −1).
    judged = judge(did(1, "2026-01-01T00:00:00Z", outcome="MITIGATED"),
                   did(2, "2026-02-01T00:00:00Z", outcome="MITIGATED"),
                   did(3, "2026-03-01T00:00:00Z", text=OTHER_FIX, service=OTHER),
                   did(4, "2026-04-01T00:00:00Z", text=OTHER_FIX, outcome="NO_EFFECT",
                       service=OTHER),
                   did(5, "2026-05-01T00:00:00Z", text=OTHER_FIX, outcome="NO_EFFECT",
                       service=OTHER), service=NO_SERVICE)
    assert judged.lead is not None and judged.lead.recommendation.action == FIX
    found = judged.recurrence
    assert found is not None and found.service == HERE and found.count == 2
    assert found.fix is None and found.fix_resolved == 0 and found.fix_action_ids == []
    assert found.same_fix is False
    assert recurrence_sentence(found).endswith("No recorded fix resolved them.")


def test_the_sentence_needs_both_ends_of_the_span_and_a_last_day() -> None:
    # Figures only half there (a hand-edited JSON, say): no span, no "last time", no crash.
    half = shaped(first="2025-01-27T15:12:00+00:00", last=None, median_interval_days=None,
                  days_since_last=None)
    assert recurrence_sentence(half).startswith("Seen 5 times before. “")
    half = shaped(first=None, last="2026-04-09T08:55:00+00:00", median_interval_days=None)
    assert recurrence_sentence(half).startswith(
        "Seen 5 times before. Last time: INC-2077 on 2026-04-09, 236 days ago. “")
    half = shaped(last_incident_id=None, median_interval_days=None)
    assert recurrence_sentence(half).startswith("Seen 5 times before, 2025-01 to 2026-04. “")
