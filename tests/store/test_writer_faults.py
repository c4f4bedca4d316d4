"""The writer when the disk refuses: nothing saved (file as it was, no temp file, SaveFailed
naming the fault), or — once the rename has happened — saved, whatever fails after it.

Faults injected at the OS-call level (os.replace, os.fsync, os.open); tests/test_faults_disk.py
has the same faults for real (tmpfs) through the CLI.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from store.loader import IncidentFileError, Problem, load_incidents
from store.writer import SaveFailed, file_sha256, lock_path, save_incident, save_lock
from tests.store.test_writer import ODD_FILE, new_incident

FAULTS = [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system"),
          (errno.EACCES, "Permission denied"), (errno.EDQUOT, "Disk quota exceeded")]
# What the engineer is told to do, naming the incidents file's directory (and the setting).
HINTS = {errno.ENOSPC: "free some space on the disk holding {where}",
         errno.EROFS: "{where} is on a read-only file system: remount it read-write or point "
                      "TRIAGE_INCIDENTS at a writable place",
         errno.EACCES: "make {where} writable for this user",
         errno.EDQUOT: "free some space (or raise the quota) for {where}"}


@pytest.fixture
def odd_file(tmp_path: Path) -> Path:
    path = tmp_path / "incidents.yaml"
    path.write_text(ODD_FILE, encoding="utf-8")
    return path


def others(directory: Path, file: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p != file)


def failing(real: Any, number: int, after: int = 0) -> Any:
    """``real`` that raises OSError(number) from its (after+1)-th call on."""
    calls = [0]

    def call(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] > after:
            raise OSError(number, os.strerror(number))
        return real(*args, **kwargs)
    return call


@pytest.mark.parametrize(("number", "words"), FAULTS, ids=[w for _, w in FAULTS])
@pytest.mark.parametrize("call", ["replace", "fsync", "open"])
def test_a_refused_write_saves_nothing_names_the_fault_and_leaves_no_temp_file(
        odd_file: Path, monkeypatch: pytest.MonkeyPatch, call: str, number: int,
        words: str) -> None:
    before = odd_file.read_bytes()
    monkeypatch.setattr(os, call, failing(getattr(os, call), number))
    with pytest.raises(SaveFailed) as failed:
        save_incident(odd_file, new_incident(), file_sha256(odd_file))
    monkeypatch.undo()
    doing = "creating a temporary file beside" if call == "open" else "writing"
    assert failed.value.title == f"nothing was saved: {words} {doing} {odd_file}"
    assert failed.value.lines == [f"{odd_file} is unchanged; no temporary file was left behind"]
    what_to_do = HINTS[number].format(where=odd_file.parent)
    assert failed.value.hint == f"{what_to_do}, then save again."
    # (the postmortem form shows these as its refusal)
    assert failed.value.reasons == [f"{words} {doing} {odd_file} — {odd_file} is unchanged; "
                                    f"{what_to_do}, then save again"]
    assert failed.value.file == odd_file and failed.value.reason == words
    assert failed.value.exit_code == 1
    assert odd_file.read_bytes() == before
    assert others(odd_file.parent, odd_file) == []
    # and the next save, on a disk that takes it, works
    save_incident(odd_file, new_incident(), file_sha256(odd_file))
    assert [i.id for i in load_incidents(odd_file).incidents] == ["INC-1", "INC-2", "INC-3"]


def test_a_failing_directory_sync_after_the_rename_is_a_save_with_a_note(
        odd_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rename happened: the incident IS in the file. Reporting 'not saved' would lie."""
    notes: list[str] = []
    monkeypatch.setattr(os, "fsync", failing(os.fsync, errno.EIO, after=1))  # file ok, dir not
    written = save_incident(odd_file, new_incident(), file_sha256(odd_file), notes)
    monkeypatch.undo()
    assert written == odd_file
    assert odd_file.read_text(encoding="utf-8").startswith(ODD_FILE)
    assert [i.id for i in load_incidents(odd_file).incidents] == ["INC-1", "INC-2", "INC-3"]
    assert notes == [f"{odd_file} was saved, but its directory could not be synced to disk "
                     "(Input/output error): a power cut now could lose this save"]


def test_a_lock_file_that_cannot_be_created_saves_nothing(odd_file: Path) -> None:
    lock_path(odd_file).mkdir()  # a real failure: open(…, "a") on a directory
    with pytest.raises(SaveFailed) as failed, save_lock(odd_file):
        pytest.fail("the lock must not be taken")
    assert failed.value.title.startswith("nothing was saved: Is a directory creating the lock "
                                         f"file for {odd_file}")
    assert odd_file.read_text(encoding="utf-8") == ODD_FILE


def test_a_temporary_file_that_cannot_be_removed_is_named(
        odd_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = odd_file.read_bytes()
    monkeypatch.setattr(os, "replace", failing(os.replace, errno.ENOSPC))
    monkeypatch.setattr(os, "unlink", failing(os.unlink, errno.EACCES))
    with pytest.raises(SaveFailed) as failed:
        save_incident(odd_file, new_incident(), file_sha256(odd_file))
    monkeypatch.undo()
    (left,) = others(odd_file.parent, odd_file)
    assert left.startswith(".incidents.yaml.") and left.endswith(".tmp")
    assert failed.value.lines == [f"{odd_file} is unchanged; a temporary file could not be "
                                  f"removed: {odd_file.parent / left}"]
    assert odd_file.read_bytes() == before


def test_an_incidents_path_that_cannot_be_read_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    import socket

    special = tmp_path / "incidents.yaml"  # a socket: it exists, open() refuses it (ENXIO)
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(special))
        with pytest.raises(IncidentFileError) as raised:
            file_sha256(special)
    assert raised.value.problems == [Problem(str(special), None, "",
                                             "cannot read: No such device or address")]
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    with pytest.raises(IncidentFileError) as raised:
        file_sha256(loop)
    assert [p.message for p in raised.value.problems] == [
        "cannot be opened: Too many levels of symbolic links — point TRIAGE_INCIDENTS at the "
        "incidents file or directory itself"]


def test_the_lock_of_a_file_is_beside_it_and_of_a_directory_inside_it(tmp_path: Path) -> None:
    # Every writer (console, `triage add`) must name the same lock file for the same target.
    folder = tmp_path / "incidents"
    folder.mkdir()
    file = folder / "payments.yaml"
    assert lock_path(file) == folder / ".payments.yaml.lock"
    assert lock_path(folder) == folder / ".triage.lock"
    with save_lock(folder):
        assert (folder / ".triage.lock").is_file()

