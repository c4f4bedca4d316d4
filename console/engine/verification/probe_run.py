"""Running a declared probe (console/engine/verification/probes.py declares them): once, confirmed, bounded.

:func:`run_probe` runs one probe only with ``confirmed=True`` (the engineer saw the exact argv)
and only an argv that is a rendering of the probe (its parameters are re-derived from it):
never through a shell, in its own process group (killed whole on timeout), stdout capped at
``OUTPUT_CAP`` (the process is killed past ``HARD_LIMIT``). Output is data: cleaned of control
characters, redacted, hashed; ``confirmed_if`` / ``refuted_if`` are searched in the redacted
text, and empty output is ``unknown`` unless the probe says what empty means.
:func:`run_all` runs several, at most ``MAX_CONCURRENT`` at once.
"""

from __future__ import annotations

import hashlib
import os
import re
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from console.engine.verification.probes import DeclaredProbe, ProbeRefused, Result, params_from_argv
from store.redact import redact
from store.text import clean

OUTPUT_CAP = 64 * 1024  # bytes of stdout kept
HARD_LIMIT = 1024 * 1024  # a probe writing more than this is killed
STDERR_CAP = 16 * 1024
MAX_CONCURRENT = 6
EMPTY_NOT_PROOF = ("empty output — an empty result is not proof (the probe does not declare "
                   "what empty means)")


class ProbeNotConfirmed(RuntimeError):
    """run_probe was called before the engineer confirmed the argv: nothing ran."""


# --- running -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ProbeRun:
    """What one run established: the result, why it is unknown (``missing``) or what decided it
    (``basis``), and the evidence — redacted, cleaned plain text and its hash."""

    result: Result
    missing: str
    output: str
    truncated: bool
    exit_code: int | None
    evidence_sha256: str
    argv: tuple[str, ...]
    seconds: float
    redacted: tuple[str, ...]
    basis: str = ""


@dataclass(frozen=True)
class _Raw:
    stdout: bytes
    stdout_seen: int
    stderr: bytes
    exit_code: int | None
    stopped: str  # "", "timeout" or "overflow"
    start_error: str


def _execute(argv: Sequence[str], timeout: float) -> _Raw:
    """Run ``argv`` (no shell, no stdin, own process group) and collect capped output."""
    try:
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, shell=False, start_new_session=True)
    except FileNotFoundError:
        return _Raw(b"", 0, b"", None, "", f"program not found: {argv[0]}")
    except PermissionError:
        return _Raw(b"", 0, b"", None, "", f"program not runnable (permission denied): "
                    f"{argv[0]}")
    except OSError as exc:
        return _Raw(b"", 0, b"", None, "", f"could not start {argv[0]}: {exc.strerror or exc}")
    deadline = time.monotonic() + timeout
    out, err, seen, stopped = bytearray(), bytearray(), 0, ""
    assert proc.stdout is not None and proc.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, "out")
        selector.register(proc.stderr, selectors.EVENT_READ, "err")
        while selector.get_map() and not stopped:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                stopped = "timeout"
                break
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                elif key.data == "out":
                    seen += len(chunk)
                    out += chunk[: max(0, OUTPUT_CAP - len(out))]
                    if seen > HARD_LIMIT:
                        stopped = "overflow"
                        break
                else:  # stderr beyond its cap is read and dropped, so the child never blocks
                    err += chunk[: max(0, STDERR_CAP - len(err))]
    if not stopped and not _exited(proc, deadline):
        stopped = "timeout"
    _kill_group(proc)
    exit_code = proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    return _Raw(bytes(out), seen, bytes(err), exit_code, stopped, "")


def _exited(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Whether the probe exits by ``deadline`` — without reaping it, so its process group id
    cannot be reused before the group is killed."""
    while True:
        if hasattr(os, "waitid"):
            try:
                state = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): it has exited
                return True
            if state is not None:
                return True
        elif proc.poll() is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill everything in the probe's process group (its children too), leader unreaped."""
    if proc.returncode is not None:
        return  # already reaped (no waitid): the group id may belong to someone else now
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _first_line(stderr: bytes) -> tuple[str, tuple[str, ...]]:
    text = redact(clean(stderr.decode("utf-8", errors="replace")))
    line = next((ln.strip() for ln in text.text.splitlines() if ln.strip()), "")
    return (line if len(line) <= 200 else line[:199] + "…"), text.found


def _verdict(probe: DeclaredProbe, raw: _Raw, output: str, error_line: str
             ) -> tuple[Result, str, str]:
    """(result, missing, basis) — the first reason for ``unknown`` wins."""
    if raw.start_error:
        return "unknown", raw.start_error, ""
    if raw.stopped == "timeout":
        return "unknown", f"timed out after {probe.timeout:g}s", ""
    if raw.stopped == "overflow":
        return "unknown", f"wrote more than {HARD_LIMIT // (1024 * 1024)} MiB — stopped", ""
    if raw.exit_code:
        if raw.exit_code < 0:
            return "unknown", f"killed by signal {signal.Signals(-raw.exit_code).name}", ""
        return "unknown", f"exit {raw.exit_code}: {error_line or '(no error output)'}", ""
    if raw.stdout_seen > OUTPUT_CAP:
        return "unknown", (f"output over {OUTPUT_CAP // 1024} KiB was cut — a verdict on part "
                           "of it is not proof (make the probe print less)"), ""
    if not output.strip():
        if probe.empty == "unknown":
            return "unknown", EMPTY_NOT_PROOF, ""
        return probe.empty, "", f"empty output: {probe.empty_means}"
    confirms = probe.confirmed_if is not None and re.search(probe.confirmed_if, output, re.M)
    refutes = probe.refuted_if is not None and re.search(probe.refuted_if, output, re.M)
    if confirms and refutes:
        return "unknown", "output matched both rules", ""
    if confirms:
        return "confirmed", "", f"output matched confirmed_if {probe.confirmed_if}"
    if refutes:
        return "refuted", "", f"output matched refuted_if {probe.refuted_if}"
    return "unknown", "output matched neither rule", ""


def _evidence_sha(argv: Sequence[str], output: str) -> str:
    return hashlib.sha256(("\x1f".join(argv) + "\x1e" + output).encode()).hexdigest()


def _recorded_argv(argv: Sequence[str]) -> tuple[tuple[str, ...], list[str]]:
    redacted = [redact(clean(element)) for element in argv]
    return tuple(r.text for r in redacted), [kind for r in redacted for kind in r.found]


def run_probe(probe: DeclaredProbe, argv: Sequence[str], *, confirmed: bool) -> ProbeRun:
    """Run one declared probe with the argv the engineer confirmed; never through a shell.

    Raises ProbeNotConfirmed (nothing runs) without confirmation and ProbeRefused if ``argv``
    is not a rendering of ``probe``; every failure of the run itself is an ``unknown`` result.
    The recorded argv and output are cleaned and redacted; the hash covers exactly them.
    """
    if not confirmed:
        raise ProbeNotConfirmed(f"{probe.name} was not run: the engineer has not confirmed "
                                "its argv")
    params_from_argv(probe, argv)
    started = time.monotonic()
    raw = _execute(argv, probe.timeout)
    seconds = time.monotonic() - started
    output = redact(clean(raw.stdout.decode("utf-8", errors="replace")))
    error_line, error_kinds = _first_line(raw.stderr)
    result, missing, basis = _verdict(probe, raw, output.text, error_line)
    shown_argv, argv_kinds = _recorded_argv(argv)
    kinds = tuple(dict.fromkeys([*argv_kinds, *output.found, *error_kinds]))
    return ProbeRun(result, missing, output.text, raw.stdout_seen > OUTPUT_CAP, raw.exit_code,
                    _evidence_sha(shown_argv, output.text), shown_argv, seconds, kinds, basis)


def _failed(argv: Sequence[str], exc: BaseException) -> ProbeRun:
    shown_argv, kinds = _recorded_argv([str(a) for a in argv])
    reason = exc.reason if isinstance(exc, ProbeRefused) else f"{type(exc).__name__}: {exc}"
    reason = redact(clean(reason)).text
    return ProbeRun("unknown", f"probe failed: {reason}", "", False, None,
                    _evidence_sha(shown_argv, ""), shown_argv, 0.0, tuple(dict.fromkeys(kinds)))


def run_all(jobs: Sequence[tuple[DeclaredProbe, Sequence[str]]], *, confirmed: bool,
            max_concurrent: int = MAX_CONCURRENT,
            on_done: Callable[[int, ProbeRun], None] | None = None) -> list[ProbeRun]:
    """Run independent probes, at most ``min(max_concurrent, MAX_CONCURRENT)`` at a time.

    ``confirmed`` says the engineer confirmed every argv in ``jobs`` (else ProbeNotConfirmed,
    nothing runs). Results come back in job order; ``on_done(index, run)`` is called in this
    (the caller's) thread as each one finishes. A job that raises becomes an ``unknown`` run.
    """
    if not confirmed:
        raise ProbeNotConfirmed("no probe was run: the engineer has not confirmed their argv")
    if max_concurrent < 1:
        raise ValueError("max_concurrent must be at least 1")
    runs: list[ProbeRun | None] = [None] * len(jobs)
    if not jobs:
        return []
    workers = min(max_concurrent, MAX_CONCURRENT, len(jobs))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="probe") as pool:
        futures = {pool.submit(run_probe, probe, argv, confirmed=True): index
                   for index, (probe, argv) in enumerate(jobs)}
        for future in as_completed(futures):
            index = futures[future]
            try:
                run = future.result()
            except Exception as exc:  # contained: one broken job never sinks the others
                run = _failed(jobs[index][1], exc)
            runs[index] = run
            if on_done is not None:
                on_done(index, run)
    return [run for run in runs if run is not None]
