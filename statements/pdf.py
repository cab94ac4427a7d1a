"""The statements as documents a Committee signs: drawn by statements.typeset from the figures alone.

Nothing here reads the clock or the database beyond what the figures carry, so drawing the same
figures again gives the same bytes (and the same SHA-256).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from core.money import ZERO
from statements.figures import SOURCE_LABELS, Dietz, StatementFigures
from statements.typeset import Column, Document

QUARTERLY_LAYOUT = "statements.pdf.quarterly_pdf"
ANNUAL_LAYOUT = "statements.pdf.annual_benefit_pdf"
DIETZ_FORMULA = (
    "Personal rate of return (Modified Dietz): R = (E - B - F) / (B + sum of Wi x Fi), where B is the balance "
    "at the start of the period, E the balance at its end, F the net of the money credited to and paid out "
    "of your accounts (exchanges between funds are not counted), Fi each of those amounts, and "
    "Wi = (CD - Di) / CD the share of the period it was invested: CD is the number of calendar days in the "
    "period and Di the days from the start of the period to the Valuation Date on which Fi was credited."
)


def amount(value: Decimal | None) -> str:
    if value is None:
        return "-"
    text = f"{abs(value):,.2f}"
    return f"({text})" if value < 0 else text


def _figure(text: str) -> str:
    """A step's amount as the pensions quote gives it (a string), printed as money when it is one."""
    try:
        return amount(Decimal(text))
    except (ArithmeticError, ValueError, TypeError):
        return text


def units(value: Decimal) -> str:
    return f"{value:,.6f}"


def day(d: dt.date | None) -> str:
    return f"{d:%B} {d.day}, {d.year}" if d else "-"


def _letterhead(doc_sub: str, plan, version) -> Document:
    return Document(
        letterhead=plan.sponsor or "CarMax, Inc.",
        letterhead_sub=f"{plan.name} · {doc_sub}",
        footer_left=f"{plan.code} · {version.title}"[:120],
        title=doc_sub,
    )


def _dietz_rows(label: str, d: Dietz | None) -> list[str]:
    if d is None:
        return [label, "-", "-", "-", "-", "-", "n/a"]
    return [
        label,
        amount(d.beginning),
        amount(d.net_flows),
        amount(d.weighted_flows),
        amount(d.gain),
        str(d.days),
        d.percent,
    ]


def quarterly_pdf(*, figures: StatementFigures, reference: str) -> bytes:
    participation = figures.participation
    person, plan = participation.person, participation.plan
    version = plan.version_on(figures.period_end)
    doc = _letterhead("Quarterly account statement", plan, version)
    doc.title_block(f"Statement for {day(figures.period_start)} to {day(figures.period_end)}")
    doc.pairs(
        [
            ("Participant", f"{person.full_name} (employee {person.employee_number})"),
            (
                "Address",
                ", ".join(
                    x for x in (person.address_line1, person.city, person.state, person.postal_code) if x
                ),
            ),
            ("Plan", f"{plan.name} ({plan.code})"),
            (
                "Valued",
                f"at the close of the Valuation Dates {day(figures.begin_date)} (beginning) and "
                f"{day(figures.end_date)} (ending) ({version.cite('valuation_calendar')})",
            ),
            ("Reference", reference),
        ]
    )

    doc.heading("Summary of your accounts")
    rows = [["Beginning balance", amount(figures.total("beginning"))]]
    for source, value in figures.credits_by_source().items():
        rows.append([f"Credits: {SOURCE_LABELS.get(source, source)}", amount(value)])
    rows += [
        ["Earnings (investment gain or loss)", amount(figures.total("earnings"))],
        ["Distributions", amount(figures.total("distributions"))],
        ["Forfeitures", amount(figures.total("forfeitures"))],
    ]
    if figures.total("exchanges"):
        rows.append(["Exchanges between funds (net)", amount(figures.total("exchanges"))])
    if figures.total("adjustments"):
        rows.append(["Adjustments", amount(figures.total("adjustments"))])
    rows += [
        ["Ending balance", amount(figures.total("ending"))],
        ["  of which vested", amount(figures.vested)],
        ["  of which not yet vested", amount(figures.unvested)],
    ]
    doc.table([Column("", 0.7), Column("Amount", 0.3, "R")], rows)

    doc.heading("By account")
    cols = [
        Column("Account", 0.31),
        Column("Beginning", 0.11, "R"),
        Column("Credits", 0.1, "R"),
        Column("Earnings", 0.1, "R"),
        Column("Paid out", 0.1, "R"),
        Column("Forfeited", 0.09, "R"),
        Column("Ending", 0.11, "R"),
        Column("Vested", 0.08, "R"),
    ]
    rows = []
    for a in figures.accounts:
        credits = sum(a.credits.values(), ZERO) + a.exchanges + a.adjustments
        rows.append(
            [
                a.label,
                amount(a.beginning),
                amount(credits),
                amount(a.earnings),
                amount(a.distributions),
                amount(a.forfeitures),
                amount(a.ending),
                f"{a.vested_percent.normalize():f}%",
            ]
        )
    doc.table(cols, rows, size=8.2)
    vest_rows = [[a.label, amount(a.vested), amount(a.unvested), a.vesting_cite] for a in figures.accounts]
    doc.table(
        [
            Column("Vesting", 0.4),
            Column("Vested", 0.2, "R"),
            Column("Not yet vested", 0.2, "R"),
            Column("Section", 0.2),
        ],
        vest_rows,
    )
    for a in figures.accounts:
        if a.credits:
            by_source = "; ".join(
                f"{SOURCE_LABELS.get(s, s)} {amount(v)}" for s, v in sorted(a.credits.items())
            )
            doc.paragraph(f"{a.label}, credits by source: {by_source}.", size=8.5)

    doc.heading("By fund")
    cols = [
        Column("Account and fund", 0.27),
        Column("Units, start", 0.13, "R"),
        Column("Units, end", 0.13, "R"),
        Column("Price, end", 0.11, "R"),
        Column("Value, start", 0.12, "R"),
        Column("Activity", 0.12, "R"),
        Column("Value, end", 0.12, "R"),
    ]
    rows = []
    for a in figures.accounts:
        if a.funds:
            rows.append([a.label, "", "", "", "", "", ""])
        for line in a.funds:
            rows.append(
                [
                    f"   {line.code} {line.name}",
                    units(line.units_begin),
                    units(line.units_end),
                    "-" if line.price_end is None else f"{line.price_end:,.6f}",
                    amount(line.value_begin),
                    amount(line.activity + line.earnings),
                    amount(line.value_end),
                ]
            )
    doc.table(cols, rows or [["No fund holdings", "", "", "", "", "", ""]])
    doc.paragraph(
        "Activity is the money credited, paid out, forfeited or exchanged plus the earnings of the period.",
        size=8.5,
    )

    doc.heading("Your personal rate of return")
    doc.table(
        [
            Column("Period", 0.2),
            Column("B", 0.14, "R"),
            Column("F", 0.14, "R"),
            Column("Sum Wi x Fi", 0.14, "R"),
            Column("E - B - F", 0.14, "R"),
            Column("CD", 0.08, "R"),
            Column("R", 0.16, "R"),
        ],
        [
            _dietz_rows(f"Quarter to {figures.period_end:%b %-d}", figures.quarter),
            _dietz_rows(f"Year to {figures.period_end:%b %-d}", figures.year),
        ],
    )
    doc.paragraph(DIETZ_FORMULA, size=8.5)

    doc.heading("Elections in force")
    doc.pairs(
        [
            ("Deferrals", "; ".join(figures.deferral) or "No deferral election in force."),
            (
                "Distributions",
                "; ".join(figures.distribution)
                or "No distribution election on file: the plan's default form applies.",
            ),
            ("Investments", "; ".join(figures.investment)),
            ("Beneficiaries", "; ".join(figures.beneficiaries)),
        ]
    )
    doc.heading("Next payments scheduled")
    if figures.next_payments:
        doc.table(
            [
                Column("Payment date", 0.2),
                Column("Account", 0.3),
                Column("Form", 0.3),
                Column("Amount", 0.2, "R"),
            ],
            [
                [
                    day(p.payment_date),
                    p.account.kind.replace("_", " "),
                    f"{p.get_kind_display()} {p.number} of {p.of}",
                    amount(p.amount) if p.amount is not None else "valued when due",
                ]
                for p in figures.next_payments
            ],
        )
    else:
        doc.paragraph("No payment is scheduled after the end of this period.")
    doc.paragraph(
        "Every figure on this statement is taken from the plan's books and was checked when the statement was "
        "made: for each fund of each account, the beginning value plus the period's activity and earnings is the "
        f"ending value. Questions: write to the Committee ({version.cite('committee_min_members')}).",
        size=8.5,
    )
    members = int(version.provision("committee_min_members", 3))
    doc.signature_lines(["For the Committee: signature and date"] * min(members, 2))
    return doc.bytes()


def annual_benefit_pdf(*, data: dict, reference: str) -> bytes:
    """The BRP annual statement: not yet in pay (the benefit and every form) or in pay (payments of the year)."""
    participation = data["participation"]
    person, plan = participation.person, participation.plan
    version = data["version"]
    doc = _letterhead("Annual benefit statement", plan, version)
    doc.title_block(f"Benefit statement as of {day(data['as_of'])}")
    doc.pairs(
        [
            ("Participant", f"{person.full_name} (employee {person.employee_number})"),
            ("Born", day(person.birth_date)),
            ("Plan", f"{plan.name} ({plan.code})"),
            ("Reference", reference),
        ]
    )
    if data["in_pay"]:
        annuity = data["annuity"]
        doc.heading("Your benefit in pay")
        doc.pairs(
            [
                ("Form", annuity.form_label or annuity.form),
                ("Commencement", day(annuity.commencement_date)),
                ("Monthly benefit", amount(data["monthly"])),
            ]
        )
        doc.heading(f"Payments made in {data['as_of'].year}")
        rows = [
            [
                day(p.paid_on or p.payment_date),
                p.benefit or p.get_kind_display(),
                amount(p.amount),
                amount(p.federal_withholding),
                amount(p.state_withholding),
                amount(p.net_amount),
            ]
            for p in data["paid"]
        ]
        rows.append(
            [
                "Total",
                "",
                amount(data["totals"]["gross"]),
                amount(data["totals"]["federal"]),
                amount(data["totals"]["state"]),
                amount(data["totals"]["net"]),
            ]
        )
        doc.table(
            [
                Column("Paid on", 0.17),
                Column("Benefit", 0.27),
                Column("Gross", 0.14, "R"),
                Column("Federal w/h", 0.14, "R"),
                Column("State w/h", 0.14, "R"),
                Column("Net", 0.14, "R"),
            ],
            rows,
            bold_last=True,
        )
    else:
        quote = data["quote"]
        doc.heading("Your Supplemental Benefit")
        if quote is None:
            doc.paragraph(data["error"] or "The benefit cannot be computed from the figures on file.")
        else:
            doc.pairs(
                [
                    ("Separation (or as if on)", day(quote.separation_date)),
                    (
                        "Benefit Commencement Date",
                        f"{day(quote.commencement_date)} ({quote.cites.get('commencement', '')})",
                    ),
                    ("Single life annuity", f"{amount(quote.single_life_annual)} a year"),
                    ("Form in force", quote.form_label),
                    ("Monthly in that form", amount(quote.monthly)),
                ]
            )
            doc.table(
                [Column("Step", 0.6), Column("Annual amount", 0.2, "R"), Column("Section", 0.2)],
                [[what, _figure(value), cite] for what, value, cite in quote.steps],
            )
            doc.heading("Every form of benefit (Actuarially Equivalent)")
            rows = []
            for o in quote.forms:
                if o.unavailable:
                    rows.append([o.label, "-", "-", o.unavailable[:40]])
                elif o.form == "lump_sum":
                    rows.append([o.label, "-", f"{amount(o.annual)} once", "elected" if o.is_elected else ""])
                else:
                    rows.append(
                        [
                            o.label,
                            amount(o.monthly),
                            amount(o.annual),
                            "in force" if o.is_elected else ("default" if o.is_default else ""),
                        ]
                    )
            doc.table(
                [
                    Column("Form", 0.46),
                    Column("Monthly", 0.17, "R"),
                    Column("Annual", 0.2, "R"),
                    Column("", 0.17),
                ],
                rows,
            )
            doc.paragraph(f"Basis: {quote.basis} ({quote.cites.get('basis', '')}).", size=8.5)
            for note in quote.notes:
                doc.paragraph(note, size=8.5)
    doc.heading("Beneficiaries on file")
    doc.paragraph("; ".join(data["beneficiaries"]))
    members = int(version.provision("committee_min_members", 3))
    doc.signature_lines(["For the Committee: signature and date"] * min(members, 2))
    return doc.bytes()
