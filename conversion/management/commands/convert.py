"""python manage.py convert PACKAGE_DIR [--dry-run] [--json] (../shared/conversion/FORMAT.md section 5)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from conversion.services import conversion_run


class Command(BaseCommand):
    help = "Check a conversion package and, without --dry-run, apply it in one transaction (FORMAT.md)."

    def add_arguments(self, parser):
        parser.add_argument("package_dir")
        parser.add_argument("--dry-run", action="store_true", help="check everything, change nothing")
        parser.add_argument("--json", action="store_true", help="print the result object only")

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        original_error = parser.error

        def error(message):  # wrong options: exit status 2, a message on standard error (FORMAT.md 5)
            sys.stderr.write(f"convert: {message}\n")
            sys.exit(2)

        parser.error = error
        del original_error
        return parser

    def handle(self, *args, **opts):
        folder = Path(opts["package_dir"])
        if not folder.is_dir():
            sys.stderr.write(f"convert: {folder} is not a readable folder\n")
            sys.exit(2)
        try:
            next(folder.iterdir(), None)
        except OSError as exc:
            sys.stderr.write(f"convert: {folder} is not a readable folder ({exc})\n")
            sys.exit(2)
        outcome = conversion_run(
            folder=folder, dry_run=opts["dry_run"], actor="conversion", now=timezone.now()
        )
        result = outcome.as_dict()
        if opts["json"]:
            self.stdout.write(json.dumps(result, indent=2))
        else:
            self._human(result)
        if result["exceptions"]:
            sys.exit(1)

    def _human(self, result: dict) -> None:
        write = self.stdout.write
        write(f"status: {result['status']}")
        write(f"participants: {result['participants']}")
        write(f"positions: {result['positions']}")
        control = result["control"]
        write(
            "control totals: "
            + ("all match" if control["matched"] else f"{len(control['differences'])} differ")
        )
        for d in control["differences"]:
            group = " ".join(
                x for x in (d["plan"], d["account"], d["fund"], d["plan_year"], d["source"]) if x
            )
            write(
                f"  {d['file']} {d['measure']} {group or '(all)'}: control {d['control'] or '-'}, package {d['package']}"
            )
        for e in result["exceptions"]:
            write(f"{e['file']}:{e['line']} {e['code']} {e['message']}")


_ = CommandError
