"""`triage add FILE`: validate incidents and append them to the incidents file, one by one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from console.cli.errors import command, fail, internal_error, report_error
from console.engine.config import Settings
from console.engine.engine import SaveResult, TriageEngine
from console.exit_codes import EXIT_OK
from store.errors import TriageError
from store.loader import IncidentFileError
from store.writer import SaveFailed, SaveRefused

if TYPE_CHECKING:
    from store.loader import SecretFinding
    from store.models import Incident


@command
def add(settings: Settings, args: argparse.Namespace) -> int:
    """Validate incidents from FILE and append them (or replace same-id blocks), one by one.

    The incidents file and the index are separate outcomes, reported as such: "saved …" is
    printed only once the file is written; an index that could not follow exits 1 saying so.
    """
    engine = TriageEngine(settings)
    path = Path(args.file)
    incidents, secrets = engine.incidents_in(path)
    if not incidents:
        return fail(f"{path} holds no incidents")
    saved: list[SaveResult] = []
    try:
        engine.load()
        for incident in incidents:
            if engine.incident(incident.id) is not None and not args.replace:
                return fail(f"{incident.id} is already in {settings.incidents_path} — pass "
                            "--replace to replace its block")
        for incident in incidents:
            saved.append(_save(engine, incident, secrets))
    except (IncidentFileError, SaveRefused, SaveFailed) as exc:
        return report_error(_partly_saved(exc, incidents, saved))
    last = saved[-1]
    if last.index_problem is not None:
        print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
              "index NOT updated")
        ids = ", ".join(r.incident.id for r in saved)
        return report_error(internal_error(
            f"saved {ids} to {last.path}; the index could not be updated ({last.index_problem})",
            ["the incidents file holds the new incident(s); only the index is behind"],
            "The console rebuilds the index when it next starts; or free the space (fix the "
            "data dir) and run `triage index`."))
    print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
          "index updated")
    return EXIT_OK


def _save(engine: TriageEngine, incident: Incident, secrets: list[SecretFinding]) -> SaveResult:
    """Save one incident and say so: where, and what was redacted (as FILE was read: each
    secret with its line in FILE, never its value)."""
    result = engine.save_incident(incident)
    found = [f"{s.kind} in {s.field} (line {s.line})" for s in secrets
             if s.incident_id == incident.id] + list(result.redacted)
    redacted = f" (redacted: {', '.join(found)})" if found else ""
    print(f"saved {incident.id} to {result.path}{redacted}")
    for note in result.notes:
        print(f"triage: {note}", file=sys.stderr)
    return result


def _partly_saved(exc: TriageError, incidents: list[Incident],
                  saved: list[SaveResult]) -> TriageError:
    """``exc`` as it stands when nothing was saved; else naming the ones that are in the file,
    then why this one is not."""
    if not saved:
        return exc
    partly = TriageError(f"{incidents[len(saved)].id} and any after it were not saved "
                         f"({', '.join(r.incident.id for r in saved)} were): {exc.title}",
                         exc.lines, exc.hint)
    partly.exit_code = exc.exit_code
    return partly
