"""Loading what the schedule engine needs, for many accounts at once (a fixed number of queries)."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict

from books.models import Account
from core import valuation_calendar as cal
from elections.models import DistributionElection, ScheduleChange, Status
from participants.models import ChangeInControl, EmploymentEvent, KeyEmployeeList
from payments.services.beneficiaries import Payees, death_payees
from payments.services.engine import AccountFacts, Change, Election, KeyStatus
from payments.services.values import available_values, known_valuation_date
from plans.models import Plan

EASTERN_ZONE = "America/New_York"


def _local(moment: dt.datetime) -> dt.date:
    import zoneinfo

    return moment.astimezone(zoneinfo.ZoneInfo(EASTERN_ZONE)).date()


def _identification_year(day: dt.date, spec: dict) -> int:
    return KeyEmployeeList.identification_year_for(
        day, spec.get("effective_month", 4), spec.get("effective_day", 1)
    )


def load_facts(
    *, accounts: list[Account], as_of: dt.date, credited: dt.date | None
) -> dict[int, AccountFacts]:
    if not accounts:
        return {}
    plans: dict[int, Plan] = {}
    participation_ids = {a.participation_id for a in accounts}
    person_of = {a.participation_id: a.participation.person_id for a in accounts}
    person_ids = set(person_of.values())
    for a in accounts:
        plans.setdefault(a.participation.plan_id, a.participation.plan)

    events: dict[int, dict[str, dt.date]] = defaultdict(dict)
    for person_id, kind, day in (
        EmploymentEvent.objects.filter(person_id__in=person_ids)
        .exclude(kind=EmploymentEvent.Kind.REHIRE)
        .order_by("effective_date", "id")
        .values_list("person_id", "kind", "effective_date")
    ):
        events[person_id].setdefault(kind, day)

    elections: dict[tuple, Election] = {}
    for e in DistributionElection.objects.filter(
        participation_id__in=participation_ids, status=Status.ACCEPTED
    ).order_by("submitted_at", "id"):
        elections[(e.participation_id, e.account_kind, e.specified_month)] = Election(
            form=e.form,
            installments=e.installments,
            lump_sum_percent=e.lump_sum_percent,
            delay_months=e.delay_months,
        )
    changes: dict[tuple, list[ScheduleChange]] = defaultdict(list)
    for c in ScheduleChange.objects.filter(
        participation_id__in=participation_ids, status=Status.ACCEPTED
    ).order_by("submitted_at", "id"):
        changes[(c.participation_id, c.account_kind, c.specified_month)].append(c)
    cics = sorted(ChangeInControl.objects.values_list("effective_date", flat=True))

    facts: dict[int, AccountFacts] = {}
    key_needed: dict[int, set[int]] = defaultdict(set)
    small_by_day: dict[dt.date, list[int]] = defaultdict(list)
    for a in accounts:
        plan = plans[a.participation.plan_id]
        ev = events.get(a.participation.person_id, {})
        sep = ev.get(EmploymentEvent.Kind.SEPARATION)
        death = ev.get(EmploymentEvent.Kind.DEATH)
        disability = ev.get(EmploymentEvent.Kind.DISABILITY)
        anchor = min([d for d in (sep, death, disability) if d] or [as_of])
        version = plan.version_on(anchor)
        key = (a.participation_id, a.kind, a.specified_month)
        own_changes = changes.get(key, [])
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
            election=elections.get(key),
            changes=[
                Change(
                    submitted_on=_local(c.submitted_at),
                    delay_years=c.delay_years,
                    form=c.form or None,
                    installments=c.installments,
                )
                for c in own_changes
            ],
            changes_of_control=cics,
        )
        if a.specified_month is not None:
            changed = next((c.new_first_payment for c in reversed(own_changes) if c.new_first_payment), None)
            if changed:
                f.specified_first_payment, f.specified_changed = changed, True
            else:
                sd_rule = next(
                    (
                        r
                        for r in version.provision("distribution", []) or []
                        if r["trigger"] == "specified_date" and a.kind in r["accounts"]
                    ),
                    None,
                )
                day = (sd_rule or {}).get("payment_date", {}).get("day", 15)
                f.specified_first_payment = a.specified_month.replace(day=day)
        if sep is not None:
            spec = version.provision("key_employee", None) or {}
            year = _identification_year(sep, spec)
            key_needed[year].add(a.id)
            f.key_status = KeyStatus(known=False, key=False, identification_year=year)
            small = version.provision("small_balance", None)
            if small and a.kind in small.get("accounts", []):
                small_by_day[sep].append(a.id)
                try:
                    f.separation_valuation_date = cal.last_valuation_date(sep)
                except ValueError:
                    f.separation_valuation_date = None
                f.value_known_through = known_valuation_date(on=sep, credited=credited)
        facts[a.id] = f

    if key_needed:
        lists = {
            lst.identification_year: lst
            for lst in KeyEmployeeList.objects.filter(identification_year__in=key_needed)
        }
        members = defaultdict(set)
        through = KeyEmployeeList.members.through
        for list_id, person_id in through.objects.filter(
            keyemployeelist_id__in=[x.id for x in lists.values()], person_id__in=person_ids
        ).values_list("keyemployeelist_id", "person_id"):
            members[list_id].add(person_id)
        by_id = {a.id: a for a in accounts}
        for year, account_ids in key_needed.items():
            lst = lists.get(year)
            for account_id in account_ids:
                person_id = by_id[account_id].participation.person_id
                facts[account_id].key_status = KeyStatus(
                    known=lst is not None,
                    key=lst is not None and person_id in members[lst.id],
                    identification_year=year,
                )
    payees: dict[tuple[int, int], Payees] = {}
    for a in accounts:
        f = facts[a.id]
        if f.death is None:
            continue
        person_plan = (a.participation.person_id, a.participation.plan_id)
        if person_plan not in payees:  # a few queries per death: deaths are rare
            payees[person_plan] = death_payees(
                person=a.participation.person,
                plan=plans[a.participation.plan_id],
                version=f.version,
                death=f.death,
            )
        f.death_payees = payees[person_plan]
    for day, small_ids in small_by_day.items():
        values = available_values(account_ids=small_ids, on=day, credited=credited, only_effective=True)
        for account_id in small_ids:
            facts[account_id].value_at_separation = values[account_id]
    return facts
