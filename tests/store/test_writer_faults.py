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

from store.loader import load_incidents
from store.writer import SaveFailed, file_sha256, lock_path, save_incident, save_lock
from tests.store.test_writer import ODD_FILE, new_incident

FAULTS = [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system"),
          (errno.EACCES, "Permission denied"), (errno.EDQUOT, "Disk quota exceeded")]


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
    assert failed.value.title.startswith(f"nothing was saved: {words} ")
    assert failed.value.title.endswith(str(odd_file))
    assert failed.value.lines == [f"{odd_file} is unchanged; no temporary file was left behind"]
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
