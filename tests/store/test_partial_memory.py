"""The loader's partial memory (issue 22 items 1 and 5): what loads on its own when the file
does not load whole, every problem in one pass, and the one rule for which files of a memory
directory are read — by the loader and by the file hash alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from store.loader import IncidentFileError, incident_files, load_incidents
from store.writer import file_sha256

GOOD = "- id: INC-{n}\n  service: widget-api\n  symptoms: widget queue stuck {n}\n"


def failed(path: Path) -> IncidentFileError:
    with pytest.raises(IncidentFileError) as caught:
        load_incidents(path)
    return caught.value


def test_a_yaml_typo_costs_only_its_own_item(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(GOOD.format(n=1) + "- id: INC-2\n  service: 'unclosed\n" + GOOD.format(n=3),
                    encoding="utf-8")
    error = failed(path)
    # (the line where the unclosed quote opens, not the end of the file)
    assert [str(p) for p in error.problems] == [
        f"{path}:5: not valid YAML: found unexpected end of stream"]
    assert error.partial is not None
    assert [i.id for i in error.partial.incidents] == ["INC-1", "INC-3"]
    assert [str(u) for u in error.unsearched] == [f"INC-2 ({path}:4)"]
    assert error.partial.origin["INC-3"] == (str(path), 6)  # the file's own lines


def test_both_sides_of_a_merge_conflict_are_left_out_and_named(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(GOOD.format(n=1) + "<<<<<<< HEAD\n" + GOOD.format(n=2) + "=======\n"
                    + GOOD.format(n=2).replace("stuck", "jammed") + ">>>>>>> main\n"
                    + GOOD.format(n=3), encoding="utf-8")
    error = failed(path)
    [problem] = error.problems
    assert problem.line == 4 and "merge conflict" in problem.message
    assert "lines 4–12" in problem.message
    assert [i.id for i in error.partial.incidents] == ["INC-1", "INC-3"]
    assert [u.label for u in error.unsearched] == ["INC-2"]


def test_a_constructor_failure_leaves_the_next_incident_readable(tmp_path: Path) -> None:
    """An impossible date used to leave the shared constructor half-way (the failing node
    marked recursive): the next incident must still construct."""
    path = tmp_path / "incidents.yaml"
    path.write_text(GOOD.format(n=1) + "  started_at: 2026-02-30T02:05:00Z\n"
                    + GOOD.format(n=2) + "  started_at: 2026-03-14T02:05:00Z\n",
                    encoding="utf-8")
    error = failed(path)
    assert [(p.line, p.field) for p in error.problems] == [(4, "INC-1 started_at")]
    assert [i.id for i in error.partial.incidents] == ["INC-2"]


def test_editor_files_are_not_part_of_a_memory_directory_nor_of_its_hash(
        tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    (folder / "team.yaml").write_text(GOOD.format(n=1), encoding="utf-8")
    before = file_sha256(folder)
    (folder / ".#team.yaml").symlink_to("bob@host.99:1700000000")  # Emacs lock (dangling)
    (folder / "._team.yaml").write_bytes(b"\x00\x05\x16\x07 AppleDouble")
    (folder / ".hidden.yml").write_text(GOOD.format(n=2), encoding="utf-8")
    (folder / "sub.yaml").mkdir()
    assert [p.name for p in incident_files(folder)] == ["team.yaml"]
    assert [i.id for i in load_incidents(folder).incidents] == ["INC-1"]
    assert file_sha256(folder) == before
