"""`triage brief` on a multi-alert Alertmanager payload: `batch` in the JSON, the groups in
the text output, and `--group N` to brief another group. In process throughout (the entry
point, or the `brief` handler): `triage brief` as a process is tests/test_cli.py's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from console import cli
from console.engine.config import Settings
from console.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from tests.batches import K_INCIDENTS, hundred_alert_batch
from tests.conftest import BUNDLED_INCIDENTS
from tests.test_cli import assert_contract, call_cli


@pytest.fixture
def batch_file(tmp_path: Path) -> Path:
    path = tmp_path / "batch.json"
    path.write_text(hundred_alert_batch(), encoding="utf-8")
    return path


def test_json_lists_every_group_and_briefs_the_proven_one(batch_file: Path,
                                                          bundled_data_dir: Path) -> None:
    result = call_cli("brief", "--alert-file", str(batch_file), "--json",
                     data_dir=bundled_data_dir)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert_contract(doc)  # scores shown 0–1 even where a long group text's BM25 lifts the fused
    assert all(0 <= g["score"] <= 1 for g in doc["batch"] if g["score"] is not None)
    assert doc["state"] == "proven"
    assert {r["incident_id"] for r in doc["recalled"]} <= K_INCIDENTS
    assert [(g["alerts"], g["state"], g["selected"]) for g in doc["batch"]] == [
        (40, "no_prior_incident", False), (30, "no_prior_incident", False),
        (29, "no_prior_incident", False), (1, "proven", True)]
    assert set(doc["batch"][0]) == {"key", "alerts", "alert", "state", "top_incident_id",
                                    "score", "selected", "match"}
    assert doc["batch"][0]["match"] is None and doc["batch"][3]["match"] == "strong"
    assert doc["batch"][3]["top_incident_id"] in K_INCIDENTS


def test_text_lists_the_groups_marks_the_briefed_one_and_says_how_to_switch(
        batch_file: Path, bundled_data_dir: Path) -> None:
    result = call_cli("brief", "--alert-file", str(batch_file), data_dir=bundled_data_dir)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[PROVEN FIX IN MEMORY]")
    assert lines[1].startswith("alert group 4 of 4 (1 alert): PaymentsErrors — service "
                               "payments-api — severity warning")
    start = next(n for n, line in enumerate(lines) if line.startswith("Alert groups"))
    assert "4 groups of 100 alerts" in lines[start] and "--group N" in lines[start]
    groups = lines[start + 1:start + 5]
    assert [line[:17] for line in groups] == ["     1. NO PRIOR ", "     2. NO PRIOR ",
                                              "     3. NO PRIOR ", "  ▶  4. PROVEN   "]
    assert "40 alerts" in groups[0] and "CoffeeMachineDescaling" in groups[0]
    assert "  —  " in groups[0]  # nothing recalled: no top incident
    assert any(i in groups[3] for i in K_INCIDENTS) and "1 alert " in groups[3]


def test_a_single_alert_prints_no_group_list(bundled_data_dir: Path) -> None:
    result = call_cli("brief", "payments service KeyError: 'amount' after deploy",
                     data_dir=bundled_data_dir)
    assert result.returncode == 0, result.stderr
    assert "Alert groups" not in result.stdout and "alert group" not in result.stdout


# --- --group N, through the `brief` handler (the parser is console/__main__.py's) --------------

def brief_args(alert_file: Path, group: int | None, as_json: bool = True) -> argparse.Namespace:
    return argparse.Namespace(text=None, alert_file=str(alert_file), json=as_json, group=group)


def run_brief(args: argparse.Namespace, data_dir: Path,
              capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    settings = Settings(incidents_path=BUNDLED_INCIDENTS, data_dir=data_dir)
    code = cli.brief(settings, args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_group_n_briefs_that_group(batch_file: Path, bundled_data_dir: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_brief(brief_args(batch_file, 2), bundled_data_dir, capsys)
    assert code == EXIT_OK
    doc: dict[str, Any] = json.loads(out)
    assert doc["state"] == "no_prior_incident" and doc["recalled"] == []
    assert [g["selected"] for g in doc["batch"]] == [False, True, False, False]
    assert doc["batch"][3]["state"] == "proven"  # still listed: the engineer can go back
    assert "hvac" in doc["search"]["terms"]


def test_group_n_in_the_text_output_marks_that_group(batch_file: Path, bundled_data_dir: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_brief(brief_args(batch_file, 1, as_json=False), bundled_data_dir, capsys)
    assert code == EXIT_OK
    assert out.startswith("[NO PRIOR INCIDENT]")
    assert "alert group 1 of 4 (40 alerts): CoffeeMachineDescaling" in out
    assert "  ▶  1. NO PRIOR" in out and "     4. PROVEN" in out


@pytest.mark.parametrize("group", [0, 5, -1])
def test_a_group_that_is_not_there_is_bad_input(group: int, batch_file: Path,
                                                bundled_data_dir: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_brief(brief_args(batch_file, group), bundled_data_dir, capsys)
    assert code == EXIT_BAD_INPUT and out == ""
    assert f"no alert group {group}" in err and "4 alert groups (1–4)" in err


def test_group_flag_is_parsed(batch_file: Path, bundled_data_dir: Path,
                              capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    from console.__main__ import main

    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    code = main(["brief", "--alert-file", str(batch_file), "--group", "2", "--json"])
    assert code == EXIT_OK
    assert json.loads(capsys.readouterr().out)["batch"][1]["selected"]
