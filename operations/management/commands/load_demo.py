"""manage.py load_demo: a demo population for `make run`, built through the real services.

Staff users (one per role, and a second committee member for maker-checker), a few dozen participants
across EDCP, RRP and BRP with addresses, beneficiaries, Key Employee lists, elections (validated by
elections.services), two years of payroll (books.services.payroll), EDCP company contributions, an RRP
retirement restoration declaration, separations and a death (participants.services), funds with
deterministic prices, and every Valuation Date credited (books.services.crediting).

Idempotent: every step is keyed (employee numbers, idempotency keys, one price per fund and date) or
skipped when its record exists, so a second run changes nothing. A run on a later day adds that day's
prices, pay and crediting. The timeline hangs off the first price date, so it stays the same.
Only this command reads the clock: the "as of" date is the last Valuation Date before today.
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import hashlib
import hmac
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from books.models import ContributionDeclaration, DefinedBenefitRecord, PayrollDeferral, Source
from books.services.accounts import credit_create
from books.services.contributions import company_contribution_credit, restoration_declare
from books.services.crediting import credit_due_dates, last_credited_date
from books.services.payroll import pay_record
from core import valuation_calendar as cal
from core.dates import EASTERN, add_months, end_of_month, parse_month
from core.money import money, percent_of
from core.money import price as q_price
from core.roles import Role
from core.signin.services import demo_authenticator_enrol, secret_base32
from elections import services as elections
from elections.models import Channel, DeferralElection, DistributionElection, InvestmentElection, Status
from operations.population import population_copy
from participants.models import BeneficiaryDesignation, EmploymentEvent, KeyEmployeeList, Person
from participants.services import (
    beneficiaries_designate,
    employment_event_record,
    key_employee_list_record,
    participation_enrol,
)
from payments.services.day import RunStaff, production_day_run
from pensions.services.benefit import pension_figures_record
from plans.models import Fund, FundPrice, Plan
from plans.selectors import MissingFigure

PAYROLL = "payroll feed (demo)"

# (plan, code, name, default, start price, daily drift and volatility in basis points)
FUNDS = [
    ("EDCP", "SV", "Stable Value Fund", True, "10.00", 1, 1),
    ("EDCP", "BOND", "Core Bond Index Fund", False, "20.00", 1, 30),
    ("EDCP", "EQIX", "S&P 500 Index Fund", False, "40.00", 4, 110),
    ("EDCP", "INTL", "International Equity Fund", False, "25.00", 3, 130),
    ("RRP", "MMKT", "Capital Preservation Fund", True, "1.00", 1, 1),
    ("RRP", "AGG", "Aggregate Bond Fund", False, "15.00", 1, 35),
    ("RRP", "BAL", "Balanced Fund", False, "30.00", 2, 60),
    ("RRP", "GRW", "Large Cap Growth Fund", False, "50.00", 5, 140),
]
STAFF = [
    ("committee", Role.COMMITTEE, "Ruth", "Alvarez", "Benefits Committee member"),
    ("committee2", Role.COMMITTEE, "Samuel", "Okafor", "second Committee member (maker-checker)"),
    ("administrator", Role.ADMINISTRATOR, "Dana", "Whitfield", "plan administrator"),
    ("auditor", Role.AUDITOR, "Priya", "Natarajan", "auditor (read-only)"),
]
FIRST = [
    "Maria",
    "James",
    "Linda",
    "Robert",
    "Patricia",
    "Michael",
    "Jennifer",
    "David",
    "Elizabeth",
    "William",
    "Susan",
    "Richard",
    "Jessica",
    "Joseph",
    "Sarah",
    "Thomas",
    "Karen",
    "Charles",
    "Nancy",
    "Daniel",
    "Lisa",
    "Matthew",
    "Betty",
    "Anthony",
    "Sandra",
    "Mark",
    "Ashley",
    "Steven",
    "Kimberly",
    "Paul",
    "Emily",
    "Andrew",
    "Donna",
    "Joshua",
    "Michelle",
    "Kenneth",
    "Carol",
    "Kevin",
    "Amanda",
    "Brian",
]
LAST = [
    "Gonzalez",
    "Carter",
    "Nguyen",
    "Patel",
    "Morgan",
    "Brooks",
    "Reyes",
    "Fischer",
    "Okoro",
    "Lindqvist",
    "Hughes",
    "Tanaka",
    "Bennett",
    "Castillo",
    "Murphy",
    "Schwartz",
    "Ramirez",
    "Kowalski",
    "Foster",
    "Ibrahim",
    "Delgado",
    "Sullivan",
    "Chen",
    "Whitaker",
    "Moreau",
    "Haddad",
    "Novak",
    "Ortiz",
    "Sinclair",
    "Yamamoto",
    "Baker",
    "Rossi",
    "Kim",
    "Adeyemi",
    "Larsen",
    "Greene",
    "Petrov",
    "Silva",
    "Walsh",
    "Duarte",
]
STREETS = [
    "Monument Ave",
    "Grove Ave",
    "River Rd",
    "Cary St",
    "Patterson Ave",
    "Broad St",
    "Hanover Ave",
    "Three Chopt Rd",
    "Huguenot Rd",
    "Forest Hill Ave",
]
CITIES = [
    ("Richmond", "VA", "23220"),
    ("Henrico", "VA", "23229"),
    ("Midlothian", "VA", "23113"),
    ("Glen Allen", "VA", "23059"),
    ("Charlottesville", "VA", "22901"),
    ("Raleigh", "NC", "27601"),
]
EDCP_MIXES = [
    {"EQIX": 60, "BOND": 40},
    {"EQIX": 50, "INTL": 20, "BOND": 20, "SV": 10},
    {"INTL": 30, "EQIX": 70},
]
RRP_MIXES = [{"GRW": 60, "AGG": 40}, {"BAL": 100}, {"GRW": 40, "BAL": 40, "MMKT": 20}]


def demo_password(username: str) -> str:
    """Stable per installation (derived from SECRET_KEY), so a second run prints the same password."""
    digest = hmac.new(settings.SECRET_KEY.encode(), f"load_demo:{username}".encode(), hashlib.sha256).digest()
    return base64.b32encode(digest).decode().lower()[:16]


def demo_totp_key(username: str) -> str:
    """A demo staff user's authenticator key (20 bytes, hex), derived like the password: stable per installation."""
    return (
        hmac.new(settings.SECRET_KEY.encode(), f"load_demo:totp:{username}".encode(), hashlib.sha256)
        .digest()[:20]
        .hex()
    )


def moment(day: dt.date, hour: int = 12) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, hour, tzinfo=EASTERN)


@dataclass
class DemoPerson:
    index: int
    plan: str
    story: str  # active, key, separated, died, retired, frozen
    employee_number: str
    first_name: str
    last_name: str
    birth_date: dt.date
    hire_date: dt.date
    entered_on: dt.date
    married: bool
    salary: Decimal
    bonus_percent: int
    base_percent: int
    bonus_deferral: int
    eligible_on: dt.date | None = None
    end: dt.date | None = None
    end_kind: str = ""
    end_reason: str = ""
    login: bool = False
    mix: dict | None = None
    second_mix: dict | None = None
    specified_month: str | None = None
    opening: dict = field(default_factory=dict)


@dataclass(order=True)
class Action:
    day: dt.date
    order: int
    run: Callable = field(compare=False)
    credit_first: bool = field(default=False, compare=False)


class Demo:
    def __init__(self, *, participants: int, months: int, as_of: dt.date):
        self.as_of = as_of
        self.count = participants
        self.months = months
        self.plans = {p.code: p for p in Plan.objects.all()}
        missing = {"EDCP", "RRP", "BRP"} - set(self.plans)
        if missing:
            raise CommandError(
                f"the plan catalog is not loaded ({', '.join(sorted(missing))} missing): run load_catalog"
            )
        self.logins: list[tuple[str, str, str, str]] = []
        self.notes: set[str] = set()

    # --- users ----------------------------------------------------------------------------------
    def user(self, username: str, role: Role, first: str, last: str, what: str, person: Person | None = None):
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username,
            defaults={"first_name": first, "last_name": last, "email": f"{username}@example.com"},
        )
        password = demo_password(username)
        if created:
            user.set_password(password)
            user.save(update_fields=["password"])
            user.groups.add(Group.objects.get(name=role.value))
        if person is not None and person.user_id is None:
            person.user = user
            person.save(update_fields=["user"])
        secret = ""
        if role != Role.PARTICIPANT:
            # Staff sign in with a second factor: the demo enrols their authenticator so a tester can add the
            # printed key to an app (or a browser test can compute the code).
            device = demo_authenticator_enrol(user=user, key_hex=demo_totp_key(username), now=timezone.now())
            secret = secret_base32(device=device)
        self.logins.append((username, password, secret, what))
        return user

    # --- funds and prices -----------------------------------------------------------------------
    def funds(self) -> dt.date:
        """Create the fund menus and load prices through `as_of`; returns the first price date (the demo's start)."""
        now = timezone.now()
        self.fund = {}
        first_dates = []
        for plan, code, name, default, start_price, drift, vol in FUNDS:
            fund, _ = Fund.objects.get_or_create(
                plan=self.plans[plan], code=code, defaults={"name": name, "is_default": default}
            )
            self.fund[(plan, code)] = fund
            last = FundPrice.objects.filter(fund=fund).order_by("-date").first()
            if last is None:
                first = cal.next_valuation_date(add_months(self.as_of, -self.months))
                value = Decimal(start_price)
                rows = [
                    FundPrice(fund=fund, date=first, price=value, loaded_at=now, source="demo random walk")
                ]
            else:
                first, value, rows = last.date, last.price, []
            for day in cal.valuation_dates_between(first + dt.timedelta(days=1), self.as_of):
                rng = random.Random(f"{plan}:{code}:{day.isoformat()}")
                z = Decimal(sum(rng.randint(-100, 100) for _ in range(3))) / 100
                value = q_price(value * (1 + (drift + vol * z) / Decimal(10000)))
                rows.append(
                    FundPrice(fund=fund, date=day, price=value, loaded_at=now, source="demo random walk")
                )
            FundPrice.objects.bulk_create(rows, batch_size=2000)
            first_dates.append(
                FundPrice.objects.filter(fund=fund).order_by("date").values_list("date", flat=True)[0]
            )
        return max(first_dates)

    # --- the people -----------------------------------------------------------------------------
    def people(self, start: dt.date) -> list[DemoPerson]:
        n = max(3, self.count)
        loaded = Person.objects.filter(employee_number__in=[f"D{1001 + i}" for i in range(999)]).count()
        if loaded and loaded != n:
            raise CommandError(
                f"the demo here has {loaded} participants: run load_demo with --participants {loaded}"
            )
        n_edcp = (n + 1) // 2
        n_rrp = max(1, round((n - n_edcp) * 0.65))
        span = self.span(start)
        at = lambda fraction: cal.last_valuation_date(start + dt.timedelta(days=int(span * fraction)))  # noqa: E731
        out = []
        for i in range(n):
            rng = random.Random(f"demo-person-{i}")
            plan = "EDCP" if i < n_edcp else "RRP" if i < n_edcp + n_rrp else "BRP"
            k = i if plan == "EDCP" else i - n_edcp if plan == "RRP" else i - n_edcp - n_rrp
            story = {
                ("EDCP", 0): "key",
                ("EDCP", 1): "separated",
                ("EDCP", 2): "died",
                ("RRP", 0): "key",
                ("RRP", 1): "retired",
                ("BRP", 0): "frozen",
                ("BRP", 1): "retired",
            }.get((plan, k), "frozen" if plan == "BRP" else "active")
            if plan == "BRP":
                hire = dt.date(rng.randint(1984, 1998), rng.randint(1, 12), 1)
                birth = dt.date(hire.year - rng.randint(24, 32), rng.randint(1, 12), rng.randint(1, 28))
                entered = max(hire, dt.date(rng.randint(2000, 2008), 1, 1))
            else:
                hire = dt.date(rng.randint(2002, start.year - 3), rng.randint(1, 12), rng.choice([1, 15]))
                birth = dt.date(hire.year - rng.randint(26, 40), rng.randint(1, 12), rng.randint(1, 28))
                entered = max(
                    hire + dt.timedelta(days=365),
                    dt.date(2011, 1, 1) if plan == "EDCP" else dt.date(2011, 6, 30),
                )
            salary = Decimal(
                rng.randrange(200_000, 480_000, 5_000)
                if plan == "EDCP"
                else rng.randrange(420_000, 900_000, 10_000)
                if plan == "RRP"
                else rng.randrange(250_000, 500_000, 5_000)
            )
            p = DemoPerson(
                index=i,
                plan=plan,
                story=story,
                employee_number=f"D{1001 + i}",
                first_name=FIRST[(i * 7) % len(FIRST)],
                last_name=LAST[(i * 13) % len(LAST)],
                birth_date=birth,
                hire_date=hire,
                entered_on=entered,
                married=rng.random() < 0.7,
                salary=salary,
                bonus_percent=rng.choice([15, 20, 25, 30]),
                base_percent=rng.choice([5, 6, 8, 10, 12, 15, 20]),
                bonus_deferral=rng.choice([0, 10, 25, 50]),
                mix=None if i % 3 == 2 else (EDCP_MIXES if plan == "EDCP" else RRP_MIXES)[i % 3],
                second_mix=(EDCP_MIXES if plan == "EDCP" else RRP_MIXES)[(i + 1) % 3] if i % 4 == 0 else None,
                login=story in ("key", "separated", "retired") or (story == "frozen" and k == 0),
            )
            if plan == "EDCP" and i % 3 == 0:
                p.specified_month = f"{start.year + 3 + i % 4}-06"
            if story == "separated":
                # EDCP 4.2: under two Years of Vesting Service the Company Contribution Account is forfeited.
                p.end, p.end_kind, p.end_reason = at(2 / 3), EmploymentEvent.Kind.SEPARATION, "resignation"
                p.hire_date = add_months(p.end, -20).replace(day=1)
                p.birth_date = p.birth_date.replace(year=p.hire_date.year - 35)
                p.eligible_on = p.entered_on = p.hire_date + dt.timedelta(days=14)
            elif story == "died":
                p.end, p.end_kind, p.end_reason = at(5 / 6), EmploymentEvent.Kind.DEATH, "death"
            elif story == "retired":
                p.end, p.end_kind, p.end_reason = at(7 / 12), EmploymentEvent.Kind.SEPARATION, "retirement"
                p.birth_date = p.end.replace(year=p.end.year - 66, day=1)
                p.login = True
            if plan != "BRP":
                scale = Decimal(rng.randint(40, 160)) / 100 / (8 if story == "separated" else 1)
                if plan == "EDCP":
                    p.opening = {
                        "retirement_termination": salary * scale,
                        "company_contribution": salary * scale / 12,
                    }
                    if p.specified_month:
                        p.opening[f"specified_date:{p.specified_month}"] = salary * scale / 4
                else:
                    p.opening = {
                        "elective_deferral": salary * scale / 3,
                        "matching": salary * scale / 10,
                        "retirement_restoration": salary * scale / 12,
                    }
                if p.hire_date >= start:
                    p.opening = {}
            out.append(p)
        return out

    def span(self, start: dt.date) -> int:
        """Days of the demo's timeline: from the first price date, `--months` long (not up to as_of, so a run
        on a later day replays the same story and only adds the days since)."""
        return (add_months(start, self.months) - start).days

    def person(self, p: DemoPerson) -> tuple[Person, bool]:
        rng = random.Random(f"demo-address-{p.index}")
        city, state, postal = CITIES[p.index % len(CITIES)]
        return Person.objects.get_or_create(
            employee_number=p.employee_number,
            defaults={
                "first_name": p.first_name,
                "last_name": p.last_name,
                "birth_date": p.birth_date,
                "hire_date": p.hire_date,
                "marital_status": Person.MaritalStatus.MARRIED if p.married else Person.MaritalStatus.SINGLE,
                "email": f"{p.first_name}.{p.last_name}@example.com".lower(),
                "address_line1": f"{rng.randint(100, 9899)} {STREETS[p.index % len(STREETS)]}",
                "city": city,
                "state": state,
                "postal_code": postal,
            },
        )

    # --- the timeline -----------------------------------------------------------------------------
    def build(self) -> dict:
        start = self.funds()
        staff = {
            username: self.user(username, role, first, last, what)
            for username, role, first, last, what in STAFF
        }
        admin, committee = staff["administrator"], staff["committee"]
        self.payment_staff = (admin, committee)
        demo_people = self.people(start)
        actions: list[Action] = []
        records = {}
        for p in demo_people:
            person, created = self.person(p)
            records[p.employee_number] = person
            if not created:  # what is recorded wins over what this run would generate
                p.hire_date = person.hire_date
                ended = (
                    EmploymentEvent.objects.filter(person=person, kind=p.end_kind).first()
                    if p.end_kind
                    else None
                )
                p.end = ended.effective_date if ended else p.end
            if p.login:
                self.user(
                    f"{p.first_name}.{p.last_name}".lower(),
                    Role.PARTICIPANT,
                    p.first_name,
                    p.last_name,
                    f"participant: {p.plan} {p.story}",
                    person=person,
                )
            participation = participation_enrol(
                person=person,
                plan=self.plans[p.plan],
                entered_on=p.entered_on,
                eligible_on=p.eligible_on,
                actor=admin,
                now=moment(p.entered_on),
            )
            self.beneficiaries(p, person)
            if p.plan != "BRP":
                actions += self.timeline(p, person, participation, start, admin)
            else:
                actions += self.pension(p, person, participation, start, admin)
        actions += self.key_employee_lists(demo_people, records, start, admin)
        actions += self.restoration(start, committee)
        stats: dict[str, Any] = {"pay lines": 0, "elections": 0, "events": 0}
        for action in sorted(actions):
            if action.credit_first:
                # An event is recorded after its day is credited: forfeiture values the accounts on that day.
                self.credit(cal.last_valuation_date(action.day))
            kind = action.run()
            if kind:
                stats[kind] = stats.get(kind, 0) + 1
        self.credit(self.as_of)
        stats["start"] = start
        stats["people"] = len(demo_people)
        return stats

    def credit(self, through: dt.date) -> None:
        """Run the books' days up to `through` as production would: each day the payment job (values what is
        due, releases approved runs), a run prepared by the administrator and approved by a Committee member
        for what is ready, then the crediting of the Valuation Date."""
        last = last_credited_date()
        if last is None:
            for run in credit_due_dates(through=through, actor="crediting job (demo)"):
                if run.status != "done":
                    raise CommandError(f"crediting {run.key} was {run.status}: {run.message}")
                break
            last = last_credited_date()
            if last is None:
                return
        preparer, approver = self.payment_staff
        day = last + dt.timedelta(days=1)
        while day <= through:
            result = production_day_run(
                as_of=day,
                at=functools.partial(moment, day),
                staff=RunStaff(preparer=preparer, approver=approver),
                credit=cal.is_valuation_date(day),
                crediting_actor="crediting job (demo)",
            )
            refused = result.crediting_refused
            if refused is not None:
                raise CommandError(f"crediting {refused.key} was {refused.status}: {refused.message}")
            day += dt.timedelta(days=1)

    def beneficiaries(self, p: DemoPerson, person: Person) -> None:
        if (
            p.index % 5 == 4
            or BeneficiaryDesignation.objects.filter(person=person, plan=self.plans[p.plan]).exists()
        ):
            return  # every fifth has none: the plan's definition of Beneficiary applies
        if p.married:
            spouse = f"{FIRST[(p.index * 7 + 3) % len(FIRST)]} {p.last_name}"
            rows = [
                {"tier": "primary", "name": spouse, "relationship": "spouse", "percent": 100},
                {
                    "tier": "contingent",
                    "name": f"{FIRST[(p.index + 5) % len(FIRST)]} {p.last_name}",
                    "relationship": "child",
                    "percent": 50,
                },
                {
                    "tier": "contingent",
                    "name": f"{FIRST[(p.index + 9) % len(FIRST)]} {p.last_name}",
                    "relationship": "child",
                    "percent": 50,
                },
            ]
        else:
            rows = [
                {
                    "tier": "primary",
                    "name": f"{FIRST[(p.index + 11) % len(FIRST)]} {p.last_name}",
                    "relationship": "sibling",
                    "percent": 60,
                },
                {
                    "tier": "primary",
                    "name": "Richmond Community Foundation",
                    "relationship": "charity",
                    "percent": 40,
                },
            ]
        beneficiaries_designate(
            person=person,
            plan=self.plans[p.plan],
            beneficiaries=rows,
            actor=person.user or p.employee_number,
            now=moment(p.entered_on),
        )

    def timeline(self, p: DemoPerson, person: Person, participation, start: dt.date, admin) -> list[Action]:
        """Every action of one participant's demo life, each on its day, one kind of action at a time."""
        return [
            *self.opening_actions(p, person, participation, start, admin),
            *self.deferral_elections_actions(p, person, participation, start, admin),
            *self.distribution_elections_actions(p, person, participation, start, admin),
            *self.investment_elections_actions(p, person, participation, start, admin),
            *self.payroll_actions(p, person, participation, start, admin),
            *self.company_contributions_actions(p, person, participation, start, admin),
            *self.employment_end_actions(p, person, participation, start, admin),
        ]

    def election_years(self, p: DemoPerson, start: dt.date) -> list[tuple[int, dt.datetime]]:
        """(plan year, when the deferral election for it is submitted): EDCP 3.2's deadlines."""
        if p.eligible_on:
            return [(p.eligible_on.year, moment(p.eligible_on + dt.timedelta(days=5)))]
        years = [(start.year, moment(dt.date(start.year - 1, 11, 20)))]
        years += [
            (y, moment(dt.date(y - 1, 11, 20)))
            for y in range(start.year + 1, self.as_of.year + 2)
            if p.index % 3 == 0
        ]
        return years

    def opening_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """Balances brought forward from before the books begin."""
        actions: list[Action] = []
        for account, amount in p.opening.items():

            def opening(account=account, amount=amount):
                credit_create(
                    participation=participation,
                    account_name=account,
                    source=Source.ADJUSTMENT,
                    amount=money(amount),
                    effective_date=start,
                    actor="demo loader",
                    idempotency_key=f"demo:opening:{p.employee_number}:{account}",
                    memo="Balance brought forward from before these books begin (demo)",
                )

            actions.append(Action(start, 0, opening))
        return actions

    def deferral_elections_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """Deferral elections: the first year of eligibility, or the annual deadline before each plan year."""
        end = min(p.end or self.as_of, self.as_of)
        actor = person.user or p.employee_number
        actions: list[Action] = []
        # Deferral elections: first year of eligibility, or the annual deadline before each plan year (EDCP 3.2).
        years = self.election_years(p, start)
        for n, (plan_year, submitted) in enumerate(years):
            if submitted.date() > end:
                continue
            percentages = (
                {"base_salary": p.base_percent + 2 * n, "annual_bonus": p.bonus_deferral}
                if p.plan == "EDCP"
                else {"plan_compensation": p.base_percent + 2 * n}
            )
            accounts = (
                {"retirement_termination": 60, f"specified_date:{p.specified_month}": 40}
                if p.specified_month
                else None
            )
            if p.specified_month and int(p.specified_month[:4]) <= plan_year:
                accounts = None

            def elect(plan_year=plan_year, submitted=submitted, percentages=percentages, accounts=accounts):
                if DeferralElection.objects.filter(participation=participation, plan_year=plan_year).exists():
                    return None
                e = elections.deferral_election_submit(
                    participation=participation,
                    plan_year=plan_year,
                    percentages=percentages,
                    accounts=accounts,
                    submitted_at=submitted,
                    channel=Channel.PORTAL,
                    actor=actor,
                )
                if e.status != Status.ACCEPTED:
                    raise CommandError(
                        f"{p.employee_number} deferral election {plan_year} refused: {e.rule} {e.message}"
                    )
                return "elections"

            actions.append(Action(submitted.date(), 1, elect))
        return actions

    def distribution_elections_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """Distribution elections, filed with the first deferral into each account."""
        end = min(p.end or self.as_of, self.as_of)
        actor = person.user or p.employee_number
        years = self.election_years(p, start)
        actions: list[Action] = []
        # Distribution elections are filed with the first deferral into an account (EDCP 5.1(c), 5.2(c)).
        if p.plan == "EDCP":
            filed = years[0][1]
            choices: list[tuple[str, str, int | None]] = [
                ("retirement_termination", "installments", 5 + p.index % 5)
            ]
            if p.specified_month:
                choices.append((f"specified_date:{p.specified_month}", "lump_sum", None))
            for account, form, installments in choices:
                if filed.date() > end:
                    continue

                def distribute(account=account, form=form, installments=installments):
                    kind, _, month = account.partition(":")
                    if DistributionElection.objects.filter(
                        participation=participation,
                        account_kind=kind,
                        specified_month=parse_month(month) if month else None,
                        status=Status.ACCEPTED,
                    ).exists():
                        return None
                    e = elections.distribution_election_submit(
                        participation=participation,
                        account=account,
                        form=form,
                        installments=installments,
                        lump_sum_percent=None,
                        submitted_at=filed,
                        channel=Channel.PORTAL,
                        actor=actor,
                    )
                    if e.status != Status.ACCEPTED:
                        raise CommandError(
                            f"{p.employee_number} distribution election refused: {e.rule} {e.message}"
                        )
                    return "elections"

                actions.append(Action(filed.date(), 2, distribute))
        return actions

    def investment_elections_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """Investment elections: a first mix, and for some a second one half way through."""
        end = min(p.end or self.as_of, self.as_of)
        actor = person.user or p.employee_number
        actions: list[Action] = []
        # Investment elections (EDCP 7.4, RRP 3.05): effective on the next Valuation Date.
        invest_at = [
            (start + dt.timedelta(days=p.index % 15), p.mix),
            (start + dt.timedelta(days=self.span(start) // 2), p.second_mix),
        ]
        for day, mix in invest_at:
            if not mix or day > end:
                continue

            def invest(day=day, mix=mix):
                submitted = moment(day, 10)
                if InvestmentElection.objects.filter(
                    participation=participation, submitted_at=submitted
                ).exists():
                    return None
                e = elections.investment_election_submit(
                    participation=participation,
                    allocation={self.fund[(p.plan, c)].pk: pct for c, pct in mix.items()},
                    applies_to=InvestmentElection.AppliesTo.BOTH,
                    submitted_at=submitted,
                    channel=Channel.PORTAL,
                    actor=actor,
                )
                if e.status != Status.ACCEPTED:
                    raise CommandError(
                        f"{p.employee_number} investment election refused: {e.rule} {e.message}"
                    )
                return "elections"

            actions.append(Action(day, 3, invest))
        return actions

    def payroll_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """Monthly pay (and the March bonus), through the payroll service."""
        end = min(p.end or self.as_of, self.as_of)
        actions: list[Action] = []
        # Payroll: monthly salary on the last business day, the annual bonus with March pay (EDCP 7.1, RRP 3.03).
        month = start.replace(day=1)
        while month <= end:
            pay_day = cal.last_valuation_date(end_of_month(month))
            lines = [("base_salary", money(p.salary / 12))]
            if month.month == 3:
                lines.append(("annual_bonus", percent_of(p.salary, p.bonus_percent)))
            for component, gross in lines if max(start, p.hire_date) <= pay_day <= end else []:

                def pay(pay_day=pay_day, component=component, gross=gross):
                    try:
                        with transaction.atomic():
                            _, created = pay_record(
                                person=person,
                                pay_date=pay_day,
                                component=component,
                                gross=gross,
                                actor=PAYROLL,
                            )
                    except MissingFigure as exc:  # a year the Committee has not given its IRS figures yet
                        self.notes.add(str(exc))
                        return None
                    return "pay lines" if created else None

                actions.append(Action(pay_day, 4, pay))
            month = add_months(month, 1)
        return actions

    def company_contributions_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """EDCP company contributions, declared each March for the year before."""
        end = min(p.end or self.as_of, self.as_of)
        actions: list[Action] = []
        # EDCP 4.1: company contributions lost by deferring, imported each March for the year before.
        if p.plan == "EDCP":
            for year in range(start.year - 1, self.as_of.year):
                day = cal.next_valuation_date(dt.date(year + 1, 3, 2))
                if not (start <= day <= end):
                    continue

                def contribute(year=year, day=day):
                    deferred = sum(
                        PayrollDeferral.objects.filter(
                            participation=participation, record__plan_year=year
                        ).values_list("deferral", flat=True),
                        Decimal(0),
                    )
                    amount = money(min(deferred, percent_of(p.salary, 6)) / 2) or percent_of(p.salary, 2)
                    company_contribution_credit(
                        participation=participation,
                        kind="matching",
                        amount=amount,
                        plan_year=year,
                        on=day,
                        actor=admin,
                    )
                    return None

                actions.append(Action(day, 5, contribute))
        return actions

    def employment_end_actions(
        self, p: DemoPerson, person: Person, participation, start: dt.date, admin
    ) -> list[Action]:
        """The separation, death or disability that ends the demo person's employment."""
        actions: list[Action] = []
        if p.end and p.end <= self.as_of:

            def event():
                if EmploymentEvent.objects.filter(person=person, kind=p.end_kind).exists():
                    return None
                employment_event_record(
                    person=person,
                    kind=p.end_kind,
                    effective_date=p.end,
                    reason=p.end_reason,
                    actor=admin,
                    now=moment(p.end + dt.timedelta(days=1)),
                )
                return "events"

            actions.append(Action(p.end, 9, event, credit_first=True))
        return actions

    def pension(self, p: DemoPerson, person: Person, participation, start: dt.date, admin) -> list[Action]:
        """BRP: the Pension Plan figures of the frozen benefit (2008 pay, Benefit Service to 2008-12-31), and for a
        retiree the separation that starts the monthly annuity (4.2(a))."""
        service = Decimal(max(1, 2008 - p.hire_date.year))
        unlimited = money(p.salary * Decimal("0.015") * service)
        payable = money(min(unlimited, Decimal("230000") * Decimal("0.015") * service))

        def figures():
            if DefinedBenefitRecord.objects.filter(participation=participation).exists():
                return None
            spouse = (
                {
                    "spouse_name": f"{FIRST[(p.index * 7 + 3) % len(FIRST)]} {p.last_name}",
                    "spouse_birth_date": p.birth_date.replace(year=p.birth_date.year + 2),
                }
                if p.married
                else {}
            )
            pension_figures_record(
                participation=participation,
                as_of=start,
                actor=admin,
                now=moment(start),
                source="Pension Plan actuary (demo)",
                unlimited_annual_benefit=unlimited,
                payable_annual_benefit=payable,
                benefit_service_years=service,
                early_retirement_date=p.birth_date.replace(year=p.birth_date.year + 55),
                normal_retirement_date=p.birth_date.replace(year=p.birth_date.year + 65),
                **spouse,
            )
            return None

        actions = [Action(start, 1, figures)]
        if p.end and p.end <= self.as_of:

            def event():
                if EmploymentEvent.objects.filter(person=person, kind=p.end_kind).exists():
                    return None
                employment_event_record(
                    person=person,
                    kind=p.end_kind,
                    effective_date=p.end,
                    reason=p.end_reason,
                    actor=admin,
                    now=moment(p.end + dt.timedelta(days=1)),
                )
                return "events"

            actions.append(Action(p.end, 9, event, credit_first=True))
        return actions

    def key_employee_lists(
        self, people: list[DemoPerson], records: dict, start: dt.date, admin
    ) -> list[Action]:
        """EDCP 1.20: the Key Employees identified each December 31, recorded in January."""
        actions = []
        for year in range(start.year - 2, self.as_of.year):
            recorded = dt.date(year + 1, 1, 20)
            if recorded > self.as_of:
                continue
            employed = [
                p
                for p in people
                if p.hire_date <= dt.date(year, 12, 31) and (p.end is None or p.end > dt.date(year, 12, 31))
            ]
            top = sorted(employed, key=lambda p: (p.story != "key", -p.salary))[: max(1, len(employed) // 6)]

            def record(year=year, recorded=recorded, top=top):
                if KeyEmployeeList.objects.filter(identification_year=year).exists():
                    return None
                key_employee_list_record(
                    identification_year=year,
                    people=[records[p.employee_number] for p in top],
                    actor=admin,
                    now=moment(recorded),
                    note="Officers and top-paid employees (demo)",
                )
                return None

            actions.append(Action(max(recorded, start), 6, record))
        return actions

    def restoration(self, start: dt.date, committee) -> list[Action]:
        """RRP 3.02: the Committee declares a retirement restoration contribution after the plan year."""
        plan = self.plans["RRP"]
        years = [
            y for y in range(start.year, self.as_of.year) if start <= dt.date(y + 1, 2, 20) <= self.as_of
        ]
        if not years:
            return []
        year = years[-1]
        day = cal.next_valuation_date(dt.date(year + 1, 2, 20))

        def declare():
            if ContributionDeclaration.objects.filter(plan=plan, plan_year=year).exists():
                return None
            restoration_declare(
                plan=plan, plan_year=year, percent=Decimal("4"), declared_on=day, actor=committee
            )
            return None

        return [Action(day, 7, declare)]


COPY_ABOVE = 300  # participants: above this, load_demo copies the demo population instead of building each
COPIED_FROM = 30  # the people built through the services and copied


class Command(BaseCommand):
    help = (
        "Load a demo population (staff users per role, participants across EDCP, RRP and BRP with two years of "
        "history, funds and prices, every Valuation Date credited). Idempotent; prints every login."
    )

    def add_arguments(self, parser):
        parser.add_argument("--participants", type=int, default=30, help="how many participants (default 30)")
        parser.add_argument(
            "--months", type=int, default=24, help="months of history before the as-of date (default 24)"
        )
        parser.add_argument(
            "--as-of",
            type=dt.date.fromisoformat,
            default=None,
            help="YYYY-MM-DD, a Valuation Date (default: the last Valuation Date before today)",
        )
        parser.add_argument(
            "--force", action="store_true", help="run even with DEBUG off (never on real books)"
        )
        parser.add_argument(
            "--history-days",
            type=int,
            default=21,
            help="above a few hundred participants: Valuation Dates of daily valuations given to the copies "
            "(default 21; the demo's own people keep two years)",
        )

    def handle(self, *args, **opts):
        if not (settings.DEBUG or getattr(settings, "TESTING", False) or opts["force"]):
            raise CommandError(
                "load_demo creates demo people and well-known logins: it runs only with DEBUG=true "
                "(or --force on a scratch database)"
            )
        as_of = opts["as_of"] or cal.previous_valuation_date(timezone.localdate())
        if not cal.is_valuation_date(as_of):
            raise CommandError(f"{as_of} is not a Valuation Date")
        started = time.monotonic()
        asked = opts["participants"]
        # Above a few hundred the demo is built once through the services and copied set-based
        # (operations.population): 100,000 participants in minutes, not the hours the services would take.
        copies = max(0, -(-asked // COPIED_FROM) - 1) if asked > COPY_ABOVE else 0
        demo = Demo(participants=COPIED_FROM if copies else asked, months=opts["months"], as_of=as_of)
        with transaction.atomic():
            stats = demo.build()
        if copies:
            with transaction.atomic():
                added = population_copy(
                    copies=copies,
                    history_days=opts["history_days"],
                    as_of=as_of,
                    say=lambda text: self.stderr.write(text),
                )
            people = added.get("participants_person", 0)
            self.stdout.write(
                f"copied the demo population {copies} times: {people} more participants, "
                f"{sum(added.values())} rows in {len(added)} tables ({time.monotonic() - started:.1f} s so far)"
            )
        seconds = time.monotonic() - started
        self.stdout.write(
            f"demo population as of {as_of} (books from {stats['start']}): {stats['people']} participants, "
            f"{stats['pay lines']} new pay lines, {stats['elections']} new elections, "
            f"{stats['events']} new employment events ({seconds:.1f} s)"
        )
        for note in sorted(demo.notes):
            self.stdout.write(f"pay skipped: {note}")
        self.stdout.write(
            "logins (password shown is the one set when the user was created; staff add the TOTP key, base32, "
            "to an authenticator app):"
        )
        width = max(len(u) for u, _, _, _ in demo.logins)
        for username, password, secret, what in demo.logins:
            self.stdout.write(f"  {username:<{width}}  {password:<16}  {secret or '-':<32}  {what}")
