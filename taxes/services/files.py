"""The files payroll takes: the FICA feed of a pay date and the year-end files. Each take is recorded (who, when,
which rows, the SHA-256 of the bytes) so the staff page can say what changed since a file was last taken."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
from decimal import Decimal

from core.audit import Actor, actor_label, audit_record
from core.csv_export import CsvWriter
from core.money import ZERO
from participants.models import Person
from taxes.models import FeedTake, FicaWage, YearEndTake
from taxes.selectors import feed_rows, form_1099_lines, reconciliation, year_figures

FEED_HEADER = ["employee_number", "name", "date", "amount", "plan", "kind", "source", "cite"]


def feed_csv(*, rows: list[FicaWage]) -> str:
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(FEED_HEADER)
    for r in rows:
        writer.writerow(
            [
                r.person.employee_number,
                r.person.full_name,
                r.date.isoformat(),
                r.amount,
                r.participation.plan.code,
                r.kind,
                r.source,
                r.cite,
            ]
        )
    return out.getvalue()


def feed_take(
    *, feed_date: dt.date, actor: Actor, now: dt.datetime, via: str
) -> tuple[FeedTake, list[FicaWage]]:
    """Staff take the FICA feed of a pay date (26 CFR 31.3121(v)(2)-1: payroll adds these amounts to Social
    Security and Medicare wages in that period); the take is recorded with its rows and checksum."""
    rows = list(feed_rows(feed_date=feed_date))
    text = feed_csv(rows=rows)
    take = FeedTake.objects.create(
        feed_date=feed_date,
        taken_at=now,
        taken_by=actor_label(actor),
        rows=len(rows),
        total=sum((r.amount for r in rows), ZERO),
        row_ids=[r.pk for r in rows],
        sha256=hashlib.sha256(text.encode()).hexdigest(),
        via=via,
    )
    audit_record(
        action="fica_feed_take", actor=actor, at=now, obj=take, data={"feed_date": feed_date.isoformat()}
    )
    return take, rows


def _money(value: Decimal | None) -> str:
    return "" if value is None else f"{value:.2f}"


def w2_csv(*, year: int) -> str:
    """Per employee: Form W-2 box 1 (distributions), boxes 3 and 5 (FICA wages from the plans), box 11 (blank
    when the year has distributions and a plan amount in boxes 3/5)."""
    figures = year_figures(year=year)
    people = Person.objects.in_bulk(list(figures))
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(["year", "employee_number", "name", "w2_box_1", "w2_box_3", "w2_box_5", "w2_box_11"])
    for pid in sorted(figures, key=lambda p: people[p].employee_number):
        fig = figures[pid]
        if not (fig.w2_box_1 or fig.fica_wages):
            continue
        person = people[pid]
        writer.writerow(
            [
                year,
                person.employee_number,
                person.full_name,
                _money(fig.w2_box_1),
                _money(fig.w2_box_3),
                _money(fig.w2_box_5),
                _money(fig.w2_box_11),
            ]
        )
    return out.getvalue()


def form_1099_csv(*, year: int) -> str:
    """Per beneficiary paid after a death: Form 1099-MISC box 3, with the taxpayer number and mailing address
    (the one export that carries them)."""
    out = io.StringIO()
    writer = CsvWriter(out)
    writer.writerow(
        [
            "year",
            "participant_employee_number",
            "beneficiary",
            "taxpayer_number",
            "address_line1",
            "address_line2",
            "city",
            "state",
            "postal_code",
            "form_1099_misc_box_3",
            "missing",
        ]
    )
    for line in form_1099_lines(year=year):
        info = getattr(line.beneficiary, "tax_info", None) if line.beneficiary is not None else None
        writer.writerow(
            [
                year,
                line.person.employee_number,
                line.payee,
                info.taxpayer_number if info else "",
                info.address_line1 if info else "",
                info.address_line2 if info else "",
                info.city if info else "",
                info.state if info else "",
                info.postal_code if info else "",
                _money(line.amount),
                "" if info else "taxpayer number and address not on file",
            ]
        )
    return out.getvalue()


def reconciliation_csv(*, year: int) -> str:
    rows = reconciliation(year=year)
    out = io.StringIO()
    writer = CsvWriter(out)
    header = list(rows[0]) if rows else ["plan"]
    writer.writerow(["year", *header])
    for r in rows:
        writer.writerow([year, *(r[k] for k in header)])
    return out.getvalue()


YEAR_END_FILES = {"w2": w2_csv, "1099": form_1099_csv, "reconciliation": reconciliation_csv}


def year_end_take(*, year: int, file: str, actor: Actor, now: dt.datetime) -> str:
    """One year-end file, recorded as taken (the 1099 file carries taxpayer numbers: every take is on record)."""
    text = YEAR_END_FILES[file](year=year)
    YearEndTake.objects.create(
        year=year,
        file=file,
        taken_at=now,
        taken_by=actor_label(actor),
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )
    audit_record(action="year_end_take", actor=actor, at=now, data={"year": year, "file": file})
    return text
