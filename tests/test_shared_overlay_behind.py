# ruff: noqa: F811  (the S3 fixtures are imported by name, as conftest imports fake_ollama)
"""A laptop behind the team's main, on a shared index (issue 22 item 2), through the real CLI
(and the console, via Pilot) against moto's S3 server (tests/s3_server.py) and real LanceDB:
absence in a local file never hides a shared record unless this laptop deleted it; a local
edit wins, an older copy does not; what the overlay hides is said.

Main is published once for the module (a publish is the slow part): no test writes the store —
the first one checks that briefs and a save leave every object in it as it was."""

from __future__ import annotations

import json
import os
import re
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.widgets import Static

from console.engine.engine import TriageEngine
from console.ui.app import TriageApp
from tests.conftest import BUNDLED_INCIDENTS
from tests.s3_server import S3Server, s3_server  # noqa: F401
from tests.store.test_shared_index import settings
from tests.test_cli import call_cli
from tests.ui.test_verification_console import SIZE, settle

ALERT = "payments-api connection timeouts to postgres after deploy, HikariPool exhausted"
MAIN_TIME = "2026-06-01T00:00:00+00:00"
LONG_AGO = 1_700_000_000  # 2023-11: the laptop's checkout was last pulled long before main's
MACHINE_S3 = ("AWS_ENDPOINT_URL_S3", "AWS_DEFAULT_REGION", "AWS_SESSION_TOKEN",
              "TRIAGE_S3_ALLOW_HTTP", "AWS_PROFILE")  # (as tests/s3_server.py s3_env clears)
POSTMORTEM = {
    "id": "INC-9300", "title": "Orbital scheduler drift", "service": "orbital-scheduler",
    "symptoms": "orbital scheduler drift: cron jobs fire eleven minutes late on every node",
    "actions": [{"id": "A1", "action": "Resynced chrony on the scheduler nodes",
                 "outcome": "RESOLVED", "explanation": "The clocks had drifted."}]}


def cli(*args: str, extra_env: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """``call_cli`` with lexical recall (call_cli clears TRIAGE_EMBED_MODEL from the machine's
    environment; the embedder is not the point here, and a MiniLM build is the slow part)."""
    return call_cli(*args, extra_env={"TRIAGE_EMBED_MODEL": "none", **(extra_env or {})},
                    **kwargs)


def on_main() -> list[dict[str, Any]]:
    """The team's main: the bundled memory, with INC-2041 edited since (its actions' words)."""
    incidents = items(BUNDLED_INCIDENTS)
    for incident in incidents:
        if incident["id"] == "INC-2041":
            incident["actions"] = [{**a, "action": a["action"] + " (as written on main)"}
                                   for a in incident["actions"]]
    return incidents


@pytest.fixture(scope="module")
def main_published(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory,
                   ) -> dict[str, str]:
    """Main published as shared v1 (lexical: what is laid over what is the point here, not the
    embedder), in a bucket of this module's; the variables a laptop sets to use it."""
    bucket = f"behind{uuid.uuid4().hex[:12]}"
    s3_server.make_bucket(bucket)
    env = {**s3_server.env(bucket), "TRIAGE_EMBED_MODEL": "none"}
    where = tmp_path_factory.mktemp("main")
    with pytest.MonkeyPatch.context() as patch:
        for name in MACHINE_S3:
            patch.delenv(name, raising=False)
        for name, value in env.items():
            patch.setenv(name, value)
        done = cli("index", "--publish", "--source-time", MAIN_TIME, data_dir=where / "ci",
                        incidents=write(where / "main.yaml", on_main()))
    assert done.returncode == 0 and "published shared v1" in done.stdout, done.stderr
    return env


@pytest.fixture(autouse=True)
def laptop_env(main_published: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    for name in MACHINE_S3:
        monkeypatch.delenv(name, raising=False)
    for name, value in main_published.items():
        monkeypatch.setenv(name, value)


def items(path: Path) -> list[dict[str, Any]]:
    loaded: list[dict[str, Any]] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded


def write(path: Path, incidents: list[dict[str, Any]], mtime: float | None = None) -> Path:
    path.write_text(yaml.safe_dump(incidents, sort_keys=False, allow_unicode=True),
                    encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def brief(laptop: Path, incidents: Path, alert: str = ALERT) -> dict[str, Any]:
    done = cli("brief", "--json", alert, data_dir=laptop, incidents=incidents)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def recalled(briefing: dict[str, Any]) -> set[str]:
    return {r["incident_id"] for r in briefing["recalled"]}


def notices(briefing: dict[str, Any]) -> list[str]:
    return list(briefing["search"]["notices"])


def add_postmortem(tmp_path: Path, laptop: Path, incidents: Path) -> None:
    postmortem = write(tmp_path / "postmortem.yaml", [POSTMORTEM])
    done = cli("add", str(postmortem), data_dir=laptop, incidents=incidents)
    assert done.returncode == 0 and "saved INC-9300" in done.stdout, done.stderr


def bucket_objects() -> dict[str, str]:
    """Every object under the shared index's prefix with its ETag (S3 ListObjectsV2)."""
    bucket, root = os.environ["TRIAGE_INDEX_URI"].removeprefix("s3://").split("/", 1)
    url = (f"{os.environ['AWS_ENDPOINT_URL']}/{bucket}?list-type=2&max-keys=1000"
           f"&prefix={root}/")
    with urllib.request.urlopen(url, timeout=30) as response:
        listing = response.read().decode()
    return dict(re.findall(r"<Key>([^<]+)</Key>.*?<ETag>([^<]+)</ETag>", listing))


def test_a_checkout_behind_main_keeps_recalling_shared_incidents_after_a_local_save(
        tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    behind = write(tmp_path / "checkout.yaml",
                   [i for i in on_main() if i["id"] != "INC-2041"], LONG_AGO)
    store_before = bucket_objects()

    first = brief(laptop, behind)
    assert "INC-2041" in recalled(first)
    assert any("shared v1 holds 1 incident the incidents files here lack (INC-2041)" in n
               for n in notices(first)), notices(first)

    add_postmortem(tmp_path, laptop, behind)  # the local file is now newer than main's content
    again = brief(laptop, behind)
    assert "INC-2041" in recalled(again)  # before: gone, and not a word about it
    assert [r["action_id"] for r in again["recalled"]][:1] == \
        [r["action_id"] for r in first["recalled"]][:1]
    assert any("lack (INC-2041)" in n and "git pull" in n for n in notices(again))
    assert not any("hidden" in n for n in notices(again))
    assert "INC-9300" in recalled(brief(laptop, behind, "orbital scheduler cron jobs late"))
    assert bucket_objects() == store_before  # briefs and a save never write the shared store


def test_an_incident_deleted_on_this_laptop_is_hidden_and_said(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    checkout = write(tmp_path / "checkout.yaml", on_main())  # up to date with main
    assert "INC-2041" in recalled(brief(laptop, checkout))  # this laptop holds INC-2041

    write(checkout, [i for i in items(checkout) if i["id"] != "INC-2041"])  # deleted here
    for _ in range(2):  # and it stays deleted (the next load still knows it was held here)
        briefing = brief(laptop, checkout)
        assert "INC-2041" not in recalled(briefing)
        assert "1 shared incident hidden: deleted here: INC-2041" in " ".join(notices(briefing))
    # a save here (the local file newer still) keeps exactly that deletion, nothing more
    add_postmortem(tmp_path, laptop, checkout)
    briefing = brief(laptop, checkout)
    assert "INC-2041" not in recalled(briefing)
    assert any(n.startswith("1 shared incident hidden: deleted here: INC-2041 (")
               for n in notices(briefing)), notices(briefing)


def test_a_local_edit_of_a_shared_incident_wins_and_an_older_copy_does_not(
        tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    # pulled before main edited INC-2041: the older copy
    checkout = write(tmp_path / "checkout.yaml", items(BUNDLED_INCIDENTS), LONG_AGO)

    def texts(briefing: dict[str, Any]) -> list[str]:
        return [r["text"] for r in briefing["recalled"] if r["incident_id"] == "INC-2041"]

    assert texts(first := brief(laptop, checkout))
    assert all("(as written on main)" in t for t in texts(first))
    add_postmortem(tmp_path, laptop, checkout)  # newer local file, same old copy of INC-2041
    after_save = brief(laptop, checkout)
    assert texts(after_save) and all("(as written on main)" in t for t in texts(after_save))
    assert any("1 incident newer than the copy here (INC-2041)" in n
               for n in notices(after_save)), notices(after_save)

    edited = items(checkout)  # now the engineer edits INC-2041 here: the local record wins
    for incident in edited:
        if incident["id"] == "INC-2041":
            incident["actions"][-1]["action"] = "Raised the pool on one instance (edited here)"
    write(checkout, edited)
    briefing = brief(laptop, checkout)
    assert any("(edited here)" in t for t in texts(briefing))
    assert not any("(as written on main)" in t for t in texts(briefing))
    assert any(n.startswith("1 shared incident hidden: edited here (the local record is "
                            "recalled): INC-2041") for n in notices(briefing)), notices(briefing)


def status_line(app: TriageApp) -> str:
    return str(app.screen.query_one("#status-line", Static).content)


async def test_the_console_status_line_names_the_shared_incidents_deleted_here(
        main_published: dict[str, str], tmp_path: Path) -> None:
    checkout = write(tmp_path / "incidents.yaml", on_main())
    laptop = settings(main_published, tmp_path / "laptop", checkout)
    TriageEngine(laptop).load()  # this laptop holds INC-2041 …
    write(checkout, [i for i in on_main() if i["id"] != "INC-2041"])  # … and deletes it

    app = TriageApp(laptop)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        line = status_line(app)
        assert "index shared v1 (hides 1 shared: deleted here INC-2041) · " in line, line
        assert "model" in line.rsplit(" · ", 1)[-1], line  # (the narrow form: "no model …")


def broken(incidents: list[dict[str, Any]], incident_id: str) -> list[dict[str, Any]]:
    """``incidents`` with an impossible date in ``incident_id`` (a half-typed edit)."""
    return [{**i, "started_at": "2026-02-30T03:00:00Z"} if i["id"] == incident_id else i
            for i in incidents]


def test_a_broken_local_incident_is_recalled_from_the_shared_index_and_never_deleted(
        tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    checkout = write(tmp_path / "checkout.yaml", on_main())
    assert "INC-2041" in recalled(brief(laptop, checkout))  # this laptop holds INC-2041

    write(checkout, broken(on_main(), "INC-2041"))
    before = checkout.read_bytes()
    done = cli("brief", "--json", ALERT, data_dir=laptop, incidents=checkout)
    assert done.returncode == 0, done.stderr  # before: exit 2, no briefing at all
    briefing = json.loads(done.stdout)
    assert "INC-2041" in recalled(briefing)  # held here, unreadable now: never "deleted here"
    assert not any("hidden" in n for n in notices(briefing)), notices(briefing)
    partial = [n for n in notices(briefing) if n.startswith("partial memory")]
    assert len(partial) == 1 and "checkout.yaml:" in partial[0], notices(briefing)
    assert "searched as shared v1 holds them: INC-2041" in partial[0], partial[0]
    warned = [line for line in done.stderr.splitlines() if "partial memory" in line]
    assert len(warned) == 1 and warned[0].startswith("triage: warning: "), done.stderr
    assert cli("check", data_dir=laptop, incidents=checkout).returncode == 2
    assert checkout.read_bytes() == before

    write(checkout, on_main())  # fixed: INC-2041 was never recorded as deleted here
    fixed = brief(laptop, checkout)
    assert "INC-2041" in recalled(fixed)
    assert not any("hidden" in n or n.startswith("partial") for n in notices(fixed))


def test_an_edit_made_here_is_remembered_while_its_file_is_broken(tmp_path: Path) -> None:
    laptop = tmp_path / "laptop"
    edited = on_main()
    for incident in edited:
        if incident["id"] == "INC-2041":
            incident["actions"][-1]["action"] = "Raised the pool on one instance (edited here)"
    checkout = write(tmp_path / "checkout.yaml", edited)
    texts = [r["text"] for r in brief(laptop, checkout)["recalled"]
             if r["incident_id"] == "INC-2041"]
    assert any("(edited here)" in t for t in texts)  # the local edit wins

    write(checkout, broken(edited, "INC-2041"))
    assert "INC-2041" in recalled(brief(laptop, checkout))  # the shared copy, meanwhile
    write(checkout, edited)  # fixed: still the edit made here, not main's copy
    texts = [r["text"] for r in brief(laptop, checkout)["recalled"]
             if r["incident_id"] == "INC-2041"]
    assert any("(edited here)" in t for t in texts), texts  # before: main's copy came back
