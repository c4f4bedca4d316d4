"""The incidents file: every way it can be wrong is reported with file, line and field."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from store.loader import IncidentFileError, load_incidents
from store.models import ActionOutcome
from tests.conftest import BUNDLED_INCIDENTS


def problems_of(path: Path) -> list[str]:
    """Load ``path`` expecting failure; the problems as the user reads them, one per line."""
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    return [str(problem) for problem in caught.value.problems]


def only_problem(path: Path) -> str:
    lines = problems_of(path)
    assert len(lines) == 1, lines
    return lines[0]


def write(tmp_path: Path, text: str | bytes, name: str = "incidents.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


VALID_HEAD = """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  actions:
    - id: A1
      action: Restarted the frobnicator
      outcome: RESOLVED
      explanation: it came back empty
"""


# --- one problem at a time ------------------------------------------------------------

def test_duplicate_incident_id_names_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD + VALID_HEAD.replace("symptoms: widget", "symptoms: other"))
    message = only_problem(path)
    assert message.startswith(f"{path}:9: id:")
    assert "duplicate incident id 'INC-1'" in message
    assert "line 1" in message


def test_duplicate_action_id_names_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD + """\
    - id: A1
      action: Flushed the cache
      outcome: MITIGATED
      explanation: errors dropped
""")
    message = only_problem(path)
    assert message.startswith(f"{path}:9: INC-1 actions[1].id:")
    assert "duplicate action id 'A1'" in message


def test_unknown_outcome_names_line_field_and_the_valid_outcomes(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD.replace("outcome: RESOLVED", "outcome: FIXED"))
    message = only_problem(path)
    assert message.startswith(f"{path}:7: INC-1 actions[0].outcome:")
    assert "'FIXED'" in message
    for outcome in ActionOutcome:
        assert outcome.value in message


def test_missing_symptoms_names_the_incident_line_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD.replace("  symptoms: widget queue stuck\n", ""))
    message = only_problem(path)
    assert message.startswith(f"{path}:1: INC-1 symptoms:")
    assert "missing" in message


def test_blank_symptoms_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD.replace("symptoms: widget queue stuck", "symptoms: '   '"))
    message = only_problem(path)
    assert message.startswith(f"{path}:3: INC-1 symptoms:")
    assert "blank" in message


def test_numeric_id_is_a_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD.replace("- id: INC-1", "- id: 55"))
    message = only_problem(path)
    assert message.startswith(f"{path}:1: ")
    assert " id: " in message
    assert "string" in message and "55" in message


def test_actions_as_a_string_is_a_wrong_type(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  actions: "restart"
""")
    message = only_problem(path)
    assert message.startswith(f"{path}:4: INC-1 actions:")
    assert "list" in message and "'restart'" in message


def test_unknown_field_is_a_warning_at_its_line_not_an_error(tmp_path: Path) -> None:
    # Forward compatibility (store/loader.py): a field this version does not know is ignored
    # with a warning, so a newer teammate's file never makes this build reject the memory.
    path = write(tmp_path, VALID_HEAD + "  symptom: typo of symptoms\n")
    memory = load_incidents(path)
    assert [i.id for i in memory.incidents] == ["INC-1"]
    assert [str(w) for w in memory.warnings] == [
        f"{path}:9: warning: unknown field 'symptom' in INC-1: ignored by this version of "
        "triage (did you mean 'symptoms'?)"]


def test_unknown_field_inside_an_action_is_a_warning_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD.replace("      outcome: RESOLVED\n",
                                              "      outcome: RESOLVED\n      result: ok\n"))
    memory = load_incidents(path)
    assert memory.incidents[0].actions[0].outcome is ActionOutcome.RESOLVED
    assert [str(w) for w in memory.warnings] == [
        f"{path}:8: warning: unknown field 'result' in INC-1/A1: ignored by this version of "
        "triage"]


def test_key_given_twice_is_reported_not_silently_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD + "  symptoms: a second description\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:9: INC-1 symptoms:")
    assert "twice" in message


def test_unbalanced_brackets_are_not_yaml_and_name_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- id: INC-1
  service: widget-api
  tags: [queue, frobnicator
  symptoms: widget queue stuck
""")
    message = only_problem(path)
    assert message.startswith(f"{path}:4: ")
    assert "not valid YAML" in message


def test_binary_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00\x01")
    message = only_problem(path)
    assert message.startswith(str(path))
    assert "UTF-8" in message or "YAML" in message


def test_non_utf8_byte_names_the_line_it_is_on(tmp_path: Path) -> None:
    # An editor that saved the file as Latin-1: the é on line 3 is byte 0xE9.
    path = write(tmp_path, VALID_HEAD.replace("widget queue stuck", "café widget queue stuck")
                 .encode("latin-1"))
    message = only_problem(path)
    assert "UTF-8" in message
    assert message.startswith(f"{path}:3:"), message


def test_control_character_names_the_line_it_is_on(tmp_path: Path) -> None:
    # A log excerpt pasted with a stray NUL on line 3.
    path = write(tmp_path, VALID_HEAD.replace("widget queue stuck", "widget \x00 queue stuck"))
    message = only_problem(path)
    assert "YAML" in message
    assert message.startswith(f"{path}:3:"), message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n"])
def test_empty_file_says_what_is_expected(tmp_path: Path, text: str) -> None:
    # An empty file has no line to point at: the file and the expected shape are named.
    path = write(tmp_path, text)
    message = only_problem(path)
    assert message.startswith(f"{path}: ")
    assert "empty" in message and "- id:" in message


@pytest.mark.parametrize("text", ["id: INC-1\nservice: widget-api\n", "just some words\n",
                                  "# memory\n\nincidents:\n  - id: INC-1\n"])
def test_top_level_not_a_list(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    message = only_problem(path)
    first_content_line = next(n for n, line in enumerate(text.splitlines(), 1)
                              if line.strip() and not line.startswith("#"))
    assert message.startswith(f"{path}:{first_content_line}: ")
    assert "top level must be a list" in message


def test_an_item_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, VALID_HEAD + "- just a string\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:9: ")
    assert "mapping" in message


def test_missing_path_says_how_to_point_at_the_memory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "incidents.yaml"
    message = only_problem(missing)
    assert message.startswith(str(missing))
    assert "not found" in message and "TRIAGE_INCIDENTS" in message


# --- everything at once ----------------------------------------------------------------

def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    path = write(tmp_path, """\
- id: INC-1
  service: widget-api
  symptoms: widget queue stuck
  actions:
    - id: A1
      action: Restarted the frobnicator
      outcome: FIXED
      explanation: it came back
- id: INC-1
  service: widget-api
  symptoms: again
- id: INC-2
  service: widget-api
  colour: red
  actions:
    - id: A1
      action: Flushed the cache
      outcome: RESOLVED
      explanation: fine
    - id: A1
      action: Flushed the cache again
      outcome: RESOLVED
      explanation: fine again
- id: 77
  service: widget-api
  symptoms: numeric id
""")
    lines = problems_of(path)
    expected = [
        (7, "INC-1 actions[0].outcome", "FIXED"),
        (9, "id", "duplicate incident id 'INC-1'"),
        (12, "INC-2 symptoms", "missing"),
        (20, "INC-2 actions[1].id", "duplicate action id 'A1'"),
        (24, "77 id", "string"),
    ]
    for line, field, words in expected:
        assert any(text.startswith(f"{path}:{line}: {field}:") and words in text
                   for text in lines), (line, field, lines)
    assert len(lines) == len(expected), lines
    # An unknown field is a warning (ignored on load), reported beside the errors.
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    assert [str(w) for w in caught.value.warnings] == [
        f"{path}:14: warning: unknown field 'colour' in INC-2: ignored by this version of triage"]


# --- a directory of files ----------------------------------------------------------------

def test_directory_of_yaml_files_merges(tmp_path: Path, write_incidents, incident) -> None:
    folder = tmp_path / "memory"
    write_incidents([incident("INC-1")], name="a.yaml", directory=folder)
    write_incidents([incident("INC-2"), incident("INC-3", service="other-api")],
                    name="b.yml", directory=folder)
    (folder / "README.md").write_text("not an incident file\n- id: nope\n", encoding="utf-8")
    memory = load_incidents(folder)
    assert [i.id for i in memory.incidents] == ["INC-1", "INC-2", "INC-3"]
    assert {p.name for p in memory.files} == {"a.yaml", "b.yml"}
    assert memory.services == ["other-api", "widget-api"]


MEMORY_FILES = [
    # (name in the directory, read as part of the memory?)
    ("team.yaml", True),
    ("INC-2.yml", True),
    ("notes.txt", False),
    ("team.yaml.bak", False),
    (".team.yaml.k3j9x.tmp", False),   # a temp file a crashed save left behind
    ("README.md", False),
]


@pytest.mark.parametrize(("name", "read"), MEMORY_FILES, ids=[n for n, _ in MEMORY_FILES])
def test_which_files_of_a_directory_are_the_memory(tmp_path: Path, write_incidents, incident,
                                                   name: str, read: bool) -> None:
    folder = tmp_path / "memory"
    write_incidents([incident("INC-1")], name="base.yaml", directory=folder)
    write_incidents([incident("INC-2")], name=name, directory=folder)
    (folder / "sub.yaml").mkdir()  # a directory named like a file is not one
    memory = load_incidents(folder)
    assert sorted(i.id for i in memory.incidents) == (["INC-1", "INC-2"] if read else ["INC-1"])
    assert [p.name for p in memory.files] == sorted(["base.yaml", *([name] if read else [])])


def test_duplicate_id_across_files_names_both_files(tmp_path: Path, write_incidents,
                                                    incident) -> None:
    folder = tmp_path / "memory"
    first = write_incidents([incident("INC-1"), incident("INC-7")], name="a.yaml",
                            directory=folder)
    second = write_incidents([incident("INC-7", service="other-api")], name="b.yaml",
                             directory=folder)
    message = only_problem(folder)
    first_line = next(n for n, line in enumerate(first.read_text().splitlines(), 1)
                      if line == "- id: INC-7")
    assert message.startswith(f"{second}:1: id:")
    assert "INC-7" in message
    assert f"{first}:{first_line}" in message


def test_problems_in_several_files_are_all_reported(tmp_path: Path, write_incidents,
                                                    incident) -> None:
    folder = tmp_path / "memory"
    bad_a = write_incidents([incident("INC-1", symptoms=None)], name="a.yaml", directory=folder)
    bad_b = write(folder, "- id: INC-2\n  service: [oops\n", name="b.yaml")
    write_incidents([incident("INC-3")], name="c.yaml", directory=folder)
    lines = problems_of(folder)
    assert any(line.startswith(f"{bad_a}:1: INC-1 symptoms:") for line in lines), lines
    assert any(line.startswith(f"{bad_b}:") and "YAML" in line for line in lines), lines
    assert len(lines) == 2, lines


def test_directory_without_yaml_files(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "notes.txt").write_text("- id: INC-1\n", encoding="utf-8")
    message = only_problem(folder)
    assert message.startswith(str(folder))
    assert "no *.yaml" in message


# --- the bundled memory ----------------------------------------------------------------

def test_bundled_memory_loads_and_is_rich_enough() -> None:
    memory = load_incidents(BUNDLED_INCIDENTS)
    assert len(memory.incidents) >= 30
    assert len(memory.services) >= 6
    assert memory.action_count >= 120
    outcomes = Counter(a.outcome for i in memory.incidents for a in i.actions)
    assert set(outcomes) == set(ActionOutcome)
    for found in memory.incidents:
        assert found.actions, f"{found.id} has no actions"
        for action in found.actions:
            assert action.explanation.strip(), found.action_ref(action)


def test_bundled_memory_hash_ignores_comments_and_layout(tmp_path: Path) -> None:
    original = load_incidents(BUNDLED_INCIDENTS)
    text = BUNDLED_INCIDENTS.read_text(encoding="utf-8")
    edited = write(tmp_path,
                   "# a new comment at the top\n\n" + text.replace("\n- id:", "\n\n- id:"))
    assert load_incidents(edited).source_hash == original.source_hash
