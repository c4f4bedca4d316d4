"""Storage faults — a full disk, a read-only or forbidden directory — named for the user.

They reach us in three shapes: an ``OSError`` with an errno (our own writes), a
``sqlite3.OperationalError`` ("database or disk is full", the embedding cache) and LanceDB's
plain ``RuntimeError("lance error: … No space left on device (os error 28) …")``. One reading
of all three here, so every message names the same fault the same way.
"""

from __future__ import annotations

import errno
import re
import sqlite3

# errno → (what happened, what to do about it, given the directory).
_FAULTS: dict[int, tuple[str, str]] = {
    errno.ENOSPC: ("No space left on device", "free some space on the disk holding {where}"),
    errno.EDQUOT: ("Disk quota exceeded", "free some space (or raise the quota) for {where}"),
    errno.EFBIG: ("File too large", "free some space (or raise the file-size limit) for {where}"),
    errno.EROFS: ("Read-only file system",
                  "{where} is on a read-only file system: remount it read-write or point "
                  "{setting} at a writable place"),
    errno.EACCES: ("Permission denied", "make {where} writable for this user"),
    errno.EPERM: ("Operation not permitted", "make {where} writable for this user"),
    errno.EIO: ("Input/output error", "check the disk holding {where}"),
}
# How LanceDB (Rust) and SQLite word the same faults in their messages.
_WORDED = [
    ("no space left on device", errno.ENOSPC), ("os error 28", errno.ENOSPC),
    ("database or disk is full", errno.ENOSPC), ("disk quota exceeded", errno.EDQUOT),
    ("os error 122", errno.EDQUOT), ("read-only file system", errno.EROFS),
    ("os error 30", errno.EROFS), ("readonly database", errno.EROFS),
    ("permission denied", errno.EACCES), ("os error 13", errno.EACCES),
    ("operation not permitted", errno.EPERM), ("os error 1)", errno.EPERM),
    ("disk i/o error", errno.EIO), ("input/output error", errno.EIO), ("os error 5)", errno.EIO),
]


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 8:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def fault_errno(exc: BaseException) -> int | None:
    """The errno of the storage fault behind ``exc`` (or its causes), None if it is not one."""
    for link in _chain(exc):
        if isinstance(link, OSError) and link.errno in _FAULTS:
            return link.errno
    for link in _chain(exc):
        if isinstance(link, OSError | RuntimeError | sqlite3.Error):
            text = str(link).lower()
            for words, number in _WORDED:
                if words in text:
                    return number
    return None


def is_storage_fault(exc: BaseException) -> bool:
    """A full disk, a read-only or forbidden place, a failing disk: not a bug, not bad input."""
    return fault_errno(exc) is not None


_SOURCE_LOCATION = re.compile(r",?\s*/\S*/\.cargo/registry/\S*")


def fault_name(exc: BaseException) -> str:
    """What happened, in the operating system's words ("No space left on device"), or the
    error's own first line when it is not a known storage fault."""
    number = fault_errno(exc)
    if number is not None:
        return _FAULTS[number][0]
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    # LanceDB's errors end with the Rust source location (", /root/.cargo/registry/…:12:34"):
    # of no use to the reader, and it pushes what happened off the line.
    return _SOURCE_LOCATION.sub("", first)[:200]


def fault_hint(exc: BaseException, where: object, setting: str = "the setting") -> str:
    """What to do about it, naming the place (and the setting that chose it)."""
    number = fault_errno(exc)
    if number is None:
        return f"check that {where} is a writable directory"
    return _FAULTS[number][1].format(where=where, setting=setting)
