"""The `triage` command: the console, and the headless pipeline for scripts."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

from console.exit_codes import EXIT_INTERNAL, EXIT_OK

if TYPE_CHECKING:
    from console.engine.config import Settings

DRILLS_HELP = ("let incidents recorded in a game day (drill: true) be recalled as evidence "
               "(hidden by default)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of versions ≥ 1")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="triage", description="Incident triage console. With no command, opens the console.")
    parser.add_argument("--drill", action="store_true",
                        help="game-day mode: a DRILL banner on every screen, audit lines tagged, "
                             "a timeline and a drill report; postmortems saved as drills "
                             "(also TRIAGE_DRILL=1)")
    parser.add_argument("--include-drills", action="store_true", dest="console_include_drills",
                        help=DRILLS_HELP)
    parser.add_argument("--listen", nargs="?", const="", default=None, metavar="HOST[:PORT]",
                        help="also receive webhooks while the console runs (Alertmanager "
                             "webhook_configs, Grafana contact points): POST / or /alerts; "
                             "default 127.0.0.1:9095, port 9095 when only a host is given; "
                             "TRIAGE_LISTEN_TOKEN makes senders carry `Authorization: Bearer "
                             "TOKEN`")
    commands = parser.add_subparsers(dest="command")
    brief = commands.add_parser("brief", help="run the whole pipeline for one alert, headless")
    brief.add_argument("text", nargs="?", help="alert text, or - to read stdin")
    brief.add_argument("--alert-file", metavar="F",
                       help="read the alert (text or Alertmanager JSON) from F, - for stdin; "
                            "at most its first 1 MB is read")
    brief.add_argument("--json", action="store_true", help="print the briefing as JSON")
    brief.add_argument("--format", choices=("text", "json", "md"), default=None,
                       help="text (default), json (same as --json) or md: Markdown for the "
                            "incident channel, every citation kept")
    brief.add_argument("--group", type=int, metavar="N",
                       help="brief alert group N of a multi-alert payload (as numbered in its "
                            "group list)")
    brief.add_argument("--verify", nargs="?", const="auto", metavar="always",
                       help="audit the briefing when its confidence is below 85: questions, "
                            "probes and a maintain / revise / overturn conclusion "
                            "(--verify=always: at any confidence)")
    brief.add_argument("--answer", action="append", default=[], metavar="QID=yes|no|unknown",
                       help="answer an engineer question of the verification (ids are listed "
                            "by a run without answers); repeatable")
    brief.add_argument("--allow-probe", action="append", default=[], metavar="NAME",
                       help="let the verification run declared probe NAME from probes.yaml "
                            "(its exact argv is listed by a run without it); repeatable")
    brief.add_argument("--include-drills", action="store_true", help=DRILLS_HELP)
    index = commands.add_parser("index", help="bring the index up to date with the incidents")
    index.add_argument("--rebuild", action="store_true", help="rebuild even when fresh")
    index.add_argument("--publish", action="store_true",
                       help="build from the incidents and publish a new version of the shared "
                            "index at TRIAGE_INDEX_URI (refused when older than the current one)")
    index.add_argument("--pull", action="store_true",
                       help="copy the current shared version into the data dir (offline use)")
    index.add_argument("--prune", action="store_true",
                       help="delete the data of old shared versions: all but the --keep most "
                            "recently published and the current one (their history entries "
                            "stay); after --publish when both are given")
    index.add_argument("--keep", type=_positive, default=None, metavar="N",
                       help="with --prune: versions kept besides the current one (default 5)")
    index.add_argument("--force", action="store_true",
                       help="with --publish: publish even when the incidents are older than "
                            "the current version's")
    index.add_argument("--source-time", metavar="ISO-8601",
                       help="with --publish: when this incidents content was written (CI: the "
                            "commit time, `git log -1 --format=%%cI`); default the files' "
                            "newest modification time")
    commands.add_parser("check", help="validate the incidents file; list every problem")
    add = commands.add_parser("add", help="validate incidents in FILE and append them to the "
                              "incidents file, keeping every byte already there")
    add.add_argument("file", help="a YAML list of incidents (same schema as incidents.yaml)")
    add.add_argument("--replace", action="store_true",
                     help="replace incidents whose id already exists (only their block)")
    evaluate = commands.add_parser(
        "eval", help="measure recall on alerts whose answer is known (hit@k, MRR, abstention)")
    evaluate.add_argument("--queries", help="YAML list of {qid, alert, expect: [incident ids]}")
    evaluate.add_argument("--replay", action="store_true",
                          help="replay every incident as an alert against the memory as it "
                               "was the day it started, expecting its `related` incidents "
                               "known then (and the leave-one-out figures beside)")
    evaluate.add_argument("--leave-one-out", action="store_true",
                          help="with --replay: each incident meets today's memory less itself")
    evaluate.add_argument("--json", action="store_true", help="print the report as JSON")
    evaluate.add_argument("--include-drills", action="store_true", help=DRILLS_HELP)
    drill = commands.add_parser(
        "drill", help="replay past incidents as alerts, each hidden from memory: would the "
                      "console have been right, per confidence tier?")
    drill.add_argument("incident", nargs="?", metavar="INCIDENT_ID", help="replay one incident")
    drill.add_argument("--all", action="store_true",
                       help="replay every incident (progress on stderr), time-ordered and "
                            "leave-one-out; caches the result as the console's track record")
    drill.add_argument("--leave-one-out", action="store_true",
                       help="replay against today's memory less the incident, not the memory "
                            "as it was the day it started (never saved as the track record)")
    drill.add_argument("--json", action="store_true", help="print the report as JSON")
    drill.add_argument("--include-drills", action="store_true", help=DRILLS_HELP)
    commands.add_parser("doctor", help="is Ollama reachable, are the models pulled, is the "
                        "index fresh? — with the command that fixes each")
    return parser


def _verify_value_problem(argv: Sequence[str]) -> str | None:
    """argparse reads ``--verify X`` and ``--verify=X`` alike (``X`` may be the alert); only the
    ``=`` form is surely meant as the option's value, so only it is checked here."""
    for item in argv:
        if item == "--":
            return None
        if item.startswith("--verify="):
            value = item.partition("=")[2]
            if value not in ("always", "auto"):
                return f"--verify={value!r}: expected --verify or --verify=always"
    return None


def _refuse(problem: str) -> int:
    """Bad input found before any command runs, shown as every error is (console/cli/errors.py)."""
    from console.cli.errors import fail

    return fail(problem)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``triage ARGV``; its exit code. stdout and stderr degrade to replacement
    characters where their encoding cannot hold a character, and a failed write to stdout
    (closed pipe, full disk) is shown as such, not as a data-dir fault (console/cli/errors.py)."""
    from console.cli.errors import guard_output, tolerant_streams

    tolerant_streams()
    return guard_output(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    problem = _verify_value_problem(sys.argv[1:] if argv is None else argv)
    if problem is not None:
        return _refuse(problem)
    args = _parser().parse_args(argv)
    from console.engine.config import Settings

    try:
        settings = Settings.from_env()
    except ValueError as exc:
        return _refuse(f"bad environment: {exc}")
    if getattr(args, "include_drills", False) or args.console_include_drills:
        settings = settings.replace(include_drills=True)
    if args.drill:
        settings = settings.replace(game_day=True)
    if args.command is None:
        return _console(settings, args.listen)
    if args.listen is not None:
        return _refuse(f"--listen is for the console (`triage --listen`), not for `triage "
                       f"{args.command}`")
    with _collector_paused():  # importing the command builds ~100k objects, none garbage
        from console.cli import COMMANDS

        run_command = COMMANDS[args.command]
        if args.command in ONE_SHOT:
            return _run(run_command, settings, args)
    return _run(run_command, settings, args)


def _console(settings: Settings, listen: str | None) -> int:
    """Open the console (receiving webhooks on ``listen`` when given: ``--listen``)."""
    from console.ui.app import TriageApp

    if listen is not None:
        from console.engine.listen import ListenError, parse_listen

        try:
            app = TriageApp(settings, listen=parse_listen(listen))
        except ListenError as exc:
            return _refuse(exc.title + (f"; {exc.hint}" if exc.hint else ""))
    else:
        app = TriageApp(settings)
    app.run()
    return EXIT_OK


# Commands that do one bounded piece of work and end: the cyclic GC stays off while they run.
# A brief's imports and its one request make ~500k long-lived objects and next to no cyclic
# garbage, yet each GC pass walked them all: 0.4-0.8 s of CPU of a `brief` that is ~1.8 s in
# all, the same peak memory without it (bench/headless_bench.py). Loops over many incidents
# (`add`, `eval`, `drill`) keep it on once their imports are done.
ONE_SHOT = frozenset({"brief", "index", "doctor", "check"})


def _run(run_command: Callable[[Settings, argparse.Namespace], int], settings: Settings,
         args: argparse.Namespace) -> int:
    try:
        return run_command(settings, args)  # (each renders its own errors)
    except KeyboardInterrupt:
        return EXIT_INTERNAL


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic GC off while modules are imported (and ONE_SHOT commands run): each pass
    walks every object made so far (pydantic's schemas, LanceDB's), and none of them is
    garbage. Back on (if it was) afterwards: ``main`` may run inside a longer process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def run() -> NoReturn:
    """The `triage` script: ``main``, then exit without waiting for an abandoned store call.

    A read of the shared index that missed its deadline is left running in a daemon thread
    (store.shared.within): LanceDB's Rust call cannot be interrupted, and the interpreter's
    shutdown waited for it — `brief` printed its fallback at 8 s but exited at 14 s. By the
    time ``main`` returns everything it wrote is complete (atomic writes, closed files), so
    the process flushes its output and leaves at once.

    Everything alive now lives until the end: ``gc.freeze()`` keeps the interpreter's shutdown
    collections from walking it all once more (0.3-0.5 s of CPU after a `brief` or a bare
    ``import lancedb`` here; bench/headless_bench.py). Objects are still freed as their
    modules are cleared, and stdout and stderr flushed, as before.
    """
    code = main()
    gc.freeze()
    shared = sys.modules.get("store.shared")
    if shared is not None and shared.abandoned_calls():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    run()
