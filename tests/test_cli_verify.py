"""`triage brief --verify` in subprocesses: the audit a user sees beside the briefing.

The overturn case (an alert naming no service: more workers resolved INC-2321 on
image-service, a close match, and made things worse in INC-2324 on transcode-worker, a looser
one), the ledger-api alert (its own mitigation leads; the timeout raise that made things worse
there is only a warning, so there is nothing to overturn), the maintain case (auth-service key
rotation, settled by an engineer's answer), the ≥ 85 rule, bad input, declared probes from
probes.yaml on the ledger-api alert (never run unless allowed, output redacted and cleaned), a
broken probes.yaml, and the text rendering.

Every run is the real entry point in process (tests/test_cli.py's ``call_cli``: the same
environment, exit code, stdout and stderr as the script; declared probes still run as their
own processes): a `python -m console` subprocess cost ~2-3 s each (interpreter start, imports,
MiniLM load) and showed nothing more here — `triage brief` end to end as a process is
tests/test_cli.py's. The module shares one data dir (its index built once, up front, so that
no briefing carries an "index built" notice). A copy of incidents.yaml has the same content
hash, so it shares that index too.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BUNDLED_INCIDENTS
from tests.test_cli import KEYERROR, brief_json, call_cli

OVERTURN = ("media queue: jobs waiting, backlog growing, workers falling behind, pods near "
            "memory limit")
OVERTURN_FIX = "Raised the worker concurrency from 8 to 32"
OVERTURN_OTHER_FIX = "Moved long videos to a dedicated batch pool with its own concurrency limit"
# The alert whose lead used to be overturned: reporting-api's timeout raise made things worse on
# ledger-api (INC-2318/A1). The verdict never recommends it there: ledger-api's own mitigation
# leads, unproven, and the raise is a warning.
LEDGER = ("statement timeout errors: queries timing out after 30s, canceling statement due "
          "to statement timeout (service ledger-api)")
LEDGER_FIX = "Moved the reconciliation queries to the read replica"
TIMEOUT_RAISE = "Raised the database statement timeout from 30s to 120s"
MAINTAIN = "auth-service logins failing after key rotation"
MAINTAIN_FIX = "Republished the previous signing key to the JWKS endpoint alongside the new one"
DISPOSITIONS = {"maintain", "revise", "overturn", "undetermined"}
# One line per open engineer question on stderr: "  --answer <id>=yes|no|unknown   <text>".
OPEN_ANSWER = re.compile(r"^  --answer ([0-9a-f]{12})=yes\|no\|unknown   (.+)$", re.MULTILINE)
SECRETS = ("hunter2", "AKIAIOSFODNN7EXAMPLE")
MARKUP = "[bold red]x[/]"


def without_verification(doc: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in doc.items() if key != "verification"}


def verify_json(*args: str, data_dir: Path, **kwargs: Any
                ) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """``brief --verify … --json`` that must succeed: the document and the run (for stderr)."""
    result = call_cli("brief", "--verify", *args, "--json", data_dir=data_dir, **kwargs)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout), result


def by_check(verification: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["check"]: q for q in verification["questions"]}


def assert_clean_failure(result: subprocess.CompletedProcess[str], code: int) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


# --- the shared data dir and the overturn case -----------------------------------------------

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data dir with the bundled memory's index already built (by `triage index`)."""
    data = tmp_path_factory.mktemp("verify") / "data"
    built = call_cli("index", data_dir=data)
    assert built.returncode == 0, built.stderr
    return data


@pytest.fixture(scope="module")
def plain(data_dir: Path) -> dict[str, Any]:
    """The overturn alert briefed without --verify."""
    return brief_json(OVERTURN, data_dir=data_dir)


@pytest.fixture(scope="module")
def overturn_run(data_dir: Path) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    return verify_json(OVERTURN, data_dir=data_dir)


@pytest.fixture(scope="module")
def overturn(overturn_run: tuple[dict[str, Any], subprocess.CompletedProcess[str]]
             ) -> dict[str, Any]:
    return overturn_run[0]


@pytest.fixture(scope="module")
def ledger_plain(data_dir: Path) -> dict[str, Any]:
    """The ledger-api alert briefed without --verify."""
    return brief_json(LEDGER, data_dir=data_dir)


def test_overturn_case_is_a_close_fix_that_made_things_worse_in_a_looser_match(
        plain: dict[str, Any]) -> None:
    """The premise of the overturn tests, as the briefing without --verify gives it: the lead
    was resolved in one incident and the same change WORSENED in a look-alike that another fix
    resolved — since issue 33 that look-alike takes the margin PROVEN needs, so the lead is
    a similar incident's, at 0, with the failure named beside it (not a warning: it is neither
    the alert's service nor a strong match)."""
    assert plain["verification"] is None
    assert plain["alert_service"] is None
    assert plain["state"] == "unproven"
    assert plain["confidence"]["value"] == 0
    lead = plain["recommendations"][0]
    assert lead["action"] == OVERTURN_FIX
    assert lead["applies"] == "weak"
    assert [e["action_id"] for e in lead["evidence"]] == ["INC-2321/A1"]
    assert [(f["action_id"], f["outcome"]) for f in lead["failed_elsewhere"]] == [
        ("INC-2324/A1", "WORSENED")]
    match = {r["incident_id"]: r["match"] for r in plain["recalled"]}
    assert match == {"INC-2321": "weak", "INC-2324": "weak"}
    assert plain["warnings"] == []


def test_ledger_alert_leads_with_its_own_fix_and_only_warns_of_the_timeout_raise(
        ledger_plain: dict[str, Any], data_dir: Path) -> None:
    """The old overturn case: the raise that made things worse on ledger-api is never the
    lead (nor any recommendation), so --verify has no wrong direction to overturn."""
    assert ledger_plain["alert_service"] == "ledger-api"
    assert ledger_plain["state"] == "unproven"
    assert ledger_plain["confidence"]["value"] == 0
    lead = ledger_plain["recommendations"][0]
    assert lead["action"] == LEDGER_FIX
    assert [(e["action_id"], e["outcome"]) for e in lead["evidence"]] == [
        ("INC-2318/A2", "MITIGATED")]
    assert all(r["action"] != TIMEOUT_RAISE for r in ledger_plain["recommendations"])
    [warning] = ledger_plain["warnings"]
    assert warning["action_id"] == "INC-2318/A1"
    assert TIMEOUT_RAISE in warning["text"]

    doc, _ = verify_json(LEDGER, data_dir=data_dir)
    assert without_verification(doc) == without_verification(ledger_plain)
    v = doc["verification"]
    assert v["disposition"] == "undetermined"
    assert not [q for q in v["questions"] if q["result"] == "refuted"]
    assert "rerecall" not in by_check(v)
    assert by_check(v)["same_service"]["result"] == "confirmed"
    assert by_check(v)["no_worsened"]["result"] == "confirmed"
    assert "do not apply" not in v["conclusion"] and TIMEOUT_RAISE not in v["conclusion"]


def test_verify_overturns_and_leaves_the_briefing_as_it_was(
        plain: dict[str, Any], overturn: dict[str, Any], data_dir: Path) -> None:
    v = overturn["verification"]
    assert v["status"] == "done"
    assert v["disposition"] == "overturn"
    # Nothing new confirmed: held at the briefing's own figure (a weak lead, 0, since issue 33).
    assert v["confidence"]["value"] == 0
    checks = by_check(v)
    for check in ("no_worsened", "rerecall"):
        assert checks[check]["result"] == "refuted", check
        assert checks[check]["key"] is True, check
    # one incident only, and the other one recalled failed with it: thin, not a key fact
    assert (checks["second_incident"]["result"], checks["second_incident"]["key"]) == (
        "refuted", False)
    assert checks["second_layer"]["result"] == "confirmed"
    assert "same_service" not in checks  # the alert names no service: the engineer is asked
    assert OVERTURN_OTHER_FIX in checks["rerecall"]["found"]
    assert "INC-2324/A2" in checks["rerecall"]["found"]
    engineer = [q for q in v["questions"] if q["probe"] == "engineer"]
    assert len(engineer) == 3
    assert all(q["result"] == "unknown" and q["missing"] == "needs an engineer" and q["key"]
               for q in engineer)
    assert "Is this alert about image-service, the service of INC-2321?" in [
        q["text"] for q in engineer]
    assert f"do not apply “{OVERTURN_FIX}” (INC-2321/A1)" in v["conclusion"]
    assert "3 of 7 questions refuted (2 key)" in v["conclusion"]
    assert f"consider “{OVERTURN_OTHER_FIX}” (INC-2324/A2 RESOLVED)" in v["conclusion"]
    # the artifact: on disk under DATA/verifications, the same pass
    artifact = Path(v["artifact"])
    assert artifact.is_file()
    assert artifact.resolve().parent == (data_dir / "verifications").resolve()
    saved = json.loads(artifact.read_text(encoding="utf-8"))
    assert saved["disposition"] == "overturn"
    assert [q["id"] for q in saved["questions"]] == [q["id"] for q in v["questions"]]
    # the briefing itself: every other field exactly as without --verify
    assert without_verification(overturn) == without_verification(plain)


def test_question_ids_are_the_same_on_every_run(overturn: dict[str, Any],
                                                data_dir: Path) -> None:
    again, _ = verify_json(OVERTURN, data_dir=data_dir)
    assert without_verification(again) == without_verification(overturn)
    ids = [q["id"] for q in overturn["verification"]["questions"]]
    assert all(re.fullmatch(r"[0-9a-f]{12}", qid) for qid in ids)
    assert len(set(ids)) == len(ids)
    assert [q["id"] for q in again["verification"]["questions"]] == ids


def test_open_questions_are_listed_then_answered_by_id(
        overturn_run: tuple[dict[str, Any], subprocess.CompletedProcess[str]],
        data_dir: Path) -> None:
    doc, first = overturn_run
    listed = dict(OPEN_ANSWER.findall(first.stderr))
    engineer = {q["id"]: q["text"] for q in doc["verification"]["questions"]
                if q["probe"] == "engineer"}
    assert listed == engineer
    assert "3 open question(s)" in first.stderr
    yes_id, no_id, open_id = sorted(listed)
    answered, second = verify_json(OVERTURN, "--answer", f"{yes_id}=yes",
                                   "--answer", f"{no_id}=no", data_dir=data_dir)
    results = {q["id"]: q["result"] for q in answered["verification"]["questions"]}
    assert results[yes_id] == "confirmed"
    assert results[no_id] == "refuted"
    assert results[open_id] == "unknown"
    assert yes_id not in second.stderr and no_id not in second.stderr
    # only the question left unanswered is listed again
    assert dict(OPEN_ANSWER.findall(second.stderr)) == {open_id: listed[open_id]}
    assert "1 open question(s)" in second.stderr

    every = [arg for qid in sorted(listed) for arg in ("--answer", f"{qid}=yes")]
    settled, third = verify_json(OVERTURN, *every, data_dir=data_dir)
    assert all(q["result"] != "unknown" for q in settled["verification"]["questions"])
    assert OPEN_ANSWER.search(third.stderr) is None
    assert "open question" not in third.stderr


# --- the maintain case -----------------------------------------------------------------------

def test_maintain_case_is_undetermined_until_the_engineer_answers(data_dir: Path) -> None:
    doc, first = verify_json(MAINTAIN, data_dir=data_dir)
    assert doc["confidence"]["value"] == 75
    assert {e["incident_id"] for e in doc["recommendations"][0]["evidence"]} == {
        "INC-1561", "INC-1838"}
    v = doc["verification"]
    assert v["disposition"] == "undetermined"
    open_engineer = [q for q in v["questions"]
                     if q["probe"] == "engineer" and q["result"] == "unknown"]
    assert len(open_engineer) == 1
    question = open_engineer[0]
    assert question["key"] is True
    assert question["missing"] == "needs an engineer"
    assert "recorded cause of INC-1561" in question["text"]
    assert dict(OPEN_ANSWER.findall(first.stderr)) == {question["id"]: question["text"]}

    settled, second = verify_json(MAINTAIN, "--answer", f"{question['id']}=yes",
                                  data_dir=data_dir)
    assert without_verification(settled) == without_verification(doc)
    v = settled["verification"]
    assert v["disposition"] == "maintain"
    assert v["confidence"]["value"] == 85
    assert v["conclusion"].endswith(f"apply “{MAINTAIN_FIX}” (INC-1561/A3)")
    assert by_check(v)["ask"]["result"] == "confirmed"
    assert OPEN_ANSWER.search(second.stderr) is None


# --- needed below 85 only --------------------------------------------------------------------

def _three_alike(path: Path) -> Path:
    """Three recurrences of one failure on one service (each declared related to the others,
    so they do not compete for the same alert), each resolved by the same action: tier 3, ≥ 90."""
    ids = ("INC-9010", "INC-9020", "INC-9030")
    blocks = [textwrap.dedent(f"""\
        - id: INC-90{n}0
          title: Billing exporter stuck on a full spool disk
          service: billing-exporter
          started_at: {day}T08:00:00Z
          related: [{", ".join(i for i in ids if i != f"INC-90{n}0")}]
          severity: SEV3
          symptoms: >-
            billing-exporter stopped shipping invoices; its spool disk was at 100% and the
            export queue kept growing.
          root_cause: >-
            Rotated export logs were never deleted, so the spool disk filled up.
          tags: [disk, spool, billing]
          actions:
            - id: A1
              action: Deleted rotated export logs from the spool disk
              outcome: RESOLVED
              kind: cleanup
              explanation: With the spool disk freed the exporter resumed and the queue drained.
        """) for n, day in ((1, "2026-02-03"), (2, "2026-03-10"), (3, "2026-04-21"))]
    path.write_text("\n".join(blocks), encoding="utf-8")
    return path


def test_not_needed_at_85_or_more_unless_always(tmp_path: Path) -> None:
    incidents = _three_alike(tmp_path / "incidents.yaml")
    data = tmp_path / "data"
    alert = "billing-exporter spool disk full, invoices not shipping"
    doc, _ = verify_json(alert, data_dir=data, incidents=incidents)
    assert doc["state"] == "proven"
    assert doc["confidence"]["value"] >= 85
    v = doc["verification"]
    assert v["status"] == "not_needed"
    assert "85" in v["reason"] and "--verify=always" in v["reason"]
    assert v["questions"] == [] and v["artifact"] is None
    assert not (data / "verifications").exists()

    result = call_cli("brief", "--verify=always", alert, "--json", data_dir=data,
                     incidents=incidents)
    assert result.returncode == 0, result.stderr
    v = json.loads(result.stdout)["verification"]
    assert v["status"] == "done"
    assert v["disposition"] in DISPOSITIONS
    assert v["questions"]
    assert Path(v["artifact"]).is_file()


def test_verify_always_runs_on_the_bundled_keyerror_family(data_dir: Path) -> None:
    result = call_cli("brief", "--verify=always", KEYERROR, "--json", data_dir=data_dir)
    doc = json.loads(result.stdout)
    assert doc["confidence"]["value"] >= 85
    assert doc["verification"]["status"] == "done", result.stderr
    assert result.returncode == 0


# --- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["nonsense", "abc=maybe"])
def test_malformed_answer_is_bad_input(answer: str, data_dir: Path) -> None:
    result = call_cli("brief", "--verify", "--answer", answer, MAINTAIN, "--json",
                     data_dir=data_dir)
    assert_clean_failure(result, 2)
    assert f"--answer {answer!r}" in result.stderr
    assert "QID=yes" in result.stderr


def test_answer_to_an_unknown_id_is_named_and_the_run_goes_on(data_dir: Path) -> None:
    doc, result = verify_json(MAINTAIN, "--answer", "0123456789ab=yes", data_dir=data_dir)
    assert "--answer 0123456789ab: no question of this verification has that id" in (
        result.stderr)
    assert doc["verification"]["status"] == "done"
    assert "0123456789ab" not in {q["id"] for q in doc["verification"]["questions"]}


def test_unknown_verify_mode_is_bad_input(data_dir: Path) -> None:
    result = call_cli("brief", "--verify=sometimes", MAINTAIN, "--json", data_dir=data_dir)
    assert_clean_failure(result, 2)
    assert "--verify='sometimes'" in result.stderr
    assert "--verify=always" in result.stderr


def test_alert_right_after_verify_is_still_the_alert(plain: dict[str, Any],
                                                     data_dir: Path) -> None:
    """argparse hands the text to --verify as its value; the CLI gives it back."""
    result = call_cli("brief", "--json", "--verify", OVERTURN, data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert without_verification(doc) == without_verification(plain)
    assert doc["verification"]["disposition"] == "overturn"


# --- declared probes -------------------------------------------------------------------------

PROBE_SCRIPT = textwrap.dedent("""\
    import pathlib
    import sys

    marker, verdict = sys.argv[1], sys.argv[2]
    pathlib.Path(marker).write_text(" ".join(sys.argv[3:]), encoding="utf-8")
    print(f"status={verdict}")
    if verdict == "ok" and "--loud" in sys.argv:
        print("password=hunter2")
        print("AKIAIOSFODNN7EXAMPLE")
        print("\\x1b]0;pwned\\x07\\x1b[2J[bold red]x[/]")
""")


def _probe(name: str, question: str, marker: Path, script: Path, verdict: str,
           *extra: str, services: list[str] | None = None) -> str:
    argv = [sys.executable, str(script), str(marker), verdict, "--service={service}",
            "--incident={incident}", *extra]
    lines = [f"- name: {name}",
             f"  description: Test probe {name}",
             f"  question: {question}",
             f"  argv: {json.dumps(argv)}",
             "  params:",
             "    service: {type: service}",
             "    incident: {type: incident}",
             "  timeout: 30",
             "  confirmed_if: '^status=ok$'",
             "  refuted_if: '^status=bad$'"]
    if services:
        lines.append(f"  services: {json.dumps(services)}")
    return "\n".join(lines) + "\n"


def _memory_with_probes(folder: Path, probes: str) -> Path:
    """A copy of the bundled memory with probes.yaml beside it; the copy's path."""
    incidents = folder / "incidents.yaml"
    shutil.copyfile(BUNDLED_INCIDENTS, incidents)
    (folder / "probes.yaml").write_text(probes, encoding="utf-8")
    return incidents


@pytest.fixture
def probe_script(tmp_path: Path) -> Path:
    script = tmp_path / "probe_script.py"
    script.write_text(PROBE_SCRIPT, encoding="utf-8")
    return script


def _elsewhere(tmp_path: Path, script: Path) -> str:
    return _probe("elsewhere", "Is {service} fine for {incident} on payments?",
                  tmp_path / "ran-elsewhere", script, "ok", services=["payments-api"])


def test_declared_probe_waits_for_allow_probe(tmp_path: Path, probe_script: Path,
                                              data_dir: Path) -> None:
    marker = tmp_path / "ran-ledger-ok"
    incidents = _memory_with_probes(tmp_path, _probe(
        "ledger-ok", "Is {service} passing its health check?", marker, probe_script, "ok")
        + _elsewhere(tmp_path, probe_script))
    doc, result = verify_json(LEDGER, data_dir=data_dir, incidents=incidents)
    checks = by_check(doc["verification"])
    question = checks["ledger-ok"]
    assert question["probe"] == "declared"
    assert question["result"] == "unknown"
    assert question["missing"].startswith("needs confirmation")
    expected = [sys.executable, str(probe_script), str(marker), "ok",
                "--service=ledger-api", "--incident=INC-2318"]
    assert question["argv"] == expected
    assert question["text"] == "Is ledger-api passing its health check?"
    assert not marker.exists()  # never run without --allow-probe
    assert f"  --allow-probe ledger-ok   {question['text']} (runs: {' '.join(expected)})" in (
        result.stderr.splitlines())
    # a probe restricted to other services is not asked for a ledger-api alert
    assert "elsewhere" not in checks
    assert not any("elsewhere" in s for s in doc["verification"].get("skipped_probes", []))


def test_allowed_probes_run_and_answer_by_their_rules(tmp_path: Path, probe_script: Path,
                                                      data_dir: Path) -> None:
    ok_marker, bad_marker = tmp_path / "ran-ledger-ok", tmp_path / "ran-ledger-bad"
    incidents = _memory_with_probes(tmp_path, _probe(
        "ledger-ok", "Is {service} passing its health check?", ok_marker, probe_script, "ok")
        + _probe("ledger-bad", "Is {service} clear of stuck locks since {incident}?",
                 bad_marker, probe_script, "bad")
        + _elsewhere(tmp_path, probe_script))
    doc, result = verify_json(
        LEDGER, "--allow-probe", "ledger-ok", "--allow-probe", "ledger-bad",
        "--allow-probe", "elsewhere", "--allow-probe", "nosuch",
        data_dir=data_dir, incidents=incidents)
    checks = by_check(doc["verification"])
    assert ok_marker.read_text(encoding="utf-8") == "--service=ledger-api --incident=INC-2318"
    assert bad_marker.exists()
    assert checks["ledger-ok"]["result"] == "confirmed"
    assert checks["ledger-ok"]["output"].strip() == "status=ok"
    assert checks["ledger-bad"]["result"] == "refuted"
    assert checks["ledger-bad"]["output"].strip() == "status=bad"
    assert all(checks[name]["evidence_sha256"] for name in ("ledger-ok", "ledger-bad"))
    assert "--allow-probe ledger" not in result.stderr  # nothing of theirs left open
    # services: [payments-api] — not asked, not run, even when allowed
    assert "elsewhere" not in checks
    assert not (tmp_path / "ran-elsewhere").exists()
    assert "triage: --allow-probe nosuch: no probe of that name" in result.stderr
    assert "--allow-probe elsewhere: no probe" not in result.stderr


def test_probe_output_is_redacted_cleaned_and_kept_literal(tmp_path: Path, probe_script: Path,
                                                           data_dir: Path) -> None:
    marker = tmp_path / "ran-loud"
    incidents = _memory_with_probes(tmp_path, _probe(
        "loud", "Is {service} passing its loud check?", marker, probe_script, "ok", "--loud"))
    doc, result = verify_json(LEDGER, "--allow-probe", "loud", data_dir=data_dir,
                              incidents=incidents)
    assert marker.exists()
    question = by_check(doc["verification"])["loud"]
    assert question["result"] == "confirmed"
    output = question["output"]
    assert "status=ok" in output
    assert "[REDACTED" in output
    assert MARKUP in output  # data, shown as written
    assert "\x1b" not in output and "\x07" not in output
    assert "\x1b" not in result.stdout and "\\u001b" not in result.stdout
    for secret in SECRETS:
        assert secret not in result.stdout, secret
        assert secret not in result.stderr, secret
    written = [p for p in data_dir.rglob("*") if p.is_file()]
    assert Path(doc["verification"]["artifact"]) in written
    for path in written:
        content = path.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in content, (secret, path)


def test_broken_probes_file_fails_the_verification_not_the_briefing(
        tmp_path: Path, ledger_plain: dict[str, Any], data_dir: Path) -> None:
    probes = textwrap.dedent("""\
        - name: typo
          description: A probe with a field nobody knows
          question: Is {service} healthy?
          argv: [/bin/echo, "{service}"]
          params:
            service: {type: service}
          confirmed_if: 'x'
          colour: blue
        - name: templated-program
          description: A probe whose program is a parameter
          question: Is {service} up?
          argv: ["{service}", "x"]
          params:
            service: {type: service}
          confirmed_if: 'x'
        """)
    incidents = _memory_with_probes(tmp_path, probes)
    before = incidents.read_bytes()
    lines = probes.splitlines()
    colour = next(n for n, line in enumerate(lines, 1) if "colour:" in line)
    program = next(n for n, line in enumerate(lines, 1) if '"{service}", "x"' in line)
    result = call_cli("brief", "--verify", LEDGER, "--json", data_dir=data_dir,
                     incidents=incidents)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    probes_file = tmp_path / "probes.yaml"
    assert f"{probes_file}:{colour}:" in result.stderr
    assert "unknown field" in result.stderr
    assert f"{probes_file}:{program}:" in result.stderr
    assert "argv[0]" in result.stderr
    doc = json.loads(result.stdout)
    assert doc["verification"]["status"] == "failed"
    assert doc["verification"]["artifact"] is None
    assert without_verification(doc) == without_verification(ledger_plain)
    assert incidents.read_bytes() == before
    # `triage check` finds the same problems before anyone is paged.
    checked = call_cli("check", data_dir=data_dir, incidents=incidents)
    assert checked.returncode == 2 and "Traceback" not in checked.stderr
    assert f"{probes_file}:{colour}:" in checked.stderr
    assert f"{probes_file}:{program}:" in checked.stderr


def test_check_lists_the_declared_probes(tmp_path: Path, probe_script: Path,
                                         data_dir: Path) -> None:
    incidents = _memory_with_probes(tmp_path, _elsewhere(tmp_path, probe_script))
    checked = call_cli("check", data_dir=data_dir, incidents=incidents)
    assert checked.returncode == 0, checked.stderr
    assert f"{tmp_path / 'probes.yaml'}: ok — 1 declared probe (elsewhere)" in checked.stdout


# --- text output -----------------------------------------------------------------------------

def test_text_output_shows_the_verification_section(data_dir: Path) -> None:
    result = call_cli("brief", "--verify", OVERTURN, data_dir=data_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "\nVerification — " in out
    section = out[out.index("\nVerification — "):]
    assert "OVERTURN · verification confidence 0" in section
    artifact = re.search(r"^  artifact: (.+)$", section, re.MULTILINE)
    assert artifact is not None
    path = Path(artifact.group(1))
    assert path.is_file()
    assert path.resolve().parent == (data_dir / "verifications").resolve()
    assert json.loads(path.read_text(encoding="utf-8"))["disposition"] == "overturn"


def test_answers_without_verify_are_refused_not_ignored(data_dir: Path) -> None:
    result = call_cli("brief", "--answer", "abcdef012345=yes", MAINTAIN, data_dir=data_dir)
    assert_clean_failure(result, 2)
    assert "add --verify" in result.stderr


def test_an_unknown_verify_value_with_no_alert_is_refused(data_dir: Path) -> None:
    result = call_cli("brief", "--verify=sometimes", "--json", data_dir=data_dir)
    assert_clean_failure(result, 2)
    assert "--verify='sometimes'" in result.stderr
