"""`make mutate`: mutation testing of the rule modules (guards, citations, confidence, the
recall gate, redaction, the writer), then the kill ratio per module and every survivor.

mutmut (pinned in the ``dev`` extra) works in a scratch copy of the project, so nothing it
writes (``mutants/``, its ``setup.cfg``) lands in the work tree. Each mutant runs only the fast
rule tests that reach the mutated function (mutmut records which, once), never the Textual UI
or the subprocess CLI suites. Module-level tables, which mutmut 3 does not mutate, get one
mutant per row (tests/mutation/targets.py). Exit status 1 when fewer than 90% are killed.

    .venv/bin/python -m tests.mutation.run [--workdir DIR] [--only PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.mutation.accepted import ACCEPTED, Accepted
from tests.mutation.targets import TABLE_MUTANTS, TARGETS, TableMutant, Target

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
REQUIRED_RATIO = 0.90
COPIED = ("store", "console", "tests", "incidents.yaml", "pyproject.toml")
# mutmut's exit-code verdicts (mutmut/stats.py): these count as the tests noticing the mutant.
KILLED = {"killed", "timeout", "segfault", "caught by type check"}


def _copy_project(destination: Path) -> None:
    destination.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "mutants")
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)


def _setup_cfg(targets: tuple[Target, ...]) -> str:
    tests = sorted({test for target in targets for test in target.tests})

    def lines(values: list[str]) -> str:
        return "".join(f"\n    {value}" for value in values)

    return (
        "[mutmut]\n"
        f"source_paths ={lines(['store', 'console'])}\n"
        f"only_mutate ={lines([target.path for target in targets])}\n"
        f"pytest_add_cli_args_test_selection ={lines(tests)}\n"
        f"pytest_add_cli_args ={lines(['-p', 'no:cacheprovider'])}\n"
        f"also_copy ={lines(['incidents.yaml'])}\n"
        # LanceDB's runtime does not survive a fork from a process that used it: fork each
        # mutant from a server that only imported the tests (measured: with plain fork, mutants
        # crashed or hung at random).
        "process_isolation = forkserver\n"
        "forkserver_warmup = collect\n"
    )


def _run_mutmut(workdir: Path, targets: tuple[Target, ...], log: Path) -> float:
    patterns = [pattern for target in targets for pattern in target.patterns]
    started = time.monotonic()
    progress = {"line": ""}
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen([str(BIN / "mutmut"), "run", *patterns], cwd=workdir,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None

        def pump() -> None:
            assert process.stdout is not None
            for raw in iter(lambda: process.stdout.read(4096), b""):  # type: ignore[union-attr]
                text = raw.decode("utf-8", "replace")
                sink.write(text)
                for piece in re.split(r"[\r\n]", text):
                    if "🎉" in piece and "🙁" in piece:
                        progress["line"] = piece.strip()

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        shown = 0
        while process.poll() is None:
            time.sleep(1)
            minutes = int((time.monotonic() - started) // 60)
            if minutes > shown and progress["line"]:
                shown = minutes
                print(f"  [{minutes:3d} min] {progress['line']}", flush=True)
        reader.join(timeout=5)
    if process.returncode != 0:
        sys.exit(f"mutmut failed (exit {process.returncode}); its output is in {log}")
    return time.monotonic() - started


def _verdicts(workdir: Path, target: Target) -> dict[str, str]:
    from mutmut.stats import status_by_exit_code

    meta = json.loads((workdir / "mutants" / f"{target.path}.meta").read_text(encoding="utf-8"))
    names = [n for n in meta["exit_code_by_key"]
             if any(re.fullmatch(_glob(p), n) for p in target.patterns)]
    return {n: status_by_exit_code[meta["exit_code_by_key"][n]] for n in names}


def _glob(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def _diff(workdir: Path, name: str) -> list[str]:
    result = subprocess.run([str(BIN / "mutmut"), "show", name], cwd=workdir,
                            capture_output=True, text=True, check=False)
    return [line for line in result.stdout.splitlines()
            if line[:1] in "-+" and not line.startswith(("---", "+++"))]


def _reason(function: str, diff: list[str]) -> Accepted | None:
    return next((a for a in ACCEPTED if a.function == function
                 and any(a.fragment in line for line in diff)), None)


def _run_table_mutant(workdir: Path, mutant: TableMutant, tests: tuple[str, ...]) -> bool:
    """True when the tests notice the change (the mutant is killed)."""
    copy = Path(tempfile.mkdtemp(prefix="table-", dir=workdir))
    for name in COPIED:
        source = workdir / name
        if source.is_dir():
            shutil.copytree(source, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, copy / name)
    path = copy / mutant.path
    source_text = path.read_text(encoding="utf-8")
    if source_text.count(mutant.old) != 1:
        raise SystemExit(f"table mutant {mutant.name!r}: {mutant.old!r} must occur once in "
                         f"{mutant.path}")
    path.write_text(source_text.replace(mutant.old, mutant.new), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"}
    result = subprocess.run([str(BIN / "python"), "-m", "pytest", "-x", "-q", "-p",
                             "no:cacheprovider", *tests], cwd=copy, env=env,
                            capture_output=True, text=True, check=False, timeout=600)
    shutil.rmtree(copy, ignore_errors=True)
    if result.returncode not in (0, 1):
        raise SystemExit(f"table mutant {mutant.name!r}: pytest exit {result.returncode}\n"
                         f"{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return result.returncode == 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path,
                        default=Path(tempfile.gettempdir()) / "triage-mutate",
                        help="scratch copy of the project (emptied first; kept for "
                             "`mutmut show NAME` / `mutmut browse` there)")
    parser.add_argument("--only", action="append", default=[],
                        help="mutate only this module (e.g. store/redact.py); repeatable")
    args = parser.parse_args(argv)
    targets = tuple(t for t in TARGETS if not args.only or t.path in args.only)
    tables = tuple(m for m in TABLE_MUTANTS if m.path in {t.path for t in targets})
    if not targets:
        parser.error(f"--only must name one of {[t.path for t in TARGETS]}")

    started = time.monotonic()
    workdir: Path = args.workdir.resolve()
    if workdir.exists():
        shutil.rmtree(workdir)
    _copy_project(workdir)
    (workdir / "setup.cfg").write_text(_setup_cfg(targets), encoding="utf-8")
    log = workdir / "mutmut.log"
    print(f"mutmut {_mutmut_version()} in {workdir} (log: {log})", flush=True)
    mutmut_seconds = _run_mutmut(workdir, targets, log)

    print(f"table mutants: {len(tables)}", flush=True)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        table_killed = list(pool.map(
            lambda m: _run_table_mutant(workdir, m, _tests_for(m.path)), tables))

    rows: list[tuple[str, Counter[str]]] = []
    survivors: list[tuple[str, list[str], Accepted | None]] = []
    timeouts: list[str] = []
    for target in targets:
        verdicts = _verdicts(workdir, target)
        counts: Counter[str] = Counter()
        for name, status in sorted(verdicts.items(), key=lambda kv: _natural(kv[0])):
            counts["killed" if status in KILLED else "survived"] += 1
            if status not in ("killed", "survived"):
                counts[status] += 1
            if status == "timeout":
                timeouts.append(name)
            if status not in KILLED:
                function = name.split("__mutmut_")[0]
                diff = _diff(workdir, name)
                survivors.append((f"{name} [{status}]", diff, _reason(function, diff)))
        for mutant, killed in zip(tables, table_killed, strict=True):
            if mutant.path != target.path:
                continue
            counts["killed" if killed else "survived"] += 1
            counts["table"] += 1
            if not killed:
                survivors.append((f"{target.module} table: {mutant.name}",
                                  [f"-{mutant.old}", f"+{mutant.new}"], None))
        rows.append((target.module, counts))

    print()
    print(f"{'module':34} {'mutants':>7} {'killed':>7} {'survived':>8} {'ratio':>6}")
    total: Counter[str] = Counter()
    for module, counts in rows:
        n = counts["killed"] + counts["survived"]
        total.update(counts)
        print(f"{module:34} {n:7} {counts['killed']:7} {counts['survived']:8} "
              f"{_ratio(counts):>6}")
    n = total["killed"] + total["survived"]
    print(f"{'all':34} {n:7} {total['killed']:7} {total['survived']:8} {_ratio(total):>6}")
    detail = ", ".join(f"{k} {v}" for k, v in sorted(total.items())
                       if k not in ("killed", "survived"))
    print(f"  ({detail}; table = module-level rows mutated by targets.py)")

    if timeouts:  # counted as killed (the tests never passed), but worth a look
        print(f"\ntimeouts ({len(timeouts)}): {', '.join(timeouts)}")
    print(f"\nsurvivors ({len(survivors)}):")
    for title, diff, accepted in survivors:
        print(f"  {title}")
        for line in diff:
            print(f"      {line.strip()[:150]}")
        print(f"    why: {accepted.why}" if accepted else "    why: NOT REVIEWED")
    elapsed = time.monotonic() - started
    print(f"\nmutmut {mutmut_seconds / 60:.1f} min, total {elapsed / 60:.1f} min")
    ratio = total["killed"] / n if n else 0.0
    print(f"kill ratio {ratio:.1%} (required {REQUIRED_RATIO:.0%})")
    return 0 if ratio >= REQUIRED_RATIO else 1


def _tests_for(path: str) -> tuple[str, ...]:
    return next(t.tests for t in TARGETS if t.path == path)


def _natural(name: str) -> tuple[str, int]:
    head, _, number = name.rpartition("__mutmut_")
    return head, int(number) if number.isdigit() else 0


def _ratio(counts: Counter[str]) -> str:
    n = counts["killed"] + counts["survived"]
    return f"{counts['killed'] / n:.0%}" if n else "-"


def _mutmut_version() -> str:
    from importlib.metadata import version

    return version("mutmut")


if __name__ == "__main__":
    sys.exit(main())
