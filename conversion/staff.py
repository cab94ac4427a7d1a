"""What the staff pages of a conversion do, over the same services as `manage.py convert` (FORMAT.md 5).

Upload: the package's files (a zip of the folder, or the CSV files themselves) are stored in a folder of
their own under MEDIA_ROOT and checked with a dry run, kept as a ConversionRun. Apply: maker-checker, as
payment runs: whoever uploaded a package cannot apply it; a different staff member with the
approve-payments capability (the Committee) does, and the apply is the command's own apply step.

Both run as a job (JobRun kind "conversion", task "conversion.run"), never in the request: a large plan's dry run
or apply takes minutes, longer than a web worker may hold a request. The pages show the job's progress and then
its run; a failed job says why and is retried from the jobs page. One conversion job runs at a time (one lock).
The books' figures of an applied package are read once, by the apply job, and kept with the run.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import secrets
import shutil
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path, PurePosixPath
from typing import IO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from conversion import spec
from conversion.models import ConversionRun
from conversion.reader import normalise_header, read_rows
from conversion.selectors import Key, books_totals, payments_due_at_conversion, read_from_books
from conversion.services import conversion_run
from core.audit import audit_record
from core.csv_export import CsvWriter
from core.errors import ApplicationError
from core.jobs import _task, job_claim, job_finish, job_is_stale, job_lock, job_progress
from core.models import JobRun
from core.money import ZERO
from core.pdf import document_store
from core.roles import Cap, has_cap

MAX_PACKAGE_BYTES = 512 * 1024 * 1024  # a zip of a large plan's package; anything bigger is refused
JOB_KIND = "conversion"
TASK = "conversion.run"
DRY_RUN, APPLY = "dry-run", "apply"  # the first part of a job's key: what it does


class ConversionRefused(ApplicationError):
    """A conversion the pages refuse: the message says why; nothing is written."""


@dataclass(frozen=True)
class Upload:
    name: str
    file: IO[bytes]


def _package_folder() -> Path:
    folder = Path(settings.MEDIA_ROOT) / "conversion" / secrets.token_hex(12)
    folder.mkdir(parents=True)
    return folder


def _csv_name(name: str) -> str:
    """The file name a package member is stored under; only the known files of FORMAT.md are kept."""
    base = PurePosixPath(name.replace("\\", "/")).name
    if base.lower() not in spec.BY_NAME:
        return ""
    return base.lower()


def _store_zip(*, upload: Upload, folder: Path) -> int:
    try:
        archive = zipfile.ZipFile(upload.file)
    except zipfile.BadZipFile:
        raise ConversionRefused(
            f"{upload.name} is not a zip file: upload a zip of the package folder or its CSV files."
        )
    stored = 0
    with archive:
        members = sorted((m for m in archive.infolist() if not m.is_dir()), key=lambda m: m.filename)
        if sum(m.file_size for m in members) > MAX_PACKAGE_BYTES:
            raise ConversionRefused(f"{upload.name} unpacks to more than {MAX_PACKAGE_BYTES // 2**20} MB.")
        for member in members:
            name = _csv_name(member.filename)
            if not name or (folder / name).exists():
                continue
            with archive.open(member) as src, (folder / name).open("wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            stored += 1
    return stored


def _store(*, uploads: Iterable[Upload], folder: Path) -> int:
    stored = 0
    for upload in uploads:
        if upload.name.lower().endswith(".zip"):
            stored += _store_zip(upload=upload, folder=folder)
            continue
        name = _csv_name(upload.name)
        if not name:
            raise ConversionRefused(
                f"{upload.name} is not a file of a conversion package (FORMAT.md section 2 lists them)."
            )
        with (folder / name).open("wb") as dst:
            shutil.copyfileobj(upload.file, dst, 1 << 20)
        stored += 1
    return stored


def conversion_upload(*, uploads: list[Upload], actor: User, now: dt.datetime) -> str:
    """Store the package and queue its dry run (checks everything, changes nothing but the run); the job's key."""
    if not has_cap(actor, Cap.IMPORT_DATA):
        raise ConversionRefused(
            "Uploading a conversion package needs the import capability (administrators)."
        )
    if not uploads:
        raise ConversionRefused("Choose the package: a zip of its folder, or its CSV files.")
    folder = _package_folder()
    if not _store(uploads=uploads, folder=folder):
        raise ConversionRefused(
            "The upload holds no file of a conversion package (package.csv, plans.csv, ...)."
        )
    key = f"{DRY_RUN}:{folder.name}:{actor.pk}"
    _task(TASK).delay_on_commit(key)
    return key


def _dry_run(*, folder: Path, uploader: User, now: dt.datetime) -> ConversionRun:
    with transaction.atomic():
        outcome = conversion_run(folder=folder, dry_run=True, actor=uploader.get_username(), now=now)
        run = outcome.run
        run.uploaded_by = uploader
        run.save(update_fields=["uploaded_by"])
        audit_record(
            action="conversion.upload",
            actor=uploader,
            at=now,
            obj=run,
            data={
                "package_id": run.package_id,
                "status": run.status,
                "exceptions": run.exception_count,
                "files": run.file_hashes,
            },
        )
    return run


def apply_refusal(*, run: ConversionRun, actor: User) -> str:
    """Why `actor` may not apply `run` ("" when they may): the maker-checker rule of payment runs."""
    if not has_cap(actor, Cap.APPROVE_PAYMENTS):
        return "Applying a conversion needs the approve capability (committee members)."
    if not run.dry_run or run.uploaded_by_id is None:
        return f"Conversion run {run.pk} is not an uploaded dry run: upload the package to apply it."
    if run.uploaded_by_id == actor.pk:
        return f"You uploaded conversion run {run.pk}; a different person must apply it (maker-checker)."
    if run.applied_run_id is not None:
        return f"Conversion run {run.pk} was already applied (run {run.applied_run_id})."
    if run.status != ConversionRun.Status.VALIDATED:
        return (
            f"Conversion run {run.pk} is {run.get_status_display().lower()}: only a dry run with no exception "
            "can be applied."
        )
    return ""


def run_reviewed(*, run: ConversionRun) -> str:
    """What the approver saw on the summary: a run whose figures differ since is reviewed again."""
    return "|".join(
        str(v) for v in (run.pk, run.participants, run.positions, run.exception_count, run.package_id)
    )


def conversion_apply_queue(*, run: ConversionRun, actor: User, now: dt.datetime) -> str:
    """Queue the apply of a dry run by `actor` (refused now when the maker-checker rule refuses it); the job's key.
    An apply already queued or running for the same person is not queued twice: its page shows it."""
    refusal = apply_refusal(run=run, actor=actor)
    if refusal:
        raise ConversionRefused(refusal)
    key = f"{APPLY}:{run.pk}:{actor.pk}"
    job = JobRun.objects.filter(kind=JOB_KIND, key=key).first()
    if (
        job is None
        or job.status in (JobRun.Status.FAILED, JobRun.Status.REFUSED)
        or job_is_stale(job, now=now)
    ):
        _task(TASK).delay_on_commit(key)
    return key


def conversion_apply(*, run: ConversionRun, actor: User, now: dt.datetime) -> ConversionRun:
    """The second pair of eyes applies the package the dry run checked, in one transaction (FORMAT.md 5)."""
    with transaction.atomic():
        run = ConversionRun.objects.select_for_update().get(pk=run.pk)
        refusal = apply_refusal(run=run, actor=actor)
        if refusal:
            raise ConversionRefused(refusal)
        outcome = conversion_run(folder=Path(run.folder), dry_run=False, actor=actor.get_username(), now=now)
        applied = outcome.run
        applied.uploaded_by_id = run.uploaded_by_id
        applied.applied_by = actor
        applied.save(update_fields=["uploaded_by", "applied_by"])
        if applied.status == ConversionRun.Status.APPLIED:
            run.applied_by, run.applied_run = actor, applied
            run.save(update_fields=["applied_by", "applied_run"])
        audit_record(
            action="conversion.apply_approved",
            actor=actor,
            at=now,
            obj=applied,
            data={
                "dry_run": run.pk,
                "package_id": applied.package_id,
                "status": applied.status,
                "participants": applied.participants,
                "positions": applied.positions,
                "files": applied.file_hashes,
            },
        )
    return applied


_FOLDER = re.compile(r"[0-9a-f]{24}")  # _package_folder's names: nothing else is read from a key


def _job_parts(key: str) -> tuple[str, str, int]:
    action, target, actor_id = key.split(":")
    if action not in (DRY_RUN, APPLY) or not (
        _FOLDER.fullmatch(target) if action == DRY_RUN else target.isdigit()
    ):
        raise ValueError(f"not a conversion job: {key!r}")
    return action, target, int(actor_id)


def conversion_job(*, key: str, now: dt.datetime) -> JobRun:
    """The dry run or the apply that `key` names ("dry-run:<folder>:<uploader>", "apply:<run>:<approver>"), under
    the conversion lock; a job already done is returned as it is. The job's stats name the run it wrote."""
    action, target, actor_id = _job_parts(key)
    with job_lock(JOB_KIND):
        job = job_claim(kind=JOB_KIND, key=key, now=now)
        if job.status == JobRun.Status.DONE:
            return job
        stats: dict = {"task": TASK, "args": [key], "kwargs": {}}
        job.stats = stats
        # Written now, so that a job whose worker vanishes is retried from the jobs page with its key.
        JobRun.objects.filter(pk=job.pk).update(stats=stats)
        actor = User.objects.get(pk=actor_id)
        try:
            if action == DRY_RUN:
                job_progress(
                    job, done=0, total=1, message="checking the package (dry run: nothing is written)"
                )
                run = _dry_run(
                    folder=Path(settings.MEDIA_ROOT) / "conversion" / target, uploader=actor, now=now
                )
                message = f"dry run {run.status}, {_exceptions(run.exception_count)}"
            else:
                job_progress(
                    job, done=0, total=2, message="checking and applying the package, everything or nothing"
                )
                run = conversion_apply(run=ConversionRun.objects.get(pk=int(target)), actor=actor, now=now)
                message = f"run {run.pk} {run.status.replace('_', ' ')}, {_exceptions(run.exception_count)}"
                if run.status == ConversionRun.Status.APPLIED:
                    job_progress(job, done=1, total=2, message="reading the books for the reconciliation")
                    conversion_books(run=run)
                    conversion_due(run=run)
        except ConversionRefused as exc:
            return job_finish(job, status=JobRun.Status.REFUSED, message=exc.message, stats=stats)
        # any other exception: job_lock records the job failed with its reason and the step it stopped on
        return job_finish(job, status=JobRun.Status.DONE, message=message, stats={**stats, "run": run.pk})


def _exceptions(n: int) -> str:
    return f"{n} exception{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class JobState:
    key: str
    run: JobRun | None  # None: queued, no worker has claimed it yet
    title: str
    stale: bool

    @property
    def status(self) -> str:
        if self.run is None:
            return "queued"
        return "stale" if self.stale else self.run.status

    @property
    def conversion_run_id(self) -> int | None:
        """The conversion run the job wrote, once it is done."""
        if self.run is None or self.run.status != JobRun.Status.DONE:
            return None
        return (self.run.stats or {}).get("run")


def conversion_job_state(*, key: str, now: dt.datetime) -> JobState:
    """What a conversion job's page shows: its progress, or the run it wrote. Refused for a key no job has."""
    try:
        action, target, _ = _job_parts(key)
    except ValueError as exc:
        raise ConversionRefused(f"{key} is not a conversion job.") from exc
    job = JobRun.objects.filter(kind=JOB_KIND, key=key).first()
    title = "Dry run of the uploaded package" if action == DRY_RUN else f"Applying conversion run {target}"
    return JobState(key=key, run=job, title=title, stale=job is not None and job_is_stale(job, now=now))


def apply_job_of(*, run: ConversionRun, now: dt.datetime) -> JobState | None:
    """The last apply job of a dry run that is running or failed (None when there is none)."""
    job = (
        JobRun.objects.filter(kind=JOB_KIND, key__startswith=f"{APPLY}:{run.pk}:")
        .exclude(status=JobRun.Status.DONE)
        .order_by("-started_at")
        .first()
    )
    if job is None or job.status not in (JobRun.Status.RUNNING, JobRun.Status.FAILED):
        return None
    return conversion_job_state(key=job.key, now=now)


def exception_csv_lines(*, run: ConversionRun, code: str = "") -> Iterator[str]:
    """The run's exceptions as CSV lines (a header, then file, line, code, message), in the report's order."""
    out = io.StringIO()
    writer = CsvWriter(out, lineterminator="\r\n")  # cells a spreadsheet would read as formulas are escaped

    def line(values: Iterable[object]) -> str:
        out.seek(0)
        out.truncate()
        writer.writerow(values)
        return out.getvalue()

    yield line(("file", "line", "code", "message"))
    rows = run.exceptions.order_by("file", "line", "code", "id")
    if code:
        rows = rows.filter(code=code)
    for file, number, rule, message in rows.values_list("file", "line", "code", "message").iterator(2000):
        yield line((file, number, rule, message))


# --- the report: what would be written, and the reconciliation ---------------------------------------


@dataclass(frozen=True)
class ControlLine:
    file: str
    measure: str
    plan: str
    account: str
    fund: str
    plan_year: str
    source: str
    control: str  # the prior recordkeeper's total ("" when the control file has no row)
    package: str  # recomputed from the files, as the command does
    line: int
    # After an apply, this system's figure read from the books on the conversion date (conversion.selectors);
    # None where the group is not a balance of the books or the package is not applied.
    books: str | None = None

    @property
    def compared(self) -> str:
        """The figure the control total is held against: the books' after an apply, else the package's."""
        return self.package if self.books is None else self.books

    @property
    def matches(self) -> bool:
        return self.control != "" and Decimal(self.control) == Decimal(self.compared or "0")

    @property
    def group(self) -> str:
        return (
            " ".join(x for x in (self.plan, self.account, self.fund, self.plan_year, self.source) if x)
            or "all"
        )


def _line(
    *, key: tuple[str, ...], control: str, package: str, line: int, books: dict[Key, Decimal] | None
) -> ControlLine:
    file, measure, plan, account, fund, plan_year, source = key
    group: Key = (file, measure, plan, account, fund, plan_year, source)
    figure = None
    if books is not None and read_from_books(key=group):
        figure = str(books.get(group, ZERO))
    return ControlLine(
        file=file,
        measure=measure,
        plan=plan,
        account=account,
        fund=fund,
        plan_year=plan_year,
        source=source,
        control=control,
        package=package,
        line=line,
        books=figure,
    )


def control_lines(*, run: ConversionRun) -> list[ControlLine]:
    """Every control total of the package beside the total recomputed from its files (the command's
    `control.differences` for those that differ), in the control file's order, then groups it lacks."""
    path = Path(run.folder) / "control.csv"
    books = conversion_books(run=run)
    differences = {
        tuple(d[k] for k in ("file", "measure", "plan", "account", "fund", "plan_year", "source")): d
        for d in run.differences
    }
    lines: list[ControlLine] = []
    seen: set[tuple[str, ...]] = set()
    if path.is_file():
        for line, row in _file_rows(path=path):
            key = tuple(
                row.get(k, "") for k in ("file", "measure", "plan", "account", "fund", "plan_year", "source")
            )
            seen.add(key)
            diff = differences.get(key)
            total = row.get("total", "")
            lines.append(
                _line(
                    key=key,
                    control=total,
                    package=diff["package"] if diff else total,
                    line=line,
                    books=books,
                )
            )
    for key, diff in sorted(differences.items()):
        if key not in seen:
            lines.append(
                _line(key=key, control=diff["control"], package=diff["package"], line=0, books=books)
            )
    if books is not None:  # a balance the books hold that the control file has no row for
        held = {ln_key(ln) for ln in lines}
        for key, figure in sorted(books.items()):
            if key not in held and figure != ZERO:
                lines.append(_line(key=key, control="", package="0", line=0, books=books))
    return lines


def ln_key(ln: ControlLine) -> tuple[str, ...]:
    return (ln.file, ln.measure, ln.plan, ln.account, ln.fund, ln.plan_year, ln.source)


def applied_run_of(run: ConversionRun) -> ConversionRun | None:
    """The run that applied this package: the run itself, or the apply of a dry run (None before an apply)."""
    if run.status == ConversionRun.Status.APPLIED and not run.dry_run:
        return run
    applied = run.applied_run
    if applied is not None and applied.status == ConversionRun.Status.APPLIED:
        return applied
    return None


def conversion_books(*, run: ConversionRun) -> dict[Key, Decimal] | None:
    """This system's figures on the conversion date once the package is applied (None before): read from the books
    once (by the apply job, or by the first page after an apply by `manage.py convert`) and kept with the run."""
    applied = applied_run_of(run)
    if applied is None or applied.conversion_date is None:
        return None
    if applied.books_figures is not None:
        return {tuple(f[:7]): Decimal(f[7]) for f in applied.books_figures}
    books = books_totals(plan_codes=_plans_of(run=applied), as_of=applied.conversion_date)
    applied.books_figures = [[*key, str(figure)] for key, figure in sorted(books.items())]
    ConversionRun.objects.filter(pk=applied.pk).update(books_figures=applied.books_figures)
    return books


def conversion_due(*, run: ConversionRun) -> list[list[str]] | None:
    """The payments due on or before the conversion date that the prior recordkeeper had not made, as the apply
    left them (None before an apply): read once, by the apply job or the first page after `manage.py convert`,
    and kept with the run, so the page shows them after the first payment run has paid them too."""
    applied = applied_run_of(run)
    if applied is None or applied.conversion_date is None:
        return None
    if applied.due_at_conversion is None:
        applied.due_at_conversion = payments_due_at_conversion(
            plan_codes=_plans_of(run=applied), as_of=applied.conversion_date
        )
        ConversionRun.objects.filter(pk=applied.pk).update(due_at_conversion=applied.due_at_conversion)
    return applied.due_at_conversion


@dataclass(frozen=True)
class DuePayment:
    employee_number: str
    name: str
    plan: str
    account: str
    benefit: str
    payment_date: dt.date
    amount: Decimal | None
    cite: str


def due_payments(*, run: ConversionRun) -> list[DuePayment]:
    """conversion_due as rows for the pages and the PDF."""
    return [
        DuePayment(
            employee_number=r[0],
            name=r[1],
            plan=r[2],
            account=r[3].replace("_", " "),
            benefit=r[4],
            payment_date=dt.date.fromisoformat(r[5]),
            amount=Decimal(r[6]) if r[6] else None,
            cite=r[7],
        )
        for r in conversion_due(run=run) or []
    ]


def _plans_of(*, run: ConversionRun) -> list[str]:
    """The plan codes of an applied package: those of its plans.csv and of its control differences."""
    plans = {d.get("plan", "") for d in run.differences} | set(_control_plans(run=run))
    return sorted(p for p in plans if p)


def _control_plans(*, run: ConversionRun) -> list[str]:
    path = Path(run.folder) / "plans.csv"
    if not path.is_file():
        return []
    return [row.get("plan", "") for _, row in _file_rows(path=path)]


def _file_rows(*, path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """A package file's rows, each with its line, by (normalised) column name, values stripped; rows that do not
    read are skipped (the dry run has reported them)."""
    header: list[str] = []
    for raw in read_rows(path=path):
        if raw.values is None:
            continue
        if not header:
            header = [normalise_header(h) for h in raw.values]
            continue
        yield raw.line, dict(zip(header, (v.strip() for v in raw.values), strict=False))


def written_by_kind(*, lines: list[ControlLine]) -> list[tuple[str, str]]:
    """Rows each file would write (the `rows` control totals as recomputed), in FORMAT.md's file order."""
    order = {f.name: i for i, f in enumerate(spec.FILES)}
    rows = [(ln.file, ln.package) for ln in lines if ln.measure == "rows"]
    return sorted(rows, key=lambda r: (order.get(r[0], len(order)), r[0]))


def value_by_plan(*, lines: list[ControlLine]) -> list[ControlLine]:
    """The market value of positions by plan and for the package (the liability the conversion brings)."""
    found = [
        ln for ln in lines if ln.file == "positions.csv" and ln.measure == "market_value" and not ln.account
    ]
    return sorted(found, key=lambda ln: (ln.plan == "", ln.plan))


def reconciliation_groups(*, lines: list[ControlLine]) -> dict[str, list[ControlLine]]:
    """The totals a Committee signs, by plan, account and fund (every money and unit total of the control)."""
    grouped: dict[str, list[ControlLine]] = defaultdict(list)
    for ln in lines:
        if ln.measure != "rows":
            grouped[f"{ln.file} {ln.measure}"].append(ln)
    return dict(sorted(grouped.items()))


def conversion_reconciliation_pdf(*, run: ConversionRun, actor: User, now: dt.datetime):
    """The reconciliation report as a stored PDF (same bytes for the same run: stored once)."""
    lines = control_lines(run=run)
    title = f"Conversion reconciliation, run {run.pk}"
    return document_store(
        kind="conversion_reconciliation",
        title=title,
        template="conversion/pdf/reconciliation.html",
        context={
            "run": run,
            "title": title,
            "rows": written_by_kind(lines=lines),
            "by_plan": value_by_plan(lines=lines),
            "groups": reconciliation_groups(lines=lines),
            "differences": sum(1 for ln in lines if not ln.matches),
            "applied": applied_run_of(run) is not None,
            "due": due_payments(run=run),
            "uploader": _person_name(run.uploaded_by),
            "applier": _person_name(run.applied_by),
        },
        actor=actor.get_username(),
        obj=run,
        now=now,
    )


def _person_name(user: User | None) -> str:
    if user is None:
        return ""
    return user.get_full_name() or "a staff member with no name on file"
