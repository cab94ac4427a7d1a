"""`manage.py bench conversion --participants N [--json]`: convert a clean package of N participants.

The package has the shape of the sample (tests/conversion/sample, a copy of ../shared/conversion/sample):
its 25 participants are repeated under new employee numbers until there are N (rounded up to a
multiple of 25), with every per-participant file and the control totals scaled to match. Timed: the
whole `convert` (every check, then the apply in one transaction) into a scratch database. Generating
the package is not timed.
"""

from __future__ import annotations

import csv
import math
import resource
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.test.utils import override_settings
from django.utils import timezone

from conversion.services import conversion_run
from operations.simulation.sandbox import scratch_database

SAMPLE = Path(settings.BASE_DIR) / "tests" / "conversion" / "sample" / "package"
SHARED = ("package.csv", "plans.csv", "funds.csv", "fund_prices.csv", "control.csv")


def add_arguments(parser) -> None:
    pass


def build_package(*, participants: int, folder: Path) -> int:
    """Write the scaled package into `folder`; returns the number of participants written."""
    copies = max(1, math.ceil(participants / 25))
    for path in sorted(SAMPLE.glob("*.csv")):
        if path.name in SHARED:
            continue
        with (
            path.open(newline="", encoding="utf-8") as src,
            (folder / path.name).open("w", newline="", encoding="utf-8") as dst,
        ):
            rows = list(csv.reader(src))
            writer = csv.writer(dst, lineterminator="\n")
            writer.writerow(rows[0])
            emp = rows[0].index("employee_number")
            for i in range(copies):
                for row in rows[1:]:
                    row = list(row)
                    row[emp] = f"C{i:05d}{row[emp]}"
                    writer.writerow(row)
    for name in SHARED:
        if name == "control.csv":
            continue
        (folder / name).write_bytes((SAMPLE / name).read_bytes())
    with (
        (SAMPLE / "control.csv").open(newline="", encoding="utf-8") as src,
        (folder / "control.csv").open("w", newline="", encoding="utf-8") as dst,
    ):
        rows = list(csv.reader(src))
        writer = csv.writer(dst, lineterminator="\n")
        writer.writerow(rows[0])
        for row in rows[1:]:
            if row[0] not in SHARED:
                total = Decimal(row[-1]) * copies
                row[-1] = f"{total:f}"
            writer.writerow(row)
    return copies * 25


def run(*, participants: int, json: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-conversion-") as tmp, scratch_database() as name:
        folder = Path(tmp)
        written = build_package(participants=participants, folder=folder)
        if not json:
            sys.stderr.write(f"scratch database {name}: package of {written} participants in {folder}\n")
        started = time.perf_counter()
        # As production runs it: with DEBUG on, Django keeps the text of every statement it sends (each bulk
        # insert's parameters formatted into it), a cost the conversion does not have in production.
        with override_settings(DEBUG=False):
            outcome = conversion_run(
                folder=folder, dry_run=False, actor="conversion bench", now=timezone.now()
            )
        seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = outcome.result
    return {
        "participants": result.participants,
        "positions": result.positions,
        "seconds": round(seconds, 1),
        "peak_memory_mb": round(peak_kb / 1024, 1),
        "status": outcome.status,
        "exceptions": len(result.findings),
    }
