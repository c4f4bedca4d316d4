"""Reading YAML nodes for file:line messages: the loaders of the incidents file and of the
probes file both point at the line of a field, a duplicate key or an alias with these."""

from __future__ import annotations

from typing import Any

import yaml


def child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for key_node, value in node.value:
            if key_node.value == key:
                return value
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None


def duplicate_keys(node: yaml.Node, label: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            if key.value in seen:
                found.append((key.start_mark.line + 1, f"{label} {key.value}"))
            seen.add(key.value)
            found.extend(duplicate_keys(value, label))
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found.extend(duplicate_keys(item, label))
    return found


def field_path(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def first_alias(root: yaml.Node) -> int | None:
    """The line of the first node reached twice (an alias), in one linear walk; else None."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return node.start_mark.line + 1
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                stack.extend((key, value))
    return None


def key_line(node: yaml.Node | None, key: object) -> int:
    if isinstance(node, yaml.MappingNode):
        for key_node, _ in node.value:
            if key_node.value == key or key_node.value == str(key):
                return int(key_node.start_mark.line) + 1
    return int(node.start_mark.line) + 1 if node is not None else 0
