"""The payroll feed: each pay line becomes the deferrals and matching it carries (EDCP 7.1, RRP 3.03, 3.04).

One engine for one pay line and for a file of a hundred thousand: a PayrollRun loads, in a handful of
queries, everything its people need (participations and plan provisions, employment events, election
lines and cancellations, year-to-date figures, accounts), computes every line in memory in the order
added, and writes records, deferrals, new accounts and pending credits with bulk inserts.
Year-to-date figures (RRP Plan Compensation above the 401(a)(17) limit, RRP 2011 matching) count every
pay of the plan year recorded before this one: earlier pay dates, and on the same date earlier records.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone
from simple_history.utils import bulk_create_with_history

from books.models import Account, EntryKind, PayrollDeferral, PayrollRecord, PendingTransaction, Source
from books.services.accounts import BooksError, parse_account_name
from core.audit import actor_label
from core.errors import ApplicationError
from core.models import ImportBatch
from core.money import ZERO, money, percent_of, split_by_percent
from elections.models import DeferralCancellation, DeferralElectionLine, Status
from elections.selectors import allocation_of, cancellation_covering, choose_deferral_line
from participants.models import EmploymentEvent, Participation, Person
from participants.selectors import employment_status_from_events
from plans.models import Plan
from plans.selectors import announced_percent, figure_for_year

if TYPE_CHECKING:
    from core.audit import Actor
    from plans.models import PlanVersion


class PayrollError(ApplicationError):
    pass


def plan_year_of(*, pay_date: dt.date) -> int:
    return pay_date.year


@dataclass
class PayLine:
    """One line of pay: from a payroll file (line_number, batch), the API or a service call."""

    person: Person
    pay_date: dt.date
    component: str
    gross: Decimal
    plan_year: int | None = None
    period_start: dt.date | None = None
    performance_period_end: dt.date | None = None
    net_available: Decimal | None = None
    sequence: int = 1
    batch: ImportBatch | None = None
    line_number: int | None = None


@dataclass
class _Ytd:
    pay_date: dt.date
    compensation: Decimal
    plan_compensation: Decimal
    deferral: Decimal
    matching: Decimal


@dataclass
class _Credit:
    participation: Participation
    account_name: str
    source: str
    amount: Decimal
    key_suffix: str
    memo: str
    cite: str


@dataclass
class _Computed:
    record: PayrollRecord
    deferrals: list[tuple[PayrollDeferral, list[_Credit]]] = field(default_factory=list)


class PayrollRun:
    """Pay lines computed in memory and written in bulk. Use: run = PayrollRun.for_people(...); run.add(line)...;
    run.save(). A line the plans refuse raises PayrollError from add() and leaves the run as it was."""

    def __init__(self, *, actor: Actor, limits: dict | None = None, now: dt.datetime | None = None) -> None:
        self.actor = actor_label(actor)
        self.limits = limits
        self.now = now or timezone.now()
        self.participations: dict[int, list[Participation]] = {}
        self.events: dict[int, list[EmploymentEvent]] = {}
        self.lines: dict[tuple[int, str], list[DeferralElectionLine]] = defaultdict(list)
        self.cancellations: dict[int, list[DeferralCancellation]] = defaultdict(list)
        self.ytd: dict[tuple[int, int], list[_Ytd]] = defaultdict(list)
        self.accounts: dict[int, dict[str, Account]] = defaultdict(dict)
        self.recorded: set[tuple[int, dt.date, str, int]] = set()
        self.computed: list[_Computed] = []
        self.planned: dict[int, set[str]] = defaultdict(set)  # accounts this run will open, by participation
        self._figures: dict[tuple[str, int], Decimal] = {}
        self._announced: dict[tuple[int, str, int], Decimal] = {}

    @classmethod
    def for_people(
        cls,
        people: Iterable[Person],
        *,
        actor: Actor,
        limits: dict | None = None,
        now: dt.datetime | None = None,
        years: set[int] | None = None,
    ) -> PayrollRun:
        run = cls(actor=actor, limits=limits, now=now)
        ids = sorted({p.pk for p in people})
        plans = {plan.pk: plan for plan in Plan.objects.prefetch_related("versions__provisions")}
        for plan in plans.values():
            plan._versions_cache = sorted(plan.versions.all(), key=lambda v: v.effective_date)
            for version in plan._versions_cache:
                version._provision_cache = {p.key: p for p in version.provisions.all()}
        run.participations = {i: [] for i in ids}
        run.events = {i: [] for i in ids}
        part_ids = []
        for participation in Participation.objects.filter(person_id__in=ids).order_by("plan__code", "id"):
            participation.plan = plans[participation.plan_id]
            run.participations[participation.person_id].append(participation)
            part_ids.append(participation.pk)
        for event in EmploymentEvent.objects.filter(person_id__in=ids):
            run.events[event.person_id].append(event)
        for line in (
            DeferralElectionLine.objects.select_related("election")
            .prefetch_related("election__allocations")
            .filter(election__participation_id__in=part_ids, election__status=Status.ACCEPTED)
        ):
            run.lines[(line.election.participation_id, line.component)].append(line)
        for c in DeferralCancellation.objects.filter(participation_id__in=part_ids):
            run.cancellations[c.participation_id].append(c)
        ytd = PayrollDeferral.objects.filter(participation_id__in=part_ids)
        if years:
            ytd = ytd.filter(record__plan_year__in=years)
        for row in ytd.values(
            "participation_id",
            "record__plan_year",
            "record__pay_date",
            "compensation",
            "plan_compensation",
            "deferral",
            "matching",
        ):
            run.ytd[(row["participation_id"], row["record__plan_year"])].append(
                _Ytd(
                    row["record__pay_date"],
                    row["compensation"],
                    row["plan_compensation"],
                    row["deferral"],
                    row["matching"],
                )
            )
        for account in Account.objects.filter(participation_id__in=part_ids):
            run.accounts[account.participation_id][account.name] = account
        recorded = PayrollRecord.objects.filter(person_id__in=ids)
        if years:
            recorded = recorded.filter(plan_year__in=years)
        run.recorded = set(recorded.values_list("person_id", "pay_date", "component", "sequence"))
        return run

    # --- reads, cached for the run ---------------------------------------------------------------

    def figure(self, code: str, year: int) -> Decimal:
        key = (code, year)
        if key not in self._figures:
            self._figures[key] = figure_for_year(code=code, year=year, overrides=self.limits)
        return self._figures[key]

    def announced(self, plan: Plan, table: str, year: int) -> Decimal:
        key = (plan.pk, table, year)
        if key not in self._announced:
            self._announced[key] = announced_percent(plan=plan, code=table, year=year)
        return self._announced[key]

    def _ytd_sum(self, participation: Participation, plan_year: int, pay_date: dt.date, attr: str) -> Decimal:
        return sum(
            (getattr(r, attr) for r in self.ytd[(participation.pk, plan_year)] if r.pay_date <= pay_date),
            ZERO,
        )

    # --- computing ----------------------------------------------------------------------------------

    def is_recorded(self, line: PayLine) -> bool:
        return (line.person.pk, line.pay_date, line.component, line.sequence) in self.recorded

    def add(self, line: PayLine) -> PayrollRecord | None:
        """Compute one pay line (None if it is already recorded: idempotent)."""
        if self.is_recorded(line):
            return None
        person = line.person
        status = employment_status_from_events(
            person=person, events=self.events.get(person.pk, []), day=line.pay_date
        )
        if not status.employed:
            raise PayrollError(
                f"{person.employee_number} was not employed on {line.pay_date} ({status.reason})"
            )
        if line.gross < 0:
            raise PayrollError(f"gross pay {line.gross} is negative")
        record = PayrollRecord(
            person=person,
            pay_date=line.pay_date,
            component=line.component,
            gross=money(line.gross),
            plan_year=line.plan_year or plan_year_of(pay_date=line.pay_date),
            period_start=line.period_start,
            performance_period_end=line.performance_period_end,
            net_available=line.net_available,
            sequence=line.sequence,
            batch=line.batch,
            line_number=line.line_number,
            recorded_at=self.now,
            actor=self.actor,
        )
        computed = _Computed(record)
        new_ytd = []
        for participation in self.participations.get(person.pk, []):
            if participation.plan.kind != "account_balance":
                continue
            result = self._deferral(record, participation)
            if result is not None:
                computed.deferrals.append(result)
                row = result[0]
                new_ytd.append(
                    (
                        participation,
                        _Ytd(
                            record.pay_date,
                            row.compensation,
                            row.plan_compensation,
                            row.deferral,
                            row.matching,
                        ),
                    )
                )
        opening = self._check_accounts(computed)
        for participation, ytd in new_ytd:
            self.ytd[(participation.pk, record.plan_year)].append(ytd)
        for part_id, names in opening.items():
            self.planned[part_id] |= names
        self.recorded.add((person.pk, line.pay_date, line.component, line.sequence))
        self.computed.append(computed)
        return record

    def _deferral(
        self, record: PayrollRecord, participation: Participation
    ) -> tuple[PayrollDeferral, list[_Credit]] | None:
        version = participation.plan.version_on(record.pay_date)
        if not version.provision("deferral_components", None):
            return None
        if version.provision("plan_compensation") == "above_401a17":
            component = "plan_compensation"
            limit = self.figure("401(a)(17)", record.plan_year)
            comp_before = self._ytd_sum(participation, record.plan_year, record.pay_date, "compensation")
            plan_comp = money(max(ZERO, comp_before + record.gross - max(limit, comp_before)))
        else:
            component = record.component
            if version.component(component) is None:
                return None
            plan_comp = record.gross
        line = choose_deferral_line(
            lines=self.lines[(participation.pk, component)],
            cancellations=self.cancellations[participation.pk],
            evergreen=version.provision("evergreen", False),
            plan_year=record.plan_year,
            pay_date=record.pay_date,
            period_start=record.period_start,
            performance_period_end=record.performance_period_end,
        )
        percent = line.percent if line else ZERO
        reason = ""
        cancelled = cancellation_covering(
            cancellations=self.cancellations[participation.pk], day=record.pay_date
        )
        if cancelled and percent:
            reason = f"deferrals cancelled {cancelled.starts_on} to {cancelled.ends_on} ({cancelled.cite}): {cancelled.reason}"
            percent = ZERO
        deferral = percent_of(plan_comp, percent)
        reduced_by = ZERO
        cap = version.provision("net_pay_cap_percent", None)
        if cap is not None and record.net_available is not None:
            ceiling = percent_of(record.net_available, Decimal(cap))
            if deferral > ceiling:
                # EDCP 1.14: a deferral never exceeds the cash pay left after taxes and deductions.
                reduced_by = deferral - ceiling
                reason = (
                    f"reduced from {deferral} to {ceiling}: a deferral may not exceed {cap}% of the cash pay "
                    f"left after taxes and deductions ({version.cite('net_pay_cap_percent')})"
                )
                deferral = ceiling
        matching = self._matching(version, participation, record, deferral, plan_comp)
        row = PayrollDeferral(
            participation=participation,
            election=line.election if line else None,
            compensation=record.gross,
            plan_compensation=plan_comp,
            percent=percent,
            deferral=deferral,
            matching=matching,
            reduced_by=reduced_by,
            reason=reason,
        )
        credits = []
        if deferral:
            default_kind = version.provision("default_deferral_account")
            for account_name, amount in split_by_percent(
                deferral, allocation_of(election=line.election if line else None, default_kind=default_kind)
            ):
                if amount:
                    credits.append(
                        _Credit(
                            participation,
                            account_name,
                            Source.DEFERRAL,
                            amount,
                            f"deferral:{account_name}",
                            f"{percent}% of {plan_comp} {component.replace('_', ' ')} paid {record.pay_date}",
                            version.cite("deferral_components"),
                        )
                    )
        if matching:
            credits.append(
                _Credit(
                    participation,
                    "matching",
                    Source.MATCHING,
                    matching,
                    "matching",
                    f"Matching on the deferral of {record.pay_date}",
                    version.cite("matching"),
                )
            )
        return row, credits

    def _matching(
        self,
        version: PlanVersion,
        participation: Participation,
        record: PayrollRecord,
        deferral: Decimal,
        plan_comp: Decimal,
    ) -> Decimal:
        rule = version.provision("matching", None)
        if not rule or not deferral:
            return ZERO
        rate = Decimal(rule["rate"])
        cap_percent = Decimal(rule["cap_percent"])
        if rule["basis"] == "pay_period":
            # RRP 2017 3.04: 100% of the deferral for the pay period, at most 6% of its Plan Compensation.
            base = plan_comp if rule["cap_base"] == "plan_compensation" else record.gross
            return min(money(deferral * rate), percent_of(base, cap_percent))
        # RRP 2011 3.04: for the plan year, 50% of the announced percentage of deferrals, at most 5% of
        # Compensation; computed on year-to-date figures so each pay period trues up the year so far.
        announced = self.announced(participation.plan, rule["announced_percent_table"], record.plan_year)
        ytd = lambda attr: self._ytd_sum(participation, record.plan_year, record.pay_date, attr)  # noqa: E731
        deferrals = ytd("deferral") + deferral
        comp_field = "plan_compensation" if rule["cap_base"] == "plan_compensation" else "compensation"
        comp = ytd(comp_field) + (plan_comp if comp_field == "plan_compensation" else record.gross)
        target = min(money(deferrals * rate * announced / 100), percent_of(comp, cap_percent))
        return max(ZERO, target - ytd("matching"))

    def _check_accounts(self, computed: _Computed) -> dict[int, set[str]]:
        """Every account a credit goes to exists or may be opened (the plan has it; not over its count)."""
        planned: dict[int, set[str]] = defaultdict(set)
        for _, credits in computed.deferrals:
            for credit in credits:
                participation, name = credit.participation, credit.account_name
                existing = self.accounts[participation.pk]
                if (
                    name in existing
                    or name in self.planned[participation.pk]
                    or name in planned[participation.pk]
                ):
                    continue
                kind, month = parse_account_name(name=name)
                version = participation.plan.version_on(computed.record.pay_date)
                spec = version.account_spec(kind)
                if spec is None:
                    raise PayrollError(
                        f"{participation.plan.code} has no {kind.replace('_', ' ')} account "
                        f"({version.cite('accounts')})"
                    )
                same_kind = {
                    n
                    for n in set(existing) | self.planned[participation.pk] | planned[participation.pk]
                    if parse_account_name(name=n)[0] == kind
                }
                if len(same_kind) >= spec["max_count"]:
                    raise PayrollError(
                        f"{participation.plan.code} allows at most {spec['max_count']} {spec['label']}s "
                        f"({spec.get('cite', version.cite('accounts'))})"
                    )
                planned[participation.pk].add(name)
        return planned

    # --- writing ------------------------------------------------------------------------------------

    @transaction.atomic
    def save(self) -> list[PayrollRecord]:
        if not self.computed:
            return []
        records = PayrollRecord.objects.bulk_create([c.record for c in self.computed], batch_size=2000)
        new_accounts: dict[tuple[int, str], Account] = {}
        for c in self.computed:
            for _, credits in c.deferrals:
                for credit in credits:
                    key = (credit.participation.pk, credit.account_name)
                    if (
                        credit.account_name not in self.accounts[credit.participation.pk]
                        and key not in new_accounts
                    ):
                        kind, month = parse_account_name(name=credit.account_name)
                        new_accounts[key] = Account(
                            participation=credit.participation,
                            kind=kind,
                            specified_month=month,
                            opened_on=c.record.pay_date,
                        )
        if new_accounts:
            bulk_create_with_history(list(new_accounts.values()), Account, batch_size=2000)
            for (part_id, name), account in new_accounts.items():
                if account.pk is None:
                    account = Account.objects.get(
                        participation_id=part_id, kind=account.kind, specified_month=account.specified_month
                    )
                self.accounts[part_id][name] = account
        deferrals, pending = [], []
        for c in self.computed:
            for row, credits in c.deferrals:
                row.record = c.record
                deferrals.append(row)
                line_key = f"pay:{c.record.pk}:{row.participation.pk}"
                for credit in credits:
                    pending.append(
                        PendingTransaction(
                            account=self.accounts[credit.participation.pk][credit.account_name],
                            kind=EntryKind.CREDIT,
                            source=credit.source,
                            amount=credit.amount,
                            effective_date=c.record.pay_date,
                            idempotency_key=f"{line_key}:{credit.key_suffix}",
                            actor=self.actor,
                            created_at=self.now,
                            memo=credit.memo[:300],
                            cite=credit.cite,
                        )
                    )
        PayrollDeferral.objects.bulk_create(deferrals, batch_size=2000)
        PendingTransaction.objects.bulk_create(pending, batch_size=2000)
        self.computed = []
        self.planned.clear()
        return records


@transaction.atomic
def pay_record(
    *,
    person: Person,
    pay_date: dt.date,
    component: str,
    gross: Decimal,
    actor: Actor,
    plan_year: int | None = None,
    period_start: dt.date | None = None,
    performance_period_end: dt.date | None = None,
    net_available: Decimal | None = None,
    sequence: int = 1,
    batch: ImportBatch | None = None,
    line_number: int | None = None,
    limits: dict | None = None,
    now: dt.datetime | None = None,
) -> tuple[PayrollRecord, bool]:
    """Record one pay line and credit what it defers, in every plan the person takes part in. Idempotent."""
    existing = PayrollRecord.objects.filter(
        person=person, pay_date=pay_date, component=component, sequence=sequence
    ).first()
    if existing:
        return existing, False
    year = plan_year or plan_year_of(pay_date=pay_date)
    run = PayrollRun.for_people([person], actor=actor, limits=limits, now=now, years={year})
    try:
        record = run.add(
            PayLine(
                person=person,
                pay_date=pay_date,
                component=component,
                gross=gross,
                plan_year=year,
                period_start=period_start,
                performance_period_end=performance_period_end,
                net_available=net_available,
                sequence=sequence,
                batch=batch,
                line_number=line_number,
            )
        )
    except BooksError as exc:
        raise PayrollError(str(exc))
    if record is None:  # recorded by a concurrent import since the check above
        return PayrollRecord.objects.get(
            person=person, pay_date=pay_date, component=component, sequence=sequence
        ), False
    run.save()
    return record, True
