"""The headless subcommands of `triage`; each returns an exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.engine.alert import AlertError, decode_alert, parse_alert, read_alert_file
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.report import briefing_text
from store.loader import IncidentFileError, load_incidents

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT = 0, 1, 2


def _fail(message: str) -> int:
    print(f"triage: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _incident_problems(exc: IncidentFileError) -> int:
    count = len(exc.problems)
    print(f"triage: the incidents file has {count} problem{'s' if count != 1 else ''}:",
          file=sys.stderr)
    for problem in exc.problems:
        print(f"  {problem}", file=sys.stderr)
    print("Fix them and run `triage check` again; the index was left as it was.", file=sys.stderr)
    return EXIT_BAD_INPUT


def _read_raw_alert(args: argparse.Namespace) -> str:
    sources = [s for s in (args.text, args.alert_file) if s is not None]
    if len(sources) != 1:
        raise AlertError("give the alert as TEXT, --alert-file F, or - for stdin (exactly one)")
    if args.alert_file is not None:
        return read_alert_file(Path(args.alert_file))
    if args.text == "-":
        return decode_alert(sys.stdin.buffer.read(), "stdin")
    return str(args.text)


def brief(settings: Settings, args: argparse.Namespace) -> int:
    try:
        alert = parse_alert(_read_raw_alert(args))
    except AlertError as exc:
        return _fail(str(exc))
    engine = TriageEngine(settings)
    try:
        briefing = engine.brief(alert)
    except IncidentFileError as exc:
        return _incident_problems(exc)
    if args.json:
        print(briefing.model_dump_json(indent=2))
    else:
        print(briefing_text(briefing))
    return EXIT_OK


def index(settings: Settings, args: argparse.Namespace) -> int:
    engine = TriageEngine(settings)
    try:
        status = engine.load(rebuild=args.rebuild)
    except IncidentFileError as exc:
        return _incident_problems(exc)
    for notice in status.notices:
        print(notice)
    print(f"index {status.index}: {status.incidents} incidents, {status.actions} actions "
          f"from {status.source} → {settings.data_dir / 'index'}")
    return EXIT_OK


def check(settings: Settings, args: argparse.Namespace) -> int:
    try:
        memory = load_incidents(settings.incidents_path)
    except IncidentFileError as exc:
        return _incident_problems(exc)
    print(f"{settings.incidents_path}: ok — {len(memory.incidents)} incidents, "
          f"{memory.action_count} actions, {len(memory.services)} services")
    return EXIT_OK
