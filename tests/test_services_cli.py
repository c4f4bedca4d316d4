"""The service rule end to end (issue 33, item 5): `triage brief --json` on an Alertmanager page
whose label spells the service otherwise than the memory, and `triage check` on services.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import make_incident
from tests.test_cli import call_cli

FIX = "Flushed the payment-schema cache"


def keyerror(number: int) -> dict[str, Any]:
    return make_incident(
        f"INC-{number}", service="payments-api", title="KeyError 'amount' after deploy",
        symptoms="KeyError: 'amount' in the payment handler after a deploy, 5xx rising",
        root_cause="old-shaped entries in the payment-schema cache",
        actions=[{"id": "A1", "action": FIX, "outcome": "RESOLVED",
                  "explanation": "Old-shaped cache entries were gone, 5xx back to baseline"}])


@pytest.fixture
def memory(tmp_path: Path) -> Path:
    """Three payments-api KeyError incidents and an unrelated ledger-api one."""
    path = tmp_path / "memory" / "incidents.yaml"
    path.parent.mkdir()
    incidents = [keyerror(1), keyerror(2), keyerror(3), make_incident(
        "INC-9", service="ledger-api", title="Ledger statement timeouts",
        symptoms="statement timeout errors on the ledger database",
        actions=[{"id": "A1", "action": "Failed over to the replica", "outcome": "RESOLVED",
                  "explanation": "Timeouts stopped"}])]
    path.write_text(yaml.safe_dump(incidents, sort_keys=False), encoding="utf-8")
    return path


def page(tmp_path: Path, service: str) -> Path:
    path = tmp_path / f"page-{service}.json"
    path.write_text(json.dumps({"alerts": [{"status": "firing", "labels": {
        "alertname": "PaymentsKeyError", "service": service, "severity": "critical"},
        "annotations": {"summary": "KeyError: 'amount' in the payment handler after deploy"}}]}),
        encoding="utf-8")
    return path


def brief(alert: Path, memory: Path, data_dir: Path) -> dict[str, Any]:
    ran = call_cli("brief", "--alert-file", str(alert), "--json", data_dir=data_dir,
                   incidents=memory, extra_env={"TRIAGE_EMBED_MODEL": "none"})
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_a_grafana_label_spelt_payments_keeps_the_payments_api_incidents_strong(
        tmp_path: Path, memory: Path) -> None:
    data_dir = tmp_path / "data"
    spelt_out = brief(page(tmp_path, "payments-api"), memory, data_dir)
    short = brief(page(tmp_path, "payments"), memory, data_dir)
    assert spelt_out["state"] == "proven"
    assert (short["state"], short["confidence"]["value"]) == (
        spelt_out["state"], spelt_out["confidence"]["value"])
    matches = {r["incident_id"]: r["match"] for r in short["recalled"]}
    assert matches["INC-1"] == "strong"
    assert short["recommendations"][0]["action"] == FIX
    assert short["input"]["service"] == "payments"           # the label, as it was sent
    read = short["input"]["service_read"]
    assert (read["service"], read["how"], read["demotes"]) == ("payments-api", "alias", True)
    assert ("Service assumed: payments-api (read from the label service=payments)"
            in short["search"]["notices"])
    assert spelt_out["input"]["service_read"]["assumed"] is None
    assert not any(n.startswith("Service assumed") for n in spelt_out["search"]["notices"])


@pytest.mark.parametrize(("text", "line", "says"), [
    ("payments-api: [payments\n", 2, "not valid YAML"),        # (where it ended)
    ("- payments\n- ledger\n", 1, "top level must be a mapping"),
    ("payments-api: [payments]\nledger-api: [ledger, Payments]\n", 2,
     "'Payments' is claimed by two services: payments-api (line 1) and ledger-api"),
    ("payments-api: &names [payments]\nledger-api: *names\n", 2, "YAML aliases (*name)"),
    ("payments-api: payments\n", 1, "must be a list"),
    ("ledger-api: [payments-api]\n", 1, "is a service of the memory itself"),
])
def test_check_refuses_a_bad_services_yaml_with_file_and_line(
        tmp_path: Path, memory: Path, text: str, line: int, says: str) -> None:
    services = memory.parent / "services.yaml"
    services.write_text(text, encoding="utf-8")
    ran = call_cli("check", data_dir=tmp_path / "data", incidents=memory)
    assert ran.returncode == 2, ran.stdout
    assert f"{services}:{line}: " in ran.stderr and says in ran.stderr
    # a briefing is never blocked by it: the aliases are left out, with a notice
    out = brief(page(tmp_path, "payments-api"), memory, tmp_path / "data")
    assert any("services.yaml was not read" in n for n in out["search"]["notices"])


def test_check_reads_a_good_services_yaml(tmp_path: Path, memory: Path) -> None:
    (memory.parent / "services.yaml").write_text(
        "# other names\npayments-api: [payments, payments-service]\nledger-api:\n",
        encoding="utf-8")
    ran = call_cli("check", data_dir=tmp_path / "data", incidents=memory)
    assert ran.returncode == 0, ran.stderr
    assert "services.yaml: ok — 2 aliases of 2 services" in ran.stdout
