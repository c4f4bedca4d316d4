"""A verification pass end to end in the engine (console/engine/verification/passes.py): when it is
needed, the escalation, declared probes in the plan, the artifact, carrying into a postmortem."""

from __future__ import annotations

import json
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from console.engine.briefing.alert import parse_alert
from console.engine.engine import TriageEngine
from console.engine.verification.method import verify
from console.engine.verification.passes import (
    NEEDS_CONFIRMATION,
    VerificationArtifact,
    alert_service,
    carry_rows,
    conclude,
    escalate_late,
    needed,
    not_needed,
    parse_answers,
    plan,
    run_pass,
    write_artifact,
)
from console.engine.verification.probe_run import ProbeRun
from console.engine.verification.probes import DeclaredProbe
from store.models import ActionOutcome
from store.recall import Recall
from tests.engine.verification.test_method import (
    DRAIN,
    FLUSH,
    LEXICAL_TWO,
    NOW,
    PROVEN,
    RESTART,
    WITHOUT_INC_7,
    WRONG_DIRECTION,
    briefed,
    by_check,
    flushed,
    hybrid,
    inc,
)
from tests.recalls import act, recall_of

# The re-recall of WRONG_DIRECTION (an alert naming no service, like the bundled F6 pair)
# without INC-7: INC-8's own record points to another fix.
ELSEWHERE = WITHOUT_INC_7


class Rerecall:
    """The re-recall the engine would run (TriageEngine.rerecall), answered from a fixed recall,
    counting its calls and keeping what it was asked to hide."""

    def __init__(self, answer: Recall | None) -> None:
        self.answer = answer
        self.hidden: list[frozenset[str]] = []

    def __call__(self, hidden: frozenset[str]) -> Recall:
        self.hidden.append(hidden)
        assert self.answer is not None
        return self.answer


def probe(tmp_path: Path, name: str = "conns", **fields: Any) -> DeclaredProbe:
    script = tmp_path / f"{name}.py"
    script.write_text("import sys\nprint('ok ' + ' '.join(sys.argv[1:]))\n")
    data: dict[str, Any] = {
        "name": name, "description": "connections in use",
        "question": "Is the connection count of {service} below its limit?",
        "argv": [sys.executable, str(script), "--service={service}"],
        "params": {"service": {"type": "service"}}, "confirmed_if": "^ok "}
    data.update(fields)
    return DeclaredProbe.model_validate(data)


# --- needed? ---------------------------------------------------------------------------------

def test_verification_is_needed_below_85_only() -> None:
    proven = briefed(PROVEN)
    assert proven.confidence.value >= 85 and not needed(proven)
    result = not_needed(proven)
    assert result["status"] == "not_needed" and "--verify=always" in result["reason"]
    assert needed(briefed(LEXICAL_TWO))


# --- escalation ------------------------------------------------------------------------------

def test_a_suspicious_direction_escalates_to_a_re_recall_without_the_anchors() -> None:
    rerecall = Rerecall(ELSEWHERE)
    result = verify(briefed(WRONG_DIRECTION), WRONG_DIRECTION, alert_service=None,
                    now=NOW, rerecall=rerecall)
    assert rerecall.hidden == [frozenset({"INC-7"})]
    again = by_check(result, "independent re-recall")
    assert again["result"] == "refuted" and DRAIN in again["found"]
    assert result["disposition"] == "overturn"
    assert f"consider “{DRAIN}” (INC-8/A2 RESOLVED)" in result["conclusion"]


def test_a_re_recall_that_finds_the_same_fix_confirms_it() -> None:
    rerecall = Rerecall(recall_of(flushed("INC-9")))
    recall = recall_of(inc("INC-1", act("A1", FLUSH, "RESOLVED", "Gone"), service="billing"))
    result = verify(briefed(recall), recall, alert_service="payments-api", now=NOW,
                    rerecall=rerecall)
    assert by_check(result, "independent re-recall")["result"] == "confirmed"


def test_a_well_supported_briefing_never_escalates() -> None:
    rerecall = Rerecall(ELSEWHERE)
    result = verify(briefed(PROVEN), PROVEN, alert_service="payments-api", now=NOW,
                    rerecall=rerecall)
    assert rerecall.hidden == []
    assert not [q for q in result["questions"] if q["check"] == "rerecall"]


def test_a_re_recall_with_nothing_to_offer_is_unknown_with_why() -> None:
    result = verify(briefed(WRONG_DIRECTION), WRONG_DIRECTION, alert_service=None,
                    now=NOW, rerecall=Rerecall(recall_of()))
    again = by_check(result, "independent re-recall")
    assert again["result"] == "unknown" and "no other fix" in again["missing"]


def test_a_key_fact_refuted_by_the_engineer_escalates_once() -> None:
    recall = LEXICAL_TWO
    made = plan(briefed(recall), recall, service="payments-api", now=NOW,
                rerecall=Rerecall(ELSEWHERE))
    assert not [a for a in made.answered if a.question.check == "rerecall"]
    symptoms = next(q for q in made.engineer if "symptoms" in q.text)
    rerecall = Rerecall(ELSEWHERE)
    escalate_late(made, {symptoms.id: "no"}, {}, rerecall)
    escalate_late(made, {symptoms.id: "no"}, {}, rerecall)
    assert len(rerecall.hidden) == 1
    assert [a.result.result for a in made.answered if a.question.check == "rerecall"] == [
        "refuted"]


# --- the newest evidence decides staleness ---------------------------------------------------

def test_evidence_is_stale_only_when_its_newest_incident_is() -> None:
    recall = hybrid(recall_of(flushed("INC-1", started_at="2024-01-01T00:00:00Z"),
                              flushed("INC-2", started_at="2026-10-01T00:00:00Z")))
    fresh = verify(briefed(recall), recall, alert_service="payments-api", now=NOW)
    assert not [q for q in fresh["questions"] if q["check"] == "evidence_age"]
    old = hybrid(recall_of(flushed("INC-1", started_at="2024-01-01T00:00:00Z"),
                           flushed("INC-2", started_at="2024-06-01T00:00:00Z")))
    stale = verify(briefed(old), old, alert_service="payments-api", now=NOW)
    age = next(q for q in stale["questions"] if q["check"] == "evidence_age")
    assert "INC-2" in age["text"] and age["result"] == "refuted"


# --- declared probes in the plan -------------------------------------------------------------

def test_a_declared_probe_is_asked_with_its_argv_fixed_and_waits_for_confirmation(
        tmp_path: Path) -> None:
    declared = probe(tmp_path)
    made = plan(briefed(LEXICAL_TWO), LEXICAL_TWO, service="payments-api", now=NOW,
                probes=[declared])
    (asked,) = made.declared
    assert asked.argv[-1] == "--service=payments-api"
    result = conclude(made, {}, {})
    record = next(q for q in result["questions"] if q["probe"] == "declared")
    assert record["result"] == "unknown" and record["missing"].startswith(NEEDS_CONFIRMATION)
    assert record["argv"] == list(asked.argv)
    assert record["text"] == "Is the connection count of payments-api below its limit?"


def test_an_allowed_probe_runs_and_its_confirmation_is_a_new_layer(tmp_path: Path) -> None:
    result, _ = run_pass(briefed(LEXICAL_TWO), LEXICAL_TWO, service="payments-api",
                         data_dir=tmp_path / "data", probes=[probe(tmp_path)],
                         allowed={"conns"}, now=NOW)
    record = next(q for q in result["questions"] if q["probe"] == "declared")
    assert record["result"] == "confirmed" and record["output"].startswith("ok --service=")
    assert "probe" in result["confidence"]["derivation"]


def test_probes_for_other_services_and_unfillable_ones_are_not_asked(tmp_path: Path) -> None:
    other = probe(tmp_path, "other", services=["search-api"])
    needs_more = probe(tmp_path, "window", question="Is {service} quiet over {window}?",
                       argv=[sys.executable, "-c", "pass", "{service}", "{window}"],
                       params={"service": {"type": "service"}, "window": {"type": "duration"}})
    made = plan(briefed(LEXICAL_TWO), LEXICAL_TWO, service="payments-api", now=NOW,
                probes=[other, needs_more])
    assert made.declared == []
    assert len(made.skipped) == 1 and made.skipped[0].startswith("window:")
    assert "window" in made.skipped[0]


def test_a_bundled_question_in_probes_yaml_is_refused_when_declared(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="more than one thing"):
        probe(tmp_path, "bundled", question="Is {service} up and did the error rate drop?")


# --- the artifact ----------------------------------------------------------------------------

def test_the_artifact_holds_the_whole_pass_and_validates(tmp_path: Path) -> None:
    result, _ = run_pass(briefed(WRONG_DIRECTION), WRONG_DIRECTION, service=None,
                         data_dir=tmp_path, rerecall=Rerecall(ELSEWHERE), now=NOW)
    path = Path(result["artifact"])
    assert path.parent == tmp_path / "verifications"
    artifact = VerificationArtifact.model_validate_json(path.read_text())
    assert artifact.disposition == result["disposition"] == "overturn"
    assert [q.id for q in artifact.questions] == [q["id"] for q in result["questions"]]
    assert artifact.confidence.value == result["confidence"]["value"]
    audit = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert audit[-1]["event"] == "verification" and audit[-1]["artifact"] == str(path)


def test_an_invalid_result_is_a_failed_pass_and_writes_nothing(tmp_path: Path) -> None:
    result = verify(briefed(LEXICAL_TWO), LEXICAL_TWO, alert_service="payments-api", now=NOW)
    result["confidence"]["value"] = result["confidence"]["cap"] + 1  # above its own cap
    written = write_artifact(result, briefed(LEXICAL_TWO), LEXICAL_TWO, tmp_path, NOW)
    assert written["status"] == "failed" and "cap" in written["error"]
    assert written["disposition"] is None and written["questions"] == []
    assert not (tmp_path / "verifications").exists()


def test_maintain_with_a_refuted_question_is_not_a_valid_artifact(tmp_path: Path) -> None:
    result = verify(briefed(WRONG_DIRECTION), WRONG_DIRECTION, alert_service=None,
                    now=NOW)
    assert [q["check"] for q in result["questions"] if q["result"] == "refuted"] == [
        "second_incident", "no_worsened"]
    result["disposition"] = "maintain"
    written = write_artifact(result, briefed(WRONG_DIRECTION), WRONG_DIRECTION, tmp_path, NOW)
    assert written["status"] == "failed" and "refuted" in written["error"]


def test_an_artifact_dir_that_is_a_file_fails_the_pass_and_names_it(tmp_path: Path) -> None:
    (tmp_path / "verifications").write_text("not a folder")
    written = write_artifact(verify(briefed(LEXICAL_TWO), LEXICAL_TWO, now=NOW),
                             briefed(LEXICAL_TWO), LEXICAL_TWO, tmp_path, NOW)
    assert written["status"] == "failed" and "verifications" in written["error"]
    assert (tmp_path / "verifications").read_text() == "not a folder"


def test_a_crash_in_the_pass_is_a_failed_verification_not_a_traceback(tmp_path: Path) -> None:
    def broken(hidden: frozenset[str]) -> Recall:
        raise RuntimeError("index went away")

    result, made = run_pass(briefed(WRONG_DIRECTION), WRONG_DIRECTION, service=None,
                            data_dir=tmp_path, rerecall=broken, now=NOW)
    assert made is None and result["status"] == "failed"
    assert "index went away" in result["error"] and "unchanged" in result["error"]


# --- answers and services --------------------------------------------------------------------

def test_answers_parse_and_refuse_anything_else() -> None:
    assert parse_answers(["abc=YES", "def=no", "0a1=unknown"]) == {
        "abc": "yes", "def": "no", "0a1": "unknown"}
    for bad in ("abc", "abc=maybe", "=yes", "abc:yes"):
        with pytest.raises(ValueError, match="QID=yes"):
            parse_answers([bad])


def test_the_alert_service_comes_from_its_label_or_the_one_service_it_names() -> None:
    services = ["payments-api", "checkout-service", "search-api"]
    assert alert_service(parse_alert("payments-api KeyError after deploy"), services) == \
        "payments-api"
    assert alert_service(parse_alert("payments-api and search-api both slow"), services) is None
    assert alert_service(parse_alert("something is slow"), services) is None
    labelled = parse_alert(json.dumps({"alerts": [{"labels": {
        "alertname": "Slow", "service": "ledger-api"}, "annotations": {}}]}))
    assert alert_service(labelled, services) == "ledger-api"


# --- into the postmortem ---------------------------------------------------------------------

def test_carried_rows_are_verify_checks_and_the_refuted_fix_pre_filled() -> None:
    result = verify(briefed(WRONG_DIRECTION), WRONG_DIRECTION, alert_service=None,
                    now=NOW, rerecall=Rerecall(ELSEWHERE))
    assert result["disposition"] == "overturn"
    rows = carry_rows(result, briefed(WRONG_DIRECTION))
    settled = [q for q in result["questions"] if q["result"] != "unknown"]
    checks = [r for r in rows if r.kind == "verify"]
    assert [r.id for r in rows] == [f"A{n}" for n in range(1, len(rows) + 1)]
    assert len(checks) == len(settled)
    for q, row in zip(settled, checks, strict=True):
        assert row.outcome is ActionOutcome.NO_EFFECT
        assert q["text"] in row.explanation and q["result"] in row.explanation
        assert q["evidence_sha256"][:16] in row.explanation
    (fix,) = [r for r in rows if r.kind != "verify"]
    assert fix.action == RESTART and fix.outcome is ActionOutcome.WORSENED
    assert fix.confirmed is False


def test_nothing_refuted_carries_no_pre_filled_fix() -> None:
    result = verify(briefed(PROVEN), PROVEN, alert_service="payments-api", now=NOW)
    rows = carry_rows(result, briefed(PROVEN))
    assert rows and all(r.kind == "verify" for r in rows)


def test_a_declared_probe_run_is_carried_with_its_hash(tmp_path: Path) -> None:
    made = plan(briefed(LEXICAL_TWO), LEXICAL_TWO, service="payments-api", now=NOW,
                probes=[probe(tmp_path)])
    (asked,) = made.declared
    run = ProbeRun("refuted", "", "ok", False, 0, "f" * 64, asked.argv, 0.1, ())
    result = conclude(made, {}, {asked.question.id: run})
    rows = carry_rows(result, briefed(LEXICAL_TWO))
    assert any("ffffffffffffffff" in r.explanation and "refuted" in r.explanation
               for r in rows)


# --- every stored text makes a valid question ------------------------------------------------

def test_every_bundled_incident_verifies_as_its_own_alert(readonly_engine: TriageEngine,
                                                           tmp_path: Path) -> None:
    """Questions quote stored actions, symptoms and causes: none of the bundled memory's may
    make a question refuse itself (a cause holding "(…) and …" once failed the whole pass)."""
    assert readonly_engine.memory is not None
    for incident in readonly_engine.memory.incidents:
        routed = readonly_engine.brief(parse_alert(
            f"{incident.service}: {incident.symptoms}"))
        result, _ = run_pass(routed.briefing, routed.recall, service=incident.service,
                             data_dir=tmp_path, now=NOW,
                             rerecall=partial(readonly_engine.rerecall, routed.alert.text))
        assert result["status"] == "done", (incident.id, result.get("error"))


# --- game day ---------------------------------------------------------------------------------

def test_game_day_is_read_from_the_environment_and_tags_every_audit_line(tmp_path: Path) -> None:
    from console.engine.briefing.audit import AuditLog
    from console.engine.config import Settings

    assert Settings.from_env({"TRIAGE_DRILL": " Yes "}).game_day
    assert not Settings.from_env({"TRIAGE_DRILL": "0"}).game_day
    log = AuditLog(tmp_path / "audit.jsonl", tags={"drill": True, "drill_id": "gd-1"})
    log.append({"event": "briefing_shown"})
    line = json.loads((tmp_path / "audit.jsonl").read_text())
    assert line["drill"] is True and line["drill_id"] == "gd-1"
    assert line["event"] == "briefing_shown"
