"""Pension Plan figure files: one line per BRP participant and date (BRP 3.2-3.4, 4.2(c), 5.1).

The qualified Pension Plan is not modelled here: its administrator sends, per participant, the benefit
without the Tax Limits, the benefit it pays, Benefit Service, the Early and Normal Retirement Dates,
its early/late adjustment factor, and the Spouse the joint and survivor forms and 5.1 need. A line
already on file is skipped when identical and refused when it differs (a file never changes recorded
figures; a correction is made on the staff page, where history keeps the old ones).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from simple_history.utils import bulk_create_with_history

from books.models import DefinedBenefitRecord
from core import hooks
from core.imports import Applied, Importer, Problems, Row
from core.models import ImportBatch
from participants.models import Participation
from pensions.services.benefit import FIGURE_FIELDS, pension_figures_refusal
from plans.models import Plan

MONEY = (
    "unlimited_annual_benefit",
    "payable_annual_benefit",
    "imputed_annual_benefit",
    "pre_2005_annual_benefit",
)
DATES = ("early_retirement_date", "normal_retirement_date", "spouse_birth_date")


@dataclass
class PreparedFigures:
    new: list[DefinedBenefitRecord] = field(default_factory=list)
    skipped: int = 0


def _same(record: DefinedBenefitRecord, values: dict) -> bool:
    return all(getattr(record, k) == v for k, v in values.items())


class PensionFiguresImport(Importer):
    kind = ImportBatch.Kind.PENSION_FIGURES
    required = (
        "employee_number",
        "as_of",
        "unlimited_annual_benefit",
        "payable_annual_benefit",
        "benefit_service_years",
        "normal_retirement_date",
    )
    optional = (
        "plan",
        "imputed_annual_benefit",
        "early_retirement_date",
        "early_adjustment_factor",
        "pre_2005_annual_benefit",
        "spouse_name",
        "spouse_birth_date",
    )
    help = (
        "One line per BRP participant and date of the figures: employee_number, as_of (YYYY-MM-DD), "
        "unlimited_annual_benefit (the Pension Plan benefit without the Tax Limits, BRP 3.2(a)), "
        "payable_annual_benefit (what the Pension Plan pays, 3.2(b)), both annual single life amounts in dollars "
        "and cents, benefit_service_years (up to 2 decimals) and normal_retirement_date. Optional: plan (when the "
        "employee is in more than one defined benefit plan), imputed_annual_benefit (3.5), early_retirement_date, "
        "early_adjustment_factor (the Pension Plan's early or late commencement factor, 3.3; default 1), "
        "pre_2005_annual_benefit (the Appendix A Pre-2005 Supplemental Benefit, accrued and vested by December 31, "
        "2004, as a single life annuity at Normal Retirement; default 0), "
        "spouse_name and spouse_birth_date (the joint and survivor forms, 4.2(c), and 5.1). A line already on "
        "file is skipped when identical and refused when it differs."
    )
    sample = (
        {
            "employee_number": "S1002",
            "as_of": "2026-03-31",
            "unlimited_annual_benefit": "180000.00",
            "payable_annual_benefit": "110000.00",
            "benefit_service_years": "35.25",
            "normal_retirement_date": "2023-04-01",
        },
    )

    def check(self, rows: list[Row], problems: Problems, *, now: dt.datetime) -> PreparedFigures:
        numbers = {r.text("employee_number") for r in rows} - {""}
        participations: dict[str, list[Participation]] = {}
        for p in (
            Participation.objects.filter(
                person__employee_number__in=numbers, plan__kind=Plan.Kind.DEFINED_BENEFIT
            )
            .select_related("person", "plan")
            .prefetch_related("plan__versions__provisions")
        ):
            participations.setdefault(p.person.employee_number, []).append(p)
        on_file = {
            (r.participation_id, r.as_of): r
            for r in DefinedBenefitRecord.objects.filter(
                participation__in=[p for ps in participations.values() for p in ps]
            )
        }
        prepared = PreparedFigures()
        first_line: dict[tuple[int, dt.date], int] = {}
        for row in rows:
            number = row.text("employee_number", required=True, max_length=20)
            as_of = row.date("as_of", required=True)
            values: dict = {}
            for name in MONEY:
                values[name] = row.money(name, required=name in self.required)
            values["benefit_service_years"] = row.decimal("benefit_service_years", required=True, places=2)
            for name in DATES:
                values[name] = row.date(name, required=name in self.required)
            factor = row.decimal("early_adjustment_factor", places=6)
            values["early_adjustment_factor"] = factor if factor is not None else Decimal(1)
            values["imputed_annual_benefit"] = values["imputed_annual_benefit"] or Decimal("0.00")
            values["pre_2005_annual_benefit"] = values["pre_2005_annual_benefit"] or Decimal("0.00")
            values["spouse_name"] = row.text("spouse_name", max_length=200)
            participation = self._participation(row, number, participations)
            if row.bad or participation is None or as_of is None:
                continue
            refusal = pension_figures_refusal(participation=participation, values={**values, "as_of": as_of})
            if refusal:
                row.problem(refusal)
                continue
            key = (participation.pk, as_of)
            if key in first_line:
                row.problem(
                    f"repeats the figures of employee {number} as of {as_of}, already given on line {first_line[key]}"
                )
                continue
            first_line[key] = row.line
            recorded = on_file.get(key)
            if recorded is None:
                prepared.new.append(
                    DefinedBenefitRecord(
                        participation=participation, as_of=as_of, **{k: values[k] for k in FIGURE_FIELDS}
                    )
                )
            elif _same(recorded, {k: values[k] for k in FIGURE_FIELDS}):
                prepared.skipped += 1
            else:
                differs = [k.replace("_", " ") for k in FIGURE_FIELDS if getattr(recorded, k) != values[k]]
                row.problem(
                    f"employee {number} already has Pension Plan figures as of {as_of} and this line differs "
                    f"({', '.join(differs)}). A file never changes recorded figures: correct them on the staff "
                    f"page, or send them with a later as_of date."
                )
        return prepared

    def _participation(
        self, row: Row, number: str, participations: dict[str, list[Participation]]
    ) -> Participation | None:
        if not number:
            return None
        candidates = participations.get(number, [])
        plan_code = row.text("plan").upper()
        if plan_code:
            candidates = [p for p in candidates if p.plan.code.upper() == plan_code]
        if not candidates:
            where = f"the {plan_code} plan" if plan_code else "a defined benefit plan (the BRP)"
            row.problem(f"employee {number} is not a participant in {where}", "employee_number")
            return None
        if len(candidates) > 1:
            row.problem(
                f"employee {number} is in more than one defined benefit plan: add a plan column", "plan"
            )
            return None
        return candidates[0]

    def apply(
        self, prepared: PreparedFigures, *, batch: ImportBatch, actor, now: dt.datetime, problems: Problems
    ) -> Applied:
        source = f"import #{batch.pk} {batch.file_name}"[:200]
        for record in prepared.new:
            record.source = source
        bulk_create_with_history(prepared.new, DefinedBenefitRecord, batch_size=2000)
        for participation in {r.participation_id: r.participation for r in prepared.new}.values():
            hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=now)
        return Applied(applied=len(prepared.new), skipped=prepared.skipped)
