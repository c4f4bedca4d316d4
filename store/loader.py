"""Read the team's incidents file (or directory), reporting every problem with file:line.

Secrets written into an incident's text (a DSN password, a token, a key) are redacted here,
as each incident is read, with the shared redactor (store/redact.py): every incident handed
out — to the index, the embedder and its cache, the prompt, the JSON, the screen — already
carries ``[REDACTED:<kind>]`` instead. Each one found is recorded as a SecretFinding (file,
line, incident, field, kind — never the value) for `triage check` to report. The file itself
is never rewritten here: scrubbing it (and its git history) is the team's decision.

Forward compatibility: a field this version does not know (one a newer build added, or a
misspelt optional one) is ignored with a SchemaWarning (file:line, `triage check` prints it),
so a teammate's newer file never makes an older build reject the whole memory. A misspelt
*required* field still fails — as the required field missing, naming the likely misspelling.
Dangling ``related`` ids are ``reference_problems``: warnings everywhere (`triage check` prints
them and exits 0, `brief` and `add` go on) — ``related`` only feeds drills, which skip an id
that is not in memory, so a typo there must never block a briefing or a save.

A file that cannot be used as a whole still yields what can: IncidentFileError carries the
``partial`` memory (every incident that loads on its own — in directory mode the other files;
in one file the top-level items, split at their ``- id:`` lines when the YAML as a whole does
not parse, and around git conflict markers) and ``unsearched`` (the incidents left out, with
file:line). The console and `triage brief` brief from it; `check`, `index` and saves refuse.
Every problem of a file is found in one pass: a YAML error in one item, a schema error in
another and a duplicate id are reported together.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from store.errors import TriageError
from store.models import Action, Incident
from store.redact import redact
from store.service_aliases import read_service_aliases, services_path
from store.validation import describe_error
from store.yaml_marks import (
    aliased,
    child,
    duplicate_keys,
    field_path,
    key_line,
    nesting_depth,
    scalars,
    shift_marks,
)

# libyaml's parser is ~13x faster on the bundled memory (10 ms vs 135 ms) and keeps marks.
YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the incidents file, located as precisely as we can."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.field}: {self.message}" if self.field else f"{where}: {self.message}"


@dataclass(frozen=True)
class SecretFinding:
    """A secret found (and redacted) in the incidents file: where, and what kind — never the
    value, nor any part of it."""

    file: str
    line: int
    incident_id: str
    field: str
    kind: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.kind} secret in {self.incident_id} {self.field}"


@dataclass(frozen=True)
class SchemaWarning:
    """A field this version of triage does not know, ignored at load (never the value)."""

    file: str
    line: int
    incident_id: str
    field: str
    suggestion: str | None = None

    def __str__(self) -> str:
        hint = f" (did you mean {self.suggestion!r}?)" if self.suggestion else ""
        return (f"{self.file}:{self.line}: warning: unknown field {self.field!r} in "
                f"{self.incident_id}: ignored by this version of triage{hint}")


@dataclass(frozen=True)
class Unsearched:
    """An incident (or a whole file) left out of a partial memory, and where it is written."""

    file: str
    line: int | None
    label: str  # "INC-2041", "incident #3", "every incident in b.yaml"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{self.label} ({where})"


class IncidentFileError(TriageError):
    """The incidents file cannot be used as it is; ``problems`` lists every reason.

    ``secrets`` lists the secrets found in the incidents that could be read, so `triage
    check` reports them beside the errors. ``partial`` is the memory of every incident that
    loads on its own (None when the path itself cannot be read), ``unsearched`` the incidents
    it leaves out — for a briefing at 2 a.m. that must not be silenced by one typo."""

    def __init__(self, problems: list[Problem], secrets: list[SecretFinding] | None = None,
                 warnings: list[SchemaWarning] | None = None,
                 partial: LoadedMemory | None = None,
                 unsearched: list[Unsearched] | None = None) -> None:
        self.problems = problems
        self.secrets = list(secrets or [])
        self.warnings = list(warnings or [])
        self.partial = partial
        self.unsearched = list(unsearched or [])
        count = len(problems)
        super().__init__(f"the incidents file has {count} problem{'s' if count != 1 else ''}:",
                         [str(p) for p in problems],
                         "Fix them and run `triage check` again; the index was left as it was.")


@dataclass(frozen=True)
class LoadedMemory:
    """The incidents as loaded (secrets redacted), where they came from, a hash of their
    content, and the secrets that were redacted from them."""

    incidents: list[Incident]
    files: list[Path]
    source_hash: str
    origin: dict[str, tuple[str, int]] = field(default_factory=dict)
    secrets: list[SecretFinding] = field(default_factory=list)
    warnings: list[SchemaWarning] = field(default_factory=list)
    # Warnings (never errors): `related` ids that name no incident in memory, or itself.
    reference_problems: list[Problem] = field(default_factory=list)
    # The line of each incident's ``started_at`` (for `triage check`'s future-date warning).
    start_lines: dict[str, int] = field(default_factory=dict)
    # False for IncidentFileError.partial: some incidents did not load, so an id absent here
    # proves nothing (the shared overlay never reads it as deleted here).
    complete: bool = True
    # services.yaml beside the incidents file (store/service_aliases.py): each service's other
    # names, and what is wrong with the file (then no aliases). Not in ``source_hash``.
    service_aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    service_problems: list[Problem] = field(default_factory=list)

    @property
    def action_count(self) -> int:
        return sum(len(i.actions) for i in self.incidents)

    @property
    def services(self) -> list[str]:
        return sorted({i.service for i in self.incidents})

    @property
    def drill_ids(self) -> frozenset[str]:
        """Incidents recorded in a game day (``drill: true``): never evidence by default."""
        return frozenset(i.id for i in self.incidents if i.drill)


def content_hash(incidents: Iterable[Incident]) -> str:
    """A hash of what the incidents say, blind to comments and formatting.

    Taken over the redacted incidents (what the index holds): stable across loads, and a
    secret's value never reaches the index metadata, even as a hash."""
    payload = [i.model_dump(mode="json") for i in incidents]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def is_incident_file(path: Path) -> bool:
    """Is ``path`` (in a memory directory) one of its incident files? A ``*.yaml``/``*.yml``
    regular file (or a link to one) whose name does not start with "." — an Emacs lock
    ``.#INC-2041.yaml``, a macOS ``._x.yaml``, a save's ``.x.yaml.tmp`` and a directory named
    ``x.yaml`` are not. The one rule for every reader: the loader, the file hash that says
    whether the file changed (store/writer.py), the index freshness built on them."""
    return (not path.name.startswith(".") and path.suffix in (".yaml", ".yml")
            and path.is_file())


def incident_files(path: Path) -> list[Path]:
    """The YAML files that make up the memory at ``path`` (a file or a directory)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if is_incident_file(p))
    return [path]


def path_problem(path: Path) -> Problem | None:
    """Why the incidents path cannot be opened at all (missing, a symlink loop, no permission
    to reach it), or None. ``Path.exists`` would call a symlink loop "not found"."""
    try:
        path.stat()
    except FileNotFoundError:
        return Problem(str(path), None, "", "not found — create it or point TRIAGE_INCIDENTS at "
                       "your incidents file or directory")
    except OSError as exc:
        return Problem(str(path), None, "", f"cannot be opened: {exc.strerror or exc} — point "
                       "TRIAGE_INCIDENTS at the incidents file or directory itself")
    return None


def load_incidents(path: Path) -> LoadedMemory:
    """Load and validate every incident; raise IncidentFileError listing all problems."""
    unreadable = path_problem(path)
    if unreadable is not None:
        raise IncidentFileError([unreadable])
    files = incident_files(path)
    if not files:
        raise IncidentFileError([Problem(str(path), None, "", "directory holds no *.yaml files")])
    found = _Found()
    incidents: list[Incident] = []
    origin: dict[str, tuple[str, int]] = {}
    for file in files:
        for incident, line in _load_file(file, found):
            if incident.id in origin:
                first_file, first_line = origin[incident.id]
                found.problems.append(Problem(str(file), line, "id", f"duplicate incident id "
                                              f"{incident.id!r} (first at {first_file}:"
                                              f"{first_line})"))
                found.unsearched.append(Unsearched(str(file), line, incident.id))
                continue
            origin[incident.id] = (str(file), line)
            incidents.append(incident)
    # (ids written in items that did not load still count as known: not "dangling")
    references = reference_problems(found.references, set(origin) | found.labels)
    memory = LoadedMemory(incidents, files, content_hash(incidents), origin, found.secrets,
                          found.warnings, references,
                          {i: n for i, n in found.start_lines.items() if i in origin},
                          complete=not found.problems)
    memory = _with_aliases(memory, services_path(path))
    if found.problems:
        raise IncidentFileError(found.problems, found.secrets, found.warnings, memory,
                                found.unsearched)
    return memory


def _with_aliases(memory: LoadedMemory, path: Path) -> LoadedMemory:
    read = read_service_aliases(path, memory.services)
    if not read.aliases and not read.problems:
        return memory
    problems = [Problem(str(path), line, "", message) for line, message in read.problems]
    return dataclasses.replace(memory, service_aliases=read.aliases, service_problems=problems)


@dataclass
class _Found:
    """What reading the files turned up besides the incidents: problems, secrets, warnings,
    ``related`` references, the incidents left out, and the ids of every item seen."""

    problems: list[Problem] = field(default_factory=list)
    secrets: list[SecretFinding] = field(default_factory=list)
    warnings: list[SchemaWarning] = field(default_factory=list)
    references: list[_Reference] = field(default_factory=list)
    unsearched: list[Unsearched] = field(default_factory=list)
    labels: set[str] = field(default_factory=set)
    start_lines: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class _Reference:
    """One id in an incident's ``related`` list, where it is written."""

    file: str
    line: int
    incident_id: str
    position: int
    target: str


def reference_problems(references: list[_Reference], known: set[str]) -> list[Problem]:
    """``related`` ids that name no incident in memory, or the incident itself."""
    problems = []
    for ref in references:
        where = f"{ref.incident_id} related[{ref.position}]"
        if ref.target == ref.incident_id:
            problems.append(Problem(ref.file, ref.line, where, "an incident cannot be related "
                                    "to itself — list the other occurrences of the problem"))
        elif ref.target not in known:
            problems.append(Problem(ref.file, ref.line, where, f"{ref.target!r} is not an "
                                    "incident in memory — fix the id or remove it"))
    return problems


def parse_incidents_text(text: str, name: str, secrets: list[SecretFinding] | None = None,
                         warnings: list[SchemaWarning] | None = None) -> list[Incident]:
    """Validate YAML text holding a list of incidents (used by ``triage add`` and the editor).

    The incidents come back redacted, exactly as load_incidents would hand them out (the
    writer compares the two); ``secrets``, if given, receives what was redacted."""
    problems: list[Problem] = []
    read = _Found(problems)
    found = [incident for incident, _ in _parse(text, name, read)]
    if secrets is not None:
        secrets.extend(read.secrets)
    if warnings is not None:
        warnings.extend(read.warnings)
    seen: set[str] = set()
    for incident in found:
        if incident.id in seen:
            problems.append(Problem(name, None, "id", f"duplicate incident id {incident.id!r}"))
        seen.add(incident.id)
    if problems:
        raise IncidentFileError(problems)
    return found


def _load_file(file: Path, found: _Found) -> list[tuple[Incident, int]]:
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        found.problems.append(Problem(str(file), line, "", f"not UTF-8 text ({exc.reason}) — "
                                      "save the file as UTF-8"))
        found.unsearched.append(Unsearched(str(file), None, f"every incident in {file.name}"))
        return []
    except OSError as exc:
        found.problems.append(Problem(str(file), None, "", f"cannot read: "
                                      f"{exc.strerror or exc}"))
        found.unsearched.append(Unsearched(str(file), None, f"every incident in {file.name}"))
        return []
    return _parse(text, str(file), found)


# Deeper than this, a YAML entry is a broken paste, not an incident (which needs 5 levels):
# constructing a 5,000-deep list raised RecursionError.
MAX_DEPTH = 64
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_INT = "tag:yaml.org,2002:int"


def read_mapping(constructor: Any, node: yaml.Node, at: Problem, not_a_mapping: str,
                 problems: list[Problem]) -> dict[Any, Any] | None:
    """One YAML entry (an incident, a probe) as a dict, or None with why in ``problems``: a
    key given twice, text that cannot be constructed (an impossible date, an integer too long
    to read, nesting too deep), or not a mapping (``not_a_mapping``). ``at`` is where the
    entry stands (file, line, label)."""
    depth, deep_line = nesting_depth(node, MAX_DEPTH)
    if depth > MAX_DEPTH:
        problems.append(Problem(at.file, deep_line, at.field, f"nested more than {MAX_DEPTH} "
                                "levels deep — an entry needs only a few; this looks like a "
                                "broken paste (an unclosed bracket?)"))
        return None
    problems.extend(Problem(at.file, line, field, "key given twice")
                    for line, field in duplicate_keys(node, at.field))
    try:
        data = constructor.construct_document(node)
    except yaml.YAMLError as exc:
        _reset(constructor)
        problems.append(Problem(at.file, at.line, at.field,
                                f"cannot be read: {redact(str(exc)).text}"))
        return None
    except (ValueError, OverflowError, RecursionError) as exc:
        # An impossible date (2026-02-30), an integer of more than 4,300 digits: the value's
        # own line and field, in words.
        _reset(constructor)
        problems.extend(_unreadable_values(node, at) or [
            Problem(at.file, at.line, at.field, f"cannot be read: {redact(str(exc)).text}")])
        return None
    if not isinstance(data, dict):
        problems.append(Problem(at.file, at.line, at.field, not_a_mapping))
        return None
    return data


def _reset(constructor: Any) -> None:
    """A construction that raised leaves its half-built state behind (the failing node stays
    marked "recursive"): clear it before the constructor reads the next entry."""
    constructor.constructed_objects = {}
    constructor.recursive_objects = {}
    constructor.state_generators = []


def _unreadable_values(node: yaml.Node, at: Problem) -> list[Problem]:
    """Each scalar of ``node`` that YAML resolves to a date or a number it cannot build."""
    probe = YAML_LOADER("")
    found = []
    for path, scalar in scalars(node):
        if scalar.tag not in (_TIMESTAMP, _INT) and not scalar.tag.endswith(":float"):
            continue
        try:
            probe.construct_object(scalar)
        except (ValueError, OverflowError, yaml.YAMLError) as exc:
            _reset(probe)
            where = f"{at.field} {field_path(path)}".strip()
            value = str(scalar.value)
            if scalar.tag == _TIMESTAMP:
                message = (f"{value[:40]!r} is not a real date or time ({exc}) — write an "
                           "ISO-8601 time such as 2026-03-14T02:05:00Z")
            elif scalar.tag == _INT and len(value) > 4300:
                message = (f"an integer of {len(value):,} digits is longer than can be read "
                           "(4,300) — quote it if it is text")
            else:
                message = f"{value[:40]!r} cannot be read as a number ({exc})"
            found.append(Problem(at.file, scalar.start_mark.line + 1, where,
                                 redact(message).text))
    return found


# A top-level list item starts at column 0; git leaves these markers at column 0 too.
_ITEM_START = re.compile(r"^-(?=[ \t\r]|$)", re.M)
_CONFLICT = re.compile(r"^(<{7}|\|{7}|={7}|>{7})(?=[ \t\r]|$)", re.M)
_ITEM_ID = re.compile(r"^-[ \t]+id:[ \t]*['\"]?([A-Za-z0-9._-]+)", re.M)


def _parse(text: str, name: str, found: _Found) -> list[tuple[Incident, int]]:
    items = _items(text, name, found)
    loaded: list[tuple[Incident, int]] = []
    first_seen: dict[str, int] = {}
    # One constructor for every node: a loader built over the whole text per incident made
    # loading quadratic (10.7 s for 2,500 incidents; bench/build_bench.py).
    constructor = YAML_LOADER("")
    seen: set[int] = set()  # nodes met so far: one reached twice is an alias
    for index, node in enumerate(items):
        line = node.start_mark.line + 1
        label = _incident_label(node, index)
        found.labels.add(label)
        loaded_item = _item(node, line, label, name, text, first_seen, seen, constructor,
                            found)
        if loaded_item is None:
            found.unsearched.append(Unsearched(name, line, label))
        else:
            loaded.append((loaded_item, line))
    return loaded


def _item(node: yaml.Node, line: int, label: str, name: str, text: str,
          first_seen: dict[str, int], seen: set[int], constructor: Any,
          found: _Found) -> Incident | None:
    """One top-level item as an incident, or None with every reason it is not in
    ``found.problems`` (a duplicate is still validated: its own problems are reported now,
    not after the duplicate is fixed)."""
    problems = found.problems
    alias_line = aliased(node, seen)
    if alias_line is not None:
        # An alias re-uses a node: nested ones expand exponentially (a 361-byte "billion
        # laughs" took ~200 s and ~9 GB). The memory is written by hand: no alias is needed.
        problems.append(Problem(name, alias_line, "", "YAML aliases (*name) are not accepted "
                                "in an incidents file — write the value out in full"))
        return None
    known = len(problems)
    if label in first_seen and not label.startswith("incident #"):
        problems.append(Problem(name, line, "id", f"duplicate incident id {label!r} "
                                f"(first at line {first_seen[label]})"))
    first_seen.setdefault(label, line)
    data = read_mapping(constructor, node, Problem(name, line, label, ""),
                        "each incident must be a mapping of fields (id, service, symptoms, "
                        "actions …)", problems)
    if data is None:
        return None
    problems.extend(_duplicate_action_ids(name, node, label))
    unknown = _strip_unknown(data, node, name, label)
    found.warnings.extend(unknown)
    try:
        incident = Incident.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(_misspelt(_problem_from_error(name, node, label, error), error,
                                      unknown))
        return None
    if len(problems) > known:  # keys given twice, duplicate ids: reported, not loaded
        return None
    related_node = child(node, "related")
    for position, target in enumerate(incident.related):
        item = child(related_node, position)
        at = item.start_mark.line + 1 if item is not None else line
        found.references.append(_Reference(name, at, incident.id, position, target))
    start = child(node, "started_at")
    if start is not None and incident.started_at is not None:
        found.start_lines[incident.id] = start.start_mark.line + 1
    secrets: list[SecretFinding] = []
    incident = _redacted(incident, node, _Source(name, text), secrets)
    found.secrets.extend(secrets)
    return incident


def _items(text: str, name: str, found: _Found) -> list[yaml.Node]:
    """The top-level items of one file, their marks on the file's own lines. The whole text
    is composed at once; when that fails (or git left conflict markers in it) each item is
    composed on its own, split at the ``- id:`` lines, so one typo costs only its own item."""
    conflicts = _conflicts(text)
    whole: Problem | None = None
    if not conflicts:
        try:
            root = yaml.compose(text, Loader=YAML_LOADER)
        except (yaml.YAMLError, RecursionError) as exc:
            whole = _yaml_problem(exc, text, name, 0)
        else:
            if root is None:
                found.problems.append(Problem(name, None, "", "file is empty — expected a list "
                                              "of incidents (each starting with '- id: …')"))
                return []
            if not isinstance(root, yaml.SequenceNode):
                found.problems.append(Problem(name, root.start_mark.line + 1, "", _NOT_A_LIST))
                return []
            return list(root.value)
    before = len(found.problems)
    items = _chunked(text, name, conflicts, found)
    if whole is not None and len(found.problems) == before:
        # Every piece reads on its own but the whole does not (an indentation that only
        # breaks across items): nothing is taken from this file.
        found.problems.append(whole)
        found.unsearched.append(Unsearched(name, None, f"every incident in {Path(name).name}"))
        return []
    return items


_NOT_A_LIST = "top level must be a list of incidents (each starting with '- id: …')"


def _yaml_problem(exc: BaseException, text: str, name: str, offset: int) -> Problem:
    """A YAML error in words, at its line in the file (``offset``: lines before ``text``)."""
    if isinstance(exc, yaml.reader.ReaderError):
        line = text.count("\n", 0, exc.position) + 1 + offset
        return Problem(name, line, "", f"not valid YAML: character {exc.character!r} is not "
                       "allowed in YAML text")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        if exc.context_mark and mark and mark.index >= len(text.rstrip()):
            mark = exc.context_mark  # "unexpected end" of a piece: where the open thing began
        return Problem(name, mark.line + 1 + offset if mark else None, "",
                       f"not valid YAML: {exc.problem or exc}")
    if isinstance(exc, RecursionError):
        return Problem(name, offset + 1, "", "not valid YAML: nested too deeply to be read")
    return Problem(name, None, "", f"not valid YAML: {exc}")


def _conflicts(text: str) -> list[tuple[int, int, int]]:
    """Git conflict regions: (start offset, end offset, first line), from ``<<<<<<<`` through
    ``>>>>>>>`` (to the end of the file when it is not closed); a stray marker is a region of
    its own line."""
    regions: list[tuple[int, int, int]] = []
    opened: int | None = None
    for match in _CONFLICT.finditer(text):
        end = text.find("\n", match.start())
        end = len(text) if end < 0 else end + 1
        marker = match.group(1)[0]
        if marker == "<" and opened is None:
            opened = match.start()
        elif marker == ">" and opened is not None:
            regions.append((opened, end, 0))
            opened = None
        elif opened is None:
            regions.append((match.start(), end, 0))
    if opened is not None:
        regions.append((opened, len(text), 0))
    return [(start, end, text.count("\n", 0, start) + 1) for start, end, _ in regions]


def _chunked(text: str, name: str, conflicts: list[tuple[int, int, int]],
             found: _Found) -> list[yaml.Node]:
    """Each top-level item composed on its own (see _items); a piece that does not read is a
    problem at its line, and the incidents in it are left out, as are both sides of a
    conflict (which one is meant is the team's call)."""
    for start, end, line in conflicts:
        last = line + text.count("\n", start, end) - (1 if text[end - 1:end] == "\n" else 0)
        inside = [match.group(1) for match in _ITEM_ID.finditer(text, start, end)]
        found.problems.append(Problem(name, line, "", f"merge conflict: git conflict markers "
                                      f"(<<<<<<< … >>>>>>>) on lines {line}–{last} — resolve "
                                      "the merge conflict (keep the side meant), then run "
                                      "`triage check`"))
        found.unsearched.extend(Unsearched(name, line, label) for label in
                                dict.fromkeys(inside or [f"lines {line}–{last}"]))
    cuts = sorted({0, *(m.start() for m in _ITEM_START.finditer(text)
                        if not any(s <= m.start() < e for s, e, _ in conflicts)),
                   *(s for s, _, _ in conflicts), *(e for _, e, _ in conflicts), len(text)})
    items: list[yaml.Node] = []
    lines_before, counted = 0, 0
    for start, end in pairwise(cuts):
        if any(s <= start < e for s, e, _ in conflicts):
            continue
        lines_before += text.count("\n", counted, start)
        counted = start
        piece = text[start:end]
        try:
            root = yaml.compose(piece, Loader=YAML_LOADER)
        except (yaml.YAMLError, RecursionError) as exc:
            found.problems.append(_yaml_problem(exc, piece, name, lines_before))
            match = _ITEM_ID.match(piece)
            found.unsearched.append(Unsearched(name, lines_before + 1, match.group(1) if match
                                               else f"the item at line {lines_before + 1}"))
            continue
        if root is None or (isinstance(root, yaml.ScalarNode) and root.value == ""):
            continue  # comments, blank lines, a "---"
        shift_marks(root, lines_before)
        if not isinstance(root, yaml.SequenceNode):
            found.problems.append(Problem(name, root.start_mark.line + 1, "", _NOT_A_LIST))
            continue
        items.extend(root.value)
    return items


INCIDENT_FIELDS = tuple(Incident.model_fields)
ACTION_FIELDS = tuple(Action.model_fields)


def _strip_unknown(data: dict[Any, Any], node: yaml.Node, name: str, label: str
                   ) -> list[SchemaWarning]:
    """Remove (in place) the fields this version does not know, from the incident and each of
    its actions; a warning for each, at the line of its key."""
    found: list[SchemaWarning] = []

    def strip(mapping: dict[Any, Any], mapping_node: yaml.Node | None, known: tuple[str, ...],
              owner: str) -> None:
        for key in [k for k in mapping if k not in known]:
            del mapping[key]
            line = key_line(mapping_node, key)
            close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
            found.append(SchemaWarning(name, line, owner, str(key),
                                       close[0] if close else None))

    strip(data, node, INCIDENT_FIELDS, label)
    actions = data.get("actions")
    if isinstance(actions, list):
        actions_node = child(node, "actions")
        for index, action in enumerate(actions):
            if isinstance(action, dict):
                local = action.get("id")
                owner = f"{label}/{local}" if isinstance(local, str) and local else (
                    f"{label} actions[{index}]")
                strip(action, child(actions_node, index), ACTION_FIELDS, owner)
    return found




def _misspelt(problem: Problem, error: Any, unknown: list[SchemaWarning]) -> Problem:
    """A missing required field, naming an unknown field nearby that looks like it."""
    if error.get("type") != "missing" or not error.get("loc"):
        return problem
    wanted = str(error["loc"][-1])
    match = next((w for w in unknown if w.suggestion == wanted), None)
    if match is None:
        return problem
    return Problem(problem.file, problem.line, problem.field,
                   f"{problem.message} — {match.field!r} (line {match.line}) looks like a "
                   f"misspelling of {wanted!r}")


class _Source:
    """The text of one file, split into lines only if a secret has to be located in it."""

    def __init__(self, name: str, text: str) -> None:
        self.name, self.text = name, text
        self._lines: list[str] | None = None

    def lines(self) -> list[str]:
        if self._lines is None:
            self._lines = self.text.splitlines()
        return self._lines


FieldPath = tuple[str | int, ...]
INCIDENT_TEXT_FIELDS = ("title", "service", "severity", "symptoms", "root_cause")
ACTION_TEXT_FIELDS = ("action", "explanation", "kind")


def redact_fields(incident: Incident) -> tuple[Incident, list[tuple[FieldPath, str]]]:
    """``incident`` with every secret in every text field replaced, and (field path, kind)
    for each kind found in each field, in field order.

    Text fields: title, service, severity, symptoms, root_cause, each tag, and each action's
    action, explanation and kind; ids are patterns with no room for a labelled secret. An
    incident with nothing to redact comes back as the same object."""
    found: list[tuple[FieldPath, str]] = []

    def clean(text: str | None, path: FieldPath) -> str | None:
        if text is None:
            return None
        result = redact(text)
        found.extend((path, kind) for kind in result.found)
        return result.text

    updated = {name: clean(getattr(incident, name), (name,)) for name in INCIDENT_TEXT_FIELDS}
    tags = [clean(tag, ("tags", n)) for n, tag in enumerate(incident.tags)]
    actions: list[Action] = []
    for n, action in enumerate(incident.actions):
        seen = len(found)
        texts = {name: clean(getattr(action, name), ("actions", n, name))
                 for name in ACTION_TEXT_FIELDS}
        actions.append(action if len(found) == seen
                       else Action.model_validate({**action.model_dump(), **texts}))
    if not found:
        return incident, found  # nothing to redact: the incident as validated
    return Incident.model_validate({**incident.model_dump(), **updated, "tags": tags,
                                    "actions": [a.model_dump() for a in actions]}), found


def _redacted(incident: Incident, node: yaml.Node, source: _Source,
              found: list[SecretFinding]) -> Incident:
    """``incident`` redacted (redact_fields); each secret found goes to ``found``, located at
    the line of its field's value in the file, in line order."""
    cleaned, kinds = redact_fields(incident)
    located: list[SecretFinding] = []
    for path, kind in kinds:
        value_node: yaml.Node | None = node
        for part in path:
            value_node = child(value_node, part)
        located.extend(SecretFinding(source.name, line, incident.id,
                                     _field_label(incident, path), kind)
                       for line in _secret_lines(source, value_node, kind))
    found.extend(sorted(located, key=lambda finding: finding.line))
    return cleaned


def _field_label(incident: Incident, path: FieldPath) -> str:
    """A field as the file's reader names it: ``symptoms``, ``tags``, ``A1 explanation``."""
    if path[0] == "actions":
        return f"{incident.actions[int(path[1])].id} {path[2]}"
    return str(path[0])


def _secret_lines(source: _Source, node: yaml.Node | None, kind: str) -> list[int]:
    """The file lines (1-based) of the field's value that hold a secret of ``kind``: each
    source line of the value is redacted on its own; if the secret only shows once lines
    are joined (a folded value), the line where the value starts."""
    if node is None:
        return []
    first, last = node.start_mark.line, node.end_mark.line
    if node.end_mark.column == 0 and last > first:
        last -= 1
    lines = source.lines()[first:last + 1]
    hits = [first + n + 1 for n, text in enumerate(lines) if kind in redact(text).found]
    return hits or [first + 1]




def _incident_label(node: yaml.Node, index: int) -> str:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "id" and isinstance(value, yaml.ScalarNode) and value.value:
                return str(value.value)
    return f"incident #{index + 1}"






def _problem_from_error(name: str, node: yaml.Node, label: str, error: Any) -> Problem:
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    target: yaml.Node | None = node
    deepest: yaml.Node = node
    for part in loc:
        target = child(target, part)
        if target is None:
            break
        deepest = target
    line = deepest.start_mark.line + 1
    field_name = f"{label} {field_path(loc)}".strip()
    message = describe_error(error)
    return Problem(name, line, field_name, message)


def _duplicate_action_ids(name: str, node: yaml.Node, label: str) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    actions_node = child(node, "actions")
    if not isinstance(actions_node, yaml.SequenceNode):
        return problems
    for index, action_node in enumerate(actions_node.value):
        id_node = child(action_node, "id")
        if not isinstance(id_node, yaml.ScalarNode) or not id_node.value:
            continue
        if id_node.value in seen:
            problems.append(Problem(name, id_node.start_mark.line + 1,
                                    f"{label} actions[{index}].id",
                                    f"duplicate action id {id_node.value!r} in this incident"))
        seen.add(id_node.value)
    return problems
