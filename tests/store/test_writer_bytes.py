"""The team's bytes stay the team's (issue 22 items 3, 4, 6, 14): a save into a CRLF file, one
with a BOM or without a final newline, through a symlink, into a memory that holds no incident
yet, and beside a crashed save's temp file. Every test compares the exact bytes on disk: the
old bytes plus the new block (in the file's own line ending), or the old bytes with only the
replaced block changed."""

from __future__ import annotations

import codecs
import os
import time
from pathlib import Path

import pytest

from store.loader import load_incidents
from store.models import Incident
from store.writer import (
    STALE_TEMP_SECONDS,
    file_sha256,
    incident_block,
    is_new_memory,
    leftover_temps,
    leftover_warnings,
    lock_path,
    save_incident,
    save_lock,
)

LF_FILE = """\
# Team memory — kept in git; Windows editors save it with CRLF.
- id: INC-1
  service: ledger
  symptoms: totals drift
  actions: []

# between incidents
- id: INC-2
  service: queue
  symptoms: backlog growing
  actions: []
"""


def new_incident(incident_id: str = "INC-3", symptoms: str = "zeppelin lines snapped") -> Incident:
    return Incident.model_validate({
        "id": incident_id, "service": "airship", "symptoms": symptoms,
        "actions": [{"id": "A1", "action": "Re-tied the lines", "outcome": "RESOLVED",
                     "explanation": "It stayed put"}]})


def block(incident: Incident, newline: str = "\n") -> bytes:
    return incident_block(incident).replace("\n", newline).encode("utf-8")


def write(path: Path, text: str, newline: str = "\n", bom: bool = False) -> bytes:
    data = (codecs.BOM_UTF8 if bom else b"") + text.replace("\n", newline).encode("utf-8")
    path.write_bytes(data)
    return data


# --- item 3: line endings, BOM, final newline ---------------------------------------------

@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n"], ids=["crlf", "cr", "lf"])
def test_append_keeps_the_files_line_endings_and_bom(tmp_path: Path, newline: str,
                                                     bom: bool) -> None:
    path = tmp_path / "incidents.yaml"
    before = write(path, LF_FILE, newline, bom)
    save_incident(path, new_incident(), file_sha256(path))
    after = path.read_bytes()
    # Old bytes, one blank line (the file ends with one line break), the block — all in the
    # file's own line ending: in `git diff` only the new lines appear.
    assert after == before + newline.encode() + block(new_incident(), newline)
    assert [i.id for i in load_incidents(path).incidents] == ["INC-1", "INC-2", "INC-3"]


@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
def test_replace_changes_only_that_block_in_a_crlf_file(tmp_path: Path, bom: bool) -> None:
    path = tmp_path / "incidents.yaml"
    before = write(path, LF_FILE, "\r\n", bom)
    edited = load_incidents(path).incidents[0].model_copy(update={"severity": "SEV1"})
    save_incident(path, edited, file_sha256(path))
    head, _, tail = before.partition(b"- id: INC-1\r\n")
    tail = tail[tail.index(b"\r\n# between incidents"):]
    assert path.read_bytes() == head + block(edited, "\r\n") + tail
    assert load_incidents(path).incidents[0].severity == "SEV1"


def test_a_file_without_a_final_newline_keeps_ending_without_one(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    before = write(path, LF_FILE.removesuffix("\n"), "\r\n")
    save_incident(path, new_incident(), file_sha256(path))
    appended = path.read_bytes()
    assert appended == before + b"\r\n\r\n" + block(new_incident(), "\r\n").removesuffix(b"\r\n")
    # Replacing the last block keeps the file ending as it did.
    edited = new_incident(symptoms="zeppelin lines snapped twice")
    save_incident(path, edited, file_sha256(path))
    assert path.read_bytes() == (before + b"\r\n\r\n"
                                 + block(edited, "\r\n").removesuffix(b"\r\n"))


def test_a_mixed_file_gets_the_line_ending_it_uses_most(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    text = LF_FILE.replace("\n", "\r\n").replace("# between incidents\r\n",
                                                 "# between incidents\n")
    path.write_bytes(text.encode("utf-8"))
    save_incident(path, new_incident(), file_sha256(path))
    assert path.read_bytes() == text.encode() + b"\r\n" + block(new_incident(), "\r\n")


# --- item 4: a symlinked incidents file ---------------------------------------------------

def test_a_symlinked_file_is_written_through_to_its_target(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    target = checkout / "incidents.yaml"
    before = write(target, LF_FILE)
    link = tmp_path / "home" / "incidents.yaml"
    link.parent.mkdir()
    link.symlink_to(target)

    with save_lock(link):
        assert (checkout / ".incidents.yaml.lock").exists()  # the lock is beside the target
        save_incident(link, new_incident(), file_sha256(link))

    assert link.is_symlink() and link.resolve() == target
    assert target.read_bytes() == before + b"\n" + block(new_incident())
    assert lock_path(link) == lock_path(target) == checkout / ".incidents.yaml.lock"
    assert sorted(p.name for p in link.parent.iterdir()) == ["incidents.yaml"]  # no temp, no lock
    assert sorted(p.name for p in checkout.iterdir()) == [".incidents.yaml.lock",
                                                          "incidents.yaml"]


# --- item 6: temp files a crashed save left -----------------------------------------------

def leftover(folder: Path, name: str, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"- id: INC-1\n  service: half a save")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_the_next_save_removes_old_leftovers_and_leaves_a_fresh_one(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    before = write(path, LF_FILE)
    old = leftover(tmp_path, ".incidents.yaml.k3j_9x0a.tmp", STALE_TEMP_SECONDS + 600)
    fresh = leftover(tmp_path, ".incidents.yaml.a1b2c3d4.tmp", 30)
    other = leftover(tmp_path, ".notes.yaml.a1b2c3d4.tmp", STALE_TEMP_SECONDS + 600)
    mine = leftover(tmp_path, ".incidents.yaml.backup.tmp", STALE_TEMP_SECONDS + 600)

    warnings = leftover_warnings(path)
    assert warnings == [
        f"{old}: warning: temporary file left by an interrupted save, 70 min old — not part "
        "of the memory; the next save removes it",
        f"{fresh}: warning: temporary file left by an interrupted save, 30 s old — not part of "
        "the memory; the next save removes it once it is over 1 h old (a save may still be "
        "writing it)"]

    with save_lock(path):
        save_incident(path, new_incident(), file_sha256(path))

    assert not old.exists()
    assert fresh.exists() and other.exists() and mine.exists()  # not this file's, or not ours
    assert [p for p, _ in leftover_temps(path)] == [fresh]
    assert path.read_bytes() == before + b"\n" + block(new_incident())


def test_leftovers_in_a_directory_memory(tmp_path: Path) -> None:
    folder = tmp_path / "memory"
    folder.mkdir()
    write(folder / "INC-1.yaml", LF_FILE)
    old = leftover(folder, ".INC-7.yaml.zzzzzzzz.tmp", 3 * 86400)
    assert [p for p, _ in leftover_temps(folder)] == [old]
    assert "3 days old" in leftover_warnings(folder)[0]
    with save_lock(folder):
        pass
    assert not old.exists()


# --- item 14: a memory that holds no incident yet -----------------------------------------

@pytest.mark.parametrize(("text", "kept"), [
    ("", ""),
    ("# The team's memory.\n# One item per incident.\n",
     "# The team's memory.\n# One item per incident.\n\n"),
    ("[]\n", ""),
    ("# The team's memory.\n[]  # none yet\n", "# The team's memory.\n  # none yet\n\n"),
], ids=["empty", "comments", "empty-list", "empty-list-with-comments"])
def test_the_first_incident_starts_a_memory(tmp_path: Path, text: str, kept: str) -> None:
    path = tmp_path / "incidents.yaml"
    path.write_text(text, encoding="utf-8")
    assert is_new_memory(path)
    save_incident(path, new_incident(), file_sha256(path))
    assert path.read_bytes() == kept.encode() + block(new_incident())
    assert [i.id for i in load_incidents(path).incidents] == ["INC-3"]  # `triage check` passes
    assert not is_new_memory(path)


def test_a_crlf_comment_only_file_starts_in_crlf(tmp_path: Path) -> None:
    path = tmp_path / "incidents.yaml"
    before = write(path, "# memory\n", "\r\n", bom=True)
    save_incident(path, new_incident(), file_sha256(path))
    assert path.read_bytes() == before + b"\r\n" + block(new_incident(), "\r\n")
