"""The headline issue end to end: `triage brief --json` over the bundled memory, offline.

Applicability decides what a user reads: a fix proven on another service is not proven here, a
fix that made things worse on the alert's own service is a warning and never advice, and a
weak match proves nothing. Each alert runs once through the real CLI entry point (in process,
a real LanceDB index in a tmp data dir, no model configured); the tests read its JSON.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from console.__main__ import main
from tests.conftest import _MACHINE_ENV, BUNDLED_INCIDENTS

LEDGER = ("statement timeout errors: queries timing out after 30s, canceling statement due to "
          "statement timeout (service ledger-api)")
KEYERROR = "payments service KeyError: 'amount' after deploy"
KEYERROR_INCIDENTS = {"INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"}
CACHE_FIX = "Flushed the payment-schema cache and redeployed with versioned cache keys"
CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"
QUOKKA = "quokka-queue consumers stalled"
ORDERS = "orders-db disk filling up, pg_wal growing, disk-full forecast 100% in 60 minutes"
ORDERS_VARIANTS = {
    "prefix": "transactional orders-db disk filling up, pg_wal growing, disk-full forecast 100% "
              "in 60 minutes",
    "middle": "orders-db disk filling up, pg_wal growing, transactional disk-full forecast 100% "
              "in 60 minutes",
    "suffix": ORDERS + " transactional",
}
TIMEOUT_RAISE = "Raised the database statement timeout"

Doc = dict[str, Any]


def _brief(alert: str, data_dir: Path, incidents: Path) -> Doc:
    """``triage brief ALERT --json`` in process, with its own data dir and memory."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as env:
        for name in _MACHINE_ENV:
            env.delenv(name, raising=False)
        env.setenv("TRIAGE_DATA_DIR", str(data_dir))
        env.setenv("TRIAGE_INCIDENTS", str(incidents))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(["brief", alert, "--json"])
    assert rc == 0, err.getvalue()
    assert "Traceback" not in err.getvalue()
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def brief(bundled_index_dir: Path, tmp_path_factory: pytest.TempPathFactory
          ) -> Callable[[str], Doc]:
    """``brief(alert)`` over the bundled memory, each alert run once per module."""
    data_dir = tmp_path_factory.mktemp("headline") / "data"
    shutil.copytree(bundled_index_dir, data_dir)
    cache: dict[str, Doc] = {}

    def run(alert: str) -> Doc:
        if alert not in cache:
            cache[alert] = _brief(alert, data_dir, BUNDLED_INCIDENTS)
        return cache[alert]

    return run


@pytest.fixture(scope="module")
def all_briefs(brief: Callable[[str], Doc]) -> dict[str, Doc]:
    alerts = [LEDGER, KEYERROR, CHECKOUT, QUOKKA, ORDERS, *ORDERS_VARIANTS.values()]
    return {alert: brief(alert) for alert in alerts}


def records_by_action(doc: Doc) -> dict[str, Doc]:
    return {r["action_id"]: r for r in doc["recalled"] if r["action_id"]}


def lead_evidence(doc: Doc) -> Doc:
    assert doc["recommendations"], f"no recommendation: {doc['state']}"
    return doc["recommendations"][0]["evidence"][0]


# --- the ledger alert: a fix resolved elsewhere made things worse here ------------------------

def test_ledger_alert_leads_with_ledger_apis_own_mitigation(brief: Callable[[str], Doc]) -> None:
    doc = brief(LEDGER)
    assert doc["alert_service"] == "ledger-api"
    lead = lead_evidence(doc)
    assert (lead["incident_id"], lead["action_id"]) == ("INC-2318", "INC-2318/A2")
    assert doc["recommendations"][0]["action"] == "Moved the reconciliation queries to the read replica"
    # (Weak since issue 33: INC-2305, resolved by the raise that made INC-2318 worse, matches
    # about as well and takes the margin PROVEN needs; the lead is still ledger-api's own.)
    assert doc["recommendations"][0]["applies"] == "weak"


def test_ledger_alert_never_recommends_raising_the_statement_timeout(
        brief: Callable[[str], Doc]) -> None:
    doc = brief(LEDGER)
    recalled = records_by_action(doc)
    assert "INC-2305/A2" in recalled, "the reporting-api fix must be recalled for this to mean anything"
    for recommendation in doc["recommendations"]:
        assert TIMEOUT_RAISE not in recommendation["action"]
        for evidence in recommendation["evidence"]:
            assert TIMEOUT_RAISE not in recalled[evidence["action_id"]]["action"], evidence
    assert doc["state"] != "proven"


def test_ledger_alert_warns_once_where_the_timeout_raise_resolved_and_where_it_hurt(
        brief: Callable[[str], Doc]) -> None:
    doc = brief(LEDGER)
    about_timeout = [w for w in doc["warnings"] if TIMEOUT_RAISE in w["text"]]
    assert len(about_timeout) == 1, [w["text"] for w in doc["warnings"]]
    warning = about_timeout[0]
    assert "resolved on reporting-api (INC-2305), made things worse here (INC-2318)" in warning["text"]
    assert (warning["incident_id"], warning["action_id"]) == ("INC-2318", "INC-2318/A1")


# --- the KeyError alert: proven, 5 of 5 -----------------------------------------------------

def test_keyerror_alert_is_proven_at_98_by_the_cache_flush_from_five_incidents(
        brief: Callable[[str], Doc]) -> None:
    doc = brief(KEYERROR)
    assert doc["state"] == "proven"
    assert doc["confidence"]["value"] == 98 and doc["confidence"]["tier"] == "3+"
    assert doc["confidence"]["proven"] == 5 and doc["confidence"]["failed_strong"] == 0
    lead = doc["recommendations"][0]
    assert lead["action"] == CACHE_FIX
    assert {e["incident_id"] for e in lead["evidence"]} == KEYERROR_INCIDENTS
    assert {e["outcome"] for e in lead["evidence"]} == {"RESOLVED"}
    assert lead["applies"] == "strong" and lead["proven_on"] == ["payments-api"]
    # "payments service" names payments-api by its words (assumed, and said so): the five
    # payments-api incidents stay the same failure.
    assert doc["alert_service"] == "payments-api"
    assert doc["input"]["service_read"]["how"] == "alias"
    assert {r["match"] for r in doc["recalled"] if r["incident_id"] in KEYERROR_INCIDENTS} == {
        "strong"}


# --- the checkout alert: proven on payments-api only -------------------------------------------

def test_checkout_alert_keeps_the_restart_warning_and_is_proven_elsewhere_only(
        brief: Callable[[str], Doc]) -> None:
    doc = brief(CHECKOUT)
    assert "INC-2041/A1" in [w["action_id"] for w in doc["warnings"]]
    assert doc["state"] == "unproven"
    confidence = doc["confidence"]
    assert 35 <= confidence["value"] <= 50
    assert confidence["proven"] == 0 and confidence["proven_elsewhere"] >= 1
    assert "proven on other services only" in confidence["explanation"]
    lead = doc["recommendations"][0]
    assert lead["evidence"][0]["incident_id"] == "INC-2041"
    assert lead["applies"] == "elsewhere" and lead["proven_on"] == ["payments-api"]
    assert {r["match"] for r in doc["recalled"] if r["incident_id"] == "INC-2041"} == {"elsewhere"}


def test_checkout_alert_without_inc_2041_in_memory_is_not_proven(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("without-2041")
    items = yaml.safe_load(BUNDLED_INCIDENTS.read_text(encoding="utf-8"))
    kept = [item for item in items if item["id"] != "INC-2041"]
    assert len(kept) == len(items) - 1
    incidents = folder / "incidents.yaml"
    incidents.write_text(yaml.safe_dump(kept, sort_keys=False, allow_unicode=True),
                         encoding="utf-8")
    doc = _brief(CHECKOUT, folder / "data", incidents)
    assert "INC-2041" not in {r["incident_id"] for r in doc["recalled"]}
    assert doc["state"] != "proven"
    assert doc["confidence"]["value"] < 55


# --- a weak match proves nothing --------------------------------------------------------------

def test_quokka_alert_is_not_proven(brief: Callable[[str], Doc]) -> None:
    doc = brief(QUOKKA)
    assert doc["state"] != "proven"
    assert doc["confidence"]["value"] <= 30
    assert "strong" not in {r["match"] for r in doc["recalled"]}


# --- one extra word does not change the lead -----------------------------------------------

@pytest.mark.parametrize("where", sorted(ORDERS_VARIANTS))
def test_an_extra_word_keeps_the_orders_db_lead(brief: Callable[[str], Doc], where: str) -> None:
    plain, worded = brief(ORDERS), brief(ORDERS_VARIANTS[where])
    assert plain["state"] == "proven", "the plain alert is the baseline: proven on orders-db"
    assert lead_evidence(worded)["action_id"] == lead_evidence(plain)["action_id"]
    assert worded["state"] == plain["state"]


# --- the JSON contract of the issue, on every brief -------------------------------------------

def test_every_recalled_record_carries_one_match_per_incident(all_briefs: dict[str, Doc]) -> None:
    for alert, doc in all_briefs.items():
        assert doc["recalled"], alert
        per_incident: dict[str, set[str]] = {}
        for record in doc["recalled"]:
            assert record["match"] in ("strong", "elsewhere", "weak"), (alert, record)
            per_incident.setdefault(record["incident_id"], set()).add(record["match"])
        assert all(len(m) == 1 for m in per_incident.values()), (alert, per_incident)


def test_recommendations_carry_applies_and_proven_on_from_their_evidence(
        all_briefs: dict[str, Doc]) -> None:
    rank = {"weak": 0, "elsewhere": 1, "strong": 2}
    for alert, doc in all_briefs.items():
        records = records_by_action(doc)
        for recommendation in doc["recommendations"]:
            evidence = [records[e["action_id"]] for e in recommendation["evidence"]]
            assert recommendation["applies"] == max((r["match"] for r in evidence),
                                                    key=rank.__getitem__), (alert, recommendation)
            assert recommendation["proven_on"] == sorted(
                {r["service"] for r in evidence if r["outcome"] == "RESOLVED"}), alert


def test_confidence_carries_failed_strong_and_proven_elsewhere(all_briefs: dict[str, Doc]) -> None:
    for alert, doc in all_briefs.items():
        confidence = doc["confidence"]
        assert isinstance(confidence["failed_strong"], int), alert
        assert isinstance(confidence["proven_elsewhere"], int), alert
        assert confidence["failed_strong"] >= 0 and confidence["proven_elsewhere"] >= 0
        if doc["state"] == "proven":
            assert confidence["proven"] - confidence["failed_strong"] >= 1, (alert, confidence)


def test_tried_without_effect_lists_no_effect_actions_of_strong_incidents(
        all_briefs: dict[str, Doc]) -> None:
    seen = 0
    for alert, doc in all_briefs.items():
        records = records_by_action(doc)
        for entry in doc["tried_without_effect"]:
            assert set(entry) >= {"text", "incident_id", "action_id", "explanation"}, entry
            record = records[entry["action_id"]]
            assert record["outcome"] == "NO_EFFECT" and record["match"] == "strong", (alert, entry)
            assert entry["incident_id"] == record["incident_id"]
            assert entry["text"] == record["action"]
            assert entry["explanation"] == record["explanation"] and entry["explanation"]
            seen += 1
    assert {t["action_id"] for t in all_briefs[KEYERROR]["tried_without_effect"]} >= {
        "INC-1518/A2"}  # rolled back payments-api: NO_EFFECT in a strong incident
    assert seen


def test_nothing_that_made_things_worse_here_is_recommended(all_briefs: dict[str, Doc]) -> None:
    for alert, doc in all_briefs.items():
        records = records_by_action(doc)
        worse_here = {r["action"] for r in records.values() if r["outcome"] == "WORSENED"
                      and (r["match"] == "strong" or r["service"] == doc["alert_service"])}
        for recommendation in doc["recommendations"]:
            assert recommendation["action"] not in worse_here, (alert, recommendation["action"])
