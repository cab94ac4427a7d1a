"""python manage.py parallel_run FILE [--tolerance 0.01] [--json]: the prior recordkeeper's daily valuation
against this system's Valuation Date results (docs/parallel-run.md).

Exit status: 0 when nothing differs, 1 when differences are listed (the comparison is kept either way),
2 when the file is refused (every bad row named; nothing compared, nothing stored).
"""

from __future__ import annotations

import json
import sys
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from books.models import ParallelRunDifference
from books.services.parallel import ParallelFileError, parallel_run_compare, valuation_file_read


class Command(BaseCommand):
    help = "Compare a prior recordkeeper's daily valuation file with this system's Valuation Date results."

    def add_arguments(self, parser):
        parser.add_argument(
            "file", help="CSV file: valuation_date,employee_number,plan,account,fund,units,value"
        )
        parser.add_argument(
            "--tolerance", help="largest value difference accepted (default: the Committee's)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        parser.add_argument("--actor", default="parallel_run command")

    def handle(self, *args, **opts):
        path = Path(opts["file"])
        if not path.is_file():
            raise CommandError(f"{path} is not a file")
        tolerance = None
        if opts["tolerance"] is not None:
            try:
                tolerance = Decimal(opts["tolerance"])
            except InvalidOperation:
                raise CommandError(f"--tolerance {opts['tolerance']!r} is not an amount")
        try:
            with path.open("rb") as stream:
                valuation = valuation_file_read(stream=stream, name=path.name)
        except ParallelFileError as exc:
            if opts["json"]:
                self.stdout.write(
                    json.dumps({"status": "refused", "errors": exc.errors, "bad_rows": exc.total})
                )
            else:
                self.stderr.write(exc.message)
                for error in exc.errors:
                    self.stderr.write(f"  {error}")
            sys.exit(2)
        run = parallel_run_compare(
            valuation=valuation, actor=opts["actor"], at=timezone.now(), tolerance=tolerance
        )
        days = list(run.days.order_by("valuation_date"))
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "status": "differences" if run.differences else "agrees",
                        "run": run.pk,
                        "sha256": run.sha256,
                        "tolerance": str(run.tolerance),
                        "differences": run.differences,
                        "days": [
                            {
                                "valuation_date": d.valuation_date.isoformat(),
                                "credited_here": d.credited_here,
                                "prior_positions": d.prior_positions,
                                "our_positions": d.our_positions,
                                "prior_value": str(d.prior_value),
                                "our_value": str(d.our_value),
                                "differences": d.differences,
                            }
                            for d in days
                        ],
                    }
                )
            )
        else:
            self.stdout.write(
                f"parallel run {run.pk}: {valuation.rows} rows of {run.first_date} to {run.last_date}, "
                f"tolerance {run.tolerance}"
            )
            for d in days:
                if not d.credited_here:
                    self.stdout.write(
                        f"{d.valuation_date}: not credited on this system yet, nothing compared"
                    )
                    continue
                self.stdout.write(
                    f"{d.valuation_date}: prior {d.prior_value:,.2f} ({d.prior_positions} positions), "
                    f"here {d.our_value:,.2f} ({d.our_positions}), {d.differences} difference(s)"
                )
            for diff in run.difference_rows.order_by("valuation_date", "employee_number")[:200]:
                self.stdout.write(
                    f"DIFFERS {diff.valuation_date} {diff.employee_number} {diff.plan_code} {diff.account} "
                    f"{diff.fund_code}: {ParallelRunDifference.Kind(diff.kind).label}; prior units "
                    f"{diff.prior_units} value {diff.prior_value}, here units {diff.our_units} value {diff.our_value}"
                )
        if run.differences:
            sys.exit(1)
