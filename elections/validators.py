"""One validator per plan rule, each citing its section. Used identically by the portal, staff
screens, the API and the simulator: a validator returns None or a Violation saying which section
is broken, in a sentence a participant understands, and what would be accepted instead.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from core import hooks, memo
from core.dates import EASTERN, EASTERN_NAME, add_months, add_years
from elections.models import (
    DeferralAllocation,
    DeferralElection,
    DistributionElection,
    EnrollmentWindow,
    InvestmentElection,
    Status,
)
from participants.models import EmploymentEvent, Participation
from participants.selectors import employment_status_on
from plans.models import Fund, PlanVersion
from plans.selectors import MissingFigure, announced_percent

if TYPE_CHECKING:
    from elections.models import DeferralElection
    from participants.models import Person

if TYPE_CHECKING:
    from elections.models import EnrollmentWindow


@dataclass(frozen=True)
class Violation:
    rule: str
    message: str
    allowed: str = ""
    field: str = ""  # the form field it is about, when there is one (a preview shows it beside that field)

    @property
    def text(self) -> str:
        return f"{self.message} {self.allowed}".strip()


@dataclass
class DeferralRequest:
    participation: Participation
    plan_year: int
    percentages: dict[str, object]
    accounts: dict[str, object] | None
    performance_period: tuple[dt.date, dt.date] | None
    submitted_at: dt.datetime
    version: PlanVersion = field(init=False)

    def __post_init__(self) -> None:
        self.version = self.participation.plan.version_on(self.submitted_on)

    @property
    def period(self) -> tuple[dt.date, dt.date]:
        """The performance period of a performance-based election (election_kind() "performance")."""
        if self.performance_period is None:
            raise ValueError("not an election for a performance period")
        return self.performance_period

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        return zoneinfo.ZoneInfo(self.version.provision("time_zone", EASTERN_NAME))

    @property
    def submitted_on(self) -> dt.date:
        tz = EASTERN
        return self.submitted_at.astimezone(tz).date()


def _is_whole(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, Decimal | str):
        try:
            return Decimal(str(value)) == Decimal(str(value)).to_integral_value()
        except Exception:
            return False
    return False


def annual_deadline(*, version: PlanVersion, plan_year: int) -> dt.datetime:
    """EDCP 3.2(b), RRP 2.03(b): 11:59 pm Eastern on December 31 before the plan year (the whole last minute counts)."""
    d = version.provision("election_deadline")
    tz = zoneinfo.ZoneInfo(version.provision("time_zone", EASTERN_NAME))
    year = plan_year - d["years_before_plan_year"]
    return dt.datetime(year, d["month"], d["day"], d["hour"], d["minute"], 59, 999999, tzinfo=tz)


def first_year_window_end(*, version: PlanVersion, eligible_on: dt.date) -> dt.datetime:
    """EDCP 3.2(a), RRP 2.03(c): within 30 days after the notice of initial eligibility (day 30 counts, to midnight)."""
    tz = zoneinfo.ZoneInfo(version.provision("time_zone", EASTERN_NAME))
    last = eligible_on + dt.timedelta(days=version.provision("first_year_window_days"))
    return dt.datetime(last.year, last.month, last.day, 23, 59, 59, 999999, tzinfo=tz)


def performance_deadline(*, version: PlanVersion, period_end: dt.date) -> dt.datetime:
    """EDCP 3.2(c): no later than six months before the end of the performance period (that whole day counts)."""
    tz = zoneinfo.ZoneInfo(version.provision("time_zone", EASTERN_NAME))
    last = add_months(period_end, -version.provision("performance_election_months_before_end"))
    return dt.datetime(last.year, last.month, last.day, 23, 59, 59, 999999, tzinfo=tz)


# --- deferral election rules ---------------------------------------------------------------------


def v_eligible(*, req: DeferralRequest) -> Violation | None:
    cite = req.version.cite("participation")
    if not req.participation.eligible:
        return Violation(
            cite,
            "You are no longer an Eligible Employee, so you cannot defer pay for a later plan year.",
            "Elections already irrevocable run to the end of their plan year.",
        )
    status = employment_status_on(person=req.participation.person, day=req.submitted_on)
    if not status.employed:
        return Violation(
            cite, f"You cannot make a deferral election after your employment ended ({status.reason})."
        )
    return None


def v_components(*, req: DeferralRequest) -> Violation | None:
    codes = [c["code"] for c in req.version.provision("deferral_components", []) or []]
    cite = req.version.cite("deferral_components")
    if not codes:
        return Violation(cite, f"{req.version.plan.name} takes no deferral elections.")
    for comp in req.percentages:
        if comp not in codes:
            return Violation(
                cite,
                f"{comp.replace('_', ' ')} is not pay you can defer under this plan.",
                f"You can defer: {', '.join(c.replace('_', ' ') for c in codes)}.",
            )
    if not req.percentages:
        return Violation(cite, "Choose a percentage for at least one kind of pay.")
    return None


def v_whole_percentages(*, req: DeferralRequest) -> Violation | None:
    cite = req.version.cite("whole_percentages")
    for comp, pct in req.percentages.items():
        if not _is_whole(pct):
            return Violation(
                cite,
                f"The {comp.replace('_', ' ')} percentage {pct} is not a whole number.",
                "Enter whole percentages such as 5 or 10.",
            )
    return None


def max_percent(*, req: DeferralRequest, comp: dict) -> tuple[Decimal, str]:
    cite = comp.get("cite") or req.version.cite("deferral_components")
    if comp["max_percent"] == "announced":
        return announced_percent(
            plan=req.version.plan, code="announced_max_deferral_percent", year=req.plan_year
        ), cite
    return Decimal(comp["max_percent"]), cite


def v_percent_limits(*, req: DeferralRequest) -> Violation | None:
    for code, pct in req.percentages.items():
        comp = req.version.component(code)
        if comp is None:
            return Violation(
                req.version.cite("deferral_components"), f"{code} is not a pay component of the plan."
            )
        value = Decimal(str(pct))
        try:
            top, cite = max_percent(req=req, comp=comp)
        except MissingFigure as exc:
            return Violation(req.version.cite("deferral_components"), str(exc))
        low = Decimal(comp.get("min_percent", "0"))
        label = comp["label"].lower()
        if value < 0:
            return Violation(
                cite, f"The {label} percentage cannot be negative.", f"Choose from {low:.0f}% to {top:.0f}%."
            )
        if value > top:
            return Violation(
                cite,
                f"You may defer at most {top:.0f}% of your {label}; you chose {value:.0f}%.",
                f"Choose {top:.0f}% or less.",
            )
        if 0 < value < low:
            return Violation(
                cite,
                f"The smallest {label} deferral is {low:.0f}%.",
                f"Choose 0% or from {low:.0f}% to {top:.0f}%.",
            )
    return None


def election_kind(*, req: DeferralRequest) -> str:
    """annual, first_year (within the window after the notice of eligibility), or performance.

    A first-year election is one for the plan year of the notice (or the next, when the 30 days run
    past December 31) made after that plan year's annual deadline has passed.
    """
    if req.performance_period is not None:
        return "performance"
    eligible_on = req.participation.eligible_on
    if eligible_on and req.version.has("first_year_window_days") and req.version.has("election_deadline"):
        years = {eligible_on.year, first_year_window_end(version=req.version, eligible_on=eligible_on).year}
        if req.plan_year in years and req.submitted_at > annual_deadline(
            version=req.version, plan_year=req.plan_year
        ):
            return "first_year"
    return "annual"


def v_timing(*, req: DeferralRequest) -> Violation | None:
    kind = election_kind(req=req)
    v = req.version
    if kind == "performance":
        start, end = req.period
        cite = v.cite("performance_election_months_before_end")
        min_months = v.provision("performance_period_min_months", 12)
        if add_months(start, min_months) > end + dt.timedelta(days=1):
            return Violation(
                v.cite("performance_period_min_months"),
                f"A performance period must last at least {min_months} months; {start} to {end} is shorter.",
                "Elect under the annual deadline instead.",
            )
        non_pbc = [c for c in req.percentages if not (v.component(c) or {}).get("performance_based")]
        if non_pbc:
            return Violation(
                cite,
                f"Only Performance-Based Compensation may be elected by performance period; "
                f"{', '.join(non_pbc)} follows the annual deadline.",
            )
        deadline = performance_deadline(version=v, period_end=end)
        if req.submitted_at > deadline:
            return Violation(
                cite,
                f"The election for the performance period ending {end:%B %d, %Y} was due by "
                f"{deadline:%B %d, %Y} (six months before the period ends).",
                "Your next chance is the next performance period or the annual election.",
            )
        if not employed_throughout(person=req.participation.person, start=start, end=req.submitted_on):
            return Violation(
                cite,
                f"You must have been employed continuously since the performance period began "
                f"({start:%B %d, %Y}) to elect under it.",
                "Your pay for this period follows the annual election deadline instead.",
            )
        return None
    eligible_on = req.participation.eligible_on
    if kind == "first_year" and eligible_on is not None:  # election_kind(): first-year follows a notice
        end = first_year_window_end(version=v, eligible_on=eligible_on)
        if req.submitted_on < eligible_on:
            return Violation(
                v.cite("first_year_window_days"),
                f"Your first-year election can be made only after the Committee's notice of your initial "
                f"eligibility, dated {eligible_on:%B %d, %Y}.",
                f"Elect from that date until {end:%B %d, %Y}.",
            )
        if req.submitted_at > end:
            return Violation(
                v.cite("first_year_window_days"),
                f"Your first-year election was due within {v.provision('first_year_window_days')} days of "
                f"your notice of eligibility, by {end:%B %d, %Y}.",
                f"You can elect for {req.plan_year + 1} until {annual_deadline(version=v, plan_year=req.plan_year + 1):%B %d, %Y at %I:%M %p} Eastern.",
            )
        return None
    deadline = annual_deadline(version=v, plan_year=req.plan_year)
    if req.submitted_at > deadline:
        return Violation(
            v.cite("election_deadline"),
            f"Elections for pay earned in {req.plan_year} had to be made by {deadline:%I:%M %p} Eastern on "
            f"{deadline:%B %d, %Y}.",
            f"You can still elect for {req.plan_year + 1} until {annual_deadline(version=v, plan_year=req.plan_year + 1):%B %d, %Y}.",
        )
    return None


def employed_throughout(*, person: Person, start: dt.date, end: dt.date) -> bool:
    """Employed on every day from `start` to `end` (EDCP 1.24: continuously since the period began)."""
    if person.hire_date > start:
        return False
    return not EmploymentEvent.objects.filter(
        person=person,
        kind__in=[EmploymentEvent.Kind.SEPARATION, EmploymentEvent.Kind.DEATH],
        effective_date__gte=start,
        effective_date__lt=end,
    ).exists()


# --- enrollment windows --------------------------------------------------------------------------

KIND_PROVISION = {
    "annual": "election_deadline",
    "first_year": "first_year_window_days",
    "performance": "performance_election_months_before_end",
}


def windows_for(*, req: DeferralRequest) -> tuple[list[EnrollmentWindow], EnrollmentWindow | None]:
    """(the Committee's windows that govern this election, the one it falls in or None)."""
    kind = election_kind(req=req)
    qs = EnrollmentWindow.objects.filter(plan=req.participation.plan, kind=kind)
    if kind == "first_year":
        qs = qs.filter(participation=req.participation)
    else:
        qs = qs.filter(plan_year=req.plan_year)
    windows = list(qs.order_by("opens_at", "id"))
    for w in windows:
        if not w.is_open(req.submitted_at):
            continue
        if kind == "performance" and (w.performance_period_start, w.performance_period_end) != req.period:
            continue
        return windows, w
    return windows, None


def _when(moment: dt.datetime) -> str:
    local = moment.astimezone(EASTERN)
    return f"{local:%B} {local.day}, {local.year} at {local:%I:%M %p} Eastern".replace(" 0", " ")


def v_window(*, req: DeferralRequest) -> Violation | None:
    """When the Committee has opened windows for the plan year, an election outside all of them is refused
    (EDCP 3.2(b): by December 31 "or such earlier date as the Committee announces"; RRP 2.03(b))."""
    windows, match = windows_for(req=req)
    if not windows or match is not None:
        return None
    kind = election_kind(req=req)
    cite = req.version.cite(KIND_PROVISION[kind])
    later = [w for w in windows if w.opens_at > req.submitted_at]
    if kind == "performance":
        period = [w for w in windows if (w.performance_period_start, w.performance_period_end) == req.period]
        if not period:
            start, end = req.period
            return Violation(
                cite,
                f"The Committee has not opened elections for a performance period from "
                f"{start:%B %d, %Y} to {end:%B %d, %Y}.",
                "Choose one of the performance periods the Committee has announced.",
            )
        later = [w for w in period if w.opens_at > req.submitted_at]
        windows = period
    message = (
        f"This election was made outside its enrollment window: the Committee takes {req.plan_year} "
        f"elections of this kind only while a window is open"
    )
    if later:
        return Violation(
            cite,
            message + ".",
            f"The next window opens {_when(later[0].opens_at)} and closes {_when(later[0].closes_at)}.",
        )
    last = max(windows, key=lambda w: w.closes_at)
    return Violation(
        cite,
        message + f" (the last one closed {_when(last.closes_at)}).",
        "Any election already in force continues (evergreen).",
    )


def v_not_yet_irrevocable(*, req: DeferralRequest) -> Violation | None:
    """An election of this plan year and kind that has become irrevocable cannot be replaced, even in a later
    window the Committee opens (EDCP 3.2: irrevocable when its window closes)."""
    kind = election_kind(req=req)
    fixed = DeferralElection.objects.filter(
        participation=req.participation,
        plan_year=req.plan_year,
        kind=kind,
        status=Status.ACCEPTED,
        irrevocable_at__lt=req.submitted_at,
    )
    if kind == "performance":
        fixed = fixed.filter(performance_period_end=req.period[1])
    first_fixed = fixed.order_by("irrevocable_at").first()
    if first_fixed is None or first_fixed.irrevocable_at is None:  # never None: filtered on it above
        return None
    return Violation(
        req.version.cite(KIND_PROVISION[kind]),
        f"Your election for {req.plan_year} became irrevocable on {_when(first_fixed.irrevocable_at)} and can no "
        f"longer be replaced.",
        f"You can elect for {req.plan_year + 1} instead.",
    )


def _account_name_parts(name: str) -> tuple[str, dt.date | None]:
    if ":" in name:
        kind, month = name.split(":", 1)
        y, m = month.split("-")
        return kind, dt.date(int(y), int(m), 1)
    return name, None


def v_allocation(*, req: DeferralRequest) -> Violation | None:
    if not req.accounts:
        return None
    v = req.version
    cite = v.cite("default_deferral_account")
    deferral_kinds = {a["kind"]: a for a in v.account_kinds() if a["funded_by"] == "deferral"}
    total = 0
    for name, pct in req.accounts.items():
        try:
            kind, month = _account_name_parts(name)
        except ValueError:
            return Violation(
                cite,
                f"{name} is not an account: a Specified Date Account is named by its month and year.",
                "Give the month as YYYY-MM, for example 2031-03.",
            )
        label = deferral_kinds.get(kind, {}).get("label", kind.replace("_", " "))
        if not _is_whole(pct) or Decimal(str(pct)) < 0:
            return Violation(
                cite,
                f"The share for the {label} must be a whole percentage from 0 to 100; you entered {pct}.",
                "Enter whole percentages that add up to 100.",
            )
        if kind not in deferral_kinds:
            return Violation(
                cite,
                f"Deferrals cannot go to {kind.replace('_', ' ')}.",
                f"Choose among: {', '.join(a['label'] for a in deferral_kinds.values())}.",
            )
        if kind == "specified_date" and month is None:
            return Violation(
                cite,
                "A Specified Date Account is named by the month and year its payment starts.",
                "Give the month as YYYY-MM.",
            )
        total += int(Decimal(str(pct)))
    if total != 100:
        return Violation(
            cite, f"The account shares add up to {total}%, not 100%.", "Make them add up to exactly 100%."
        )
    return None


def specified_months_in_use(
    *, participation: Participation, exclude_plan_year: int | None = None
) -> set[dt.date]:
    """The Specified Date Accounts a participant has or has committed to (accounts, elections in force)."""
    months = {
        month
        for kind, month in hooks.ask("accounts_held", participation=participation)
        if kind == "specified_date"
    }
    months |= set(
        DistributionElection.objects.filter(
            participation=participation, account_kind="specified_date", status=Status.ACCEPTED
        ).values_list("specified_month", flat=True)
    )
    allocations = DeferralAllocation.objects.filter(
        election__participation=participation, account_kind="specified_date", election__status=Status.ACCEPTED
    )
    if exclude_plan_year is not None:
        allocations = allocations.exclude(election__plan_year=exclude_plan_year)
    months |= set(allocations.values_list("specified_month", flat=True))
    return {m for m in months if m}


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def v_specified_dates(*, req: DeferralRequest) -> Violation | None:
    if not req.accounts:
        return None
    v = req.version
    spec = v.account_spec("specified_date")
    months = {
        m for name in req.accounts for k, m in [_account_name_parts(name)] if k == "specified_date" and m
    }
    if not months:
        return None
    cite = spec.get("cite", v.cite("accounts")) if spec else v.cite("accounts")
    # An election replacing one of the same plan year frees the accounts only that one named.
    existing = specified_months_in_use(participation=req.participation, exclude_plan_year=req.plan_year)
    if spec and len(existing | months) > spec["max_count"]:
        return Violation(
            cite,
            f"You may have at most {spec['max_count']} Specified Date Accounts; this election would "
            f"make {len(existing | months)}.",
            f"Use one of your existing Specified Date Accounts: {', '.join(sorted(m.strftime('%Y-%m') for m in existing))}.",
        )
    sd_rule = distribution_rule_for(version=v, kind="specified_date")
    for month in sorted(months):
        if month < req.submitted_on.replace(day=1) or month.year <= req.plan_year:
            return Violation(
                sd_rule["cite"] if sd_rule else cite,
                f"A Specified Date must fall after the plan year of the deferrals; {month:%B %Y} does not.",
                f"Choose a month in {req.plan_year + 1} or later.",
            )
        min_years = v.provision("specified_date_min_deferral_years", None)
        if min_years and month not in existing and month.year < req.plan_year + min_years:
            # EDCP 3.4 (2024): a minimum deferral period, counted from the first deferral into a new account.
            return Violation(
                v.cite("specified_date_min_deferral_years"),
                f"The Committee requires Specified Date payments to start no earlier than the "
                f"{_ordinal(min_years)} plan year after the deferral; {month:%B %Y} is too early.",
                f"Choose a month in {req.plan_year + min_years} or later.",
            )
    return None


DEFERRAL_RULES = (
    v_eligible,
    v_components,
    v_whole_percentages,
    v_percent_limits,
    v_timing,
    v_window,
    v_not_yet_irrevocable,
    v_allocation,
    v_specified_dates,
)


def check_deferral(*, req: DeferralRequest) -> Violation | None:
    for rule in DEFERRAL_RULES:
        violation = rule(req=req)
        if violation:
            return violation
    return None


# --- distribution elections ------------------------------------------------------------------------


def distribution_rule_for(*, version: PlanVersion, kind: str) -> dict | None:
    for rule in version.provision("distribution", []) or []:
        if kind in rule["accounts"] and rule["trigger"] in ("separation", "specified_date"):
            return rule
    return None


def _accounts_of(election: DeferralElection, default_kind: str | None) -> set[tuple[str, dt.date | None]]:
    allocations = list(election.allocations.all())
    if not allocations:
        return {(default_kind, None)} if default_kind else set()
    return {(a.account_kind, a.specified_month) for a in allocations if a.percent}


def fixing_election(
    *, participation: Participation, account_kind: str, specified_month: dt.date | None, before: dt.datetime
) -> DeferralElection | None:
    """The first deferral election into this account that became irrevocable before `before`, if any:
    the account's payment schedule was fixed then (it is part of the deferral agreement, 409A)."""
    default_kind = participation.plan.version_on(before.astimezone(EASTERN).date()).provision(
        "default_deferral_account", None
    )
    # Read once for every account of the participant within a core.memo run (the elections home offers a payment
    # election for each account): the page's queries do not grow with the accounts.
    fixed = memo.remember(
        ("fixing_elections", participation.pk, before),
        lambda: list(
            DeferralElection.objects.filter(
                participation=participation, status=Status.ACCEPTED, irrevocable_at__lte=before
            )
            .prefetch_related("allocations", "lines")
            .order_by("irrevocable_at", "id")
        ),
    )
    for election in fixed:
        if not any(line.percent for line in election.lines.all()):
            continue
        if (account_kind, specified_month) in _accounts_of(election, default_kind):
            return election
    return None


def check_distribution(
    *,
    participation: Participation,
    account_kind: str,
    specified_month: dt.date | None,
    form: str | None,
    installments: int | None,
    lump_sum_percent: int | None,
    delay_months: int,
    submitted_on: dt.date,
    submitted_at: dt.datetime | None = None,
) -> Violation | None:
    """The first problem of a payment election (EDCP 5.1(b)-(c), 5.2(b)-(c)), as distribution_problems orders them."""
    problems = distribution_problems(
        participation=participation,
        account_kind=account_kind,
        specified_month=specified_month,
        form=form,
        installments=installments,
        lump_sum_percent=lump_sum_percent,
        delay_months=delay_months,
        submitted_on=submitted_on,
        submitted_at=submitted_at,
    )
    return problems[0][1] if problems else None


def distribution_problems(  # noqa: C901 - the rules of a payment election, in the order they are asked
    *,
    participation: Participation,
    account_kind: str,
    specified_month: dt.date | None,
    form: str | None,
    installments: int | None,
    lump_sum_percent: int | None,
    delay_months: int,
    submitted_on: dt.date,
    submitted_at: dt.datetime | None = None,
) -> list[tuple[str, Violation]]:
    """Every problem of a payment election, each with the form field it belongs to ("account", "form",
    "installments", "lump_sum_percent", "delay_years", or "__all__" for the account as a whole)."""
    v = participation.plan.version_on(submitted_on)
    rule = distribution_rule_for(version=v, kind=account_kind)
    if rule is None:
        return [
            (
                "account",
                Violation(
                    v.cite("distribution"),
                    f"The {account_kind.replace('_', ' ')} account has no elective payment schedule.",
                ),
            )
        ]
    cite = rule["cite"]
    out: list[tuple[str, Violation]] = []
    if form not in rule["forms"]:
        out.append(
            (
                "form",
                Violation(
                    cite,
                    f"{str(form).replace('_', ' ')} is not a form of payment for this account.",
                    f"Choose: {', '.join(f.replace('_', ' ') for f in rule['forms'])}.",
                ),
            )
        )
    if form in rule["forms"] and form in ("installments", "lump_sum_and_installments"):
        lo, hi = rule["installments"]["min"], rule["installments"]["max"]
        c = rule["installments"].get("cite", cite)
        if (
            not isinstance(installments, int)
            or isinstance(installments, bool)
            or not (lo <= installments <= hi)
        ):
            out.append(
                (
                    "installments",
                    Violation(
                        c,
                        f"Installments must number from {lo} to {hi}; you chose {installments}.",
                        f"Choose {lo} to {hi} annual installments.",
                    ),
                )
            )
    if (
        form in rule["forms"]
        and form == "lump_sum_and_installments"
        and not (isinstance(lump_sum_percent, int) and 1 <= lump_sum_percent <= 99)
    ):
        out.append(
            (
                "lump_sum_percent",
                Violation(
                    cite,
                    "The lump-sum part must be a whole percentage from 1 to 99.",
                    "Enter the percentage paid as a lump sum; the rest is paid in installments.",
                ),
            )
        )
    if delay_months:
        later = rule.get("later_start")
        if not later:
            out.append(("delay_years", Violation(cite, "This account does not allow a later first payment.")))
        elif not isinstance(delay_months, int) or delay_months < 0 or delay_months > 12 * later["max_years"]:
            out.append(
                (
                    "delay_years",
                    Violation(
                        later.get("cite", cite),
                        f"A later first payment may be at most {later['max_years']} years after separation.",
                        f"Choose a delay of 0 to {later['max_years']} years.",
                    ),
                )
            )
    if account_kind == "specified_date":
        if specified_month is None:
            out.append(
                (
                    "account",
                    Violation(
                        cite,
                        "A Specified Date Account needs its month and year.",
                        "Give the month as YYYY-MM.",
                    ),
                )
            )
        elif specified_month < submitted_on.replace(day=1):
            out.append(
                (
                    "account",
                    Violation(
                        cite,
                        f"{specified_month:%B %Y} is in the past; a Specified Date must be in the future.",
                        "Choose a month after the plan year of your first deferral into the account.",
                    ),
                )
            )
    fixed = _schedule_already_fixed(
        participation=participation,
        version=v,
        cite=cite,
        account_kind=account_kind,
        specified_month=specified_month,
        submitted_at=submitted_at,
    )
    if fixed is not None:
        out.append(("__all__", fixed))
    return out


def _schedule_already_fixed(
    *,
    participation: Participation,
    version: PlanVersion,
    cite: str,
    account_kind: str,
    specified_month: dt.date | None,
    submitted_at: dt.datetime | None,
) -> Violation | None:
    """An account whose schedule is already part of a deferral agreement takes no new payment election."""
    already = hooks.ask(
        "account_holds_deferrals",
        participation=participation,
        account_kind=account_kind,
        specified_month=specified_month,
    )
    change_cite = (
        version.provision("schedule_change", {}).get("cites", {}).get("right")
        if version.has("schedule_change")
        else None
    )
    if already:
        return Violation(
            change_cite or cite,
            "This account already holds deferrals, so its schedule can change only under the "
            "rules for changing a payment schedule (12 months ahead, at least 5 years later).",
            "Use a change of payment schedule instead." if change_cite else "",
        )
    if submitted_at is not None:
        fixed = fixing_election(
            participation=participation,
            account_kind=account_kind,
            specified_month=specified_month,
            before=submitted_at,
        )
        if fixed is not None and fixed.irrevocable_at is not None:  # it is: fixing_election filters on it
            return Violation(
                change_cite or cite,
                f"This account's payment schedule became part of your deferral election when that election "
                f"became irrevocable ({_when(fixed.irrevocable_at)}); it can no longer be chosen anew.",
                "Use a change of payment schedule instead." if change_cite else "",
            )
    return None


def default_distribution(*, version: PlanVersion, account_kind: str) -> dict | None:
    """The form that applies when no election is made (EDCP 5.1(c), 5.2(c): a lump sum)."""
    rule = distribution_rule_for(version=version, kind=account_kind)
    if rule is None:
        return None
    return {"form": rule.get("default_form", "lump_sum"), "cite": rule["cite"], "name": rule["name"]}


# --- BRP annuity forms (4.2(c), 4.2(d)) ----------------------------------------------------------


@dataclass(frozen=True)
class AnnuityCheck:
    violation: Violation | None
    is_change: bool
    takes_effect_on: dt.date | None


def default_annuity_form(*, version: PlanVersion, married: bool) -> str:
    forms = version.provision("db_forms")
    return forms["default_married"] if married else forms["default_single"]


def is_life_annuity(*, form: str) -> bool:
    # BRP 4.2(c): every form but the single lump sum is an annuity, all Actuarially Equivalent.
    return form != "lump_sum"


def is_initial_annuity_election(
    *, version: PlanVersion, participation: Participation, submitted_on: dt.date
) -> bool:
    """BRP 4.2(b): an election made in the transition year (2007), or within 30 days of first becoming a
    Participant, is the initial election."""
    rule = version.provision("db_initial_election", None)
    if not rule:
        return False
    if rule.get("year") and submitted_on.year == int(rule["year"]):
        return True
    entered = participation.entered_on
    days = rule.get("days_after_participation")
    return bool(days) and entered <= submitted_on <= entered + dt.timedelta(days=int(days))


MAX_DEFER_YEARS = 100  # an input bound, not a plan rule: a start later than this is a typing mistake


def v_annuity_form(*, version: PlanVersion, form: str) -> Violation | None:
    """BRP 4.2(c): one of the plan's forms of benefit."""
    forms = (version.provision("db_forms", None) or {}).get("forms", [])
    if form not in forms:
        return Violation(
            version.cite("db_forms"),
            f"{str(form).replace('_', ' ') or 'No form'} is not a form of benefit under this plan.",
            f"Choose: {', '.join(FORM_LABELS.get(f, f) for f in forms)}.",
            "form",
        )
    return None


def v_annuity_defer_years(*, version: PlanVersion, defer_years: object) -> Violation | None:
    """BRP 4.2(c), 4.2(d): the start is put off by a whole number of years (0 keeps the time)."""
    if (
        not isinstance(defer_years, int)
        or isinstance(defer_years, bool)
        or not 0 <= defer_years <= MAX_DEFER_YEARS
    ):
        return Violation(
            version.cite("db_forms"),
            "The delay must be a whole number of years.",
            f"Give 0 to keep the time, or a number of years up to {MAX_DEFER_YEARS}.",
            "defer_years",
        )
    return None


def check_annuity(
    *,
    participation: Participation,
    form: str,
    defer_years: int | str,  # as typed: anything but a whole number is refused
    current_form: str,
    current_defer_years: int,
    commencement: dt.date | None,
    submitted_on: dt.date,
) -> AnnuityCheck:
    """BRP 4.2(c) forms; 4.2(d): a change of time or form (other than between Actuarially Equivalent life
    annuities, Treas. Reg. 1.409A-2(b)(2)(ii)) takes effect 12 months after it is made and defers the
    payment at least five years."""
    v = participation.plan.version_on(submitted_on)
    forms = v.provision("db_forms", None)
    if not forms:
        return AnnuityCheck(
            Violation(v.cite("distribution"), f"{v.plan.name} has no annuity forms to elect."), False, None
        )
    cite = v.cite("db_forms")
    problem = v_annuity_form(version=v, form=form) or v_annuity_defer_years(
        version=v, defer_years=defer_years
    )
    if problem is not None:
        return AnnuityCheck(problem, False, None)
    assert isinstance(defer_years, int)  # v_annuity_defer_years let only a whole number through
    if commencement is not None and commencement <= submitted_on:
        return AnnuityCheck(
            Violation(
                cite, f"Your benefit began on {commencement:%B %d, %Y}; its form can no longer change."
            ),
            False,
            None,
        )
    if is_initial_annuity_election(version=v, participation=participation, submitted_on=submitted_on):
        # BRP 4.2(b): the initial election stands as made (a lump sum included); 4.2(d) governs later changes.
        return AnnuityCheck(None, False, submitted_on)
    change_rule = v.provision("db_election_change", None) or {}
    change_cite = v.cite("db_election_change")
    same_time = defer_years == current_defer_years
    if same_time and form == current_form:
        return AnnuityCheck(
            Violation(cite, "This is the form and time already in force; nothing would change."), False, None
        )
    if same_time and is_life_annuity(form=form) and is_life_annuity(form=current_form):
        return AnnuityCheck(None, False, submitted_on)
    months, years = change_rule.get("min_months_effective", 12), change_rule.get("min_years_later", 5)
    takes_effect = add_months(submitted_on, months)
    if defer_years - current_defer_years < years:
        return AnnuityCheck(
            Violation(
                change_cite,
                f"A change of the time or form of your benefit must defer its start by at least {years} "
                f"years from when it would otherwise begin.",
                f"Choose a delay of at least {current_defer_years + years} years, or switch only "
                f"between annuity forms.",
                "defer_years",
            ),
            True,
            takes_effect,
        )
    if commencement is not None and commencement < takes_effect:
        return AnnuityCheck(
            Violation(
                change_cite,
                f"A change takes effect only {months} months after it is made ({takes_effect:%B %d, %Y}), "
                f"after your benefit is due to begin ({commencement:%B %d, %Y}).",
            ),
            True,
            takes_effect,
        )
    return AnnuityCheck(None, True, takes_effect)


FORM_LABELS = {
    "qjsa": "Qualified Joint and Survivor Annuity",
    "single_life": "Single Life Annuity",
    "period_certain_60": "Period Certain and Continuous (60 payments guaranteed)",
    "period_certain_120": "Period Certain and Continuous (120 payments guaranteed)",
    "period_certain_180": "Period Certain and Continuous (180 payments guaranteed)",
    "js_100": "Joint and Survivor Annuity (100% survivor)",
    "js_75": "Joint and Survivor Annuity (75% survivor)",
    "js_50": "Joint and Survivor Annuity (50% survivor)",
    "lump_sum": "Single lump sum",
    "installments": "Annual installments",
    "lump_sum_and_installments": "Percentage lump sum, then annual installments",
}


# --- schedule changes (EDCP Article VI) --------------------------------------------------------------


@dataclass(frozen=True)
class ScheduleChangeCheck:
    violation: Violation | None
    current_first_payment: dt.date | None
    new_first_payment: dt.date | None
    earliest_allowed: dt.date | None
    latest_filing: dt.date | None = None
    takes_effect_on: dt.date | None = None


def schedule_change_form_problems(
    *,
    participation: Participation,
    account_kind: str,
    form: str | None,
    installments: int | None,
    submitted_on: dt.date,
) -> list[tuple[str, Violation]]:
    """The new form and number of installments a change of schedule asks for, against the account's payment rule
    (EDCP 5.1(c), 5.2(c)); each problem with its form field ("form", "installments")."""
    d_rule = distribution_rule_for(version=participation.plan.version_on(submitted_on), kind=account_kind)
    out: list[tuple[str, Violation]] = []
    if form is not None and d_rule and form not in d_rule["forms"]:
        out.append(
            (
                "form",
                Violation(
                    d_rule["cite"], f"{form.replace('_', ' ')} is not a form of payment for this account."
                ),
            )
        )
    if installments is not None and d_rule and "installments" in d_rule:
        lo, hi = d_rule["installments"]["min"], d_rule["installments"]["max"]
        if not lo <= installments <= hi:
            out.append(
                (
                    "installments",
                    Violation(
                        d_rule["installments"].get("cite", d_rule["cite"]),
                        f"Installments must number from {lo} to {hi}.",
                    ),
                )
            )
    return out


def check_schedule_change(
    *,
    participation: Participation,
    account_kind: str,
    specified_month: dt.date | None,
    current_first_payment: dt.date | None,
    new_month: dt.date | None,
    delay_years: int | None,
    form: str | None,
    installments: int | None,
    submitted_on: dt.date,
    already_paying: bool,
) -> ScheduleChangeCheck:
    v = participation.plan.version_on(submitted_on)
    rule = v.provision("schedule_change", None)
    if not rule:
        return ScheduleChangeCheck(
            Violation(v.cite("schedule_change"), "This plan does not allow changes to a payment schedule."),
            current_first_payment,
            None,
            None,
        )
    cites = rule["cites"]
    if already_paying:
        return ScheduleChangeCheck(
            Violation(
                cites["twelve_months"],
                "Payments from this account have started; its schedule can no longer change.",
            ),
            current_first_payment,
            None,
            None,
        )
    form_problems = schedule_change_form_problems(
        participation=participation,
        account_kind=account_kind,
        form=form,
        installments=installments,
        submitted_on=submitted_on,
    )
    if form_problems:
        return ScheduleChangeCheck(form_problems[0][1], current_first_payment, None, None)
    years = rule["min_years_later"]
    takes_effect = add_months(submitted_on, rule["min_months_before"])
    if current_first_payment is None:
        # Separation-triggered: the first payment date is not known yet; the change must push it 5 years
        # and takes effect only 12 months after it is made (EDCP 6.2, 6.3).
        if new_month is not None:
            return ScheduleChangeCheck(
                Violation(
                    cites["five_years"],
                    "This account is paid after separation, not in a chosen month.",
                    f"Choose a delay of {years} years or more.",
                ),
                None,
                None,
                None,
            )
        if not delay_years or delay_years < years:
            return ScheduleChangeCheck(
                Violation(
                    cites["five_years"],
                    f"A change must delay the first payment by at least {years} years.",
                    f"Choose a delay of {years} years or more.",
                ),
                None,
                None,
                None,
            )
        return ScheduleChangeCheck(None, None, None, None, None, takes_effect)
    earliest = add_years(current_first_payment, years)
    if new_month is not None:
        new_first = new_month.replace(day=current_first_payment.day)
    elif delay_years:
        new_first = add_years(current_first_payment, delay_years)
    else:
        new_first = current_first_payment
    latest_filing = add_months(current_first_payment, -rule["min_months_before"])
    if submitted_on > latest_filing:
        return ScheduleChangeCheck(
            Violation(
                cites["twelve_months"],
                f"A change must be filed at least {rule['min_months_before']} months before the first "
                f"payment under the current schedule ({current_first_payment:%B %d, %Y}); the last day "
                f"to file was {latest_filing:%B %d, %Y}.",
                "This account's schedule can no longer change.",
            ),
            current_first_payment,
            new_first,
            earliest,
            latest_filing,
        )
    if new_first < current_first_payment:
        return ScheduleChangeCheck(
            Violation(
                cites["five_years"],
                "A change can never bring a payment forward.",
                f"The earliest new first payment is {earliest:%B %d, %Y}.",
            ),
            current_first_payment,
            new_first,
            earliest,
            latest_filing,
        )
    if new_first < earliest:
        return ScheduleChangeCheck(
            Violation(
                cites["five_years"],
                f"The new first payment must be at least {years} years after the current one "
                f"({current_first_payment:%B %d, %Y}); {new_first:%B %d, %Y} is too early.",
                f"The earliest new first payment is {earliest:%B %d, %Y}.",
            ),
            current_first_payment,
            new_first,
            earliest,
            latest_filing,
        )
    return ScheduleChangeCheck(None, current_first_payment, new_first, earliest, latest_filing, takes_effect)


# --- investment elections ---------------------------------------------------------------------------


def whole_number(*, value: object) -> int | None:
    """`value` as an int when it is a finite whole number (5, "5", "5.0"), else None ("Infinity" is no number)."""
    if not _is_whole(value):
        return None
    number = Decimal(str(value))
    return int(number) if number.is_finite() else None


def v_investment_chosen(*, version: PlanVersion, allocation: Mapping[int, object]) -> Violation | None:
    """EDCP 7.4, RRP 3.05(a): an allocation names at least one fund."""
    if not allocation:
        return Violation(version.cite("investment_increment_percent"), "Choose at least one fund.")
    return None


def v_investment_fund(*, version: PlanVersion, fund: Fund | None, menu: list[Fund]) -> Violation | None:
    """EDCP 7.5, RRP 3.05(b): only a fund on the plan's menu (active, of this plan) can be chosen."""
    if fund is None or not fund.active or fund.plan_id != version.plan_id:
        return Violation(
            version.cite("default_fund_rule"),
            "That fund is not on this plan's menu.",
            f"Choose among: {', '.join(f.code for f in menu if f.active)}.",
        )
    return None


def v_investment_share(*, version: PlanVersion, fund: Fund, percent: object) -> Violation | None:
    """EDCP 7.4, RRP 3.05(a): each share a whole percentage in the plan's increment (at least one increment)."""
    step = version.provision("investment_increment_percent", 1)
    value = whole_number(value=percent)
    if value is None or not step <= value <= 100 or value % step:
        steps = f" in steps of {step}%" if step > 1 else ""
        return Violation(
            version.cite("investment_increment_percent"),
            f"The share of {fund.code} must be a whole percentage of at least {step}%{steps}; "
            f"{str(percent)!r} is not.",
        )
    return None


def v_investment_total(*, version: PlanVersion, total: int) -> Violation | None:
    """EDCP 7.4, RRP 3.05(a): the shares add up to 100%; the message says by how much they miss."""
    if total == 100:
        return None
    gap = f"{100 - total}% short" if total < 100 else f"{total - 100}% too much"
    return Violation(
        version.cite("investment_increment_percent"),
        f"The fund shares add up to {total}%, not 100% ({gap}).",
        "Make them add up to exactly 100%.",
    )


def v_investment_applies_to(*, version: PlanVersion, applies_to: str) -> Violation | None:
    """EDCP 7.4, RRP 3.05: an allocation is for future credits, existing balances or both."""
    if applies_to not in InvestmentElection.AppliesTo.values:
        return Violation(
            version.cite("investment_increment_percent"),
            "Say whether the allocation is for future credits, existing balances or both.",
        )
    return None


def v_investment_allowed(
    *, participation: Participation, version: PlanVersion, submitted_on: dt.date
) -> Violation | None:
    """EDCP 2.2(b), RRP 3.05: whether investment changes continue after employment ends is the plan's choice."""
    status = employment_status_on(person=participation.person, day=submitted_on)
    if not status.employed and not version.provision("investment_change_after_separation", False):
        return Violation(
            version.cite("investment_change_after_separation"),
            "Investment changes end with employment in this plan.",
        )
    return None


def investment_menu(*, participation: Participation) -> dict[int, Fund]:
    """The plan's funds by id, in code order (inactive ones included: they are named as not on the menu)."""
    return {f.pk: f for f in Fund.objects.filter(plan=participation.plan).order_by("code", "pk")}


def check_investment(
    *, participation: Participation, allocation: dict[int, object], submitted_on: dt.date
) -> Violation | None:
    """The rules of an investment election in order, the first one broken (the preview asks each on its own)."""
    v = participation.plan.version_on(submitted_on)
    if (problem := v_investment_chosen(version=v, allocation=allocation)) is not None:
        return problem
    funds = investment_menu(participation=participation)
    menu = list(funds.values())
    total = 0
    for fund_id, pct in allocation.items():
        fund = funds.get(fund_id)
        problem = v_investment_fund(version=v, fund=fund, menu=menu)
        if problem is None and fund is not None:
            problem = v_investment_share(version=v, fund=fund, percent=pct)
        if problem is not None:
            return problem
        total += whole_number(value=pct) or 0
    if (problem := v_investment_total(version=v, total=total)) is not None:
        return problem
    return v_investment_allowed(participation=participation, version=v, submitted_on=submitted_on)
