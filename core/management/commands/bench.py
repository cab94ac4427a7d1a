"""python manage.py bench APP [--participants N] [--json]: runs APP.bench.run(**options) and prints its figures.

Each app keeps its benchmark next to the statements it measures (<app>/bench.py): `run(*, participants,
json, ...) -> dict` and optionally `add_arguments(parser)` for its own options.
"""
from __future__ import annotations

import importlib
import json
import sys

from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Run an app's benchmark (APP/bench.py) in a scratch database and report seconds and peak memory."

    def add_arguments(self, parser):
        parser.add_argument("app")
        parser.add_argument("--participants", type=int, default=100000)
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def run_from_argv(self, argv):
        # An app may add its own options: load its module before parsing.
        if len(argv) > 2 and not argv[2].startswith("-"):
            self._module = self._load(argv[2])
        super().run_from_argv(argv)

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        module = getattr(self, "_module", None)
        if module is not None and hasattr(module, "add_arguments"):
            module.add_arguments(parser)
        return parser

    @staticmethod
    def _load(app: str):
        try:
            return importlib.import_module(f"{app}.bench")
        except ModuleNotFoundError as exc:
            raise CommandError(f"{app} has no benchmark ({app}/bench.py)") from exc

    def handle(self, *args, **opts):
        module = getattr(self, "_module", None) or self._load(opts["app"])
        known = {k: v for k, v in opts.items() if k not in {"app", "verbosity", "settings", "pythonpath", "traceback",
                                                             "no_color", "force_color", "skip_checks"}}
        result = module.run(**known)
        if opts["json"]:
            self.stdout.write(json.dumps(result, default=str))
        else:
            for key, value in result.items():
                self.stdout.write(f"{key:>20}: {value}")
        sys.stdout.flush()
