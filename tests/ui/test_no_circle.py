"""No import circle among the console's UI modules: the App owns its screens and state, and
screens reach the App only by posting messages (console/ui/messages.py).

Every import counts — at the top, inside a function, or under ``if TYPE_CHECKING:`` — since
a circle that only type checking sees is still two modules that know each other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

UI = Path(__file__).resolve().parents[2] / "console" / "ui"


def module_name(path: Path) -> str:
    parts = path.relative_to(UI.parents[1]).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, package: str) -> Iterator[str]:
    """Every module name ``source`` (a module of ``package``) imports, anywhere in it."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: `from . import x` in package p is p.x
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield module
            for alias in node.names:  # `from console.ui.screens import main` imports a module
                yield f"{module}.{alias.name}"


def ui_graph() -> dict[str, set[str]]:
    """console.ui module → the console.ui modules it imports."""
    paths = {module_name(p): p for p in sorted(UI.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = imported(path.read_text(encoding="utf-8"), package)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def find_cycle(graph: Mapping[str, set[str]]) -> list[str] | None:
    """One import circle in ``graph`` (its modules, the first repeated at the end), or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return [*path[path.index(target):], target]
            if target not in done:
                found = visit(target)
                if found is not None:
                    return found
        path.pop()
        on_path.discard(node)
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done:
            found = visit(start)
            if found is not None:
                return found
    return None


def test_the_cycle_finder_finds_a_circle_and_passes_a_tree() -> None:
    circle = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(circle) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"a"}}) == ["a", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_type_checking_function_and_relative_imports() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from console.ui.app import TriageApp\n"
              "def f():\n    from console.ui.screens import main\n"
              "from ..state import ConsoleState\n")
    found = set(imported(source, "console.ui.screens"))
    assert {"console.ui.app", "console.ui.screens.main", "console.ui.state"} <= found


def test_the_ui_graph_is_the_real_one() -> None:
    graph = ui_graph()
    assert "console.ui.screens.main" in graph["console.ui.app"]
    assert "console.ui.messages" in graph["console.ui.screens.main"]


def test_no_import_circle_among_the_ui_modules() -> None:
    assert find_cycle(ui_graph()) is None


def test_screens_and_the_verification_do_not_import_the_app() -> None:
    graph = ui_graph()
    for name, targets in graph.items():
        if name.startswith(("console.ui.screens.", "console.ui.widgets.")):
            assert "console.ui.app" not in targets, name
    assert "console.ui.screens.main" not in graph["console.ui.verification"]
