"""Loading what the schedule engine needs, for many accounts at once (a fixed number of queries)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from django.db.models import Min

from books.models import TAKEN_OVER_KEY_PREFIX, Account, LedgerEntry
from core import valuation_calendar as cal
from core.dates import EASTERN
from elections.models import DistributionElection, ScheduleChange, Status
from participants.models import ChangeInControl, EmploymentEvent, KeyEmployeeList
from participants.selectors import beneficiaries_in_force_of
from payments.models import TakenOverOverride
from payments.services.beneficiaries import Payees, death_payees
from payments.services.engine import AccountFacts, Change, Election, KeyStatus
from payments.services.values import available_values, known_valuation_date
from plans.models import Plan


def _local(moment: dt.datetime) -> dt.date:

    return moment.astimezone(EASTERN).date()


def _identification_year(day: dt.date, spec: dict) -> int:
    return KeyEmployeeList.identification_year_for(
        day, spec.get("effective_month", 4), spec.get("effective_day", 1)
    )


AccountKey = tuple[int, str, dt.date | None]  # (participation, account kind, specified month)


def load_facts(
    *, accounts: list[Account], as_of: dt.date, credited: dt.date | None
) -> dict[int, AccountFacts]:
    """The facts of each account, in a fixed number of queries: one loader per kind of fact."""
    if not accounts:
        return {}
    plans: dict[int, Plan] = {}  # one instance per plan, so its versions are read once
    for a in accounts:
        plans.setdefault(a.participation.plan_id, a.participation.plan)
    participation_ids = {a.participation_id for a in accounts}
    person_ids = {a.participation.person_id for a in accounts}
    events = _employment_events(person_ids)
    elections = _distribution_elections(participation_ids)
    changes = _schedule_changes(participation_ids)
    cics = sorted(ChangeInControl.objects.values_list("effective_date", flat=True))
    facts = {
        a.id: _account_facts(
            a,
            plan=plans[a.participation.plan_id],
            events=events.get(a.participation.person_id, {}),
            election=elections.get(_key(a)),
            changes=changes.get(_key(a), []),
            changes_of_control=cics,
            as_of=as_of,
        )
        for a in accounts
    }
    _key_employee_statuses(accounts, facts)
    _death_payees(accounts, facts, plans)
    _small_balance_values(accounts, facts, credited)
    _taken_over_overrides(facts)
    return facts


def _taken_over_overrides(facts: dict[int, AccountFacts]) -> None:
    """The overrides prior administrators determined before a conversion (EDCP 5.6, 5.7), for the separated."""
    separated = [i for i, f in facts.items() if f.separation is not None]
    if not separated:
        return
    for account_id, kind, source in TakenOverOverride.objects.filter(account_id__in=separated).values_list(
        "account_id", "kind", "source"
    ):
        facts[account_id].taken_over_override, facts[account_id].taken_over_override_source = kind, source


def _key(a: Account) -> AccountKey:
    return (a.participation_id, a.kind, a.specified_month)


def _employment_events(person_ids: set[int]) -> dict[int, dict[str, dt.date]]:
    """person -> the first date of each kind of employment event (a rehire starts nothing here)."""
    events: dict[int, dict[str, dt.date]] = defaultdict(dict)
    for person_id, kind, day in (
        EmploymentEvent.objects.filter(person_id__in=person_ids)
        .exclude(kind=EmploymentEvent.Kind.REHIRE)
        .order_by("effective_date", "id")
        .values_list("person_id", "kind", "effective_date")
    ):
        events[person_id].setdefault(kind, day)
    return events


def _distribution_elections(participation_ids: set[int]) -> dict[AccountKey, Election]:
    """The accepted distribution election of each account (the latest submitted wins)."""
    elections: dict[AccountKey, Election] = {}
    for e in DistributionElection.objects.filter(
        participation_id__in=participation_ids, status=Status.ACCEPTED
    ).order_by("submitted_at", "id"):
        elections[(e.participation_id, e.account_kind, e.specified_month)] = Election(
            form=e.form,
            installments=e.installments,
            lump_sum_percent=e.lump_sum_percent,
            delay_months=e.delay_months,
        )
    return elections


def _schedule_changes(participation_ids: set[int]) -> dict[AccountKey, list[ScheduleChange]]:
    """The accepted changes of payment schedule of each account, oldest first."""
    changes: dict[AccountKey, list[ScheduleChange]] = defaultdict(list)
    for c in ScheduleChange.objects.filter(
        participation_id__in=participation_ids, status=Status.ACCEPTED
    ).order_by("submitted_at", "id"):
        changes[(c.participation_id, c.account_kind, c.specified_month)].append(c)
    return changes


def _account_facts(
    a: Account,
    *,
    plan: Plan,
    events: dict[str, dt.date],
    election: Election | None,
    changes: list[ScheduleChange],
    changes_of_control: list[dt.date],
    as_of: dt.date,
) -> AccountFacts:
    """What one account's own rows say; the Key Employee status and the values are filled in later."""
    sep = events.get(EmploymentEvent.Kind.SEPARATION)
    death = events.get(EmploymentEvent.Kind.DEATH)
    disability = events.get(EmploymentEvent.Kind.DISABILITY)
    anchor = min([d for d in (sep, death, disability) if d] or [as_of])
    version = plan.version_on(anchor)
    spec_label = (version.account_spec(a.kind) or {}).get("label", a.kind.replace("_", " ").title())
    f = AccountFacts(
        account_id=a.id,
        kind=a.kind,
        name=a.name,
        label=f"{spec_label} ({a.specified_month:%B %Y})" if a.specified_month else spec_label,
        version=version,
        separation=sep,
        death=death,
        disability=disability,
        election=election,
        changes=[
            Change(
                submitted_on=_local(c.submitted_at),
                delay_years=c.delay_years,
                form=c.form or None,
                installments=c.installments,
            )
            for c in changes
        ],
        changes_of_control=changes_of_control,
    )
    if a.specified_month is not None:
        _specified_first_payment(f, a.specified_month, a.kind, changes)
    if sep is not None:
        _separation_facts(f, a.kind, sep)
    return f


def _specified_first_payment(
    f: AccountFacts, month: dt.date, kind: str, changes: list[ScheduleChange]
) -> None:
    """EDCP 5.2(b): the month chosen, on the plan's payment day, unless an accepted change moved it."""
    changed = next((c.new_first_payment for c in reversed(changes) if c.new_first_payment), None)
    if changed:
        f.specified_first_payment, f.specified_changed = changed, True
        return
    sd_rule = next(
        (
            r
            for r in f.version.provision("distribution", []) or []
            if r["trigger"] == "specified_date" and kind in r["accounts"]
        ),
        None,
    )
    day = (sd_rule or {}).get("payment_date", {}).get("day", 15)
    f.specified_first_payment = month.replace(day=day)


def _separation_facts(f: AccountFacts, kind: str, sep: dt.date) -> None:
    """After a separation: which Key Employee list decides (loaded later), and the small-balance dates."""
    spec = f.version.provision("key_employee", None) or {}
    year = _identification_year(sep, spec)
    f.key_status = KeyStatus(known=False, key=False, identification_year=year)
    small = f.version.provision("small_balance", None)
    if small and kind in small.get("accounts", []):
        try:
            f.separation_valuation_date = cal.last_valuation_date(sep)
        except ValueError:
            f.separation_valuation_date = None


def _key_employee_statuses(accounts: list[Account], facts: dict[int, AccountFacts]) -> None:
    """Each separated account's Key Employee status on the list of its identification year (if recorded)."""
    needed: dict[int, list[Account]] = defaultdict(list)
    for a in accounts:
        status = facts[a.id].key_status
        if status is not None:
            needed[status.identification_year].append(a)
    if not needed:
        return
    lists = {
        lst.identification_year: lst for lst in KeyEmployeeList.objects.filter(identification_year__in=needed)
    }
    members: dict[int, set[int]] = defaultdict(set)
    through = KeyEmployeeList.members.through
    for list_id, person_id in through.objects.filter(
        keyemployeelist_id__in=[x.id for x in lists.values()],
        person_id__in={a.participation.person_id for a in accounts},
    ).values_list("keyemployeelist_id", "person_id"):
        members[list_id].add(person_id)
    for year, separated in needed.items():
        lst = lists.get(year)
        for a in separated:
            facts[a.id].key_status = KeyStatus(
                known=lst is not None,
                key=lst is not None and a.participation.person_id in members[lst.id],
                identification_year=year,
            )


def _death_payees(accounts: list[Account], facts: dict[int, AccountFacts], plans: dict[int, Plan]) -> None:
    """Who is paid each dead participant's accounts (their designations read at once)."""
    payees: dict[tuple[int, int], Payees] = {}
    designations = beneficiaries_in_force_of(
        pairs={
            (a.participation.person_id, a.participation.plan_id)
            for a in accounts
            if facts[a.id].death is not None
        }
    )
    for a in accounts:
        f = facts[a.id]
        if f.death is None:
            continue
        person_plan = (a.participation.person_id, a.participation.plan_id)
        if person_plan not in payees:
            payees[person_plan] = death_payees(
                person=a.participation.person,
                plan=plans[a.participation.plan_id],
                version=f.version,
                death=f.death,
                designations=designations,
            )
        f.death_payees = payees[person_plan]


def _small_balance_values(
    accounts: list[Account], facts: dict[int, AccountFacts], credited: dt.date | None
) -> None:
    """A small-balance account's value on its separation date, and the last Valuation Date that value knows."""
    small_by_day: dict[dt.date, list[int]] = defaultdict(list)
    for a in accounts:
        f = facts[a.id]
        small = f.version.provision("small_balance", None)
        if f.separation is not None and small and a.kind in small.get("accounts", []):
            small_by_day[f.separation].append(a.id)
            f.value_known_through = known_valuation_date(on=f.separation, credited=credited)
    if not small_by_day:
        return
    taken_over = _taken_over_on([i for ids in small_by_day.values() for i in ids])
    for day, small_ids in small_by_day.items():
        values = available_values(account_ids=small_ids, on=day, credited=credited, only_effective=True)
        for account_id in small_ids:
            f = facts[account_id]
            start = taken_over.get(account_id)
            if f.value_known_through is not None and start is not None and f.value_known_through < start:
                # The account held money at separation but its books here begin later (taken over from a prior
                # administrator, which made the small-balance test): the value at separation is not in these books.
                continue
            f.value_at_separation = values[account_id]


def _taken_over_on(account_ids: list[int]) -> dict[int, dt.date]:
    """account -> the conversion date, for the accounts taken over in a conversion (their opening entry's key)."""
    return dict(
        LedgerEntry.objects.filter(
            account_id__in=account_ids, idempotency_key__startswith=TAKEN_OVER_KEY_PREFIX
        )
        .values("account_id")
        .annotate(first=Min("valuation_date"))
        .values_list("account_id", "first")
    )
