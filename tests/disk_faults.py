"""Real storage faults for tests: a full disk (ENOSPC) and a read-only one (EROFS).

Real first: a tiny tmpfs mounted over a directory, filled until the kernel says ENOSPC, or
remounted read-only (we run as root here, so ``chmod`` would not stop a write). Where mount is
not permitted the same ``Disk`` injects the fault at the OS-call level instead — ``os.open``
(creating or writing), ``os.mkdir``, ``os.replace``, ``os.fsync``, LanceDB's write entry points
and ``sqlite3.connect`` — for paths under that directory only; ``run_triage`` runs the CLI
in-process (so the injection applies, and a real fault is the same). Never a mock of our own
functions.

``TRIAGE_TEST_INJECT_FAULTS=1`` forces the injected variant (to check it still works).
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

REPO = Path(__file__).resolve().parent.parent
FILLER = ".filler"
LANCE_MESSAGE = {
    errno.ENOSPC: "lance error: LanceError(IO): Generic LocalFileSystem error: Unable to copy "
                  "data to file: No space left on device (os error 28)",
    errno.EROFS: "lance error: LanceError(IO): Read-only file system (os error 30)",
}
SQLITE_MESSAGE = {errno.ENOSPC: "database or disk is full",
                  errno.EROFS: "attempt to write a readonly database"}


def _mount_works(probe: Path) -> bool:
    if os.environ.get("TRIAGE_TEST_INJECT_FAULTS") == "1" or os.geteuid() != 0:
        return False
    probe.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        return False
    subprocess.run(["umount", str(probe)], capture_output=True, check=False)
    return True


@dataclass
class Disk:
    """A directory that can be made full or read-only, really (tmpfs) or by injection."""

    path: Path
    real: bool
    fault: int | None = None  # errno in force (injected variant)

    # --- the fault ----------------------------------------------------------------------

    def fill(self) -> None:
        """No space left: every write under ``path`` fails with ENOSPC."""
        if not self.real:
            self.fault = errno.ENOSPC
            return
        for name, size in ((FILLER, 65536), (FILLER + "2", 512)):
            with open(self.path / name, "ab", buffering=0) as out:  # unbuffered: close is safe
                chunk = b"\0" * size
                try:
                    while True:
                        out.write(chunk)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc

    def free(self) -> None:
        if not self.real:
            self.fault = None
            return
        for name in (FILLER, FILLER + "2"):
            (self.path / name).unlink(missing_ok=True)

    def read_only(self) -> None:
        if not self.real:
            self.fault = errno.EROFS
            return
        _run("mount", "-o", "remount,ro", str(self.path))

    def writable(self) -> None:
        if not self.real:
            self.fault = None
            return
        _run("mount", "-o", "remount,rw", str(self.path))

    def covers(self, target: object) -> bool:
        if self.fault is None or target is None:
            return False
        if isinstance(target, int):
            try:
                target = os.readlink(f"/proc/self/fd/{target}")
            except OSError:
                return False
        text = os.fsdecode(target) if isinstance(target, bytes | os.PathLike | str) else ""
        if not text or text.startswith("memory://"):
            return False
        root, path = os.path.realpath(self.path), os.path.realpath(text)
        return path == root or path.startswith(root + os.sep)


def _run(*argv: str) -> None:
    subprocess.run(list(argv), check=True, capture_output=True)


class Disks:
    """Makes ``Disk``s for one test and undoes everything afterwards."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tmp_path = tmp_path
        self.monkeypatch = monkeypatch
        self.real = _mount_works(tmp_path / ".mount-probe")
        self.disks: list[Disk] = []
        self._patched = False

    def make(self, name: str, size: str = "2m") -> Disk:
        path = self.tmp_path / name
        path.mkdir(parents=True, exist_ok=True)
        if self.real:
            _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path))
        disk = Disk(path, self.real)
        self.disks.append(disk)
        if not self.real:
            self._inject()
        return disk

    def cleanup(self) -> None:
        for disk in self.disks:
            if disk.real:
                subprocess.run(["umount", str(disk.path)], capture_output=True, check=False)
                if os.path.ismount(disk.path):
                    subprocess.run(["umount", "-l", str(disk.path)], capture_output=True,
                                   check=False)

    # --- the injected variant: OS calls, LanceDB's and SQLite's write entry points ----------

    def _faulty(self, target: object) -> int | None:
        for disk in self.disks:
            if disk.covers(target):
                return disk.fault
        return None

    def _raise_for(self, target: object) -> None:
        number = self._faulty(target)
        if number is not None:
            raise OSError(number, os.strerror(number), os.fsdecode(target)
                          if isinstance(target, str | bytes | os.PathLike) else None)

    def _inject(self) -> None:
        if self._patched:
            return
        self._patched = True
        patch = self.monkeypatch
        real_open, real_mkdir, real_replace, real_fsync = os.open, os.mkdir, os.replace, os.fsync
        writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

        def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
            if flags & writing:
                self._raise_for(path)
            return real_open(path, flags, *args, **kwargs)

        def fake_mkdir(path: Any, *args: Any, **kwargs: Any) -> None:
            if not os.path.isdir(path):
                self._raise_for(path)
            real_mkdir(path, *args, **kwargs)

        def fake_replace(source: Any, target: Any, *args: Any, **kwargs: Any) -> None:
            self._raise_for(target)
            self._raise_for(source)
            real_replace(source, target, *args, **kwargs)

        def fake_fsync(fd: Any) -> None:
            number = self._faulty(fd if isinstance(fd, int) else fd.fileno())
            if number is not None:
                raise OSError(number, os.strerror(number))
            real_fsync(fd)

        patch.setattr(os, "open", fake_open)
        patch.setattr(os, "mkdir", fake_mkdir)
        patch.setattr(os, "replace", fake_replace)
        patch.setattr(os, "fsync", fake_fsync)
        self._inject_lancedb()
        self._inject_sqlite()

    def _inject_lancedb(self) -> None:
        from lancedb.db import LanceDBConnection
        from lancedb.table import LanceTable

        def guard(method: Callable[..., Any], where: Callable[[Any], str]) -> Callable[..., Any]:
            def guarded(obj: Any, *args: Any, **kwargs: Any) -> Any:
                number = self._faulty(where(obj))
                if number is not None:
                    raise RuntimeError(LANCE_MESSAGE[number])
                return method(obj, *args, **kwargs)
            return guarded

        self.monkeypatch.setattr(LanceDBConnection, "create_table",
                                 guard(LanceDBConnection.create_table, lambda db: db.uri))
        for name in ("add", "delete", "optimize", "create_index"):
            self.monkeypatch.setattr(LanceTable, name, guard(getattr(LanceTable, name),
                                                             lambda t: t._dataset_uri))

    def _inject_sqlite(self) -> None:
        real_connect = sqlite3.connect
        disks = self

        class Connection:
            def __init__(self, inner: sqlite3.Connection, number: int) -> None:
                self._inner, self._number = inner, number

            def _refuse(self, sql: str) -> None:
                if not sql.lstrip().upper().startswith(("SELECT", "CREATE TABLE IF NOT")):
                    raise sqlite3.OperationalError(SQLITE_MESSAGE[self._number])

            def execute(self, sql: str, *args: Any) -> Any:
                self._refuse(sql)
                return self._inner.execute(sql, *args)

            def executemany(self, sql: str, *args: Any) -> Any:
                self._refuse(sql)
                return self._inner.executemany(sql, *args)

            def __getattr__(self, name: str) -> Any:
                return getattr(self._inner, name)

            def __enter__(self) -> Connection:
                self._inner.__enter__()
                return self

            def __exit__(self, *exc: Any) -> Any:
                return self._inner.__exit__(*exc)

        def connect(database: Any, *args: Any, **kwargs: Any) -> Any:
            number = disks._faulty(database)
            inner = real_connect(database, *args, **kwargs)
            return Connection(inner, number) if number is not None else inner

        self.monkeypatch.setattr(sqlite3, "connect", connect)


@pytest.fixture(name="disks")
def disks_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Disks]:
    """``disks.make(name)``: a directory that can be filled or made read-only; unmounted after."""
    made = Disks(tmp_path, monkeypatch)
    try:
        yield made
    finally:
        made.cleanup()


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_triage(disks: Disks, *args: str, env: dict[str, str]) -> Result:
    """`triage ARGS` with ``env``, in-process: ``main``'s exit code (what the script exits
    with: console.__main__.run) and what it wrote to stdout and stderr.

    In-process for both variants: a real tmpfs fault is the kernel's, whichever process
    writes, and the injected one applies only here. A subprocess showed nothing more (a
    Traceback escaping ``main`` fails the test here) and cost ~2-3 s of interpreter start and
    MiniLM load a call. What only a process shows (two processes racing, a real permission
    fault as another user) is tested in tests/test_fault_matrix.py."""
    del disks  # the same call for a real and an injected disk
    from console.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        code = main(list(args))
    return Result(code, out.getvalue(), err.getvalue())


def copy_tree(source: Path, target: Path) -> None:
    """Copy a directory's contents into an existing (mounted) directory."""
    for item in source.iterdir():
        if item.is_dir():
            shutil.copytree(item, target / item.name)
        else:
            shutil.copy2(item, target / item.name)
