"""The house has one direction (README, "Layout"): `lint-imports` (make lint) keeps the layers; this test keeps
the rule that an import inside a function is the exception and says why, on its line or just above it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (
    "core",
    "plans",
    "participants",
    "elections",
    "books",
    "pensions",
    "claims",
    "payments",
    "operations",
    "config",
)


def _imports_inside_functions(tree: ast.AST):
    def visit(node: ast.AST, inside: bool):
        for child in ast.iter_child_nodes(node):
            if inside and isinstance(child, ast.Import | ast.ImportFrom):
                yield child
            yield from visit(child, inside or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    yield from visit(tree, False)


def _says_why(lines: list[str], node: ast.stmt) -> bool:
    """A comment on the import's lines, or on the line above the block of imports it belongs to."""
    if any("#" in line for line in lines[node.lineno - 1 : node.end_lineno]):
        return True
    above = node.lineno - 2
    while above >= 0 and lines[above].strip().startswith(("import ", "from ")):
        above -= 1
    return above >= 0 and lines[above].strip().startswith("#")


def test_an_import_inside_a_function_says_why():
    bare = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel:
                continue
            text = path.read_text(encoding="utf-8")
            lines = text.splitlines()
            for node in _imports_inside_functions(ast.parse(text)):
                if not _says_why(lines, node):
                    bare.append(f"{rel}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert not bare, "imports inside functions without a reason (hoist them or say why):\n" + "\n".join(bare)


def test_the_check_sees_a_bare_import_inside_a_function():
    source = "def f():\n    from core import money\n\n\ndef g():\n    # on use: a reason\n    import json\n"
    tree = ast.parse(source)
    found = [_says_why(source.splitlines(), node) for node in _imports_inside_functions(tree)]
    assert found == [False, True]
