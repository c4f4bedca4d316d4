"""`triage drill` and `--include-drills` through the real entry point.

In process (tests/test_cli.py's ``call_cli``: the same environment, exit code and output),
but for `drill --all`: that one stays a `python -m console` subprocess, the command end to end
(progress on a real stderr pipe, the cached track record written by the script). A
subprocess cost ~2-3 s each (interpreter start, imports, MiniLM load) and showed nothing more
for the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.engine.practice.test_replay import FIXTURE, KEYERROR
from tests.test_cli import call_cli, run_cli


@pytest.fixture(scope="module")
def fixture_incidents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("drill-cli") / "incidents.yaml"
    path.write_text(yaml.safe_dump(FIXTURE, sort_keys=False), encoding="utf-8")
    return path


def test_all_json_on_a_small_memory_with_progress_and_a_cached_track_record(
        fixture_incidents: Path, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    result = run_cli("drill", "--all", "--json", data_dir=data_dir, incidents=fixture_incidents)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [r["incident_id"] for r in doc["replays"]] == ["K1", "K2", "K3", "K4", "D1", "D2",
                                                          "X1", "X2"]
    assert doc["memory"]["skipped_drills"] == 1
    tiers = {row["tier"]: (row["replays"], row["right"]) for row in doc["summary"]["tiers"]}
    assert tiers == {"0": (0, 0), "1": (2, 2), "2": (3, 3), "3+": (1, 0)}
    assert "replaying 8/8 (100%" in result.stderr
    cached = json.loads((data_dir / "drill.json").read_text(encoding="utf-8"))
    assert cached["report"]["summary"] == doc["summary"]
    assert cached["version"] == 2
    assert not (data_dir / "index").exists()  # the team's index is never built over
    # No incident is dated: every one is known from the start, and time-ordered replays are
    # the leave-one-out ones (run once: 8 replays above, not 16).
    assert (doc["mode"], doc["undated"], doc["memory"]["undated"]) == ("time-ordered", 8, 8)
    assert doc["summary_leave_one_out"] == doc["summary"]
    assert all(r["started_at"] is None and r["known_incidents"] == 7 for r in doc["replays"])


def dated_fixture(path: Path) -> Path:
    """FIXTURE with the KeyError family dated K1 < K2 < K3 < K4 (the rest undated)."""
    rows = [dict(row) for row in FIXTURE]
    for n, row in enumerate(rows[:4]):
        row["started_at"] = f"2025-0{n + 1}-10T09:00:00Z"
    path.write_text(yaml.safe_dump(rows, sort_keys=False), encoding="utf-8")
    return path


def test_all_as_text_shows_time_ordered_and_leave_one_out(tmp_path: Path) -> None:
    incidents = dated_fixture(tmp_path / "incidents.yaml")
    data_dir = tmp_path / "data"
    result = call_cli("drill", "--all", data_dir=data_dir, incidents=incidents)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "replays: time-ordered" in out and "4 undated (known from the start" in out
    ordered, _, loo = out.partition("== leave-one-out")
    assert "== time-ordered (the track record)" in ordered and loo
    # K1 came first: time-ordered it has no earlier sibling; leave-one-out it had three.
    k1 = next(line for line in out.splitlines() if line.startswith("K1 "))
    assert "related rank" not in k1
    assert "with related 7" in ordered and "with related 8" in loo
    saved = json.loads((data_dir / "drill.json").read_text(encoding="utf-8"))
    assert saved["report"]["summary"]["with_related"] == 7
    assert saved["report"]["summary_leave_one_out"]["with_related"] == 8

    again = call_cli("drill", "--all", "--json", "--leave-one-out", data_dir=tmp_path / "d2",
                     incidents=incidents)
    assert again.returncode == 0, again.stderr
    doc = json.loads(again.stdout)
    assert (doc["mode"], doc["summary_leave_one_out"]) == ("leave-one-out", None)
    assert doc["summary"]["with_related"] == 8
    assert "not saved as the track record" in again.stderr
    assert not (tmp_path / "d2" / "drill.json").exists()


def test_one_incident_as_text(tmp_path: Path) -> None:
    result = call_cli("drill", "INC-1745", data_dir=tmp_path / "data")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    replay = next(line for line in lines if line.startswith("INC-1745"))
    assert "proven" in replay and "tier" in replay
    assert not (tmp_path / "data" / "drill.json").exists()  # one replay is no track record


def test_unknown_incident_is_exit_2_with_a_clear_message(tmp_path: Path) -> None:
    result = call_cli("drill", "INC-0000", data_dir=tmp_path / "data")
    assert result.returncode == 2 and result.stdout == ""
    assert "INC-0000 is not an incident in" in result.stderr
    assert "Traceback" not in result.stderr


def test_include_drills_lets_a_game_day_incident_be_evidence(fixture_incidents: Path,
                                                             tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    plain = call_cli("brief", KEYERROR, "--json", data_dir=data_dir, incidents=fixture_incidents)
    assert plain.returncode == 0, plain.stderr
    included = call_cli("brief", KEYERROR, "--json", "--include-drills", data_dir=data_dir,
                       incidents=fixture_incidents)
    assert included.returncode == 0, included.stderr
    recalled = [{r["incident_id"] for r in json.loads(out)["recalled"]}
                for out in (plain.stdout, included.stdout)]
    assert "G1" not in recalled[0] and "K1" in recalled[0]
    assert "G1" in recalled[1]


def test_brief_as_markdown_keeps_every_citation(tmp_path: Path) -> None:
    from tests.test_cli import CHECKOUT, brief_json

    data_dir = tmp_path / "data"
    doc = brief_json(CHECKOUT, data_dir=data_dir)
    result = call_cli("brief", CHECKOUT, "--format", "md", data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    cited = {w["action_id"] for w in doc["warnings"]} | {
        e["action_id"] for r in doc["recommendations"] for e in r["evidence"]}
    assert cited and all(f"`{c}`" in result.stdout for c in cited)
    assert result.stdout.startswith("### Triage briefing")
