"""Issue 22 item 12: the CLI's own streams. A closed stdout pipe ends `triage` quietly, a full
stdout says so in one line, and an encoding that cannot hold a character degrades to
replacement characters — none of them is blamed on TRIAGE_DATA_DIR.

The first three run the real process (its streams are the point); the encodings of every
subcommand are checked in process with streams of that encoding (no Latin-1 locale is
installed here: `latin-1` streams stand for LC_ALL=en_US.ISO-8859-1)."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console.cli.errors import EXIT_BROKEN_PIPE
from tests.conftest import BUNDLED_INCIDENTS, REPO_ROOT, TEST_NOW

CHECKOUT = "checkout-service p99 latency up, intermittent database connection errors"


def env_for(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TRIAGE_", "OLLAMA_", "PYTHONIOENCODING")) and k != "PYTHONPATH"}
    return {**env, "TRIAGE_DATA_DIR": str(data_dir), "TRIAGE_INCIDENTS": str(BUNDLED_INCIDENTS),
            "TRIAGE_NOW": TEST_NOW, "TRIAGE_OFFLINE": "1", **extra}


def run(*args: str, data_dir: Path, stdout: int, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "console", *args], cwd=REPO_ROOT,
                          env=env_for(data_dir, **extra), stdin=subprocess.DEVNULL,
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=180,
                          check=False)


def test_a_closed_stdout_pipe_ends_triage_quietly(tmp_path: Path) -> None:
    """`triage … | head -1`, the reader gone: no message, no "Exception ignored … BrokenPipe"
    (with exit 120) from the interpreter's flush, the exit status of SIGPIPE. (`check`: the
    same stdout as `brief`, 1 s, not 3; a write failing inside `brief` is tested below.)"""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ran = run("check", data_dir=tmp_path / "data", stdout=write_end)
    finally:
        os.close(write_end)
    assert (ran.returncode, ran.stderr) == (EXIT_BROKEN_PIPE, "")


def test_a_full_stdout_is_one_line_about_stdout(tmp_path: Path) -> None:
    """`> /dev/full`: the output is met in the flush before exit (it was the interpreter's
    "Exception ignored … OSError: [Errno 28]" and exit 120; a longer one "No space left on
    device — check TRIAGE_DATA_DIR")."""
    with open("/dev/full", "wb") as full:
        ran = run("check", data_dir=tmp_path / "data", stdout=full.fileno())
    assert ran.returncode == 1
    assert ran.stderr == "triage: cannot write the output: No space left on device (stdout)\n"


def test_an_ascii_stdout_gets_replacement_characters(tmp_path: Path) -> None:
    ran = run("check", data_dir=tmp_path / "data", stdout=subprocess.PIPE,
              PYTHONIOENCODING="ascii")
    assert ran.returncode == 0 and ran.stderr == "", ran.stderr[-600:]
    assert ran.stdout.startswith(f"{BUNDLED_INCIDENTS}: ok ? ")  # "ok — 58 incidents"


class Failing(io.TextIOBase):
    """stdout whose writes fail as a closed pipe's or a full disk's do."""

    def __init__(self, code: int) -> None:
        self.code = code

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize(("code", "exit_code", "shown"), [
    (errno.EPIPE, EXIT_BROKEN_PIPE, ""),
    (errno.ENOSPC, 1, "triage: cannot write the output: No space left on device (stdout)\n"),
], ids=["closed-pipe", "full"])
def test_a_briefing_that_cannot_be_written_is_not_blamed_on_the_data_dir(
        code: int, exit_code: int, shown: str, bundled_data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The briefing's own print fails (a long briefing into `head -1`): it said "Broken pipe:
    — check TRIAGE_DATA_DIR and TRIAGE_INCIDENTS …", exit 1."""
    from console.__main__ import main

    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    monkeypatch.setenv("TRIAGE_OFFLINE", "1")
    err = io.StringIO()
    with contextlib.redirect_stdout(Failing(code)), contextlib.redirect_stderr(err):
        got = main(["brief", CHECKOUT, "--json"])
    assert (got, err.getvalue()) == (exit_code, shown)


# --- every subcommand, in an encoding that cannot hold "—" --------------------------------------

def in_encoding(encoding: str, *args: str, stderr_errors: str = "backslashreplace"
                ) -> tuple[int, str, str]:
    """``triage ARGS`` in process with stdout (errors="strict", as Python opens it) and
    stderr in ``encoding``; the exit code and what each received."""
    from console.__main__ import main

    out = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors="strict",
                           write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding=encoding, errors=stderr_errors,
                           write_through=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TRIAGE_OFFLINE", "1")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exit_:  # argparse: --help, usage errors
                code = exit_.code if isinstance(exit_.code, int) else 1
    return (code, *(s.buffer.getvalue().decode(encoding)  # type: ignore[attr-defined]
                    for s in (out, err)))


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
@pytest.mark.parametrize(("args", "code", "shown"), [
    (["--help"], 0, "Incident triage console"),
    (["check"], 0, "ok"),
    (["brief", CHECKOUT, "--format", "md"], 0, "INC-2041"),
    (["brief", CHECKOUT, "--json"], 0, '"state"'),
    (["drill", "INC-2041"], 0, "INC-2041"),
], ids=["help", "check", "brief-md", "brief-json", "drill"])
def test_every_subcommand_degrades_instead_of_a_unicode_error(
        encoding: str, args: list[str], code: int, shown: str, bundled_data_dir: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    got, out, err = in_encoding(encoding, *args)
    assert (got, "Traceback" not in err) == (code, True), err[-600:]
    assert shown in out
    if args[-1] == "--json":
        json.loads(out)  # a replacement character never breaks the JSON


def test_a_strict_stderr_degrades_too(bundled_data_dir: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRIAGE_DATA_DIR", str(bundled_data_dir))
    code, out, err = in_encoding("ascii", "brief", "", stderr_errors="strict")
    assert (code, out) == (2, "")
    assert err == "triage: the alert is empty \\u2014 type or paste what the alert says\n"
