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
    """(line, "<label> <key>") of each key given twice in one mapping, anywhere in ``node``
    (in one iterative walk: a deep paste never raises RecursionError here)."""
    found: list[tuple[int, str]] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, yaml.MappingNode):
            seen: set[str] = set()
            for key, _ in current.value:
                if key.value in seen:
                    found.append((key.start_mark.line + 1, f"{label} {key.value}"))
                seen.add(key.value)
            stack.extend(value for _, value in reversed(current.value))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(reversed(current.value))
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


def aliased(node: yaml.Node, seen: set[int]) -> int | None:
    """The line of the first node of ``node`` that is in ``seen`` or reached twice (an alias,
    also one naming an anchor in an earlier entry: ``seen`` is shared across them), adding
    every node walked to ``seen``; else None. Linear: the walk stops at the first repeat."""
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            return int(current.start_mark.line) + 1
        seen.add(id(current))
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
    return None


def nesting_depth(node: yaml.Node, limit: int) -> tuple[int, int]:
    """How deeply ``node`` nests (a scalar is 1), counted up to ``limit + 1`` at most, and the
    line (1-based) of the node where that depth was reached."""
    deepest, line = 0, int(node.start_mark.line) + 1
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        if depth > deepest:
            deepest, line = depth, int(current.start_mark.line) + 1
        if deepest > limit:
            break
        if isinstance(current, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend(((key, depth + 1), (value, depth + 1)))
    return deepest, line


def scalars(node: yaml.Node) -> list[tuple[tuple[str | int, ...], yaml.ScalarNode]]:
    """Every value scalar under ``node`` with its path of keys and positions, in file order."""
    found: list[tuple[tuple[str | int, ...], yaml.ScalarNode]] = []
    stack: list[tuple[tuple[str | int, ...], yaml.Node]] = [((), node)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, yaml.ScalarNode):
            found.append((path, current))
        elif isinstance(current, yaml.SequenceNode):
            stack.extend(((*path, n), item) for n, item in reversed(list(enumerate(
                current.value))))
        elif isinstance(current, yaml.MappingNode):
            stack.extend(((*path, str(key.value)), value) for key, value in reversed(
                current.value))
    return found


def shift_marks(root: yaml.Node, lines: int) -> None:
    """Move every mark under ``root`` down by ``lines``: a piece of a file composed on its own
    then reports the file's own line numbers (file:line in every message)."""
    if not lines:
        return
    done: set[int] = set()
    stack = [root]
    while stack:
        current = stack.pop()
        if id(current) in done:
            continue
        done.add(id(current))
        for name in ("start_mark", "end_mark"):
            mark = getattr(current, name, None)
            if mark is not None:
                setattr(current, name, yaml.Mark(mark.name, mark.index, mark.line + lines,
                                                 mark.column, None, 0))
        if isinstance(current, yaml.SequenceNode):
            stack.extend(current.value)
        elif isinstance(current, yaml.MappingNode):
            for key, value in current.value:
                stack.extend((key, value))
