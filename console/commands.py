"""The headless subcommands of `triage`; each returns an exit code."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from console.engine.alert import AlertError, decode_alert, parse_alert, read_alert_file
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.engine.report import briefing_text
from console.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from store.loader import IncidentFileError, load_incidents


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


def doctor(settings: Settings, args: argparse.Namespace) -> int:
    """Check each piece the console relies on; print the exact fix for each missing one."""
    from console.engine.model_client import ModelClient, ModelUnavailable, is_pulled
    from store.index import freshness

    problems = 0

    def report(ok: bool, what: str, fix: str = "") -> None:
        nonlocal problems
        problems += 0 if ok else 1
        print(f"{'ok  ' if ok else 'FIX '} {what}" + (f"\n      → {fix}" if fix and not ok else ""))

    engine = TriageEngine(settings)
    try:
        memory = load_incidents(settings.incidents_path)
    except IncidentFileError as exc:
        report(False, f"incidents file {settings.incidents_path}: {len(exc.problems)} problem(s)",
               "run `triage check` and fix what it lists")
        memory = None
    if memory is not None:
        report(True, f"incidents file {settings.incidents_path}: {len(memory.incidents)} "
                     f"incidents, {memory.action_count} actions")
        embedder = engine.embedder()
        state = freshness(settings.data_dir / "index", memory.source_hash,
                          embedder.id if embedder else None)
        report(state == "fresh", f"index {state} ({settings.data_dir / 'index'})",
               "run `triage index` (the console also rebuilds it on start)")
    if settings.offline:
        print("note TRIAGE_OFFLINE=1: no model will be called; briefings are deterministic")
        return EXIT_BAD_INPUT if problems else EXIT_OK
    wanted = [m for m in (settings.model, settings.embed_model) if m]
    if not settings.model:
        print("note no chat model configured: briefings are deterministic\n"
              "      → to use one: ollama pull qwen2.5:7b && export TRIAGE_MODEL=qwen2.5:7b")
    if not wanted:
        return EXIT_BAD_INPUT if problems else EXIT_OK
    host = settings.ollama_host or "http://127.0.0.1:11434"
    try:
        pulled = ModelClient(settings.ollama_host, wanted[0], timeout=5.0).list_models()
    except ModelUnavailable as exc:
        report(False, f"Ollama at {host}: {exc}",
               "start it with `ollama serve`, or set OLLAMA_HOST to where it runs")
        return EXIT_BAD_INPUT
    report(True, f"Ollama reachable at {host} ({len(pulled)} models pulled)")
    for role, model in (("chat model", settings.model), ("embedding model", settings.embed_model)):
        if model:
            report(is_pulled(model, pulled), f"{role} {model} pulled", f"ollama pull {model}")
    return EXIT_BAD_INPUT if problems else EXIT_OK


def add(settings: Settings, args: argparse.Namespace) -> int:
    """Validate incidents from FILE and append them (or replace same-id blocks), one by one."""
    from store.loader import parse_incidents_text
    from store.writer import SaveRefused

    path = Path(args.file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f"cannot read {path}: {exc}")
    try:
        incidents = parse_incidents_text(text, str(path))
    except IncidentFileError as exc:
        return _incident_problems(exc)
    if not incidents:
        return _fail(f"{path} holds no incidents")
    engine = TriageEngine(settings)
    try:
        engine.load()
        for incident in incidents:
            if engine.incident(incident.id) is not None and not args.replace:
                return _fail(f"{incident.id} is already in {settings.incidents_path} — pass "
                             "--replace to replace its block")
        for incident in incidents:
            result = engine.save_incident(incident)
            redacted = f" (redacted: {', '.join(result.redacted)})" if result.redacted else ""
            print(f"saved {incident.id} to {result.path}{redacted}")
    except IncidentFileError as exc:
        return _incident_problems(exc)
    except SaveRefused as exc:
        return _fail("save refused, nothing written: " + "; ".join(exc.reasons))
    print(f"memory: {result.status.incidents} incidents, {result.status.actions} actions; "
          "index updated")
    return EXIT_OK
