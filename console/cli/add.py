"""`triage add FILE`: validate incidents and append them to the incidents file, one by one."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from console.cli.errors import command, fail, internal_error, report_error
from console.engine.config import Settings
from console.engine.engine import SaveResult, TriageEngine
from console.exit_codes import EXIT_OK
from store.errors import TriageError
from store.loader import IncidentFileError, load_incidents
from store.writer import (
    FileChangedOnDisk,
    SaveFailed,
    SaveRefused,
    added_meanwhile,
    file_sha256,
    is_new_memory,
    redact_incident,
    save_incident,
    save_lock,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from store.loader import SecretFinding
    from store.models import Incident

# What the loser of a same-id race can do (store.writer.added_meanwhile words the rest).
_SAME_ID = ("run `triage add` again with --replace to replace that block with yours, or give "
            "your incident a new id")


class _CtrlC:
    """Remembers a Ctrl-C even where its KeyboardInterrupt was lost. The interrupt is raised
    where it lands, as Python's own handler does; but under load a Ctrl-C right after a rename
    was seen lost (CI, faulthandler stack: the add went on and was saving the next incident).
    Where it was dropped is not known (native code that checks signals mid-call, LanceDB's, is
    the suspect). ``add`` checks ``seen`` before each save and after the last."""

    seen = False

    def __call__(self, signum: int, frame: object) -> None:
        self.seen = True
        raise KeyboardInterrupt


@contextmanager
def _watching_ctrl_c() -> Iterator[_CtrlC]:
    ctrl_c = _CtrlC()
    before = signal.signal(signal.SIGINT, ctrl_c)
    try:
        yield ctrl_c
    finally:
        signal.signal(signal.SIGINT, before)


@command
def add(settings: Settings, args: argparse.Namespace) -> int:
    """Validate incidents from FILE and append them (or replace same-id blocks), one by one.

    The incidents file and the index are separate outcomes, reported as such: "saved …" is
    printed only once the file is written; an index that could not follow exits 1 saying so.
    An incidents file that holds no incident yet (empty, only comments, ``[]``) takes the first
    one as it is. Ctrl-C says what was saved before it.
    """
    engine = TriageEngine(settings)
    path = Path(args.file)
    incidents, secrets = engine.incidents_in(path)
    if not incidents:
        return fail(f"{path} holds no incidents")
    saved: list[SaveResult] = []
    said: list[str] = []  # the ids "saved …" was printed for
    try:
        with _watching_ctrl_c() as ctrl_c:
            first = _start_memory(engine, incidents[0], secrets, said)
            # A directory whose other files have problems still takes a postmortem (the
            # writer refuses a save into a broken file, and names the broken ones).
            engine.load(partial=settings.incidents_path.is_dir())
            if first is not None:
                saved.append(first(engine))
            for incident in incidents[len(saved):]:
                if engine.incident(incident.id) is not None and not args.replace:
                    return fail(f"{incident.id} is already in {settings.incidents_path} — pass "
                                "--replace to replace its block")
            for incident in incidents[len(saved):]:
                if ctrl_c.seen:
                    raise KeyboardInterrupt
                saved.append(_save(engine, incident, secrets, said))
            if ctrl_c.seen:
                raise KeyboardInterrupt
    except (IncidentFileError, SaveRefused, SaveFailed) as exc:
        return report_error(_partly_saved(exc, incidents, saved))
    except KeyboardInterrupt:
        return report_error(_interrupted(settings.incidents_path, incidents, said))
    last = saved[-1]
    if last.index_problem is not None:
        print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
              "index NOT updated")
        ids = ", ".join(r.incident.id for r in saved)
        hint = ("Fix the file with problems (`triage check`), then run `triage index`."
                if engine.partial is not None else
                "The console rebuilds the index when it next starts; or free the space (fix "
                "the data dir) and run `triage index`.")
        return report_error(internal_error(
            f"saved {ids} to {last.path}; the index could not be updated ({last.index_problem})",
            ["the incidents file holds the new incident(s); only the index is behind"], hint))
    print(f"memory: {last.status.incidents} incidents, {last.status.actions} actions; "
          "index updated")
    return EXIT_OK


def _prepared(settings: Settings, incident: Incident) -> Incident:
    """The incident as the engine saves it: a game day's notes are drills."""
    if settings.game_day and not incident.drill:
        return incident.model_copy(update={"drill": True})
    return incident


def _start_memory(engine: TriageEngine, incident: Incident, secrets: list[SecretFinding],
                  said: list[str]) -> Callable[[TriageEngine], SaveResult] | None:
    """Save the first incident of a memory that holds none yet (the engine cannot load an
    empty file, so it is written before the engine loads), under the save lock; None — and
    nothing written — when the file already holds incidents. Gives what finishes the
    SaveResult once the engine has loaded (and indexed) the new memory."""
    target = engine.settings.incidents_path
    if not is_new_memory(target):
        return None
    cleaned, redacted = redact_incident(_prepared(engine.settings, incident))
    notes: list[str] = []
    with save_lock(target):
        if not is_new_memory(target):  # someone saved first: the ordinary way, after a load
            return None
        path = save_incident(target, cleaned, file_sha256(target), notes)
    _said_saved(incident, str(path), secrets, redacted, notes, said)

    def finish(loaded: TriageEngine) -> SaveResult:
        status = loaded.status()
        assert status is not None
        return SaveResult(str(path), cleaned, tuple(redacted), status,
                          getattr(loaded.index, "degraded", None), tuple(notes))
    return finish


def _save(engine: TriageEngine, incident: Incident, secrets: list[SecretFinding],
          said: list[str]) -> SaveResult:
    """Save one incident and say so: where, and what was redacted (as FILE was read: each
    secret with its line in FILE, never its value). A new incident whose id another save
    added meanwhile is refused saying so (store.writer.added_meanwhile)."""
    known = engine.incident(incident.id) is not None
    try:
        result = engine.save_incident(incident)
    except FileChangedOnDisk as exc:
        taken = None if known else added_meanwhile(engine.settings.incidents_path,
                                                   incident.id, _SAME_ID)
        if taken is None:
            raise
        raise taken from exc
    _said_saved(incident, result.path, secrets, list(result.redacted), list(result.notes),
                said)
    return result


def _said_saved(incident: Incident, path: str, secrets: list[SecretFinding],
                redacted: list[str], notes: list[str], said: list[str]) -> None:
    found = [f"{s.kind} in {s.field} (line {s.line})" for s in secrets
             if s.incident_id == incident.id] + redacted
    shown = f" (redacted: {', '.join(found)})" if found else ""
    print(f"saved {incident.id} to {path}{shown}")
    said.append(incident.id)
    for note in notes:
        print(f"triage: {note}", file=sys.stderr)


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


def _interrupted(target: Path, incidents: list[Incident], said: list[str]) -> TriageError:
    """Ctrl-C: which incidents the file holds now — one may have been written just before the
    interrupt, while the index was following: "saved …" is printed for it as for any save
    (``said``: those it was printed for already); exit 1."""
    done = list(said)
    try:
        memory = load_incidents(target)
    except (IncidentFileError, OSError):
        memory = None
    stored = {i.id: i for i in memory.incidents} if memory is not None else {}
    for incident in incidents[len(said):]:
        held = stored.get(incident.id)
        mine = redact_incident(incident)[0]
        if memory is None or held is None or held.model_dump(exclude={"drill"}) != \
                mine.model_dump(exclude={"drill"}):
            break
        print(f"saved {incident.id} to {memory.origin[incident.id][0]}")
        done.append(incident.id)
    rest = [i.id for i in incidents if i.id not in done]
    if not done:
        return internal_error(f"interrupted: nothing was saved — {target} is as it was",
                              hint="Run `triage add` again.")
    lines = ["the index may not hold it yet"] + (
        [f"not saved: {', '.join(rest)}"] if rest else [])
    return internal_error(f"interrupted, but {', '.join(done)} WAS saved to {target}", lines,
                          "Run `triage index` to bring the index up to date (the console also "
                          "does when it next starts)" + ("; add the others again."
                                                         if rest else "."))
