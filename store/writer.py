"""Saving an incident into the team's file without losing a byte of what is already there.

Every save writes a temporary file in the same directory, fsyncs it, re-parses it and checks
that the old incidents are unchanged and the new one is as given, then renames it over the
original (atomic on POSIX) and fsyncs the directory. A file that changed on disk since it was
loaded is never overwritten.

The file's own bytes are the team's: a save keeps its line endings (LF, CRLF or CR — the new
block is written in the one the file uses most), its UTF-8 byte-order mark and whether it ends
with a line break; only the appended or replaced block differs. A symlinked incidents file is
written through to the link's target (the temp file, the rename and the lock are beside the
resolved target), so the link stays a link.

Temp files of a save that was killed between creating and renaming them
(``.incidents.yaml.<8 chars>.tmp``) are reported by `triage check` (leftover_warnings) and
removed by the next save, under the lock, once older than STALE_TEMP_SECONDS.
"""

from __future__ import annotations

import codecs
import fcntl
import hashlib
import os
import re
import stat
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import yaml

from store.errors import EXIT_INTERNAL, TriageError
from store.faults import fault_hint, fault_name
from store.loader import (
    YAML_LOADER,
    IncidentFileError,
    LoadedMemory,
    Problem,
    content_hash,
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


class IdAddedMeanwhile(FileChangedOnDisk):
    """A new incident's id was added to the file by another save after this memory was loaded
    (two people saving the same new id at once): nothing was written."""


def added_meanwhile(target: Path, incident_id: str, what_to_do: str) -> IdAddedMeanwhile | None:
    """Why a save of an incident that was *not* in the loaded memory was refused, when the file
    now holds that id: another save added it meanwhile (None when it does not, or cannot be
    read — the plain "changed on disk" refusal stands). ``what_to_do`` is the caller's way on
    (`--replace` or a new id for `triage add`; reload for the console)."""
    try:
        memory = load_incidents(target)
    except (IncidentFileError, OSError):
        return None
    origin = memory.origin.get(incident_id)
    if origin is None:
        return None
    file, line = origin
    return IdAddedMeanwhile([f"{incident_id} now exists in {file}:{line} — another save added "
                             "it after this memory was loaded, so yours was not saved (nothing "
                             f"was written); {what_to_do}"])


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
    if incident.runbook:
        lines.append(f"  runbook: {_scalar(incident.runbook)}")
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


# The line breaks YAML counts (libyaml's marks too): CRLF as one, then CR, LF, NEL, LS and PS.
_LINE_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
_BREAK_CHARS = "\r\n\x85\u2028\u2029"
_CONTENT_LINE = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)  # a line that is not blank or a comment


@dataclass(frozen=True)
class FileText:
    """An incidents file as the writer edits it: its UTF-8 text with every line ending exactly
    as on disk (no newline translation, the byte-order mark set aside), the line ending new
    lines are written in, and whether it had a BOM."""

    text: str
    newline: str = "\n"
    bom: bool = False

    @property
    def ends_open(self) -> bool:
        """Text that does not end with a line break (a file saved without a final newline)."""
        return bool(self.text) and self.text[-1] not in _BREAK_CHARS

    def lines(self) -> list[str]:
        """The lines with their own endings, split where YAML counts a line."""
        lines: list[str] = []
        start = 0
        for found in _LINE_BREAK.finditer(self.text):
            lines.append(self.text[start:found.end()])
            start = found.end()
        if start < len(self.text):
            lines.append(self.text[start:])
        return lines

    def written(self, text: str) -> bytes:
        """``text`` (whose new lines use ``newline``) as the bytes to save: with the BOM if the
        file had one, and a final line break only if the file had one."""
        if self.ends_open:
            text = text.removesuffix(self.newline)
        return (codecs.BOM_UTF8 if self.bom else b"") + text.encode("utf-8")


def read_file_text(file: Path) -> FileText:
    """``file`` as FileText (empty if it does not exist yet). The line ending is the one the
    file uses most (LF on a tie or when it has none)."""
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return FileText("")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        text = data[len(codecs.BOM_UTF8) if bom else 0:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SaveRefused([f"{file} is not UTF-8 text ({exc.reason}) — save it as UTF-8; "
                           "nothing was written"]) from exc
    crlf = text.count("\r\n")
    counts = {"\n": text.count("\n") - crlf, "\r\n": crlf, "\r": text.count("\r") - crlf}
    return FileText(text, max(counts, key=counts.__getitem__), bom)


def _without_empty_list(text: str) -> str | None:
    """``text`` ready to take its first incident when it holds none — nothing, only comments
    and blank lines, or an empty list (``[]``, taken out; every comment stays) — else None."""
    content = _CONTENT_LINE.finditer(text)  # lazily: a big memory is not split into lines
    if len(list(islice(content, 8))) == 8:
        return None  # a memory (or something else) that is not one empty list: not parsed
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)  # pure Python: marks in characters
    except yaml.YAMLError:
        return None
    if root is None:
        return text
    if not isinstance(root, yaml.SequenceNode) or root.value or not root.flow_style:
        return None
    start, end = root.start_mark, root.end_mark
    rest = FileText(text[:start.index] + text[end.index:])
    lines = rest.lines()
    if start.line < len(lines) and not lines[start.line].strip():
        del lines[start.line]  # the line held only the brackets
    return "".join(lines)


def _new_memory(target: Path) -> LoadedMemory | None:
    """An empty memory when ``target`` is a file that holds no incident yet (empty, comments
    only, ``[]``): `triage add` starts the team's memory there."""
    if not target.is_file():  # a directory, or missing (a mistyped TRIAGE_INCIDENTS)
        return None
    try:
        text = read_file_text(target).text
    except (SaveRefused, OSError):
        return None
    if _without_empty_list(text) is None:
        return None
    return LoadedMemory([], [target], content_hash([]))


def is_new_memory(target: Path) -> bool:
    """Is ``target`` an incidents file that holds no incident yet (empty, only comments and
    blank lines, or ``[]``)? The first `triage add` starts the memory there."""
    return _new_memory(target) is not None


def _separator(text: str, newline: str) -> str:
    """What goes between the file's text and an appended block: one blank line."""
    if not text or text.endswith(newline * 2):
        return ""
    return newline if text[-1] in _BREAK_CHARS else newline * 2


def _check(new_text: str, name: str, expected: list[Incident]) -> None:
    try:
        parsed = parse_incidents_text(new_text, name)
    except IncidentFileError as exc:
        raise SaveRefused([f"the file would not be valid after saving: {p}"
                           for p in exc.problems]) from exc
    if [i.model_dump() for i in parsed] != [i.model_dump() for i in expected]:
        raise SaveRefused(["the re-read file does not match what was meant to be saved; "
                           "nothing was written"])


def _atomic_write(path: Path, data: bytes, before_rename: Callable[[], None],
                  notes: list[str] | None = None) -> None:
    """Write ``data`` to a temp file, fsync it, call ``before_rename`` (which may refuse by
    raising), rename it over ``path`` and fsync the directory. On any error before the rename
    the temp file goes and ``path`` is untouched: an OSError (disk full, read-only …) is raised
    as SaveFailed. After the rename the file *is* saved: a failing directory fsync is reported
    in ``notes``, never as a failed save.

    A symlink is written through: the temp file and the rename are beside its resolved target,
    so the link stays a link and the file it points into (a git checkout) gets the save."""
    real = resolved(path)
    directory = real.parent
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp",
                                             dir=directory)
    except OSError as exc:
        raise SaveFailed(path, exc, "creating a temporary file beside") from exc
    try:
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
        if real.exists():
            os.chmod(temp_name, real.stat().st_mode & 0o7777)
        os.replace(temp_name, real)
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


def resolved(path: Path) -> Path:
    """``path`` with every symlink followed (as far as they lead): where a save really writes."""
    return Path(os.path.realpath(path))


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
    """The advisory lock file of an incidents file (beside it) or directory (inside it) — of
    its resolved target, so a save through a symlink and one straight to the file take turns."""
    real = resolved(target)
    return real / ".triage.lock" if real.is_dir() else real.with_name(f".{real.name}.lock")


# A save holds the lock from before its temp file is created until after the rename, so under
# the lock no save is writing a temp file: any there is a crashed save's. The age guard is for
# a writer that does not take the lock (an older triage, a save stopped in a debugger): a live
# save writes its temp file within seconds, so one untouched for an hour is left over.
STALE_TEMP_SECONDS = 3600
_TEMP_NAME = "[a-z0-9_]{8}"  # tempfile.mkstemp's random part


def leftover_temps(target: Path) -> list[tuple[Path, float]]:
    """Temp files left by interrupted saves of ``target`` (beside the resolved file, or in the
    directory) and their age in seconds, oldest first. Nothing else is matched: only the names
    this writer gives them (``.<file>.<8 chars>.tmp``)."""
    real = resolved(target)
    if real.is_dir():
        folder, name = real, re.compile(rf"\..+\.ya?ml\.{_TEMP_NAME}\.tmp")
    else:
        folder, name = real.parent, re.compile(rf"\.{re.escape(real.name)}\.{_TEMP_NAME}\.tmp")
    now = time.time()
    found: list[tuple[Path, float]] = []
    try:
        children = list(folder.iterdir())
    except OSError:
        return []
    for child in children:
        if not name.fullmatch(child.name):
            continue
        try:
            info = child.lstat()
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((child, max(0.0, now - info.st_mtime)))
    return sorted(found, key=lambda item: (-item[1], item[0].name))


def _age(seconds: float) -> str:
    if seconds < 120:
        return f"{int(seconds)} s"
    if seconds < 2 * 3600:
        return f"{int(seconds // 60)} min"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h"
    return f"{int(seconds // 86400)} days"


def leftover_warnings(target: Path) -> list[str]:
    """One `triage check` line per leftover temp file: its name, its age, what happens to it."""
    limit = f"{STALE_TEMP_SECONDS // 3600} h"
    return [f"{path}: warning: temporary file left by an interrupted save, {_age(age)} old — not "
            "part of the memory; " + ("the next save removes it" if age > STALE_TEMP_SECONDS
                                      else f"the next save removes it once it is over {limit} "
                                           "old (a save may still be writing it)")
            for path, age in leftover_temps(target)]


def _remove_stale_temps(target: Path) -> None:
    """Under the save lock: remove the leftover temp files older than STALE_TEMP_SECONDS."""
    for path, age in leftover_temps(target):
        if age > STALE_TEMP_SECONDS:
            _remove(str(path))


@contextmanager
def save_lock(target: Path) -> Iterator[None]:
    """Held across a whole save (re-read → compare → write → rename → index), so two writers —
    two consoles, two `triage add` — take turns instead of losing one's incident.

    ``fcntl.flock`` on a sibling file of the resolved target: released by the kernel if the
    process dies. A lock file that cannot be created (read-only or full disk) raises
    SaveFailed: nothing is saved. Once held, the temp files crashed saves left (older than
    STALE_TEMP_SECONDS) are removed.
    """
    try:
        handle = open(lock_path(target), "a", encoding="utf-8")  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise SaveFailed(target, exc, "creating the lock file for") from exc
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            _remove_stale_temps(target)
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
    try:
        memory = load_incidents(target)
    except IncidentFileError as exc:
        empty = _new_memory(target)  # an empty file, or only comments: a memory starts here
        if empty is None:
            memory = _beside_broken_files(target, incident, exc, notes)
        else:
            memory = empty
    origin = memory.origin.get(incident.id)
    if origin is None:
        file = target / f"{incident.id}.yaml" if target.is_dir() else target
        old = read_file_text(file)
        old_in_file = [i for i in memory.incidents if memory.origin[i.id][0] == str(file)]
        base = old.text
        if not old_in_file:
            emptied = _without_empty_list(old.text)  # a first incident: `[]` makes way for it
            base = old.text if emptied is None else emptied
        block = incident_block(incident).replace("\n", old.newline)
        new_text = base + _separator(base, old.newline) + block
        expected = [*old_in_file, incident]
    else:
        file = Path(origin[0])
        old = read_file_text(file)
        new_text = _replace_block(old, incident)
        expected = [incident if i.id == incident.id else i for i in memory.incidents
                    if memory.origin[i.id][0] == str(file)]
    data = old.written(new_text)
    _check(data.decode("utf-8-sig"), str(file), expected)
    # Checked again just before the rename: an edit made while this save was being prepared
    # and written is never overwritten.
    _atomic_write(file, data, lambda: _refuse_if_changed(target, expected_sha256), notes)
    return file


def _beside_broken_files(target: Path, incident: Incident, error: IncidentFileError,
                         notes: list[str] | None) -> LoadedMemory:
    """In directory mode, the memory of the files that load, when the save writes none of the
    broken ones: a postmortem is saved at 2 a.m. although another file has a typo. Its id is
    checked against the files that load; one a broken part is known to hold is refused, and
    the note names the broken files (the id could not be checked there). Anything else (one
    file, or a save into a broken file): ``error`` itself."""
    memory = error.partial
    if not target.is_dir() or memory is None:
        raise error
    origin = memory.origin.get(incident.id)
    file = origin[0] if origin is not None else str(target / f"{incident.id}.yaml")
    broken = sorted({p.file for p in error.problems})
    if file in broken or str(target) in broken:
        raise error
    for left_out in error.unsearched:
        if left_out.label == incident.id:
            raise SaveRefused([f"{incident.id} is also written at {left_out.file}:"
                               f"{left_out.line or 1}, which does not load — fix that file "
                               "(`triage check`), then save again; nothing was written"])
    if notes is not None:
        names = ", ".join(Path(b).name for b in broken)
        notes.append(f"warning: {names} {'does' if len(broken) == 1 else 'do'} not load "
                     f"({error.problems[0]}): {incident.id}'s id was checked against the other "
                     "files only — fix it (`triage check`)")
    return memory


def _replace_block(old: FileText, incident: Incident) -> str:
    """Replace only the lines of ``incident``'s list item (written in the file's own line
    ending); everything else stays as it was, byte for byte."""
    root = yaml.compose(old.text, Loader=YAML_LOADER)
    assert isinstance(root, yaml.SequenceNode)
    lines = old.lines()
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
        block = incident_block(incident).replace("\n", old.newline)
        return "".join(lines[:start]) + block + "".join(lines[end:])
    raise SaveRefused([f"incident {incident.id} is not in the file"])
