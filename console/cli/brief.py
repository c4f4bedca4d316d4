"""`triage brief`: one alert through the whole pipeline, headless; ``--verify`` audits it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from console.cli.errors import command, fail, report_error
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.exit_codes import EXIT_INTERNAL, EXIT_OK

if TYPE_CHECKING:
    from console.engine.briefing.alert import Alert, RawAlert
    from console.engine.pipeline import Routed


@command
def brief(settings: Settings, args: argparse.Namespace) -> int:
    """Brief one alert; for a multi-alert payload the strongest group, or ``--group N``;
    with ``--verify``, audit it (console/engine/verification/passes.py)."""
    # (the briefing's modules are imported here, not with the CLI: see console/cli/__init__.py)
    from console.engine.briefing.alert import AlertError
    from console.engine.render.text import briefing_text

    try:
        mode = _verify_mode(args)
        answers = _answers(args, mode)
        alert = _read_alert(args)
    except AlertError as exc:
        return report_error(exc)
    except ValueError as exc:
        return fail(str(exc))
    engine = TriageEngine(settings)
    routed = engine.brief(alert)
    if engine.partial is not None:
        # The incidents file does not load whole: briefed from what does (exit 0), and said —
        # once here, once in search.notices.
        print(f"triage: warning: {engine.partial}", file=sys.stderr)
    briefing, code = routed.briefing, EXIT_OK
    if mode is not None:
        verification, code = _verification(engine, routed, mode, answers,
                                           set(getattr(args, "allow_probe", None) or []))
        briefing = briefing.model_copy(update={"verification": verification})
    output = "json" if args.json else (getattr(args, "format", None) or "text")
    if output == "json":
        print(briefing.model_dump_json(indent=2))
    elif output == "md":
        from console.engine.render.markdown import briefing_markdown

        print(briefing_markdown(briefing), end="")
    else:
        print(briefing_text(briefing))
    return code


def _verify_mode(args: argparse.Namespace) -> str | None:
    """``auto``/``always`` from ``--verify[=always]``, None without it. ``--verify TEXT``
    (argparse took the alert for the option's value) gives the text back to the alert."""
    mode = getattr(args, "verify", None)
    if mode is None or mode in ("auto", "always"):
        return mode
    if args.text is None and args.alert_file is None:
        args.text = mode
        return "auto"
    from console.engine.briefing.alert import AlertError

    raise AlertError(f"--verify={mode!r}: expected --verify or --verify=always")


def _answers(args: argparse.Namespace, mode: str | None) -> dict[str, str]:
    """``--answer QID=…`` as a mapping; ValueError when one is malformed or given without
    ``--verify``."""
    if mode is None:
        if getattr(args, "answer", None) or getattr(args, "allow_probe", None):
            raise ValueError("--answer and --allow-probe answer a verification: add --verify")
        return {}
    from console.engine.verification.passes import parse_answers

    return parse_answers(getattr(args, "answer", None) or [])


def _read_alert(args: argparse.Namespace) -> Alert:
    """The alert given, or with ``--group N`` that group of it (numbered from 1, as the group
    list shows). ``-`` and ``--alert-file -`` read stdin; at most 1 MB of a file or stdin is
    read (console/engine/briefing/alert.py, MAX_ALERT_BYTES), and a cut input says so."""
    from console.engine.briefing.alert import (
        AlertError,
        parse_alert,
        read_alert_file,
        read_alert_stream,
    )

    sources = [s for s in (args.text, args.alert_file) if s is not None]
    if len(sources) != 1:
        raise AlertError("give the alert as TEXT, --alert-file F, or - for stdin (exactly one)")
    if "-" in (args.alert_file, args.text):
        raw: str | RawAlert = read_alert_stream(sys.stdin.buffer, "stdin")
    elif args.alert_file is not None:
        raw = read_alert_file(Path(args.alert_file))
    else:
        raw = str(args.text)
    alert = parse_alert(raw)
    group = getattr(args, "group", None)
    return alert if group is None else alert.for_group(group - 1)


def _verification(engine: TriageEngine, routed: Routed, mode: str, answers: dict[str, str],
                  allowed: set[str]) -> tuple[dict[str, Any], int]:
    """The ``verification`` of a briefing, and the exit code; what is still open, unknown
    ids and probes that do not exist go to stderr."""
    from console.engine.render.text import open_question_lines
    from console.engine.verification.passes import failed, needed, not_needed
    from console.engine.verification.probes import ProbeFileError

    briefing = routed.briefing
    if mode != "always" and not needed(briefing):
        return not_needed(briefing), EXIT_OK
    try:
        probes = engine.probes()
    except ProbeFileError as exc:
        report_error(exc)
        return failed(exc.title), exc.exit_code
    declared = {p.name for p in probes}
    for name in sorted(allowed - declared):
        print(f"triage: --allow-probe {name}: no probe of that name in {engine.probes_file()}",
              file=sys.stderr)
    result = engine.verification_pass(routed, probes, answers, allowed)
    if result["status"] == "failed":
        print(f"triage: {result['error']}", file=sys.stderr)
        return result, EXIT_INTERNAL
    asked = {q["id"] for q in result["questions"]}
    for qid in sorted(set(answers) - asked):
        print(f"triage: --answer {qid}: no question of this verification has that id",
              file=sys.stderr)
    for line in open_question_lines(result):
        print(line, file=sys.stderr)
    return result, EXIT_OK
