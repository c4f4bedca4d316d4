"""`triage eval`: the DESIGN.md contract, honest figures, bad input, and the team's index untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from console.__main__ import main
from store.loader import load_incidents
from tests.conftest import BUNDLED_INCIDENTS, REPO_ROOT
from tests.test_cli import call_cli

BUNDLED_QUERIES = REPO_ROOT / "bench" / "bundled_queries.yaml"


def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(["eval", *args])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One eval of the bundled queries (module-scoped: it builds its own index once).

    Its environment is set here, not left to the function-scoped isolated_env (not yet in
    force when a module fixture is made): the bundled memory, whatever the cwd."""
    data_dir = tmp_path_factory.mktemp("eval") / "data"
    result = call_cli("eval", "--queries", str(BUNDLED_QUERIES), "--json", data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    return {"doc": json.loads(result.stdout), "data_dir": data_dir}


@pytest.fixture
def warm_data_dir(report: dict[str, Any], tmp_path: Path,
                  monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the report's data dir as TRIAGE_DATA_DIR: its eval index of the bundled memory
    (and embedding cache) already built, so a test of what eval reports does not embed the
    memory again (the build itself is the report fixture's, checked above)."""
    data_dir = tmp_path / "warm-data"
    shutil.copytree(report["data_dir"], data_dir)
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(data_dir))
    return data_dir


def test_output_keeps_the_design_contract(report: dict[str, Any]) -> None:
    doc = report["doc"]
    assert set(doc["summary"]) >= {"hit_at_1", "hit_at_5", "mrr", "abstention_precision",
                                   "abstention_recall", "wrongly_abstained"}
    for query in doc["queries"]:
        assert set(query) >= {"qid", "state", "ranked_incident_ids", "rank"}
        assert query["state"] in ("proven", "unproven", "no_prior_incident")
        assert len(query["ranked_incident_ids"]) == len(set(query["ranked_incident_ids"]))
    assert set(doc["by_kind"]) == {"paraphrase", "novel"}


def test_rank_is_the_position_of_the_first_expected_incident(report: dict[str, Any]) -> None:
    by_qid = {q["qid"]: q for q in report["doc"]["queries"]}
    checkout = by_qid["B01"]
    assert checkout["ranked_incident_ids"][0] == "INC-2041" and checkout["rank"] == 1
    for query in report["doc"]["queries"]:
        if query["rank"] is not None:
            assert query["ranked_incident_ids"][query["rank"] - 1] in query["expect"]
            assert not set(query["ranked_incident_ids"][:query["rank"] - 1]) & set(query["expect"])


def test_novel_alerts_abstain_but_still_list_their_candidates(report: dict[str, Any]) -> None:
    novel = [q for q in report["doc"]["queries"] if not q["expect"]]
    tls = next(q for q in novel if q["qid"] == "B09")
    assert tls["state"] == "no_prior_incident" and tls["rank"] is None
    # Ranking and gate are judged apart: the candidates are listed even when the state abstains.
    assert tls["ranked_incident_ids"]
    assert "floor" in tls["gate"]


def test_summary_counts_what_the_queries_show(report: dict[str, Any]) -> None:
    queries = report["doc"]["queries"]
    answerable = [q for q in queries if q["expect"]]
    shown = [None if q["state"] == "no_prior_incident" else q["rank"] for q in answerable]
    summary = report["doc"]["summary"]
    assert summary["hit_at_1"] == pytest.approx(sum(r == 1 for r in shown) / len(answerable),
                                                 abs=1e-4)
    abstained = [q for q in queries if q["state"] == "no_prior_incident"]
    assert summary["abstention_precision"] == pytest.approx(
        sum(not q["expect"] for q in abstained) / len(abstained), abs=1e-4)


def test_eval_never_touches_the_team_index(report: dict[str, Any]) -> None:
    data_dir: Path = report["data_dir"]
    assert not (data_dir / "index").exists()
    assert [p.name for p in (data_dir / "eval").iterdir()] == [report["doc"]["memory"]["source_hash"]]


def test_text_output_lists_the_misses(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                      warm_data_dir: Path) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text("- {qid: Q1, alert: 'TLS certificate expired on internal gRPC mesh', "
                       "expect: [INC-2041], note: deliberately wrong}\n", encoding="utf-8")
    rc, out, _ = run_eval(capsys, "--queries", str(queries))
    assert rc == 0
    assert "misses:" in out and "Q1" in out and "abstained" in out


@pytest.mark.parametrize("content, message", [
    ("qid: Q1\nalert: x\n", "expected a YAML list"),
    ("- {qid: Q1}\n", "alert"),
    ("- {qid: Q1, alert: a}\n- {qid: Q1, alert: b}\n", "duplicate qid"),
    ("- &a {qid: Q1, alert: a}\n- *a\n", "aliases"),
    ("- {qid: Q1, alert: [unclosed\n", "not valid YAML"),
])
def test_bad_queries_file_is_exit_2_with_the_reason(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path, content: str,
                                                    message: str) -> None:
    queries = tmp_path / "q.yaml"
    queries.write_text(content, encoding="utf-8")
    rc, out, err = run_eval(capsys, "--queries", str(queries), "--json")
    assert rc == 2 and out == ""
    assert message in err and str(queries) in err


def test_replay_hides_the_incident_it_replays(capsys: pytest.CaptureFixture[str],
                                              warm_data_dir: Path) -> None:
    rc, out, _ = run_eval(capsys, "--replay", "--json")
    assert rc == 0
    doc = json.loads(out)
    assert len(doc["queries"]) == len(load_incidents(BUNDLED_INCIDENTS).incidents)
    for query in doc["queries"]:
        assert query["qid"] not in query["ranked_incident_ids"]
    # The five KeyError incidents are one family: replaying one finds its earlier siblings.
    keyerror = next(q for q in doc["queries"] if q["qid"] == "INC-1745")
    assert keyerror["ranked_incident_ids"][0] in {"INC-1518", "INC-1619"}
    # Time-ordered: the first of the family (2025-01-27) expects and ranks none of the later.
    by_qid = {q["qid"]: q for q in doc["queries"]}
    family = ["INC-1518", "INC-1619", "INC-1745", "INC-1853", "INC-2077"]
    assert by_qid["INC-1518"]["expect"] == [] and by_qid["INC-2077"]["expect"] == family[:4]
    assert not set(by_qid["INC-1518"]["ranked_incident_ids"]) & set(family)
    assert (doc["mode"], doc["undated"]) == ("time-ordered", 0)
    loo = doc["summary_leave_one_out"]
    assert loo is not None and loo["answerable"] > doc["summary"]["answerable"]
    rc, out, _ = run_eval(capsys, "--replay", "--json", "--leave-one-out")
    assert rc == 0
    old = json.loads(out)
    assert (old["mode"], old["summary_leave_one_out"]) == ("leave-one-out", None)
    assert old["summary"] == loo  # the same figures as the comparison pass
    assert {q["qid"]: q for q in old["queries"]}["INC-1518"]["expect"] == family[1:]


def test_exactly_one_source_of_queries(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_eval(capsys)
    assert rc == 2 and "--queries" in err
    rc, _, err = run_eval(capsys, "--queries", str(BUNDLED_QUERIES), "--leave-one-out")
    assert rc == 2 and "--leave-one-out is for --replay" in err
