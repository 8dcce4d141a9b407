"""Imports go one way: a module imports only modules above it in the code map of the package docstring."""

from __future__ import annotations

import ast
from pathlib import Path

import datasette_okf

PACKAGE = Path(datasette_okf.__file__).parent


def layer_order() -> list[str]:
    """The modules in the order the package docstring's code map lists them."""
    order = []
    for line in datasette_okf.__doc__.split("Code map", 1)[1].splitlines()[2:]:
        order += line.split("  ")[1].split() if line.startswith("  ") else []
    return order


def module_level_imports(path: Path) -> list[tuple[str, int]]:
    """(package module, line) for every `from .x import ...` outside functions (lazy imports may go anywhere)."""
    found = []
    for node in ast.parse(path.read_text()).body:
        for statement in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(statement, ast.ImportFrom) and statement.level == 1 and statement.module:
                found.append((statement.module.split(".")[0], statement.lineno))
    return found


def test_the_code_map_lists_every_module_once():
    modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")
    assert sorted(layer_order()) == modules


def test_no_module_imports_one_below_it():
    order = layer_order()
    wrong = [f"{module}.py:{line} imports {imported}, which comes after it"
             for module in order for imported, line in module_level_imports(PACKAGE / f"{module}.py")
             if order.index(imported) >= order.index(module)]
    assert wrong == []


def test_the_check_catches_an_upward_import(tmp_path):
    """The test above can fail: an import of a later module is found."""
    sample = tmp_path / "schema.py"
    sample.write_text("from .retrieve import context_for\nif True:\n    from .store import build\n")
    assert module_level_imports(sample) == [("retrieve", 1), ("store", 3)]
