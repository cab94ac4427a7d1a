"""python manage.py bench <target> --participants N [--json]: run an app's benchmark.

Each target is a module `<app>.bench` with `run(*, participants, json, **its_options) -> dict`
and, optionally, `add_arguments(parser)` for options of its own. The result is printed as one JSON
object (--json) or as `key: value` lines; progress goes to stderr.
"""

from __future__ import annotations

import importlib
import json

from django.core.management.base import BaseCommand, CommandError

TARGETS = {
    "crediting": "operations.bench.crediting",
    "payments": "operations.bench.payments",
    "reports": "operations.bench.reports",
    "conversion": "operations.bench.conversion",
    "statements": "operations.bench.statements",
    "pages": "operations.bench.pages",
}


def _load(module_name: str):
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


class Command(BaseCommand):
    help = "Benchmark a batch job on N synthetic participants in a scratch database: " + ", ".join(TARGETS)

    def add_arguments(self, parser):
        self._own_options: dict[str, list[str]] = {}
        targets = parser.add_subparsers(dest="target", required=True, metavar="target")
        for target, module_name in TARGETS.items():
            module = _load(module_name)
            if module is None:
                continue
            sub = targets.add_parser(
                target, help=(module.__doc__ or "").strip().splitlines()[0] if module.__doc__ else ""
            )
            sub.add_argument(
                "--participants", type=int, required=True, help="how many synthetic participants"
            )
            sub.add_argument("--json", action="store_true", help="print one JSON object")
            before = {a.dest for a in sub._actions}
            if hasattr(module, "add_arguments"):
                module.add_arguments(sub)
            self._own_options[target] = [a.dest for a in sub._actions if a.dest not in before]

    def handle(self, *args, **opts):
        target = opts["target"]
        module = _load(TARGETS[target])
        if module is None:
            raise CommandError(f"{TARGETS[target]} is not there")
        if opts["participants"] < 1:
            raise CommandError("--participants must be at least 1")
        extra = {dest: opts[dest] for dest in self._own_options.get(target, []) if dest in opts}
        result = module.run(participants=opts["participants"], json=opts["json"], **extra)
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key}: {value}")
