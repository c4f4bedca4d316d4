"""The one way the CLI shows an error, and the guard every subcommand runs under."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import TYPE_CHECKING, Any, TextIO

from console.exit_codes import EXIT_INTERNAL
from store.errors import TriageError

if TYPE_CHECKING:
    from console.engine.config import Settings

Command = Callable[["Settings", argparse.Namespace], int]


def report_error(error: TriageError) -> int:
    """The one way the CLI shows an error: title, lines, hint on stderr; its exit code."""
    print(f"triage: {error.render()}", file=sys.stderr)
    return error.exit_code


def fail(message: str) -> int:
    """Refuse bad input: ``message`` on stderr, exit 2."""
    return report_error(TriageError(message))


def internal_error(title: str, lines: Sequence[str] = (), hint: str = "") -> TriageError:
    """A TriageError that exits 1: the input was fine, something after it went wrong."""
    error = TriageError(title, lines, hint)
    error.exit_code = EXIT_INTERNAL
    return error


def unforeseen(exc: OSError) -> TriageError:
    """An OSError nobody caught: what it interrupted is not known here, so nothing is claimed
    about what was or was not written — `triage check` and `triage index` will say."""
    return internal_error(
        f"{exc.strerror or exc}: {exc.filename or ''} — check TRIAGE_DATA_DIR and "
        "TRIAGE_INCIDENTS point at readable, writable places, then run `triage check` and "
        "`triage index`")


def command(run: Command) -> Command:
    """A subcommand: whatever TriageError (or unforeseen OSError) escapes it is shown by
    :func:`report_error`, and its exit code returned."""

    @wraps(run)
    def guarded(settings: Settings, args: argparse.Namespace) -> int:
        try:
            return run(settings, args)
        except TriageError as exc:
            return report_error(exc)
        except OSError as exc:
            return report_error(unforeseen(exc))
    return guarded


# --- the process's own streams -----------------------------------------------------------------
# A failed write to stdout is about where the output goes (a pipe whose reader left, a full
# disk), never about TRIAGE_DATA_DIR: it must not reach `unforeseen`. Writes to stdout go
# through OutputGuard, which turns the OSError into OutputError (not an OSError, so no handler
# in a command takes it for a data-dir fault); `guard_output` shows it.

# The reader of stdout left (`triage brief … | head -1`): exit quietly with the status a shell
# gives a writer that SIGPIPE ended, 128 + 13, as `yes | head -1` leaves `yes`.
EXIT_BROKEN_PIPE = 141


class OutputError(Exception):
    """Writing stdout failed: ``error`` says why."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class OutputGuard:
    """stdout for a headless command: every write and flush that fails raises OutputError."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except OSError as exc:
            raise OutputError(exc) from exc

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            raise OutputError(exc) from exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def guard_output(run: Callable[[], int]) -> int:
    """``run()`` with stdout guarded and flushed before it returns (so a full disk is met
    here, not in the interpreter's exit); a failed write is shown by :func:`output_failed`.
    argparse's SystemExit (``--help``) passes through, once its output is flushed."""
    real = sys.stdout
    if real is None:  # stdout closed (`>&-`): print() writes nothing, nothing to guard
        return run()
    guard = OutputGuard(real)
    sys.stdout = guard  # type: ignore[assignment]
    try:
        try:
            return run()
        finally:
            if sys.stdout is guard:
                sys.stdout = real
            guard.flush()
    except OutputError as exc:
        return output_failed(exc.error, real)


def output_failed(error: OSError, stream: TextIO) -> int:
    """A closed pipe: nothing shown, EXIT_BROKEN_PIPE. Anything else (a full disk): one line
    on stderr, exit 1. Either way what is still buffered for stdout is dropped, so the
    interpreter's own flush at exit fails no more ("Exception ignored …")."""
    _discard(stream)
    if isinstance(error, BrokenPipeError) or error.errno == errno.EPIPE:
        return EXIT_BROKEN_PIPE
    with contextlib.suppress(OSError):  # stderr on the same full disk: the exit code says it
        print(f"triage: cannot write the output: {error.strerror or error} (stdout)",
              file=sys.stderr)
    return EXIT_INTERNAL


def _discard(stream: TextIO) -> None:
    """Point the process's stdout at /dev/null (any other stream, as a test's, is not
    flushed at exit)."""
    if stream is not sys.__stdout__:
        return
    try:
        fd = stream.fileno()
    except (OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def tolerant_streams() -> None:
    """stdout and stderr in an encoding that cannot hold every character (PYTHONIOENCODING=
    ascii, a Latin-1 locale) degrade instead of raising UnicodeEncodeError: stdout writes
    ``?`` (JSON stays valid JSON), stderr a backslash escape (``\\u2014``). UTF-8 streams are
    left as they are."""
    for name, errors in (("stdout", "replace"), ("stderr", "backslashreplace")):
        stream = getattr(sys, name)
        encoding = str(getattr(stream, "encoding", None) or "").lower().replace("-", "_")
        strict = getattr(stream, "errors", None) == "strict"
        if not strict or encoding in ("", "utf_8", "utf8", "utf_8_sig"):
            continue
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors=errors)
            except (OSError, ValueError):
                continue
