"""Services and selectors take keyword arguments only (DEVELOPERS.md; STYLE.md practice 1).

`claim_deny(claim=..., reasons=..., provisions=..., now=..., actor=...)` says at the call what each value is, and
a parameter can be added or reordered without a caller silently passing a date where an amount was meant.
mypy (`make lint`) checks that they are fully typed; this checks the shape of their signatures.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _service_modules():
    """Every app's services and selectors (an app is a top-level package with an apps.py)."""
    for app in sorted(p.parent for p in ROOT.glob("*/apps.py")):
        patterns = (
            "services.py",
            "services/*.py",
            "*/services.py",
            "selectors.py",
            "*/selectors.py",
            "validators.py",
        )
        for pattern in patterns:
            for path in sorted(app.glob(pattern)):
                yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


def _public_functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not node.name.startswith("_"):
            yield node


def test_there_are_services_to_check():
    names = [f.name for _, tree in _service_modules() for f in _public_functions(tree)]
    assert "claim_deny" in names and "credit_due_dates" in names


def test_every_public_service_and_selector_takes_keyword_arguments_only():
    positional = [
        f"{rel}:{f.lineno} {f.name}({', '.join(a.arg for a in f.args.posonlyargs + f.args.args)}, ...)"
        for rel, tree in _service_modules()
        for f in _public_functions(tree)
        if f.args.posonlyargs or f.args.args or f.args.vararg
    ]
    assert positional == [], (
        "put `*` first in these signatures and name the arguments at every call:\n" + "\n".join(positional)
    )


def test_a_positional_parameter_would_be_found():
    tree = ast.parse("def payment_release(payment, *, now):\n    pass\n\ndef _helper(x):\n    pass\n")
    found = [f.name for f in _public_functions(tree) if f.args.args]
    assert found == ["payment_release"]
