"""``services.yaml`` beside the incidents file: the team's other names for its services.

    payments-api: [payments, payments-service]
    ad: [adservice]

Optional: absent, there are no aliases and the memory (and its hash) is what it always was.
It is read with the memory (store/loader.py). A problem in it — not YAML, not a mapping of a
service to a list of names, a name claimed by two services (or naming another service of the
memory), a YAML alias ``*name`` — is reported by `triage check` with file:line (exit 2); a
briefing ignores the file with a notice, it never blocks one.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SERVICES_FILE = "services.yaml"
MAX_SERVICES_BYTES = 1_000_000  # a hand-written list of names: far below this
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def fold_name(name: str) -> str:
    """A service name as compared: any case; '-', '_', '.' and spaces alike."""
    return "-".join(w for w in re.split(r"[^a-z0-9]+", name.lower()) if w)


def services_path(incidents_path: Path) -> Path:
    """Where the aliases of the memory at ``incidents_path`` (a file or a directory) live."""
    return incidents_path.parent / SERVICES_FILE


@dataclass(frozen=True)
class ServiceAliases:
    """The aliases read (service → its other names) and what is wrong with the file:
    (line or None, message). Any problem and ``aliases`` is empty: the file is used whole
    or not at all."""

    path: Path | None = None
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    problems: list[tuple[int | None, str]] = field(default_factory=list)


def read_service_aliases(path: Path, services: Collection[str] = ()) -> ServiceAliases:
    """The aliases in ``path`` (none when it does not exist); ``services`` are the memory's,
    which no alias of another service may name."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return ServiceAliases()
    except OSError as exc:
        return ServiceAliases(path, problems=[(None, f"cannot read: {exc.strerror or exc}")])
    if len(data) > MAX_SERVICES_BYTES:
        return ServiceAliases(path, problems=[(None, f"larger than {MAX_SERVICES_BYTES:,} "
                                                     "bytes — it lists services and their "
                                                     "other names only")])
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        return ServiceAliases(path, problems=[(line, f"not UTF-8 text ({exc.reason}) — save "
                                                     "the file as UTF-8")])
    problems: list[tuple[int | None, str]] = []
    aliases = _parse(text, problems, services)
    if problems:
        return ServiceAliases(path, problems=sorted(problems, key=lambda p: p[0] or 0))
    return ServiceAliases(path, aliases)


def _parse(text: str, problems: list[tuple[int | None, str]],
           services: Collection[str]) -> dict[str, tuple[str, ...]]:
    try:
        alias = next((event for event in yaml.parse(text, Loader=_LOADER)
                      if isinstance(event, yaml.AliasEvent)), None)
        root = None if alias is not None else yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        problems.append((line, f"not valid YAML: {exc.problem or exc}"))
        return {}
    except yaml.YAMLError as exc:
        problems.append((None, f"not valid YAML: {exc}"))
        return {}
    if alias is not None:
        line = alias.start_mark.line + 1 if alias.start_mark else None
        problems.append((line, "YAML aliases (*name) are not accepted in a services file — "
                               "write the names out in full"))
        return {}
    if root is None:
        return {}  # only comments: no aliases yet
    if not isinstance(root, yaml.MappingNode):
        problems.append((root.start_mark.line + 1, "top level must be a mapping of each "
                                                   "service to a list of its other names "
                                                   "(payments-api: [payments, "
                                                   "payments-service])"))
        return {}
    memory = {fold_name(s): s for s in services}
    claimed: dict[str, tuple[str, int]] = {}
    aliases: dict[str, tuple[str, ...]] = {}
    for key, value in root.value:
        line = key.start_mark.line + 1
        service = _name(key)
        if service is None:
            problems.append((line, "a service must be a name (payments-api: [payments])"))
            continue
        if service in aliases:
            problems.append((line, f"service {service!r} is listed twice"))
            continue
        names = _names(value, service, problems)
        aliases[service] = tuple(name for name, _ in names)
        for name, at in [(service, line), *names]:
            folded = fold_name(name)
            owner = claimed.get(folded)
            if owner is not None and owner[0] != service:
                problems.append((at, f"{name!r} is claimed by two services: {owner[0]} (line "
                                     f"{owner[1]}) and {service} — give it to one"))
            elif folded in memory and fold_name(service) != folded:
                problems.append((at, f"{name!r}, an alias of {service}, is a service of the "
                                     "memory itself — remove it or merge the two services"))
            claimed.setdefault(folded, (service, at))
    return aliases


def _name(node: yaml.Node) -> str | None:
    if isinstance(node, yaml.ScalarNode) and fold_name(str(node.value)):
        return str(node.value).strip()
    return None


def _names(node: yaml.Node, service: str,
           problems: list[tuple[int | None, str]]) -> list[tuple[str, int]]:
    """The aliases listed for ``service``, each with its line (a bare null: none)."""
    line = node.start_mark.line + 1
    if isinstance(node, yaml.ScalarNode) and node.tag.endswith(":null"):
        return []
    if not isinstance(node, yaml.SequenceNode):
        problems.append((line, f"the other names of {service} must be a list "
                               f"({service}: [name, …])"))
        return []
    names = []
    for item in node.value:
        name = _name(item)
        if name is None:
            problems.append((item.start_mark.line + 1, f"an alias of {service} must be a name"))
        else:
            names.append((name, item.start_mark.line + 1))
    return names
