"""Saving an incident into the team's file without losing a byte of what is already there.

Every save writes a temporary file in the same directory, fsyncs it, re-parses it and checks
that the old incidents are unchanged and the new one is as given, then renames it over the
original (atomic on POSIX) and fsyncs the directory. A file that changed on disk since it was
loaded is never overwritten.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from store.errors import EXIT_INTERNAL, TriageError
from store.faults import fault_hint, fault_name
from store.loader import (
    YAML_LOADER,
    IncidentFileError,
    Problem,
    load_incidents,
    parse_incidents_text,
    path_problem,
    redact_fields,
)
from store.models import Incident

# Fault-injection points for the tests (tests/store/test_writer.py): when TRIAGE_CRASH_AT
# names a step, the process SIGKILLs itself there; when TRIAGE_PAUSE_AT does, it SIGSTOPs itself
# there, so a test can edit the file as a teammate would and then let it go on (SIGCONT).
# Unset in normal use.
_CRASH_ENV = "TRIAGE_CRASH_AT"
_PAUSE_ENV = "TRIAGE_PAUSE_AT"


# Not mutation-tested (tests/mutation): a mutant here stops or kills the test process itself.
def _checkpoint(step: str) -> None:  # pragma: no mutate block
    import signal

    if os.environ.get(_CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(_PAUSE_ENV) == step:
        os.kill(os.getpid(), signal.SIGSTOP)


class SaveRefused(TriageError):
    """The save was refused; nothing was written. ``reasons`` say why and what to do."""

    def __init__(self, reasons: list[str]) -> None:
        super().__init__("save refused, nothing written: " + "; ".join(reasons))
        self.reasons = reasons


class FileChangedOnDisk(SaveRefused):
    """Someone else edited the file since it was loaded: reload before saving."""


class SaveFailed(TriageError):
    """The file could not be written (disk full, read-only, …): nothing was saved, the file is
    as it was. ``reason`` names the fault ("No space left on device")."""

    exit_code = EXIT_INTERNAL

    def __init__(self, file: Path, error: BaseException, doing: str = "writing",
                 temp_left: str | None = None) -> None:
        self.file = file
        self.reason = fault_name(error)
        left = (f"a temporary file could not be removed: {temp_left}" if temp_left
                else "no temporary file was left behind")
        super().__init__(f"nothing was saved: {self.reason} {doing} {file}",
                         [f"{file} is unchanged; {left}"],
                         f"{fault_hint(error, file.parent, 'TRIAGE_INCIDENTS')}, then save "
                         "again.")
        self.reasons = [f"{self.reason} {doing} {file} — {file} is unchanged; "
                        f"{fault_hint(error, file.parent, 'TRIAGE_INCIDENTS')}, then save again"]


def file_sha256(path: Path) -> str | None:
    """Hash of a file's bytes (or of a directory's incident files), None if it does not exist."""
    if path.is_dir():
        from store.loader import incident_files  # the loader's own rule: no dotfile, no dir

        digest = hashlib.sha256()
        for child in incident_files(path):
            digest.update(child.name.encode() + b"\0" + child.read_bytes() + b"\0")
        return digest.hexdigest()
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink loop, no permission: the loader's own words for it
        problem = path_problem(path) or Problem(str(path), None, "", f"cannot read: "
                                                f"{exc.strerror or exc}")
        raise IncidentFileError([problem]) from exc


def redact_incident(incident: Incident) -> tuple[Incident, list[str]]:
    """The incident with secrets replaced in every text field (the loader's own list of them,
    so what is saved is what a load would make of it), and what was found where."""
    cleaned, found = redact_fields(incident)

    def where(path: tuple[str | int, ...]) -> str:
        if path[0] == "actions":
            return f"{path[2]} {incident.actions[int(path[1])].id}"
        return {"root_cause": "root cause", "tags": "tag"}.get(str(path[0]), str(path[0]))

    return cleaned, [f"{kind} in {where(path)}" for path, kind in found]


def _scalar(value: object) -> str:
    """A YAML scalar exactly as safe_dump would quote it, on one line."""
    dumped = yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True)
    return dumped.removesuffix("\n...\n").removesuffix("\n")


def _text_field(key: str, text: str, indent: str) -> list[str]:
    """Long prose as a folded block (as people write it), when folding is exact: only single
    spaces between words (a tab, a line break or a control character would be changed by the
    wrapping or refused by YAML in a block)."""
    if len(text) <= 80 or not text.isprintable() or "  " in text or text != text.strip():
        return [f"{indent}{key}: {_scalar(text)}"]
    wrapped = textwrap.wrap(text, width=88, break_long_words=False, break_on_hyphens=False)
    return [f"{indent}{key}: >-", *(f"{indent}  {line}" for line in wrapped)]


def incident_block(incident: Incident) -> str:
    """One incident as a YAML list item in the house layout, ready to append."""
    lines = [f"- id: {_scalar(incident.id)}"]
    if incident.title:
        lines.append(f"  title: {_scalar(incident.title)}")
    lines.append(f"  service: {_scalar(incident.service)}")
    if incident.started_at:
        lines.append(f"  started_at: {incident.started_at.isoformat().replace('+00:00', 'Z')}")
    if incident.severity:
        lines.append(f"  severity: {_scalar(incident.severity)}")
    lines += _text_field("symptoms", incident.symptoms, "  ")
    if incident.root_cause:
        lines += _text_field("root_cause", incident.root_cause, "  ")
    if incident.tags:
        lines.append(f"  tags: {_scalar(list(incident.tags))}")  # quoted for a flow list
    if incident.related:
        lines.append(f"  related: {_scalar(list(incident.related))}")
    if incident.drill:
        lines.append("  drill: true")
    lines.append("  actions:" if incident.actions else "  actions: []")
    for action in incident.actions:
        lines.append(f"    - id: {_scalar(action.id)}")
        lines.append(f"      action: {_scalar(action.action)}")
        lines.append(f"      outcome: {action.outcome.value}")
        if action.kind:
            lines.append(f"      kind: {_scalar(action.kind)}")
        if action.confirmed is not None:
            lines.append(f"      confirmed: {'true' if action.confirmed else 'false'}")
        lines.append(f"      explanation: {_scalar(action.explanation)}")
    return "\n".join(lines) + "\n"


def _check(new_text: str, name: str, expected: list[Incident]) -> None:
    try:
        parsed = parse_incidents_text(new_text, name)
    except IncidentFileError as exc:
        raise SaveRefused([f"the file would not be valid after saving: {p}"
                           for p in exc.problems]) from exc
    if [i.model_dump() for i in parsed] != [i.model_dump() for i in expected]:
        raise SaveRefused(["the re-read file does not match what was meant to be saved; "
                           "nothing was written"])


def _atomic_write(path: Path, text: str, before_rename: Callable[[], None],
                  notes: list[str] | None = None) -> None:
    """Write ``text`` to a temp file, fsync it, call ``before_rename`` (which may refuse by
    raising), rename it over ``path`` and fsync the directory. On any error before the rename
    the temp file goes and ``path`` is untouched: an OSError (disk full, read-only …) is raised
    as SaveFailed. After the rename the file *is* saved: a failing directory fsync is reported
    in ``notes``, never as a failed save."""
    directory = path.parent
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                             dir=directory)
    except OSError as exc:
        raise SaveFailed(path, exc, "creating a temporary file beside") from exc
    try:
        data = text.encode("utf-8")
        _checkpoint("created")
        with os.fdopen(handle, "wb") as temp:
            half = len(data) // 2
            temp.write(data[:half])
            temp.flush()
            _checkpoint("half-written")
            temp.write(data[half:])
            temp.flush()
            os.fsync(temp.fileno())
        _checkpoint("synced")
        before_rename()
        if path.exists():
            os.chmod(temp_name, path.stat().st_mode & 0o7777)
        os.replace(temp_name, path)
    except BaseException as exc:
        left = _remove(temp_name)
        if isinstance(exc, OSError):
            raise SaveFailed(path, exc, temp_left=left) from exc
        raise
    _checkpoint("renamed")
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        if notes is not None:
            notes.append(f"{path} was saved, but its directory could not be synced to disk "
                         f"({fault_name(exc)}): a power cut now could lose this save")


def _remove(name: str) -> str | None:
    """Remove a temp file; the name if it could not be removed (then the message says so)."""
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass
    except OSError:
        return name
    return None


def lock_path(target: Path) -> Path:
    """The advisory lock file of an incidents file (beside it) or directory (inside it)."""
    return target / ".triage.lock" if target.is_dir() else target.with_name(f".{target.name}.lock")


@contextmanager
def save_lock(target: Path) -> Iterator[None]:
    """Held across a whole save (re-read → compare → write → rename → index), so two writers —
    two consoles, two `triage add` — take turns instead of losing one's incident.

    ``fcntl.flock`` on a sibling file: released by the kernel if the process dies. A lock file
    that cannot be created (read-only or full disk) raises SaveFailed: nothing is saved.
    """
    try:
        handle = open(lock_path(target), "a", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise SaveFailed(target, exc, "creating the lock file for") from exc
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _refuse_if_changed(target: Path, expected_sha256: str | None) -> None:
    if expected_sha256 is not None and file_sha256(target) != expected_sha256:
        raise FileChangedOnDisk([f"{target} changed on disk since it was loaded (someone else "
                                 "edited it) — reload, then save again; nothing was written"])


def save_incident(target: Path, incident: Incident, expected_sha256: str | None,
                  notes: list[str] | None = None) -> Path:
    """Append a new incident, or replace the block of an existing one with the same id.

    Returns the file written. Raises SaveRefused (nothing written) on any doubt, SaveFailed
    (nothing written, the file as it was, no temp file) when the disk refuses the write.
    ``notes`` receives what went wrong after the file was already saved.
    """
    _refuse_if_changed(target, expected_sha256)
    memory = load_incidents(target)
    origin = memory.origin.get(incident.id)
    if origin is None:
        file = target / f"{incident.id}.yaml" if target.is_dir() else target
        old_text = file.read_text(encoding="utf-8") if file.exists() else ""
        separator = "" if not old_text or old_text.endswith("\n\n") else (
            "\n" if old_text.endswith("\n") else "\n\n")
        new_text = old_text + separator + incident_block(incident)
        old_in_file = [i for i in memory.incidents if memory.origin[i.id][0] == str(file)]
        expected = [*old_in_file, incident]
    else:
        file = Path(origin[0])
        old_text = file.read_text(encoding="utf-8")
        new_text = _replace_block(old_text, incident)
        expected = [incident if i.id == incident.id else i for i in memory.incidents
                    if memory.origin[i.id][0] == str(file)]
    _check(new_text, str(file), expected)
    # Checked again just before the rename: an edit made while this save was being prepared
    # and written is never overwritten.
    _atomic_write(file, new_text, lambda: _refuse_if_changed(target, expected_sha256), notes)
    return file


def _replace_block(text: str, incident: Incident) -> str:
    """Replace only the lines of ``incident``'s list item; everything else stays as it was."""
    root = yaml.compose(text, Loader=YAML_LOADER)
    assert isinstance(root, yaml.SequenceNode)
    lines = text.splitlines(keepends=True)
    for position, node in enumerate(root.value):
        ids = [v.value for k, v in node.value if k.value == "id"] if isinstance(
            node, yaml.MappingNode) else []
        if ids != [incident.id]:
            continue
        start = node.start_mark.line
        end = (root.value[position + 1].start_mark.line if position + 1 < len(root.value)
               else len(lines))
        while end > start + 1 and (not lines[end - 1].strip()
                                   or lines[end - 1].lstrip().startswith("#")):
            end -= 1
        return "".join(lines[:start]) + incident_block(incident) + "".join(lines[end:])
    raise SaveRefused([f"incident {incident.id} is not in the file"])
