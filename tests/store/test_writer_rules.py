"""The writer's rules one by one: the house layout of a saved incident, what is redacted before
a save, where an append goes, and that a save never overwrites an edit it did not see or
leaves a temp file behind. tests/store/test_writer.py has the byte-keeping and crash tests.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from store.loader import load_incidents
from store.models import Incident
from store.writer import (
    FileChangedOnDisk,
    SaveFailed,
    SaveRefused,
    file_sha256,
    incident_block,
    redact_incident,
    save_incident,
)

REPO = Path(__file__).resolve().parents[2]

ONE = """\
- id: INC-1
  service: ledger
  symptoms: totals drift
  actions: []
"""


def make(incident_id: str = "INC-2", **fields: Any) -> Incident:
    data: dict[str, Any] = {"id": incident_id, "service": "ledger", "symptoms": "totals drift",
                            "actions": []}
    data.update(fields)
    return Incident.model_validate(data)


def action(local_id: str = "A1", **fields: Any) -> dict[str, Any]:
    return {"id": local_id, "action": "Replayed the journal", "outcome": "RESOLVED",
            "explanation": "The journal is authoritative", **fields}


def temp_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


# --- the house layout ---------------------------------------------------------------------

def test_a_full_incident_is_written_in_the_house_layout() -> None:
    incident = make(
        "INC-7", title="Ledger drift: totals differ", started_at="2026-11-02T03:04:05Z",
        severity="SEV2", symptoms="Totals differ between shards",
        root_cause="A replay ran twice", tags=["ledger", "failover"],
        actions=[action("A1", outcome="WORSENED", kind="replay", confirmed=False,
                        explanation="Replay doubled entries"),
                 action("A2", confirmed=True)])
    assert incident_block(incident) == textwrap.dedent("""\
        - id: INC-7
          title: 'Ledger drift: totals differ'
          service: ledger
          started_at: 2026-11-02T03:04:05Z
          severity: SEV2
          symptoms: Totals differ between shards
          root_cause: A replay ran twice
          tags: [ledger, failover]
          actions:
            - id: A1
              action: Replayed the journal
              outcome: WORSENED
              kind: replay
              confirmed: false
              explanation: Replay doubled entries
            - id: A2
              action: Replayed the journal
              outcome: RESOLVED
              confirmed: true
              explanation: The journal is authoritative
        """)


def test_optional_fields_left_out_are_not_written() -> None:
    assert incident_block(make("INC-8")) == textwrap.dedent("""\
        - id: INC-8
          service: ledger
          symptoms: totals drift
          actions: []
        """)


def test_a_start_time_in_another_zone_keeps_its_offset() -> None:
    block = incident_block(make(started_at="2026-11-02T03:04:05+02:00"))
    assert "  started_at: 2026-11-02T03:04:05+02:00\n" in block


LONG = ("Totals differ between shards after a failover; the reconciliation job reports four "
        "thousand mismatched rows and climbing, with amount fields doubled on the primary")

TEXTS = [
    # (symptoms as typed, folded into a ">-" block?)
    ("short and plain", False),
    (LONG, True),
    (LONG.replace("; ", ";  "), False),        # a double space would not survive folding
    (LONG + "\nsecond line", False),           # neither would a line break
    (" " + LONG, False),                        # nor leading or trailing spaces
    (LONG + " ", False),
    ("x" * 81, True),
    ("x" * 80, False),
    ("É" * 90 + " naïve ünïcode", True),
    ("#not a comment: yes", False),
    # a hyphen at the wrapping point is not a place to break: YAML would read "payments- api"
    (" ".join(["abcdefghij"] * 7 + ["payments-api", "restarted", "twice"]), True),
    # whitespace other than single spaces would be changed by the wrapping or refused by YAML
    (LONG.replace(" the ", "\tthe "), False),
    (LONG.replace(" the ", " the\u2028"), False),
    (LONG.replace(" the ", " the\u00a0"), False),   # nor is a no-break space folded
]


@pytest.mark.parametrize(("text", "folded"), TEXTS, ids=[f"{n}" for n in range(len(TEXTS))])
def test_prose_is_folded_only_when_it_reads_back_exactly(tmp_path: Path, text: str,
                                                         folded: bool) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    save_incident(path, make(root_cause=text), file_sha256(path))
    written = path.read_text(encoding="utf-8")
    assert ("root_cause: >-\n" in written) is folded
    if folded:  # lines of at most 88 characters, unless one word is longer
        block = written.split("root_cause: >-\n")[1].split("  actions:")[0]
        assert all(line.startswith("    ") and (len(line) <= 4 + 88 or " " not in line[4:])
                   for line in block.splitlines())
    assert load_incidents(path).incidents[1].root_cause == text


def test_folded_prose_wraps_at_88_characters() -> None:
    words = ["abcdefghij"] * 8 + ["k"] + ["abcdefghij"] * 3
    block = incident_block(make(root_cause=" ".join(words)))
    assert block.split("root_cause: >-\n")[1].split("  actions:")[0] == (
        "    " + " ".join(words[:8]) + "\n" + "    " + " ".join(words[8:]) + "\n")


TAGS = [["ledger", "failover"], ["a, b", "c"], ["x]", "{y}"], ["#x", "- z", "k: v"], ["yes", "1"]]


@pytest.mark.parametrize("tags", TAGS, ids=range(len(TAGS)))
def test_tags_read_back_as_typed_in_one_flow_list(tmp_path: Path, tags: list[str]) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    save_incident(path, make(tags=tags), file_sha256(path))
    assert load_incidents(path).incidents[1].tags == tags
    [line] = [line for line in path.read_text(encoding="utf-8").splitlines() if "tags:" in line]
    assert line.startswith("  tags: [") and line.endswith("]")


SCALARS = ["yes", "no", "null", "123", "1.5", "a: b", "- dash", "[x]", "{x}", "'quoted'",
           '"double"', "tab\there", "é and 日本", "x" * 200, "trailing: ", "@at", "*star",
           "&anchor", "!tag", "%pct", "`tick`", "0x1F"]


@pytest.mark.parametrize("value", SCALARS, ids=range(len(SCALARS)))
def test_any_value_reads_back_as_typed_on_one_line(tmp_path: Path, value: str) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    incident = make(title=value, severity=value,
                    actions=[action(action=value, kind=value, explanation=value)])
    save_incident(path, incident, file_sha256(path))
    assert load_incidents(path).incidents[1] == incident
    written = path.read_text(encoding="utf-8")
    assert len(written.splitlines()) == len(ONE.splitlines()) + 12  # a blank line, 11 fields
    if value == "é and 日本":
        assert "title: é and 日本\n" in written  # readable, not \xe9 escapes


# --- appending: where the new block goes ----------------------------------------------

ENDINGS = [
    # (how the file ends, what separates the new block)
    (ONE, "\n"),
    (ONE + "\n", ""),
    (ONE + "\n\n", ""),
    (ONE.rstrip("\n"), "\n\n"),
    (ONE + "# trailing comment", "\n\n"),
    (ONE + "# trailing comment\n", "\n"),
]


@pytest.mark.parametrize(("old", "separator"), ENDINGS, ids=range(len(ENDINGS)))
def test_append_adds_the_block_after_one_blank_line(tmp_path: Path, old: str,
                                                    separator: str) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(old, encoding="utf-8")
    save_incident(path, make(), file_sha256(path))
    block = incident_block(make())
    if not old.endswith("\n"):  # a file saved without a final newline stays so (issue 22 item 3)
        block = block.removesuffix("\n")
    assert path.read_text(encoding="utf-8") == old + separator + block


def test_a_new_incident_in_a_directory_memory_is_a_file_of_its_own(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "team.yaml").write_text(ONE, encoding="utf-8")
    written = save_incident(memory, make("INC-2"), file_sha256(memory))
    assert written == memory / "INC-2.yaml"
    assert written.read_text(encoding="utf-8") == incident_block(make("INC-2"))
    assert (memory / "team.yaml").read_text(encoding="utf-8") == ONE


def test_editing_an_incident_of_a_directory_memory_rewrites_only_its_file(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "a.yaml").write_text(ONE, encoding="utf-8")
    other = incident_block(make("INC-2")) + "\n" + incident_block(make("INC-3"))
    (memory / "b.yml").write_text(other, encoding="utf-8")
    edited = make("INC-3", severity="SEV1")
    assert save_incident(memory, edited, file_sha256(memory)) == memory / "b.yml"
    assert (memory / "a.yaml").read_text(encoding="utf-8") == ONE
    assert (memory / "b.yml").read_text(encoding="utf-8") == (
        incident_block(make("INC-2")) + "\n" + incident_block(edited))


def test_editing_keeps_comments_and_blank_lines_between_incidents(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    before = (ONE + "  # note on INC-1\n\n# about INC-2\n" + incident_block(make("INC-2"))
              + "\n# the end\n")
    path.write_text(before, encoding="utf-8")
    edited = load_incidents(path).incidents[0].model_copy(update={"severity": "SEV3"})
    save_incident(path, edited, file_sha256(path))
    assert path.read_text(encoding="utf-8") == before.replace(ONE, incident_block(edited))


def test_editing_a_one_line_incident_keeps_the_comment_after_it(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    tail = "# about INC-2\n" + incident_block(make("INC-2"))
    path.write_text("- {id: INC-1, service: ledger, symptoms: totals drift, actions: []}\n" + tail,
                    encoding="utf-8")
    edited = make("INC-1", severity="SEV3")
    save_incident(path, edited, file_sha256(path))
    assert path.read_text(encoding="utf-8") == incident_block(edited) + tail


def test_editing_the_last_incident_keeps_what_follows_it(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    before = ONE + "\n" + incident_block(make("INC-2")) + "\n\n# kept\n"
    path.write_text(before, encoding="utf-8")
    edited = make("INC-2", severity="SEV1")
    save_incident(path, edited, file_sha256(path))
    assert path.read_text(encoding="utf-8") == ONE + "\n" + incident_block(edited) + "\n\n# kept\n"


def test_a_save_keeps_the_files_permissions(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    path.chmod(0o640)
    save_incident(path, make(), file_sha256(path))
    assert path.stat().st_mode & 0o7777 == 0o640


def test_a_save_that_would_break_the_file_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    twice = make(actions=[action("A1"), action("A1")])
    with pytest.raises(SaveRefused) as refused:
        save_incident(path, twice, file_sha256(path))
    assert len(refused.value.reasons) == 1
    assert refused.value.reasons[0].startswith(f"the file would not be valid after saving: "
                                               f"{path}:")
    assert "duplicate action id 'A1'" in refused.value.reasons[0]
    assert str(refused.value).splitlines()[0] == ("save refused, nothing written: "
                                                  + refused.value.reasons[0])
    assert path.read_text(encoding="utf-8") == ONE
    assert temp_files(tmp_path) == []


def test_every_reason_for_a_refusal_is_given(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    twice = make(actions=[action("A1"), action("A1"), action("A2"), action("A2")])
    with pytest.raises(SaveRefused) as refused:
        save_incident(path, twice, file_sha256(path))
    assert len(refused.value.reasons) == 2
    assert ["'A1'" in refused.value.reasons[0], "'A2'" in refused.value.reasons[1]] == [True, True]
    assert str(refused.value).splitlines()[0] == ("save refused, nothing written: "
                                                  + "; ".join(refused.value.reasons))


# --- redaction before a save -------------------------------------------------------------

SECRET = "postgres://app:s3cretpw@db:5432/pay"

REDACTED_FIELDS = [
    # (where the secret is typed, how `found` names the place)
    ("title", "title"),
    ("symptoms", "symptoms"),
    ("root_cause", "root cause"),
    ("action", "action A1"),
    ("explanation", "explanation A1"),
    ("service", "service"),
    ("severity", "severity"),
    ("tags", "tag"),
    ("kind", "kind A1"),
]


@pytest.mark.parametrize(("field", "where"), REDACTED_FIELDS, ids=[f for f, _ in REDACTED_FIELDS])
def test_a_secret_in_any_free_text_field_is_redacted_before_saving(field: str,
                                                                   where: str) -> None:
    text = f"Connect failed for {SECRET} at peak"
    fields: dict[str, Any] = {"title": "Ledger drift", "root_cause": "a replay ran twice"}
    first = action("A1")
    if field in ("action", "explanation", "kind"):
        first[field] = text
    else:
        fields[field] = [text] if field == "tags" else text
    cleaned, found = redact_incident(make(actions=[first, action("A2")], **fields))
    assert found == [f"url-password in {where}"]
    shown = cleaned.model_dump_json()
    assert "s3cretpw" not in shown
    assert "postgres://app:[REDACTED:url-password]@db:5432/pay" in shown
    untouched = make(actions=[action("A1"), action("A2")],
                     **{"title": "Ledger drift", "root_cause": "a replay ran twice"})
    for name in {"id", "service", "tags", "severity"} - {field}:
        assert getattr(cleaned, name) == getattr(untouched, name)
    assert cleaned.actions[1] == untouched.actions[1]


def test_an_incident_without_secrets_is_saved_as_typed() -> None:
    incident = make(title=None, root_cause=None, actions=[action()])
    cleaned, found = redact_incident(incident)
    assert (cleaned, found) == (incident, [])
    assert cleaned.title is None and cleaned.root_cause is None


def test_every_secret_found_is_reported_with_its_place() -> None:
    incident = make(symptoms=f"{SECRET} and password=hunter2xyz", actions=[
        action("A1", explanation="token ghp_abcdefghijklmnopqrstuvwxyz0123456789 revoked"),
        action("A2", action="Rotated AKIAIOSFODNN7EXAMPLE")])
    cleaned, found = redact_incident(incident)
    assert sorted(found) == ["aws-access-key in action A2", "github-token in explanation A1",
                             "secret-value in symptoms", "url-password in symptoms"]
    assert "hunter2xyz" not in cleaned.symptoms
    assert cleaned.actions[1].action == "Rotated [REDACTED:aws-access-key]"


# --- never overwrite an edit the save did not see ---------------------------------------

def test_a_broken_edit_by_a_teammate_is_reported_as_a_change_not_as_their_errors(
        tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    loaded = file_sha256(path)
    path.write_text(ONE + "- id: [half typed\n", encoding="utf-8")
    with pytest.raises(FileChangedOnDisk) as refused:
        save_incident(path, make(), loaded)
    assert refused.value.reasons == [
        f"{path} changed on disk since it was loaded (someone else edited it) — reload, then "
        "save again; nothing was written"]
    assert path.read_text(encoding="utf-8") == ONE + "- id: [half typed\n"


def test_a_file_added_to_a_directory_memory_is_a_change(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "a.yaml").write_text(ONE, encoding="utf-8")
    loaded = file_sha256(memory)
    (memory / "b.yml").write_text(incident_block(make("INC-5")), encoding="utf-8")
    with pytest.raises(FileChangedOnDisk):
        save_incident(memory, make("INC-2"), loaded)
    assert not (memory / "INC-2.yaml").exists()


def test_a_renamed_file_in_a_directory_memory_is_a_change(tmp_path: Path) -> None:
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "a.yaml").write_text(ONE, encoding="utf-8")
    loaded = file_sha256(memory)
    (memory / "a.yaml").rename(memory / "b.yaml")
    assert file_sha256(memory) != loaded
    assert file_sha256(tmp_path / "missing.yaml") is None


def test_with_no_hash_from_a_load_the_save_goes_ahead(tmp_path: Path) -> None:
    """``expected_sha256=None`` is a save with nothing loaded before it (nothing to compare)."""
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    save_incident(path, make(), None)
    assert [i.id for i in load_incidents(path).incidents] == ["INC-1", "INC-2"]


_SAVE_SCRIPT = """
import sys
from pathlib import Path
from store.models import Incident
from store.writer import FileChangedOnDisk, file_sha256, save_incident
path = Path(sys.argv[1])
incident = Incident.model_validate({"id": "INC-2", "service": "ledger",
                                    "symptoms": "totals drift", "actions": []})
try:
    save_incident(path, incident, file_sha256(path))
except FileChangedOnDisk as exc:
    print("REFUSED", exc.reasons[0])
    sys.exit(3)
print("SAVED")
"""


@pytest.mark.parametrize("step", ["created", "half-written", "synced"])
def test_an_edit_made_while_a_save_is_being_written_is_never_overwritten(
        tmp_path: Path, step: str) -> None:
    """The save stops itself at ``step`` (TRIAGE_PAUSE_AT); a teammate saves the file; the
    save goes on and must refuse, leaving the teammate's edit and no temp file."""
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    env = {**os.environ, "TRIAGE_PAUSE_AT": step}
    child = subprocess.Popen([sys.executable, "-c", _SAVE_SCRIPT, str(path)], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, status = os.waitpid(child.pid, os.WUNTRACED)
        assert os.WIFSTOPPED(status), f"the save did not pause at {step!r}: {child.stderr.read()}"
        teammate = ONE + "\n# a teammate's note\n"
        path.write_text(teammate, encoding="utf-8")
        os.kill(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 3, (out, err)
    assert out.startswith("REFUSED ") and "changed on disk" in out
    assert path.read_text(encoding="utf-8") == teammate
    assert temp_files(tmp_path) == []
    # Reloaded, the same save goes through and keeps the teammate's edit.
    save_incident(path, make(), file_sha256(path))
    assert path.read_text(encoding="utf-8").startswith(teammate)


@contextmanager
def largest_file(size: int) -> Iterator[None]:
    """Writes past ``size`` bytes fail with EFBIG (as on a full disk) within this block."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_a_failed_write_leaves_the_file_as_it_was_and_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    loaded = file_sha256(path)
    with largest_file(len(ONE) + 10), pytest.raises(SaveFailed) as failed:
        save_incident(path, make(symptoms="x" * 200), loaded)
    assert failed.value.title == f"nothing was saved: File too large writing {path}"
    assert failed.value.exit_code == 1
    assert path.read_text(encoding="utf-8") == ONE
    assert temp_files(tmp_path) == []
    save_incident(path, make(), loaded)  # and the next save works
    assert [i.id for i in load_incidents(path).incidents] == ["INC-1", "INC-2"]


def test_related_and_drill_are_written_and_read_back(tmp_path: Path) -> None:
    """Editing an incident that names related ones (or one saved in a drill) keeps both: the
    writer once dropped them, and the save was refused as not reading back."""
    path = tmp_path / "incidents.yaml"
    path.write_text(ONE, encoding="utf-8")
    save_incident(path, make(related=["INC-1"], drill=True), file_sha256(path))
    saved = load_incidents(path).incidents[1]
    assert saved.related == ["INC-1"] and saved.drill is True
    text = path.read_text(encoding="utf-8")
    assert "  related: [INC-1]\n" in text and "  drill: true\n" in text
    save_incident(path, make("INC-3"), file_sha256(path))
    plain = path.read_text(encoding="utf-8").split("- id: INC-3")[1]
    assert "related" not in plain and "drill" not in plain
