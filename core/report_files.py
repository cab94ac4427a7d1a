"""Staff reports as CSV: streamed to the browser, or prepared as a file by a job (issue 15).

One mechanism for every report. An app lists its reports in <app>/report_files.py:

    REPORTS = [ReportFile(name="liability", label="Plan liability", header=[...], rows=..., ...)]

`rows(*args)` gives the report's rows (lists of cells, in the header's order) for its parameters, given as
strings (an ISO date, a plan code): the same strings are the job's key and the task's arguments, so a rerun of
the same parameters claims the same run. The rows are produced as they are written (a generator), never all
held at once; wrapped in `Rows` they also say how many there will be, so the job's progress has a total.
`csv_chunks` writes them in chunks of rows; the page's direct download streams those chunks
(StreamingHttpResponse), and the job (`report_file_run`) writes the same chunks to a temporary file (spooled to
disk past a few megabytes), hashing them as they go, records its progress after each, and stores the file as a
staff-only CSV Document: the same parameters give the same bytes, therefore the same document. A run already done returns its document; a failure is recorded failed with the
reason by the job lock (core.jobs), and staff retry it from the jobs page.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import importlib
import io
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence, Sized
from dataclasses import dataclass, field
from typing import Any

from core.audit import audit_record
from core.csv_export import CsvWriter
from core.dates import date_in_range, out_of_range_message, year_in_range
from core.errors import ApplicationError
from core.jobs import _task, job_claim, job_finish, job_is_stale, job_item, job_lock, job_progress
from core.models import Document, JobRun
from core.pdf import document_store_file
from core.roles import Cap
from core.schedules import APPS

JOB_KIND = "report"
TASK = "core.report_file"
CHUNK_ROWS = 2000
DOCUMENT_KIND_PREFIX = "report-"
SPOOL_BYTES = 4 * 1024 * 1024  # a report file larger than this is written to a temporary file on disk


class ReportRefused(ApplicationError):
    """A report file that cannot be prepared (unknown report, parameters that do not parse)."""


@dataclass(frozen=True)
class ReportFile:
    name: str  # the job key's first part: short, no colon
    label: str
    header: list[str]
    rows: Callable[..., Iterable[Sequence[Any]]]  # the report's rows for its parameters (strings)
    filename: Callable[..., str]  # the file's name for its parameters
    params: list[str] = field(default_factory=list)  # the parameters' names, as the page's form posts them
    capability: Cap = Cap.VIEW_STAFF  # the same capability as viewing the report
    lineterminator: str = "\n"
    # How each parameter is read (raising ValueError when it does not parse), checked before a job is queued.
    checks: dict[str, Callable[[str], object]] = field(default_factory=dict)


class Rows:
    """A report's rows produced as they are read, with their number known beforehand (the job's progress total).

    `summary`, when given, is the report's figures for its page (JSON values: amounts as strings), computed from
    the same answer as the rows: the job keeps it in its run's stats, and the page shows it from there rather
    than computing the report in the request (`report_file_summary`)."""

    def __init__(self, rows: Iterable[Sequence[Any]], *, total: int, summary: dict | None = None) -> None:
        self._rows = rows
        self.total = total
        self.summary = summary

    def __iter__(self) -> Iterator[Sequence[Any]]:
        return iter(self._rows)

    def __len__(self) -> int:
        return self.total


def iso_date(text: str) -> dt.date:
    """A report's date parameter: YYYY-MM-DD, within the dates the application takes."""
    day = dt.date.fromisoformat(text)
    if not date_in_range(day):
        raise ValueError(out_of_range_message("the date", text))
    return day


def plan_year(text: str) -> int:
    """A report's plan year parameter, within the years the application takes."""
    year = int(text)
    if not year_in_range(year):
        raise ValueError(f"the year {text} is outside the years the application takes")
    return year


def report_files() -> dict[str, ReportFile]:
    """The reports that can be prepared as a file, by name (each app's report_files module)."""
    out: dict[str, ReportFile] = {}
    for app in APPS:
        try:
            # By name, as core.schedules loads the apps' schedules: core is below the apps it lists.
            module = importlib.import_module(f"{app}.report_files")
        except ModuleNotFoundError as exc:
            if exc.name != f"{app}.report_files":
                raise
            continue
        for report in getattr(module, "REPORTS", []):
            out[report.name] = report
    return out


def report_file(name: str) -> ReportFile:
    report = report_files().get(name)
    if report is None:
        raise ReportRefused(f"There is no report {name!r} to prepare as a file.")
    return report


def csv_chunks(
    report: ReportFile, rows: Iterable[Sequence[Any]], *, chunk_rows: int = CHUNK_ROWS
) -> Iterator[str]:
    """The CSV text in pieces: the header, then every `chunk_rows` rows (escaped by core.csv_export)."""
    out = io.StringIO()
    writer = CsvWriter(out, lineterminator=report.lineterminator)
    writer.writerow(report.header)
    count = 0
    for row in rows:
        writer.writerow(row)
        count += 1
        if count % chunk_rows == 0:
            yield out.getvalue()
            out.seek(0)
            out.truncate()
    yield out.getvalue()


def report_key(report: ReportFile, args: Sequence[str]) -> str:
    """The job's key: the report and its parameters (a rerun of the same parameters claims the same run)."""
    if any(":" in a for a in args):
        raise ReportRefused("A report's parameters cannot contain a colon.")
    key = ":".join([report.name, *args])
    if len(key) > 60:
        raise ReportRefused("The report's parameters are too long for a job key.")
    return key


def report_args(report: ReportFile, data: Any) -> list[str]:
    """The report's parameters from a posted form (each one required, and read by its check if it has one)."""
    args = []
    for name in report.params:
        value = str(data.get(name, "")).strip()
        if not value:
            raise ReportRefused(f"The report needs its {name}.")
        check = report.checks.get(name)
        if check is not None:
            try:
                check(value)
            except ValueError as exc:
                raise ReportRefused(f"The report's {name} {value!r} does not read: {exc}.") from exc
        args.append(value)
    return args


def report_file_queue(*, name: str, args: Sequence[str], actor, now: dt.datetime) -> str:
    """Queue the job that prepares the report as a file, once the transaction commits; its key.

    A run already done, or running and not stale, for the same parameters is not queued again: its page shows it."""
    report = report_file(name)
    key = report_key(report, list(args))
    run = JobRun.objects.filter(kind=JOB_KIND, key=key).first()
    if (
        run is None
        or run.status in (JobRun.Status.FAILED, JobRun.Status.REFUSED)
        or job_is_stale(run, now=now)
    ):
        audit_record(action="report.prepare", actor=actor, at=now, data={"report": name, "args": list(args)})
        _task(TASK).delay_on_commit(name, *args)
    return key


def report_file_run(*, name: str, args: Sequence[str], now: dt.datetime) -> JobRun:
    """Prepare the report as a CSV Document under a claimed, locked run; a run already done is returned as is.

    Progress is recorded after each chunk of rows; the run finishes with the document's id in its stats."""
    report = report_file(name)
    args = list(args)
    key = report_key(report, args)
    with job_lock(f"{JOB_KIND}:{key}"):
        run = job_claim(kind=JOB_KIND, key=key, now=now)
        if run.status == JobRun.Status.DONE:
            return run
        stats = {"task": TASK, "args": [name, *args], "kwargs": {}, "report": name}
        run.stats = stats
        # Written now, so that a run whose worker vanishes is retried from the jobs page with its arguments.
        JobRun.objects.filter(pk=run.pk).update(stats=stats)
        job_item(run, "rows")
        rows = report.rows(*args)
        total = len(rows) if isinstance(rows, Sized) else 0  # 0: not known beforehand
        summary = rows.summary if isinstance(rows, Rows) else None

        def said(done: int) -> str:
            return f"{done} of {total} rows" if total else f"{done} rows so far"

        job_progress(run, done=0, total=total, message=said(0))
        written = 0

        def counted() -> Iterator[Sequence[Any]]:
            nonlocal written
            for row in rows:
                written += 1
                yield row

        digest, size = hashlib.sha256(), 0
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES, mode="w+b") as spool:
            for part in csv_chunks(report, counted(), chunk_rows=CHUNK_ROWS):
                data = part.encode("utf-8")
                spool.write(data)
                digest.update(data)
                size += len(data)
                job_progress(run, done=written, total=total and max(total, written), message=said(written))
            job_item(run, "document")
            document = document_store_file(
                file=spool,
                sha256=digest.hexdigest(),
                size=size,
                kind=f"{DOCUMENT_KIND_PREFIX}{report.name}"[:60],
                title=report.filename(*args),
                template=f"report_files:{report.name}",
                actor="report job",
                now=now,
                content_type="text/csv",
                extension="csv",
            )
        return job_finish(
            run,
            status=JobRun.Status.DONE,
            message=f"{written} rows: {report.filename(*args)}",
            stats={
                **stats,
                "document": document.pk,
                "rows": written,
                "size": size,
                **({"summary": summary} if summary is not None else {}),
            },
        )


def report_file_title(*, key: str) -> str | None:
    """A report job's heading for people: the report's label and its parameters ("Plan liability, 2026-04-30"),
    None when the key names no report."""
    name, _, params = key.partition(":")
    report = report_files().get(name)
    if report is None:
        return None
    return ", ".join([report.label, *(p for p in params.split(":") if p)])


def report_file_document(run: JobRun | None) -> Document | None:
    """The document a done report run prepared, if any."""
    if run is None or run.kind != JOB_KIND or run.status != JobRun.Status.DONE:
        return None
    pk = (run.stats or {}).get("document")
    return Document.objects.filter(pk=pk).first() if pk else None


@dataclass(frozen=True)
class ReportState:
    """Where a report's job stands for its parameters, for the report's page (`report_file_state`)."""

    key: str
    run: JobRun | None  # None: never asked for these parameters
    summary: dict | None  # the figures of a done run (Rows.summary), None until it is done
    document: Document | None  # the CSV a done run prepared
    stale: bool = False  # running, but no progress for a while: its worker is gone, it can be asked again

    @property
    def status(self) -> str:
        """One of: none (never asked), done, failed (or refused), stale, running (or queued)."""
        if self.run is None:
            return "none"
        if self.run.status == JobRun.Status.DONE:
            return "done"
        if self.run.status in (JobRun.Status.FAILED, JobRun.Status.REFUSED):
            return "failed"
        return "stale" if self.stale else "running"

    @property
    def computed_at(self) -> dt.datetime | None:
        return self.run.finished_at if self.status == "done" and self.run is not None else None


def report_file_state(*, name: str, args: Sequence[str], now: dt.datetime) -> ReportState:
    """The run of report `name` for its parameters, with its figures and file once done: a report page shows
    them, so that a report whose work grows with the population is computed by the job, never in the request."""
    report = report_file(name)
    key = report_key(report, list(args))
    run = JobRun.objects.filter(kind=JOB_KIND, key=key).first()
    summary = (
        (run.stats or {}).get("summary") if run is not None and run.status == JobRun.Status.DONE else None
    )
    return ReportState(
        key=key,
        run=run,
        summary=summary,
        document=report_file_document(run),
        stale=run is not None and run.status == JobRun.Status.RUNNING and job_is_stale(run, now=now),
    )
