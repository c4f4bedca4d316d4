"""The one way the CLI shows an error, and the guard every subcommand runs under."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from functools import wraps
from typing import TYPE_CHECKING

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
