# ruff: noqa: F811  (the S3 fixtures are imported by name, as conftest imports fake_ollama)
"""`triage index --publish | --pull`, `brief` and `doctor` with TRIAGE_INDEX_URI, in-process,
against moto's S3 server on 127.0.0.1 (tests/s3_server.py) and real LanceDB."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from console.__main__ import main
from tests.conftest import BUNDLED_INCIDENTS
from tests.s3_server import free_port, s3_bucket, s3_env, s3_server  # noqa: F401

ALERT = "payments-api connection timeouts to postgres after deploy, HikariPool exhausted"
NEW = "2026-06-01T00:00:00+00:00"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def use_data_dir(monkeypatch: pytest.MonkeyPatch, path: Path) -> None:
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(path))


def ids(out: str) -> list[tuple[str, float]]:
    briefing = json.loads(out)
    return [(r["incident_id"], r["score"]) for r in briefing["recalled"]]


def test_publish_then_brief_from_another_data_dir(capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   s3_env: dict[str, str], tmp_path: Path,
                                                   ) -> None:
    use_data_dir(monkeypatch, tmp_path / "ci")
    code, out, err = run(capsys, "index", "--publish", "--source-time", NEW)
    assert code == 0, err
    assert "published shared v1 (" in out and "embedder all-MiniLM-L6-v2" in out
    code, out, _ = run(capsys, "index", "--publish", "--source-time", NEW)
    assert code == 0 and "already published as shared v1" in out

    use_data_dir(monkeypatch, tmp_path / "laptop")
    code, shared_out, err = run(capsys, "brief", "--json", ALERT)
    assert code == 0, err
    monkeypatch.delenv("TRIAGE_INDEX_URI")
    use_data_dir(monkeypatch, tmp_path / "local")
    code, local_out, _ = run(capsys, "brief", "--json", ALERT)
    assert code == 0
    assert ids(shared_out) == ids(local_out) and ids(shared_out)


def test_an_older_publish_exits_2_as_stale(capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch,
                                           s3_env: dict[str, str], tmp_path: Path) -> None:
    use_data_dir(monkeypatch, tmp_path / "ci")
    assert run(capsys, "index", "--publish", "--source-time", NEW)[0] == 0
    other = tmp_path / "older.yaml"
    other.write_text(BUNDLED_INCIDENTS.read_text(encoding="utf-8").replace(
        "Inventory feed lag", "Inventory feed delay"), encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(other))
    code, _, err = run(capsys, "index", "--publish", "--source-time", "2026-01-01T00:00:00Z")
    assert code == 2 and "stale" in err and "--force" in err
    code, out, _ = run(capsys, "index", "--publish", "--source-time", "2026-01-01T00:00:00Z",
                       "--force")
    assert code == 0 and "published shared v2" in out


def test_pull_then_a_dead_endpoint_still_briefs_and_says_how_old(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        s3_env: dict[str, str], tmp_path: Path) -> None:
    use_data_dir(monkeypatch, tmp_path / "laptop")
    assert run(capsys, "index", "--publish", "--source-time", NEW)[0] == 0
    code, out, _ = run(capsys, "index", "--pull")
    assert code == 0 and "pulled shared v1" in out
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    code, out, err = run(capsys, "brief", "--json", ALERT)
    assert code == 0, err
    assert time.monotonic() - started < 10
    notices = json.loads(out)["search"]["notices"]
    assert any("not reachable" in n and "copy of shared v1 pulled" in n for n in notices)
    assert json.loads(out)["state"] != "no_prior_incident"


def test_no_store_and_no_copy_exits_1_with_the_reason(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      s3_env: dict[str, str]) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    started = time.monotonic()
    code, out, err = run(capsys, "brief", "--json", ALERT)
    assert time.monotonic() - started < 10
    assert code == 1 and out == ""
    assert "not reachable" in err and "the memory was not searched" in err
    assert "triage index --pull" in err and "Traceback" not in err


def test_wrong_embedder_exits_1_with_what_to_run(capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 s3_env: dict[str, str], tmp_path: Path) -> None:
    use_data_dir(monkeypatch, tmp_path / "ci")
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", "none")
    assert run(capsys, "index", "--publish", "--source-time", NEW)[0] == 0
    monkeypatch.delenv("TRIAGE_EMBED_MODEL")
    use_data_dir(monkeypatch, tmp_path / "laptop")
    code, _, err = run(capsys, "brief", ALERT)
    assert code == 1 and "built with embedder none" in err
    assert "triage index --publish" in err
    code, out, _ = run(capsys, "doctor")
    assert "FIX  shared v1 embedder none matches" in out


def test_doctor_checks_the_store(capsys: pytest.CaptureFixture[str],
                                 monkeypatch: pytest.MonkeyPatch, s3_env: dict[str, str],
                                 tmp_path: Path) -> None:
    code, out, _ = run(capsys, "doctor")
    assert "reachable, nothing published yet" in out and "triage index --publish" in out
    assert run(capsys, "index", "--publish")[0] == 0
    code, out, _ = run(capsys, "doctor")
    assert code == 0, out
    assert "ok   shared index at s3://" in out and "current shared v1" in out
    assert "note local index missing" in out
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
    code, out, _ = run(capsys, "doctor")
    assert code == 2 and "FIX  shared index at s3://" in out and "not reachable" in out


def test_publish_without_a_uri_is_bad_input(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIAGE_INDEX_URI", raising=False)
    code, _, err = run(capsys, "index", "--publish")
    assert code == 2 and "TRIAGE_INDEX_URI" in err


def _keys(prefix: str) -> set[str]:
    """The object keys under ``prefix`` in the shared index's bucket (S3 ListObjectsV2)."""
    import os
    import re
    import urllib.request

    bucket, root = os.environ["TRIAGE_INDEX_URI"].removeprefix("s3://").split("/", 1)
    url = f"{os.environ['AWS_ENDPOINT_URL']}/{bucket}?list-type=2&max-keys=1000&prefix={root}/"
    with urllib.request.urlopen(url + prefix, timeout=5) as response:
        listing = response.read().decode()
    return set(re.findall(r"<Key>([^<]+)</Key>", listing))


def _dirs(keys: set[str], level: str) -> set[str]:
    return {k.split(f"/{level}/", 1)[1].split("/", 1)[0] for k in keys if f"/{level}/" in k}


def test_prune_deletes_old_versions_keeps_their_numbers_and_the_current_one(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        s3_env: dict[str, str], tmp_path: Path) -> None:
    monkeypatch.setenv("TRIAGE_EMBED_MODEL", "none")  # (lexical: the embedder is not the point)
    use_data_dir(monkeypatch, tmp_path / "ci")
    incidents = tmp_path / "incidents.yaml"
    text = BUNDLED_INCIDENTS.read_text(encoding="utf-8")
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(incidents))
    for n, day in enumerate(("01", "02", "03")):
        incidents.write_text(text.replace("Inventory feed lag", f"Inventory feed lag {n}"),
                             encoding="utf-8")
        code, out, err = run(capsys, "index", "--publish", "--source-time",
                             f"2026-06-{day}T00:00:00+00:00")
        assert code == 0 and f"published shared v{n + 1}" in out, err
    assert len(_dirs(_keys("v/"), "v")) == 3

    code, out, err = run(capsys, "index", "--prune", "--keep", "1")
    assert code == 0, err
    assert "pruned 2 old version(s)" in out and ": v1, v2; kept v3" in out
    assert len(_dirs(_keys("v/"), "v")) == 1  # the data of v1 and v2 is gone from the bucket
    assert len(_dirs(_keys("entries/"), "entries")) == 3  # the history is whole

    use_data_dir(monkeypatch, tmp_path / "laptop")  # a reader still gets the current one
    code, out, err = run(capsys, "brief", "--json", ALERT)
    assert code == 0 and ids(out), err
    code, out, _ = run(capsys, "index", "--publish", "--source-time", "2026-06-04T00:00:00Z")
    assert code == 0 and "already published as shared v3" in out  # numbering never shifts
    code, out, _ = run(capsys, "index", "--prune")
    assert code == 0 and "pruned 0 old version(s)" in out and "kept v3; 2 pruned earlier" in out


def test_prune_options_that_make_no_sense_are_refused(capsys: pytest.CaptureFixture[str],
                                                      s3_env: dict[str, str]) -> None:
    code, _, err = run(capsys, "index", "--keep", "2")
    assert code == 2 and "--keep N goes with --prune" in err
    code, _, err = run(capsys, "index", "--pull", "--prune")
    assert code == 2 and "give --pull alone" in err
    with pytest.raises(SystemExit) as exited:
        main(["index", "--prune", "--keep", "0"])
    assert exited.value.code == 2 and "not a whole number of versions ≥ 1" in capsys.readouterr().err
