"""The conversion of a package (FORMAT.md section 5): check, then apply everything or nothing."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import transaction

from conversion.apply import ApplyFailure, apply_package, conflicts
from conversion.models import ConversionException, ConversionRun
from conversion.validate import Finding, Result, check_package, collector_paused

EXCEPTION_BATCH = 5000


@dataclass
class Outcome:
    result: Result
    status: str
    run: ConversionRun

    def as_dict(self) -> dict[str, Any]:
        return self.result.as_dict(status=self.status)


def conversion_run(*, folder: Path, dry_run: bool, actor: str, now: dt.datetime) -> Outcome:
    """Check the package in `folder`; without `dry_run` and with no exception, apply it in one transaction."""
    result = check_package(folder=folder)
    status = ConversionRun.Status.REFUSED if result.findings else ConversionRun.Status.VALIDATED
    if not result.findings:
        previous = _applied(package_id=result.package_id)
        if previous is not None and previous.file_hashes == result.hashes:
            status = ConversionRun.Status.ALREADY_APPLIED
        elif previous is not None:
            result.findings.append(
                Finding(
                    "package.csv",
                    2,
                    "conflicts_with_records",
                    f"package {result.package_id} was already applied on {previous.finished_at:%Y-%m-%d} "
                    "with different files",
                )
            )
            status = ConversionRun.Status.REFUSED
    if status == ConversionRun.Status.VALIDATED:
        result.findings.extend(conflicts(result=result, folder=folder))
        result.findings.sort(key=lambda f: (f.file, f.line, f.code))
        if result.findings:
            status = ConversionRun.Status.REFUSED
    if status == ConversionRun.Status.VALIDATED and not dry_run:
        try:
            with collector_paused(collect_after=True), transaction.atomic():
                apply_package(result=result, folder=folder, actor=actor, now=now)
                status = ConversionRun.Status.APPLIED
                run = _record(
                    result=result, folder=folder, dry_run=dry_run, status=status, actor=actor, now=now
                )
            return Outcome(result=result, status=status, run=run)
        except ApplyFailure as failure:
            result.findings.append(
                Finding(failure.file, failure.line, "conflicts_with_records", failure.message)
            )
            status = ConversionRun.Status.REFUSED
    run = _record(result=result, folder=folder, dry_run=dry_run, status=status, actor=actor, now=now)
    return Outcome(result=result, status=status, run=run)


def _applied(*, package_id: str) -> ConversionRun | None:
    if not package_id:
        return None
    return (
        ConversionRun.objects.filter(package_id=package_id, status=ConversionRun.Status.APPLIED)
        .order_by("-finished_at")
        .first()
    )


def _record(
    *, result: Result, folder: Path, dry_run: bool, status: str, actor: str, now: dt.datetime
) -> ConversionRun:
    run = ConversionRun.objects.create(
        package_id=result.package_id[:200],
        folder=str(folder)[:500],
        dry_run=dry_run,
        status=status,
        conversion_date=result.conversion_date,
        participants=result.participants,
        positions=result.positions,
        control_matched=not result.differences,
        differences=result.differences,
        file_hashes=result.hashes,
        exception_count=len(result.findings),
        actor=actor,
        started_at=now,
        finished_at=now,
    )
    batch = []
    for f in result.findings:
        batch.append(ConversionException(run=run, file=f.file, line=f.line, code=f.code, message=f.message))
        if len(batch) >= EXCEPTION_BATCH:
            ConversionException.objects.bulk_create(batch)
            batch = []
    ConversionException.objects.bulk_create(batch)
    return run
