"""Dependency direction ui → engine → store: checked on the source and on a real import."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

NON_UI_PACKAGES = [REPO_ROOT / "store", REPO_ROOT / "console" / "engine"]
UI_PACKAGE = REPO_ROOT / "console" / "ui"
ALLOWED_UI_IMPORTERS = {REPO_ROOT / "console" / "__main__.py"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, source: str | None = None) -> Iterator[tuple[int, str]]:
    """Every module ``path`` imports (absolute names; relative imports resolved)."""
    text = path.read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(text, filename=str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            yield node.lineno, module
            for alias in node.names:  # `from console import ui` imports console.ui
                yield node.lineno, f"{module}.{alias.name}"
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name)
              and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                  "import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def python_files(*roots: Path) -> list[Path]:
    return sorted(p for root in roots for p in root.rglob("*.py") if ".venv" not in p.parts)


def test_the_packages_exist() -> None:
    for package in NON_UI_PACKAGES:
        assert python_files(package), f"no python files under {package}"


@pytest.mark.parametrize("path", python_files(*NON_UI_PACKAGES),
                         ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_store_and_engine_never_import_textual(path: Path) -> None:
    offending = [(line, name) for line, name in imported_modules(path)
                 if name == "textual" or name.startswith("textual.")
                 or name == "console.ui" or name.startswith("console.ui.")]
    assert not offending, f"{path.relative_to(REPO_ROOT)} imports {offending}"


@pytest.mark.parametrize("path", python_files(REPO_ROOT / "store", REPO_ROOT / "console",
                                              REPO_ROOT / "bench"),
                         ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_only_main_imports_the_ui(path: Path) -> None:
    if path in ALLOWED_UI_IMPORTERS or path.is_relative_to(UI_PACKAGE):
        return
    offending = [(line, name) for line, name in imported_modules(path)
                 if name == "console.ui" or name.startswith("console.ui.")]
    assert not offending, f"{path.relative_to(REPO_ROOT)} imports the UI: {offending}"


def test_the_import_walker_sees_what_it_should() -> None:
    """The checks above can fail: the walker finds every spelling of an import of textual/ui."""
    probe = REPO_ROOT / "console" / "engine" / "probe.py"
    source = ("import textual.app\nfrom textual import work\nfrom ..ui import app\n"
              "from console import ui\nimportlib.import_module('textual')\n")
    found = {name for _, name in imported_modules(probe, source)}
    assert {"textual.app", "textual", "console.ui", "console.ui.app"} <= found


def test_importing_the_engine_and_commands_loads_no_textual() -> None:
    modules = ["store.loader", "store.index", "store.recall", "store.redact", "store.embedder",
               "console.engine.engine", "console.engine.briefing.deterministic", "console.cli",
               *(f"console.cli.{m}" for m in ("add", "brief", "check", "doctor", "errors",
                                             "index", "progress", "replay")),
               "console.__main__"]
    code = ("import importlib, json, sys\n"
            f"for name in {modules!r}:\n"
            "    importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules\n"
            "      if m == 'textual' or m.startswith('textual.') or m.startswith('console.ui'))))\n")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []


# Inside the engine, packages stand on floors: a package imports only those below it.
# briefing (the alert, the memory's verdict) < model (the model's part) and render <
# verification < pipeline (the route of one alert) < practice (replays, eval, game day) <
# engine.py (the front door the CLI and the console use). listen (the webhook receiver) reads
# alerts as briefing does, and nothing above it.
ENGINE = REPO_ROOT / "console" / "engine"
ENGINE_FLOORS = {"briefing": 0, "model": 1, "render": 1, "listen": 1, "verification": 2,
                 "pipeline": 3, "practice": 4, "config": 0, "progress": 0, "engine": 5}


def engine_package(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["console", "engine"] or len(parts) < 3:
        return None
    return parts[2]


def upward_imports(path: Path, source: str | None = None) -> list[tuple[int, str]]:
    own = engine_package(module_name(path))
    assert own in ENGINE_FLOORS, f"{path.relative_to(REPO_ROOT)}: a package with no floor"
    return [(line, name) for line, name in imported_modules(path, source)
            if (other := engine_package(name)) in ENGINE_FLOORS and other != own
            and ENGINE_FLOORS[other] >= ENGINE_FLOORS[own]]


ENGINE_MODULES = [p for p in python_files(ENGINE) if p != ENGINE / "__init__.py"]


@pytest.mark.parametrize("path", ENGINE_MODULES, ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_engine_packages_import_only_the_floors_below(path: Path) -> None:
    upward = upward_imports(path)
    assert not upward, f"{path.relative_to(REPO_ROOT)} imports upward or sideways: {upward}"


def test_the_floor_check_can_fail() -> None:
    """A briefing module importing the model, or the model importing practice, is caught;
    the model importing the briefing is not."""
    assert upward_imports(ENGINE / "briefing" / "probe.py", "from console.engine.model import x\n")
    assert upward_imports(ENGINE / "model" / "probe.py",
                          "from console.engine.practice.replay import run_replays\n")
    assert not upward_imports(ENGINE / "model" / "probe.py",
                              "from console.engine.briefing.models import Briefing\n")
