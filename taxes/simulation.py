"""Simulator: the `fica` list and `tax_years` map of the result (scenarios/FORMAT.md, "Tax figures in the result").

At the end of the replay the FICA job (taxes.services.fica) records the sandbox's rows exactly as production
does, and the year-end selector reads them: the simulator reports what staff and payroll would see.
"""

from __future__ import annotations

from core.money import ZERO
from core.simulation.registry import REPORTERS
from taxes.models import FicaWage
from taxes.selectors import year_figures
from taxes.services.fica import fica_wages_record


def tax_report(ctx) -> dict:
    through = ctx.scenario.through
    participations = list(ctx.participations.values())
    fica_wages_record(through=through, now=ctx.moment(through, 18), participations=participations)
    rows = (
        FicaWage.objects.filter(participation__in=participations)
        .select_related("person", "participation__plan")
        .order_by("date", "participation_id", "id")
    )
    fica = [
        {
            "participant": ctx.participant_id(r.person),
            "plan": r.participation.plan.code,
            "date": r.date.isoformat(),
            "amount": f"{r.amount:.2f}",
            "kind": r.kind,
        }
        for r in rows
    ]
    # One order on every database and in every process: rows of a day are written in the order the job meets
    # them, which is not the same everywhere (the parity test compares the texts).
    fica.sort(key=lambda f: (f["date"], f["participant"], f["plan"], f["kind"], f["amount"]))
    people = {pid: p.pk for pid, p in ctx.people.items()}
    tax_years: dict[str, dict] = {}
    for year in range(ctx.scenario.start.year, through.year + 1):
        figures = year_figures(year=year, person_ids=list(people.values()))
        out = {}
        for pid, pk in people.items():
            fig = figures.get(pk)
            box_11 = fig.w2_box_11 if fig is not None else ZERO
            out[pid] = {
                "fica_wages": f"{fig.fica_wages if fig else ZERO:.2f}",
                "w2_box_1": f"{fig.w2_box_1 if fig else ZERO:.2f}",
                # blank on the form (distributions and a plan amount in boxes 3/5 the same year): 0.00 here
                "w2_box_11": f"{box_11 if box_11 is not None else ZERO:.2f}",
                "form_1099_misc_box_3": f"{fig.form_1099_misc_box_3 if fig else ZERO:.2f}",
            }
        tax_years[str(year)] = out
    return {"fica": fica, "tax_years": tax_years}


REPORTERS.append(tax_report)
