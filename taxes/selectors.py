"""Reads of the tax figures: the FICA feed of a pay date and the year-end figures (RULES.md "FICA special timing
and year-end tax reporting"; the Form W-2 instructions, FACTS.md part 4)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal

from django.db.models import QuerySet, Sum

from books.models import EntryKind, LedgerEntry, PendingTransaction
from core.money import ZERO
from participants.models import Beneficiary, EmploymentEvent, Person
from participants.selectors import beneficiaries_in_force
from payments.models import ScheduledPayment
from taxes.models import FeedTake, FicaWage
from taxes.services.fica import CREDIT_SOURCES

W2_CITE = (
    "Form W-2 instructions, boxes 1, 3, 5 and 11; RULES.md FICA special timing and year-end tax reporting"
)


def feed_rows(*, feed_date: dt.date) -> QuerySet[FicaWage]:
    return (
        FicaWage.objects.filter(feed_date=feed_date)
        .select_related("person", "participation__plan")
        .order_by("person__employee_number", "date", "id")
    )


def feed_dates(*, limit: int = 60) -> list[dict]:
    """The pay dates that have a feed, newest first: rows, total, the last take and what came since."""
    out = []
    dates = (
        FicaWage.objects.filter(feed_date__isnull=False)
        .values("feed_date")
        .annotate(total=Sum("amount"))
        .order_by("-feed_date")[:limit]
    )
    for row in dates:
        day = row["feed_date"]
        if day is None:
            continue
        last = FeedTake.objects.filter(feed_date=day).first()
        ids = set(FicaWage.objects.filter(feed_date=day).values_list("id", flat=True))
        new = ids - set(last.row_ids) if last else ids
        out.append(
            {
                "feed_date": day,
                "rows": len(ids),
                "total": row["total"] or ZERO,
                "last_take": last,
                "new_since_take": len(new),
            }
        )
    return out


def feed_changes(*, feed_date: dt.date) -> tuple[FeedTake | None, list[FicaWage]]:
    """The last take of the feed and the rows added since it (all of them when it was never taken)."""
    last = FeedTake.objects.filter(feed_date=feed_date).first()
    rows = list(feed_rows(feed_date=feed_date))
    if last is None:
        return None, rows
    taken = set(last.row_ids)
    return last, [r for r in rows if r.pk not in taken]


def feed_unassigned() -> QuerySet[FicaWage]:
    """Rows with no pay date yet on or after them (the next payroll feed carries them)."""
    return FicaWage.objects.filter(feed_date__isnull=True).select_related("person", "participation__plan")


@dataclass
class PersonYear:
    person_id: int
    fica_wages: Decimal = ZERO
    deferred_or_resolved: bool = False  # any plan amount in boxes 3/5 this year
    vested_prior_years: Decimal = ZERO
    w2_box_1: Decimal = ZERO
    form_1099_misc_box_3: Decimal = ZERO
    beneficiary_payments: dict[str, Decimal] = field(default_factory=dict)  # payee name -> total
    by_plan: dict[str, dict[str, Decimal]] = field(default_factory=dict)

    @property
    def w2_box_3(self) -> Decimal:
        return self.fica_wages

    @property
    def w2_box_5(self) -> Decimal:
        return self.fica_wages

    @property
    def w2_box_11(self) -> Decimal | None:
        """Distributions, unless a plan amount is also in boxes 3/5 this year (then blank: None); without
        distributions, what vested this year for services of earlier years."""
        if self.w2_box_1 > 0:
            return None if self.fica_wages != 0 else self.w2_box_1
        return self.vested_prior_years

    def _plan(self, code: str) -> dict[str, Decimal]:
        return self.by_plan.setdefault(
            code, {"fica_wages": ZERO, "w2_box_1": ZERO, "form_1099_misc_box_3": ZERO}
        )


def payment_recipient(*, payment: ScheduledPayment, death: dt.date | None) -> str:
    """Who a paid payment is reported for: "employee" (W-2 box 1), "beneficiary" (1099-MISC box 3, paid after the
    participant's death) or "alternate_payee" (a domestic relations order: not the employee's figures here)."""
    if payment.trigger == "domestic_relations_order":
        return "alternate_payee"
    paid = payment.paid_on or payment.payment_date
    if death is not None and death <= paid:
        return "beneficiary"
    if payment.payee_name:
        return "alternate_payee"
    return "employee"


def year_figures(*, year: int, person_ids: list[int] | None = None) -> dict[int, PersonYear]:
    """Person id -> the year's figures (FICA wages by the date taken into account; distributions by the day paid)."""
    start, end = dt.date(year, 1, 1), dt.date(year, 12, 31)
    out: dict[int, PersonYear] = {}

    def get(pid: int) -> PersonYear:
        return out.setdefault(pid, PersonYear(pid))

    wages = FicaWage.objects.filter(date__gte=start, date__lte=end)
    payments = ScheduledPayment.objects.filter(
        status=ScheduledPayment.Status.PAID, paid_on__gte=start, paid_on__lte=end
    )
    if person_ids is not None:
        wages = wages.filter(person_id__in=person_ids)
        payments = payments.filter(participation__person_id__in=person_ids)
    for row in wages.values("person_id", "participation__plan__code", "kind").annotate(
        total=Sum("amount"), prior=Sum("prior_years_amount")
    ):
        fig = get(row["person_id"])
        fig.fica_wages += row["total"]
        fig._plan(row["participation__plan__code"])["fica_wages"] += row["total"]
        if row["kind"] in (FicaWage.Kind.VESTING, FicaWage.Kind.RESOLUTION):
            fig.vested_prior_years += row["prior"] or ZERO
    deaths = dict(
        EmploymentEvent.objects.filter(kind=EmploymentEvent.Kind.DEATH).values_list(
            "person_id", "effective_date"
        )
    )
    for p in payments.select_related("participation__plan").order_by("paid_on", "id"):
        pid = p.participation.person_id
        fig = get(pid)
        who = payment_recipient(payment=p, death=deaths.get(pid))
        plan = fig._plan(p.participation.plan.code)
        if who == "employee":
            fig.w2_box_1 += p.amount or ZERO
            plan["w2_box_1"] += p.amount or ZERO
        elif who == "beneficiary":
            fig.form_1099_misc_box_3 += p.amount or ZERO
            plan["form_1099_misc_box_3"] += p.amount or ZERO
            name = p.payee_name or "Estate"
            fig.beneficiary_payments[name] = fig.beneficiary_payments.get(name, ZERO) + (p.amount or ZERO)
    return out


def person_years(*, person: Person) -> list[tuple[int, PersonYear]]:
    """Every year with a figure for one person, newest first (the staff participant page, the portal)."""
    years = set(FicaWage.objects.filter(person=person).values_list("date__year", flat=True))
    years |= {
        d.year
        for d in ScheduledPayment.objects.filter(
            participation__person=person, status=ScheduledPayment.Status.PAID, paid_on__isnull=False
        ).values_list("paid_on", flat=True)
        if d is not None
    }
    out = []
    for year in sorted(years, reverse=True):
        fig = year_figures(year=year, person_ids=[person.pk]).get(person.pk)
        if fig is not None:
            out.append((year, fig))
    return out


@dataclass(frozen=True)
class BeneficiaryLine:
    person: Person
    payee: str
    amount: Decimal
    beneficiary: Beneficiary | None


def form_1099_lines(*, year: int) -> list[BeneficiaryLine]:
    """Per beneficiary paid after a death: the 1099-MISC box 3 amount, with the beneficiary on file (its taxpayer
    number and address are read only by the year-end file)."""
    out = []
    figures = year_figures(year=year)
    people = Person.objects.in_bulk([pid for pid, f in figures.items() if f.form_1099_misc_box_3])
    for pid, fig in sorted(figures.items()):
        for payee, amount in sorted(fig.beneficiary_payments.items()):
            person = people[pid]
            found = None
            for participation in person.participations.select_related("plan"):
                designation = beneficiaries_in_force(person=person, plan=participation.plan)
                if designation is None:
                    continue
                found = next((b for b in designation.beneficiaries.all() if b.name == payee), None)
                if found is not None:
                    break
            out.append(BeneficiaryLine(person, payee, amount, found))
    return out


def reconciliation(*, year: int) -> list[dict]:
    """By plan: FICA wages by kind against the credits in the books, and distributions reported against the
    distributions the ledger posted, each with its difference (a difference is explained or investigated)."""
    start, end = dt.date(year, 1, 1), dt.date(year, 12, 31)
    plans: dict[str, dict] = defaultdict(
        lambda: {
            "fica": defaultdict(lambda: ZERO),
            "credits_deferral": ZERO,
            "credits_other": ZERO,
            "reported_distributions": ZERO,
            "ledger_distributions": ZERO,
        }
    )
    for row in (
        FicaWage.objects.filter(date__gte=start, date__lte=end)
        .values("participation__plan__code", "kind")
        .annotate(total=Sum("amount"))
    ):
        plans[row["participation__plan__code"]]["fica"][row["kind"]] += row["total"]
    for credit in (
        PendingTransaction.objects.filter(
            kind=EntryKind.CREDIT,
            source__in=CREDIT_SOURCES,
            effective_date__gte=start,
            effective_date__lte=end,
            amount__gt=0,
        )
        .exclude(status=PendingTransaction.Status.CANCELLED)
        .values("account__participation__plan__code", "source")
        .annotate(total=Sum("amount"))
    ):
        key = "credits_deferral" if credit["source"] == "deferral" else "credits_other"
        plans[credit["account__participation__plan__code"]][key] += credit["total"]
    for paid in (
        ScheduledPayment.objects.filter(
            status=ScheduledPayment.Status.PAID, paid_on__gte=start, paid_on__lte=end
        )
        .values("participation__plan__code")
        .annotate(total=Sum("amount"))
    ):
        plans[paid["participation__plan__code"]]["reported_distributions"] += paid["total"] or ZERO
    for posted in (
        LedgerEntry.objects.filter(
            kind=EntryKind.DISTRIBUTION, effective_date__gte=start, effective_date__lte=end
        )
        .values("account__participation__plan__code")
        .annotate(total=Sum("amount"))
    ):
        plans[posted["account__participation__plan__code"]]["ledger_distributions"] += -(
            posted["total"] or ZERO
        )
    out = []
    for code in sorted(plans):
        p = plans[code]
        fica = dict(p["fica"])
        out.append(
            {
                "plan": code,
                "fica_deferral": fica.get("deferral", ZERO),
                "fica_credit": fica.get("credit", ZERO),
                "fica_vesting": fica.get("vesting", ZERO),
                "fica_resolution": fica.get("resolution", ZERO),
                "fica_total": sum(fica.values(), ZERO),
                "books_deferrals": p["credits_deferral"],
                "deferral_difference": fica.get("deferral", ZERO) - p["credits_deferral"],
                "books_company_credits": p["credits_other"],
                "reported_distributions": p["reported_distributions"],
                "ledger_distributions": p["ledger_distributions"],
                "distribution_difference": p["reported_distributions"] - p["ledger_distributions"],
            }
        )
    return out
