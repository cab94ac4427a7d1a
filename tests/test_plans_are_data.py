"""Plans are data (DEVELOPERS.md): no application code compares against a plan's code or name.

A second sponsor's plan must be a new catalog entry, never new code, so the rule-bearing modules may not
mention the codes of the shipped plans in a comparison or a lookup. The demo loader, the benchmarks and
migrations build data for those plans and are the only places allowed to name them.
"""

from __future__ import annotations

import re
from pathlib import Path

from plans.services import catalog_codes

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    "core",
    "plans",
    "participants",
    "books",
    "elections",
    "pensions",
    "claims",
    "payments",
    "operations",
    "config",
)
ALLOWED = {
    "operations/management/commands/load_demo.py",
    "operations/bench/crediting.py",
    "operations/bench/payments.py",
    "operations/management/commands/bench_imports.py",
}
PLAN_CODES = catalog_codes()  # every plan of the shipped catalog, a new one included
# A quoted plan code: "EDCP", 'rrp' ... (in a comparison, a dict key, a filter or a default).
QUOTED_CODE = re.compile(r"""["']({})["']""".format("|".join(map(re.escape, PLAN_CODES))), re.IGNORECASE)


def _sources():
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel or rel in ALLOWED:
                continue
            yield rel, path.read_text(encoding="utf-8")


def test_no_application_code_names_a_plan():
    found = [
        f"{rel}:{n}: {line.strip()}"
        for rel, text in _sources()
        for n, line in enumerate(text.splitlines(), 1)
        if QUOTED_CODE.search(line)
    ]
    assert found == [], "plan codes named in application code:\n" + "\n".join(found)


def test_the_check_sees_a_branch_on_a_plan_name():
    assert {"EDCP", "RRP", "BRP"} <= set(PLAN_CODES)
    assert QUOTED_CODE.search('if plan.code == "EDCP":')
    assert QUOTED_CODE.search("filter(plan__code='rrp')")
    assert not QUOTED_CODE.search("plan.code == version.plan.code")
