"""`triage check`: is the incidents file (and services.yaml, probes.yaml beside it) valid?
Every problem."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from console.cli.errors import command, report_error
from console.engine.config import Settings
from console.engine.engine import TriageEngine
from console.exit_codes import EXIT_OK
from store.errors import TriageError
from store.loader import IncidentFileError, Problem
from store.service_aliases import services_path
from store.validation import future_start
from store.writer import leftover_warnings

if TYPE_CHECKING:
    from store.loader import LoadedMemory, SchemaWarning, SecretFinding


@command
def check(settings: Settings, args: argparse.Namespace) -> int:
    """Validate the incidents file; warn (file:line, kind — never the value) of each secret
    written in it. Secrets alone still exit 0: they are redacted everywhere the memory goes,
    but remain in the file and its git history until someone scrubs them."""
    engine = TriageEngine(settings)
    for leftover in leftover_warnings(settings.incidents_path):  # crashed saves' temp files
        print(leftover)
    try:
        memory = engine.current_memory()
    except IncidentFileError as exc:
        # Every problem of the file at once, and beside them every warning about the
        # incidents that did load: one run, one list to fix.
        _warn(exc.secrets, exc.warnings)
        if exc.partial is not None:
            _warn_loaded(exc.partial, settings)
            if exc.partial.service_problems:
                report_error(ServicesFileError(exc.partial.service_problems))
        return report_error(exc)
    _warn(memory.secrets, memory.warnings)
    dangling, future = _warn_loaded(memory, settings)
    count = len(memory.secrets)
    secrets = (f"; {count} secret{'s' if count != 1 else ''} found (redacted on load; scrub "
               "them from the file and its git history)" if count else "; no secrets found")
    unknown = len(memory.warnings)
    ignored = f"; {unknown} unknown field{'s' if unknown != 1 else ''} ignored" if unknown else ""
    if dangling:
        ignored += (f"; {dangling} related id{'s' if dangling != 1 else ''} not in memory "
                    "(warning)")
    if future:
        ignored += f"; {future} start{'s' if future != 1 else ''} in the future (warning)"
    drills = len(memory.drill_ids)
    drilled = f", {drills} drill{'s' if drills != 1 else ''}" if drills else ""
    print(f"{settings.incidents_path}: ok — {len(memory.incidents)} incidents{drilled}, "
          f"{memory.action_count} actions, {len(memory.services)} services{secrets}{ignored}")
    if memory.service_problems:
        return report_error(ServicesFileError(memory.service_problems))
    _check_services(memory, settings)
    return _check_probes(engine)


def _warn(secrets: list[SecretFinding], warnings: list[SchemaWarning]) -> None:
    """One compiler-style line per secret, on stdout with the report; then the fields a newer
    build (or a typo) added, ignored on load."""
    for found in secrets:
        print(f"{found.file}:{found.line}: warning: {found.kind} secret in "
              f"{found.incident_id} {found.field} — redacted on load; scrub it from the "
              "file and its git history")
    for warning in warnings:
        print(warning)


def _warn_loaded(memory: LoadedMemory, settings: Settings) -> tuple[int, int]:
    """Warnings (exit 0) about incidents that load: a ``related`` id naming no incident in
    memory (or itself) — drills skip it, briefings never read it, so it blocks nothing — and
    a ``started_at`` more than a day after now (TRIAGE_NOW-aware). Their counts."""
    for problem in memory.reference_problems:
        where = f"{problem.file}:{problem.line}" if problem.line else problem.file
        print(f"{where}: warning: {problem.field}: {problem.message}")
    now, future = settings.now(), 0
    for incident in memory.incidents:
        why = future_start(incident, now)
        if why is None:
            continue
        future += 1
        file, line = memory.origin.get(incident.id, (str(settings.incidents_path), 0))
        line = memory.start_lines.get(incident.id, line)
        print(f"{file}:{line}: warning: {why}" if line else f"{file}: warning: {why}")
    return len(memory.reference_problems), future


class ServicesFileError(TriageError):
    """services.yaml cannot be used as it is; every reason, each with file:line."""

    def __init__(self, problems: list[Problem]) -> None:
        count = len(problems)
        super().__init__(f"the services file has {count} problem{'s' if count != 1 else ''}:",
                         [str(p) for p in problems],
                         "Fix them and run `triage check` again; until then briefings read "
                         "no service aliases.")


def _check_services(memory: LoadedMemory, settings: Settings) -> None:
    """The aliases of services.yaml beside the incidents file, when there is one."""
    if not memory.service_aliases:
        return
    count = sum(len(names) for names in memory.service_aliases.values())
    print(f"{services_path(settings.incidents_path)}: ok — {count} "
          f"alias{'es' if count != 1 else ''} of {len(memory.service_aliases)} "
          f"service{'s' if len(memory.service_aliases) != 1 else ''}")


def _check_probes(engine: TriageEngine) -> int:
    """The declared probes beside the incidents file, if there is a probes.yaml."""
    path = engine.probes_file()
    if not path.exists():
        return EXIT_OK
    probes = engine.probes()
    print(f"{path}: ok — {len(probes)} declared probe{'s' if len(probes) != 1 else ''} "
          f"({', '.join(p.name for p in probes) or 'none'})")
    return EXIT_OK
