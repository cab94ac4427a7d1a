"""Running an import: validate the whole file, then apply all of it or nothing.

1. The same file (by SHA-256) already applied for the same kind: a `duplicate` batch, nothing applied.
2. Every row is checked with a handful of queries for the whole file (the importer's `check`).
   Any problem refuses the file: a `refused` batch lists every bad row by line number.
3. Otherwise the importer's `apply` writes it (bulk inserts; services where a business action has
   side effects) inside a savepoint. A problem only the write can find still refuses the whole file:
   the savepoint is rolled back and the batch records every such row.
Imports run one at a time (a transaction-level advisory lock on PostgreSQL).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import io
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from core.audit import actor_label, audit_record
from core.csv_export import CsvDictWriter
from core.imports.csvfile import Problems, Row, read_rows
from core.models import ImportBatch

# ImportBatch kind -> the importer that reads it. Each app keeps its own rules in its own module.
IMPORTERS: dict[str, str] = {
    ImportBatch.Kind.PARTICIPANTS: "participants.imports.ParticipantsImport",
    ImportBatch.Kind.KEY_EMPLOYEES: "participants.imports.KeyEmployeesImport",
    ImportBatch.Kind.PRICES: "plans.imports.PricesImport",
    ImportBatch.Kind.PAYROLL: "books.imports.PayrollImport",
    ImportBatch.Kind.PENSION_FIGURES: "pensions.imports.PensionFiguresImport",
}

_LOCK_ID = int.from_bytes(hashlib.sha256(b"nqdc:imports").digest()[:8], "big", signed=True)


@dataclass
class Applied:
    applied: int
    skipped: int


class Importer:
    """One kind of file. Subclasses name their columns and implement `check` and `apply`."""

    kind: str = ""
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    help: str = ""
    # Example lines for the downloadable sample file (issue 11): column -> value; absent columns are empty.
    sample: tuple[dict[str, str], ...] = ()

    def sample_lines(self) -> tuple[dict[str, str], ...]:
        """The example lines as the sample file shows them (an importer fills in the catalog's codes here)."""
        return self.sample

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> Any:
        """Validate every row; return what `apply` needs (nothing is written here)."""
        raise NotImplementedError

    def apply(
        self, prepared: Any, *, batch: ImportBatch, actor, now: dt.datetime, problems: Problems
    ) -> Applied:
        raise NotImplementedError


def sample_csv(importer: Importer) -> str:
    """The sample file of an importer: a header of every column it reads, then its example lines."""
    out = io.StringIO()
    columns = [*importer.required, *importer.optional]
    writer = CsvDictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for line in importer.sample_lines():
        writer.writerow({column: line.get(column, "") for column in columns})
    return out.getvalue()


def importer_for(kind: str) -> Importer:
    try:
        dotted = IMPORTERS[kind]
    except KeyError:
        raise ValueError(f"there is no import of kind {kind!r}")
    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)()


def _lock() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_ID])


def _refuse(batch: ImportBatch, problems: Problems, rows_total: int) -> ImportBatch:
    batch.status = ImportBatch.Status.REFUSED
    batch.rows_total, batch.rows_applied, batch.rows_skipped = rows_total, 0, 0
    batch.errors = [p.as_json() for p in problems.sorted()]
    if problems.not_kept:
        more = (
            f"... and {problems.not_kept} more problems not listed: correct these and upload the file again."
        )
        batch.errors.append({"line": 0, "column": "", "reason": more, "message": more})
    batch.save()
    return batch


def _size(n: int) -> str:
    return f"{n / 1048576:.1f} MB" if n >= 1048576 else f"{n:,} bytes"


def _over_limits(content: bytes) -> str:
    """Why the file is refused before it is read (IMPORT_MAX_BYTES, IMPORT_MAX_ROWS), or ""."""
    if len(content) > settings.IMPORT_MAX_BYTES:
        return (
            f"The file is larger than {_size(settings.IMPORT_MAX_BYTES)}, the limit. "
            f"Split it into smaller files; nothing was applied."
        )
    lines = content.count(b"\n") + (0 if content.endswith(b"\n") else 1)
    if lines - 1 > settings.IMPORT_MAX_ROWS:
        return (
            f"The file has {lines - 1:,} rows: the limit is {settings.IMPORT_MAX_ROWS:,}. "
            f"Split it into smaller files; nothing was applied."
        )
    return ""


def import_file(*, kind: str, file_name: str, content: bytes, actor, now: dt.datetime) -> ImportBatch:
    """Import one uploaded file of `kind`; the batch says whether it was applied, refused or a duplicate."""
    importer = importer_for(kind)
    sha = hashlib.sha256(content).hexdigest()
    label = actor_label(actor)
    with transaction.atomic():
        _lock()
        batch = ImportBatch(
            kind=kind, file_name=file_name[:300], sha256=sha, uploaded_by=label, uploaded_at=now
        )
        earlier = ImportBatch.objects.filter(kind=kind, sha256=sha, status=ImportBatch.Status.APPLIED).first()
        if earlier is not None:
            batch.status = ImportBatch.Status.DUPLICATE
            batch.rows_total = batch.rows_skipped = earlier.rows_total
            batch.errors = [
                {
                    "line": 0,
                    "column": "",
                    "reason": "",
                    "message": f"This file was already applied on {earlier.uploaded_at:%Y-%m-%d %H:%M} UTC "
                    f"(import #{earlier.pk}); nothing was applied again.",
                }
            ]
            batch.save()
            return batch
        problems = Problems(keep=settings.IMPORT_MAX_ERRORS_STORED)
        too_big = _over_limits(content)
        if too_big:
            # Refused before parsing: a huge file must not cost a parse, nor store an error per row.
            problems.add(0, too_big)
            _refuse(batch, problems, 0)
            audit_record(
                action="import.refused",
                actor=actor,
                at=now,
                obj=batch,
                data={"kind": kind, "file": file_name, "errors": 1, "bytes": len(content)},
            )
            return batch
        rows = read_rows(content, required=importer.required, optional=importer.optional, problems=problems)
        rows_total = len(rows or [])
        prepared = importer.check(rows, problems, now=now) if rows is not None else None
        if rows is not None and not rows and not problems:
            problems.add(2, "the file has a header but no rows")
        if problems:
            _refuse(batch, problems, rows_total)
            audit_record(
                action="import.refused",
                actor=actor,
                at=now,
                obj=batch,
                data={"kind": kind, "file": file_name, "errors": len(problems)},
            )
            return batch
        batch.status = ImportBatch.Status.APPLIED
        batch.rows_total = rows_total
        batch.save()
        savepoint = transaction.savepoint()
        try:
            result = importer.apply(prepared, batch=batch, actor=actor, now=now, problems=problems)
        except DatabaseError as exc:
            transaction.savepoint_rollback(savepoint)
            problems.add(0, f"The database refused the file, so nothing was applied: {exc}")
            result = None
        if problems or result is None:  # None: the database refused it, and problems say so
            if result is not None:
                transaction.savepoint_rollback(savepoint)
            _refuse(batch, problems, rows_total)
            audit_record(
                action="import.refused",
                actor=actor,
                at=now,
                obj=batch,
                data={"kind": kind, "file": file_name, "errors": len(problems)},
            )
            return batch
        transaction.savepoint_commit(savepoint)
        batch.rows_applied, batch.rows_skipped = result.applied, result.skipped
        batch.save(update_fields=["rows_applied", "rows_skipped"])
        audit_record(
            action="import.applied",
            actor=actor,
            at=now,
            obj=batch,
            data={"kind": kind, "file": file_name, "applied": result.applied, "skipped": result.skipped},
        )
        return batch


def batch_messages(batch: ImportBatch) -> list[str]:
    """The plain-English lines a person reads about a batch (every refused row, with its line number)."""
    return [e.get("message") or e.get("reason", "") for e in batch.errors]
