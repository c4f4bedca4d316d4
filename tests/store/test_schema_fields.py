"""The fields added for drills (`related`, `drill`) and how unknown fields are treated.

`related` is checked by `triage check` (each id exists and is not the incident itself, with
file:line) as a warning: drills skip such an id and briefings never read it, so it blocks
neither `check` nor `brief` nor `add` (issue 22 item 14); an unknown field is a warning and
is ignored, so a teammate's newer file never makes this build reject the whole memory; a
misspelt *required* field still fails, naming the misspelling.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from console.__main__ import main
from store.loader import IncidentFileError, load_incidents

HEAD = """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  related: [INC-2]
- id: INC-2
  service: widget-api
  symptoms: widget queue stuck again
  drill: true
  related:
    - INC-1
    - INC-404
    - INC-2
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def check(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, path: Path
          ) -> tuple[int, str, str]:
    monkeypatch.setenv("TRIAGE_INCIDENTS", str(path))
    code = main(["check"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_related_and_drill_are_read(tmp_path: Path) -> None:
    memory = load_incidents(write(tmp_path, HEAD.replace("    - INC-404\n    - INC-2\n", "")))
    first, second = memory.incidents
    assert first.related == ["INC-2"] and first.drill is False
    assert second.related == ["INC-1"] and second.drill is True
    assert memory.drill_ids == {"INC-2"}
    assert memory.reference_problems == []


def test_related_must_name_other_incidents_in_memory(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD)
    memory = load_incidents(path)  # briefings never read `related`: the memory still loads
    assert [str(p) for p in memory.reference_problems] == [
        f"{path}:11: INC-2 related[1]: 'INC-404' is not an incident in memory — fix the id "
        "or remove it",
        f"{path}:12: INC-2 related[2]: an incident cannot be related to itself — list the "
        "other occurrences of the problem"]


def test_check_warns_of_a_dangling_related_id(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, HEAD)
    code, out, err = check(capsys, monkeypatch, path)
    assert code == 0, err
    assert f"{path}:11: warning: INC-2 related[1]: 'INC-404'" in out
    assert f"{path}:12: warning: INC-2 related[2]" in out and "itself" in out
    assert "ok — 2 incidents" in out and "2 related ids not in memory (warning)" in out


def test_related_id_must_be_an_id(tmp_path: Path) -> None:
    path = write(tmp_path, HEAD.replace("related: [INC-2]", "related: ['INC 2']"))
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    assert [str(p).split(": ")[0:2] for p in caught.value.problems] == [
        [f"{path}:4", "INC-1 related[0]"]]


def test_unknown_fields_warn_with_line_and_are_ignored(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD.replace("    - INC-404\n    - INC-2\n", "").replace(
        "  drill: true\n", "  drill: true\n  runbook_url: https://example.invalid/rb\n")
    text += """\
  actions:
    - id: A1
      action: Drained the widget queue
      outcome: RESOLVED
      explanation: it emptied
      owner: team-widgets
"""
    path = write(tmp_path, text)
    code, out, err = check(capsys, monkeypatch, path)
    assert code == 0, err
    assert out.splitlines()[:2] == [
        f"{path}:9: warning: unknown field 'runbook_url' in INC-2: ignored by this version of "
        "triage (did you mean 'runbook'?)",  # the field is `runbook` (issue 24)
        f"{path}:17: warning: unknown field 'owner' in INC-2/A1: ignored by this version of "
        "triage"]
    assert "ok — 2 incidents, 1 drill, 1 actions" in out and "2 unknown fields ignored" in out
    memory = load_incidents(path)
    assert "runbook_url" not in memory.incidents[1].model_dump()


def test_misspelt_required_field_still_fails_and_names_the_misspelling(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, HEAD.replace("  symptoms: widget queue stuck\n",
                                        "  symtoms: widget queue stuck\n", 1))
    code, out, err = check(capsys, monkeypatch, path)
    assert code == 2
    assert (f"{path}:1: INC-1 symptoms: required field is missing — 'symtoms' (line 3) looks "
            "like a misspelling of 'symptoms'") in err
    assert (f"{path}:3: warning: unknown field 'symtoms' in INC-1: ignored by this version of "
            "triage (did you mean 'symptoms'?)") in out


def test_content_hash_sees_related_and_drill(tmp_path: Path) -> None:
    # A drill flag added later must make the index follow (it changes what counts as evidence).
    plain = HEAD.replace("    - INC-404\n    - INC-2\n", "")
    before = load_incidents(write(tmp_path, plain)).source_hash
    after = load_incidents(write(tmp_path, plain.replace("drill: true", "drill: false"))
                           ).source_hash
    assert before != after
