"""Which election is in force: the reads payroll, crediting, payments and the screens rely on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.db.models import Q

from core import hooks, memo
from core.dates import EASTERN, add_years, day_of_month_after
from core.lists import people_filter
from core.models import Document
from elections import validators as V
from elections.models import (
    AnnuityElection,
    DeferralCancellation,
    DeferralElection,
    DeferralElectionLine,
    DistributionElection,
    EnrollmentWindow,
    InvestmentElection,
    ScheduleChange,
    Status,
)
from participants.models import Participation, Person
from participants.selectors import termination_event
from plans.models import Fund, Plan, PlanSection, PlanVersion
from plans.selectors import MissingFigure, announced_percent

CONFIRMATION_KIND = (
    "election_confirmation"  # the Document kind of an election confirmation (services store it)
)

if TYPE_CHECKING:
    from django.db.models import QuerySet


def choose_deferral_line(
    *,
    lines: Iterable[DeferralElectionLine],
    cancellations: Iterable[DeferralCancellation],
    evergreen: bool,
    plan_year: int,
    pay_date: dt.date,
    period_start: dt.date | None = None,
    performance_period_end: dt.date | None = None,
) -> DeferralElectionLine | None:
    """Which of a participation's accepted election lines for one component governs a pay (pure: the caller
    loads the lines, with their elections, and the participation's cancellations)."""
    candidates = [
        line
        for line in lines
        if line.election.plan_year <= plan_year and (evergreen or line.election.plan_year == plan_year)
    ]
    candidates.sort(
        key=lambda line: (line.election.plan_year, line.election.submitted_at, line.election.id), reverse=True
    )
    ended = [c for c in cancellations if c.ends_on < pay_date]
    if ended:
        # EDCP 3.1(c): after a cancellation under 3.7 only a new agreement resumes deferrals.
        last = max(ended, key=lambda c: c.decided_at)
        candidates = [line for line in candidates if line.election.submitted_at > last.decided_at]
    earned_from = period_start or pay_date
    for line in candidates:
        e = line.election
        if e.kind == DeferralElection.Kind.PERFORMANCE:
            if performance_period_end is None or e.performance_period_end != performance_period_end:
                continue
        elif performance_period_end is not None and any(
            x.election.kind == DeferralElection.Kind.PERFORMANCE
            and x.election.performance_period_end == performance_period_end
            for x in candidates
        ):
            continue
        if e.covers_pay_from and earned_from < e.covers_pay_from:
            continue  # EDCP 3.2(a): a first-year election covers only pay earned after it is irrevocable
        return line
    return None


def deferral_line_in_force(
    *,
    participation: Participation,
    component: str,
    plan_year: int,
    pay_date: dt.date,
    period_start: dt.date | None = None,
    performance_period_end: dt.date | None = None,
) -> DeferralElectionLine | None:
    """The accepted election line governing this pay (evergreen when the plan says so, EDCP 3.2(d))."""
    version = participation.plan.version_on(pay_date)
    lines = list(
        DeferralElectionLine.objects.select_related("election").filter(
            election__participation=participation,
            election__status=Status.ACCEPTED,
            component=component,
            election__plan_year__lte=plan_year,
        )
    )
    return choose_deferral_line(
        lines=lines,
        cancellations=list(DeferralCancellation.objects.filter(participation=participation)),
        evergreen=version.provision("evergreen", False),
        plan_year=plan_year,
        pay_date=pay_date,
        period_start=period_start,
        performance_period_end=performance_period_end,
    )


def cancellation_covering(
    *, cancellations: Iterable[DeferralCancellation], day: dt.date
) -> DeferralCancellation | None:
    """The cancellation (EDCP 3.7) whose period holds `day`, the latest starting first."""
    covering = [c for c in cancellations if c.starts_on <= day <= c.ends_on]
    return max(covering, key=lambda c: c.starts_on) if covering else None


def cancellation_on(*, participation: Participation, day: dt.date) -> DeferralCancellation | None:
    return cancellation_covering(
        cancellations=list(DeferralCancellation.objects.filter(participation=participation)), day=day
    )


def allocation_of(*, election: DeferralElection | None, default_kind: str) -> list[tuple[str, Decimal]]:
    """[(account name, percent)] of an election's deferrals; all to the default account without one."""
    allocations = list(election.allocations.all()) if election is not None else []
    if not allocations:
        return [(default_kind, Decimal(100))]
    out = []
    for a in allocations:
        name = f"{a.account_kind}:{a.specified_month:%Y-%m}" if a.specified_month else a.account_kind
        out.append((name, Decimal(a.percent)))
    return out


def _governing_elections(*, plan: Plan, plan_year: int) -> QuerySet[DeferralElection]:
    """Accepted annual and first-year elections that may govern `plan_year`: its own, or (an evergreen plan) an
    earlier one carried forward."""
    version = plan.version_on(dt.date(plan_year, 1, 1))
    qs = DeferralElection.objects.filter(
        status=Status.ACCEPTED, kind__in=[DeferralElection.Kind.ANNUAL, DeferralElection.Kind.FIRST_YEAR]
    )
    return (
        qs.filter(plan_year__lte=plan_year)
        if version.provision("evergreen", False)
        else qs.filter(plan_year=plan_year)
    )


def _in_force_election_ids(*, plan: Plan, plan_year: int) -> dict[int, int]:
    """participation id -> the id of the annual or first-year election in force for `plan_year`, for every
    participation of `plan` with one, in two queries of plain values: the latest governing election (its own
    plan year's, or an evergreen plan's earlier one carried forward), unless a cancellation decided after it
    ended before the plan year (EDCP 3.7)."""
    return {
        pk: election_id
        for pk, (election_id, _year) in _in_force_elections(plan=plan, plan_year=plan_year).items()
    }


def _in_force_elections(*, plan: Plan, plan_year: int) -> dict[int, tuple[int, int]]:
    """participation id -> (the id, the plan year) of the election in force for `plan_year`
    (`_in_force_election_ids`): a plan year before `plan_year` is an evergreen election carried forward."""
    chosen: dict[int, tuple[int, dt.datetime, int]] = {}
    for participation_id, election_id, submitted_at, year in (
        _governing_elections(plan=plan, plan_year=plan_year)
        .filter(participation__plan=plan)
        .order_by("participation_id", "-plan_year", "-submitted_at", "-id")
        .values_list("participation_id", "id", "submitted_at", "plan_year")
    ):
        chosen.setdefault(participation_id, (election_id, submitted_at, year))
    ended: dict[int, dt.datetime] = {}
    for participation_id, decided_at in (
        DeferralCancellation.objects.filter(participation__plan=plan, ends_on__lt=dt.date(plan_year, 1, 1))
        .order_by("participation_id", "-decided_at")
        .values_list("participation_id", "decided_at")
    ):
        ended.setdefault(participation_id, decided_at)
    return {
        pk: (election_id, year)
        for pk, (election_id, submitted_at, year) in chosen.items()
        if not (pk in ended and submitted_at <= ended[pk])
    }


def deferral_election_in_force(*, participation: Participation, plan_year: int) -> DeferralElection | None:
    """The annual or first-year election that governs `plan_year` (its own, or an earlier one carried forward)."""
    election = (
        _governing_elections(plan=participation.plan, plan_year=plan_year)
        .filter(participation=participation)
        .prefetch_related("lines", "allocations")
        .order_by("-plan_year", "-submitted_at", "-id")
        .first()
    )
    ended = (
        DeferralCancellation.objects.filter(participation=participation, ends_on__lt=dt.date(plan_year, 1, 1))
        .order_by("-decided_at")
        .first()
    )
    if election is not None and ended is not None and election.submitted_at <= ended.decided_at:
        return None
    return election


# --- windows and what a participant may elect ------------------------------------------------------------


def windows_open_for(*, participation: Participation, now: dt.datetime) -> list[EnrollmentWindow]:
    return list(
        EnrollmentWindow.objects.filter(plan=participation.plan, opens_at__lte=now, closes_at__gte=now)
        .filter(Q(participation__isnull=True) | Q(participation=participation))
        .order_by("closes_at", "id")
    )


@dataclass
class ElectionChance:
    """A plan year a participant may elect for right now, and until when."""

    plan_year: int
    kind: str
    closes_at: dt.datetime
    window: EnrollmentWindow | None = None
    performance_period: tuple[dt.date, dt.date] | None = None

    @property
    def label(self) -> str:
        if self.kind == "performance" and self.performance_period:
            s, e = self.performance_period
            return f"Performance-Based Compensation for the period {s:%b %d, %Y} to {e:%b %d, %Y}"
        if self.kind == "first_year":
            return f"First year of eligibility ({self.plan_year})"
        return f"Plan year {self.plan_year}"


def election_chances(*, participation: Participation, now: dt.datetime) -> list[ElectionChance]:
    """What the participant may elect for at `now`: each open window, or, for a plan year with no window, the
    plan's own deadline (next plan year; the first year of eligibility)."""
    version = participation.plan.version_on(now.astimezone(EASTERN).date())
    if not version.has("election_deadline") or not participation.eligible:
        return []
    today = now.astimezone(EASTERN).date()
    chances: list[ElectionChance] = []
    for window in windows_open_for(participation=participation, now=now):
        period = window.performance_period if window.kind == EnrollmentWindow.Kind.PERFORMANCE else None
        chances.append(ElectionChance(window.plan_year, window.kind, window.closes_at, window, period))
    years_with_windows = set(
        EnrollmentWindow.objects.filter(
            plan=participation.plan, kind=EnrollmentWindow.Kind.ANNUAL
        ).values_list("plan_year", flat=True)
    )
    next_year = today.year + 1
    if next_year not in years_with_windows and now <= V.annual_deadline(version=version, plan_year=next_year):
        chances.append(
            ElectionChance(next_year, "annual", V.annual_deadline(version=version, plan_year=next_year))
        )
    if participation.eligible_on and version.has("first_year_window_days"):
        end = V.first_year_window_end(version=version, eligible_on=participation.eligible_on)
        has_window = EnrollmentWindow.objects.filter(
            participation=participation, kind=EnrollmentWindow.Kind.FIRST_YEAR
        ).exists()
        if not has_window and participation.eligible_on <= today and now <= end:
            chances.append(ElectionChance(participation.eligible_on.year, "first_year", end))
    seen, out = set(), []
    for c in sorted(chances, key=lambda c: (c.closes_at, c.plan_year)):
        key = (c.plan_year, c.kind, c.performance_period)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


@dataclass
class ComponentLimit:
    code: str
    label: str
    max_percent: Decimal | None
    min_percent: Decimal
    performance_based: bool
    cite: str
    problem: str = ""


def deferral_limits(*, participation: Participation, plan_year: int, as_of: dt.date) -> list[ComponentLimit]:
    """Each deferrable component with the limits that would apply to an election made `as_of` (shown before
    the participant submits)."""
    version = participation.plan.version_on(as_of)
    out = []
    for comp in version.provision("deferral_components", []) or []:
        cite = comp.get("cite") or version.cite("deferral_components")
        problem, top = "", None
        if comp["max_percent"] == "announced":
            try:
                top = announced_percent(
                    plan=participation.plan, code="announced_max_deferral_percent", year=plan_year
                )
            except MissingFigure as exc:
                problem = str(exc)
        else:
            top = Decimal(comp["max_percent"])
        out.append(
            ComponentLimit(
                comp["code"],
                comp["label"],
                top,
                Decimal(comp.get("min_percent", "0")),
                bool(comp["performance_based"]),
                cite,
                problem,
            )
        )
    return out


# --- payment schedules ---------------------------------------------------------------------------------------


@dataclass
class AccountSchedule:
    account: str
    label: str
    kind: str
    specified_month: dt.date | None
    election: DistributionElection | None
    form: str
    installments: int | None
    lump_sum_percent: int | None
    delay_months: int
    is_default: bool
    cite: str
    rule_name: str
    changes: list[ScheduleChange] = field(default_factory=list)

    @property
    def form_label(self) -> str:
        text = V.FORM_LABELS.get(self.form, self.form)
        if self.form == "installments":
            text = f"{self.installments} annual installments"
        elif self.form == "lump_sum_and_installments":
            text = (
                f"{self.lump_sum_percent}% as a lump sum, the rest in {self.installments} annual installments"
            )
        if self.delay_months:
            text += (
                f"; first payment {self.delay_months // 12 if self.delay_months % 12 == 0 else self.delay_months}"
                f"{' years' if self.delay_months % 12 == 0 else ' months'} after the standard date"
            )
        return text


def accepted_distribution_elections(*, participation: Participation) -> list[DistributionElection]:
    """The participant's accepted payment elections, the latest first (submitted_at, then id); read once within a
    core.memo run (a page that asks about every account)."""
    return memo.remember(
        ("accepted_distribution_elections", participation.pk),
        lambda: list(
            DistributionElection.objects.filter(participation=participation, status=Status.ACCEPTED).order_by(
                "-submitted_at", "-id"
            )
        ),
    )


def accepted_schedule_changes(*, participation: Participation) -> list[ScheduleChange]:
    """The participant's accepted changes of payment schedule, the oldest first (submitted_at, then id); read once
    within a core.memo run."""
    return memo.remember(
        ("accepted_schedule_changes", participation.pk),
        lambda: list(
            ScheduleChange.objects.filter(participation=participation, status=Status.ACCEPTED).order_by(
                "submitted_at", "id"
            )
        ),
    )


def account_schedules(*, participation: Participation, as_of: dt.date) -> list[AccountSchedule]:
    """Every account that has, or is committed to, a payment schedule: the election in force, or the default
    that applies when none was made (EDCP 5.1(c), 5.2(c))."""
    version = participation.plan.version_on(as_of)
    # Issue 15: the accepted elections and changes are read once for all the accounts, not once an account.
    elections = accepted_distribution_elections(participation=participation)  # latest first
    all_changes = accepted_schedule_changes(participation=participation)  # oldest first
    names: dict[tuple[str, dt.date | None], None] = {}
    for kind, month in hooks.ask("accounts_held", participation=participation):
        names[(kind, month)] = None
    for e in elections:
        names[(e.account_kind, e.specified_month)] = None
    for m in V.specified_months_in_use(participation=participation):
        names[("specified_date", m)] = None
    for c in all_changes:
        names[(c.account_kind, c.specified_month)] = None
    default_kind = version.provision("default_deferral_account", None)
    if default_kind:
        names[(default_kind, None)] = None
    out = []
    for kind, month in sorted(names, key=lambda k: (k[0] != default_kind, k[0], k[1] or dt.date.min)):
        rule = V.distribution_rule_for(version=version, kind=kind)
        if rule is None:
            continue
        account = f"{kind}:{month:%Y-%m}" if month else kind
        election = next((e for e in elections if (e.account_kind, e.specified_month) == (kind, month)), None)
        spec = version.account_spec(kind)
        label = (spec["label"] if spec else kind.replace("_", " ").title()) + (
            f" ({month:%B %Y})" if month else ""
        )
        changes = [c for c in all_changes if (c.account_kind, c.specified_month) == (kind, month)]
        if election:
            out.append(
                AccountSchedule(
                    account,
                    label,
                    kind,
                    month,
                    election,
                    election.form,
                    election.installments,
                    election.lump_sum_percent,
                    election.delay_months,
                    False,
                    rule["cite"],
                    rule["name"],
                    changes,
                )
            )
        else:
            out.append(
                AccountSchedule(
                    account,
                    label,
                    kind,
                    month,
                    None,
                    rule.get("default_form", "lump_sum"),
                    None,
                    None,
                    0,
                    True,
                    rule["cite"],
                    rule["name"],
                    changes,
                )
            )
    return out


@dataclass
class AnnuityInForce:
    form: str
    defer_years: int
    election: AnnuityElection | None
    is_default: bool
    cite: str
    pending: AnnuityElection | None = None

    @property
    def form_label(self) -> str:
        return V.FORM_LABELS.get(self.form, self.form)


def annuity_elections_of(*, participation_ids: Iterable[int]) -> dict[int, list[AnnuityElection]]:
    """participation id -> its accepted annuity elections, the latest submitted first, for many participations in one
    query (what `annuity_in_force` reads of each)."""
    out: dict[int, list[AnnuityElection]] = {}
    for election in AnnuityElection.objects.filter(
        participation_id__in=list(participation_ids), status=Status.ACCEPTED
    ).order_by("participation_id", "-submitted_at", "-id"):
        out.setdefault(election.participation_id, []).append(election)
    return out


def annuity_in_force(
    *, participation: Participation, as_of: dt.date, accepted: list[AnnuityElection] | None = None
) -> AnnuityInForce:
    """BRP 4.2(c): the form elected and in effect on `as_of`; without one, a Qualified Joint and Survivor Annuity if
    married, else a Single Life Annuity. A change waiting out its 12 months (4.2(d)) is reported as pending.
    `accepted`: the participation's accepted elections, the latest submitted first, when the caller has read them for
    many participations (`annuity_elections_of`); otherwise they are read here."""
    version = participation.plan.version_on(as_of)
    if accepted is None:
        elections = AnnuityElection.objects.filter(
            participation=participation, status=Status.ACCEPTED
        ).order_by("-submitted_at", "-id")
        effective = elections.filter(Q(takes_effect_on__lte=as_of) | Q(takes_effect_on__isnull=True)).first()
        pending = elections.filter(takes_effect_on__gt=as_of).first()
    else:
        effective = next(
            (e for e in accepted if e.takes_effect_on is None or e.takes_effect_on <= as_of), None
        )
        pending = next(
            (e for e in accepted if e.takes_effect_on is not None and e.takes_effect_on > as_of), None
        )
    cite = version.cite("db_forms")
    if effective is not None:
        return AnnuityInForce(effective.form, effective.defer_years, effective, False, cite, pending)
    married = participation.person.marital_status == Person.MaritalStatus.MARRIED
    return AnnuityInForce(
        V.default_annuity_form(version=version, married=married), 0, None, True, cite, pending
    )


def benefit_commencement(*, participation: Participation, defer_years: int = 0) -> dt.date | None:
    """BRP 4.2(a), 1.3(b): the first day of the month after the month of separation (later by any deferral);
    None while the participant is employed."""
    ended = termination_event(person=participation.person)
    if ended is None:
        return None
    return add_years(day_of_month_after(ended.effective_date, 1, 1), defer_years)


@dataclass
class InvestmentInForce:
    election: InvestmentElection | None
    lines: list[tuple[Fund, int]]
    is_default: bool
    cite: str
    pending: list[InvestmentElection] = field(default_factory=list)


def investment_in_force(*, participation: Participation, as_of: dt.date) -> InvestmentInForce:
    """The allocation of future credits in effect on `as_of`; the capital-preservation default fund without one
    (EDCP 7.5, RRP 3.05(b))."""
    version = participation.plan.version_on(as_of)
    qs = (
        InvestmentElection.objects.filter(
            participation=participation,
            status=Status.ACCEPTED,
            applies_to__in=[InvestmentElection.AppliesTo.FUTURE, InvestmentElection.AppliesTo.BOTH],
        )
        .prefetch_related("lines__fund")
        .order_by("-effective_on", "-submitted_at", "-id")
    )
    current = qs.filter(effective_on__lte=as_of).first()
    pending = list(
        InvestmentElection.objects.filter(
            participation=participation, status=Status.ACCEPTED, effective_on__gt=as_of
        ).prefetch_related("lines__fund")
    )
    if current is not None:
        return InvestmentInForce(
            current,
            [(line.fund, line.percent) for line in current.lines.all()],
            False,
            version.cite("investment_increment_percent"),
            pending,
        )
    default = Fund.objects.filter(plan=participation.plan, is_default=True).first()
    return InvestmentInForce(
        None, [(default, 100)] if default else [], True, version.cite("default_fund_rule"), pending
    )


def investment_exchange_in_force(
    *, participation: Participation, as_of: dt.date
) -> InvestmentElection | None:
    """The latest accepted election that exchanged the existing balances (applies to existing balances or both),
    effective on or before `as_of`; None when the balances are still invested as they were credited."""
    return (
        InvestmentElection.objects.filter(
            participation=participation,
            status=Status.ACCEPTED,
            applies_to__in=[InvestmentElection.AppliesTo.EXISTING, InvestmentElection.AppliesTo.BOTH],
            effective_on__lte=as_of,
        )
        .prefetch_related("lines__fund")
        .order_by("-effective_on", "-submitted_at", "-id")
        .first()
    )


def schedule_accounts(*, participation: Participation, as_of: dt.date) -> list[dict]:
    """Each account whose schedule may be changed (EDCP Article VI), with what a change filed today is held to."""
    from elections.services import schedule_change_preview  # on use: the services import this module

    version = participation.plan.version_on(as_of)
    if not version.has("schedule_change"):
        return []
    out = []
    for s in account_schedules(participation=participation, as_of=as_of):
        preview = schedule_change_preview(participation=participation, account=s.account, as_of=as_of)
        out.append({"schedule": s, "preview": preview})
    return out


# --- what staff see ----------------------------------------------------------------------------------------------

Election = DeferralElection | DistributionElection | ScheduleChange | InvestmentElection | AnnuityElection
ELECTION_MODELS: dict[str, type[Election]] = {
    "deferral": DeferralElection,
    "distribution": DistributionElection,
    "schedule_change": ScheduleChange,
    "investment": InvestmentElection,
    "annuity": AnnuityElection,
}
KIND_OF_MODEL = {model: kind for kind, model in ELECTION_MODELS.items()}


def kind_of(*, election: Election) -> str:
    return KIND_OF_MODEL[type(election)]


def elections_of(*, person: Person) -> list[Election]:
    """Every election of a person, newest first (refused ones too: they are the participant's record)."""
    out: list[Election] = []
    for model in ELECTION_MODELS.values():
        out.extend(model.objects.filter(participation__person=person).select_related("participation__plan"))
    return sorted(out, key=lambda e: (e.submitted_at, e.pk), reverse=True)


def confirmation_of(*, election: Election) -> Document | None:
    return (
        Document.objects.filter(
            kind=CONFIRMATION_KIND, object_type=election._meta.label, object_id=str(election.pk)
        )
        .order_by("-created_at", "-id")
        .first()
    )


def refused_elections(*, plan: Plan | None = None, submitted_in: int | None = None, query: str = "") -> list:
    """Refused elections of every kind, with the section and the reason, newest first (at most 1,000 of each
    kind); `query`: a prefix of the participant's name or employee number (core.lists)."""
    out: list[Election] = []
    for model in ELECTION_MODELS.values():
        qs = model.objects.filter(status=Status.REJECTED).select_related(
            "participation__person", "participation__plan"
        )
        if query:
            qs = qs.filter(people_filter(query, path="participation__person__"))
        if plan is not None:
            qs = qs.filter(participation__plan=plan)
        if submitted_in is not None:
            start = dt.datetime(submitted_in, 1, 1, tzinfo=EASTERN)
            qs = qs.filter(submitted_at__gte=start, submitted_at__lt=start.replace(year=submitted_in + 1))
        out.extend(qs.order_by("-submitted_at")[:1000])
    return sorted(out, key=lambda e: (e.submitted_at, e.pk), reverse=True)


SUMMARY_SHOWN = 200  # the participants a plan year's page lists in each group (by name); it counts them all


@dataclass
class PlanYearSummary:
    """A plan year's elections: every group counted, the first SUMMARY_SHOWN of each listed (by name)."""

    plan: Plan
    plan_year: int
    elected: list[tuple[Participation, DeferralElection]]
    carried: list[tuple[Participation, DeferralElection]]
    not_elected: list[Participation]
    totals: list[dict]
    elected_count: int = 0
    carried_count: int = 0
    not_elected_count: int = 0


def plan_year_summary(*, plan: Plan, plan_year: int) -> PlanYearSummary:
    """Who elected for the plan year, whose earlier election carries forward (evergreen), who did not elect,
    and per component how many defer and at what percentages.

    Set-based: the elections in force and the participations are read as plain values for the whole plan
    (`_in_force_elections`), the percentages of the elections in force in one query; only the participants
    listed (the first SUMMARY_SHOWN of each group) are read as objects. The query count does not grow with the
    plan's population."""
    version = plan.version_on(dt.date(plan_year, 1, 1))
    in_force = _in_force_elections(plan=plan, plan_year=plan_year)
    elected_ids: list[int] = []
    carried_ids: list[int] = []
    not_elected_ids: list[int] = []
    for pk, eligible in (
        Participation.objects.filter(plan=plan)
        .order_by("person__last_name", "person__first_name", "id")
        .values_list("id", "eligible")
    ):
        if pk in in_force:
            (elected_ids if in_force[pk][1] == plan_year else carried_ids).append(pk)
        elif eligible:
            not_elected_ids.append(pk)
    shown = [*elected_ids[:SUMMARY_SHOWN], *carried_ids[:SUMMARY_SHOWN], *not_elected_ids[:SUMMARY_SHOWN]]
    participations = Participation.objects.select_related("person").in_bulk(shown)
    elections = DeferralElection.objects.prefetch_related("lines").in_bulk(
        [in_force[pk][0] for pk in shown if pk in in_force]
    )

    def listed(ids: list[int]) -> list[tuple[Participation, DeferralElection]]:
        return [(participations[pk], elections[in_force[pk][0]]) for pk in ids[:SUMMARY_SHOWN]]

    in_force_ids = {election_id for election_id, _year in in_force.values()}
    percents: dict[str, list[Decimal]] = {}
    for election_id, component, percent in DeferralElectionLine.objects.filter(
        election__in=_governing_elections(plan=plan, plan_year=plan_year).filter(participation__plan=plan)
    ).values_list("election_id", "component", "percent"):
        if election_id in in_force_ids and percent:
            percents.setdefault(component, []).append(percent)
    totals = []
    for comp in version.provision("deferral_components", []) or []:
        values = percents.get(comp["code"], [])
        totals.append(
            {
                "code": comp["code"],
                "label": comp["label"],
                "count": len(values),
                "average": (sum(values, Decimal(0)) / len(values)).quantize(Decimal("0.1"))
                if values
                else None,
                "min": min(values) if values else None,
                "max": max(values) if values else None,
            }
        )
    return PlanYearSummary(
        plan,
        plan_year,
        elected=listed(elected_ids),
        carried=listed(carried_ids),
        not_elected=[participations[pk] for pk in not_elected_ids[:SUMMARY_SHOWN]],
        totals=totals,
        elected_count=len(elected_ids),
        carried_count=len(carried_ids),
        not_elected_count=len(not_elected_ids),
    )


EXPORT_CHUNK = 2000  # participants whose elections and lines are read by one pair of queries


def payroll_export_rows(*, plan: Plan, plan_year: int) -> Iterator[dict]:
    """The deferral percentages in force for a plan year, one row per participant and component, for payroll:
    produced as they are read, participants by employee number in chunks (two queries a chunk, plain values,
    never every election of the plan held at once), then the performance elections of the year (EDCP 3.2(c))."""
    cancellations: dict[int, tuple[dt.date, dt.date]] = {}
    for participation_id, starts_on, ends_on in DeferralCancellation.objects.filter(
        participation__plan=plan,
        starts_on__lte=dt.date(plan_year, 12, 31),
        ends_on__gte=dt.date(plan_year, 1, 1),
    ).values_list("participation_id", "starts_on", "ends_on"):
        cancellations[participation_id] = (starts_on, ends_on)
    in_force = _in_force_election_ids(plan=plan, plan_year=plan_year)
    people = list(
        Participation.objects.filter(plan=plan)
        .order_by("person__employee_number")
        .values_list("id", "person__employee_number", "person__first_name", "person__last_name")
    )
    for start in range(0, len(people), EXPORT_CHUNK):
        chunk = [(p, in_force[p[0]]) for p in people[start : start + EXPORT_CHUNK] if p[0] in in_force]
        yield from _export_lines(plan, plan_year, chunk, cancellations)
    performance = (
        DeferralElection.objects.filter(
            participation__plan=plan,
            status=Status.ACCEPTED,
            kind=DeferralElection.Kind.PERFORMANCE,
            plan_year=plan_year,
        )
        .order_by("-plan_year", "-submitted_at", "-id")
        .values_list(
            "participation_id",
            "participation__person__employee_number",
            "participation__person__first_name",
            "participation__person__last_name",
            "id",
        )
    )
    chunk = [
        ((pid, number, first, last), election_id) for pid, number, first, last, election_id in performance
    ]
    for start in range(0, len(chunk), EXPORT_CHUNK):
        yield from _export_lines(plan, plan_year, chunk[start : start + EXPORT_CHUNK], cancellations)


def _export_lines(
    plan: Plan,
    plan_year: int,
    chunk: list[tuple[tuple[int, str, str, str], int]],
    cancellations: dict[int, tuple[dt.date, dt.date]],
) -> Iterator[dict]:
    """The export's rows of (participant, election) pairs, in their order: each election's lines by component."""
    ids = [election_id for _, election_id in chunk]
    elections = {
        row[0]: row[1:]
        for row in DeferralElection.objects.filter(id__in=ids).values_list(
            "id", "plan_year", "kind", "irrevocable_at", "covers_pay_from", "performance_period_end"
        )
    }
    lines: dict[int, list[tuple[str, Decimal]]] = {i: [] for i in ids}
    for election_id, component, percent in (
        DeferralElectionLine.objects.filter(election_id__in=ids)
        .order_by("election", "component")
        .values_list("election_id", "component", "percent")
    ):
        lines[election_id].append((component, percent))
    for (participation_id, number, first, last), election_id in chunk:
        year, kind, irrevocable_at, covers_pay_from, period_end = elections[election_id]
        c = cancellations.get(participation_id)
        for component, percent in lines[election_id]:
            yield {
                "employee_number": number,
                "name": f"{first} {last}",  # Person.full_name
                "plan": plan.code,
                "plan_year": plan_year,
                "component": component,
                "percent": f"{percent:.0f}",
                "election_id": election_id,
                "election_plan_year": year,
                "kind": kind,
                "irrevocable_at": irrevocable_at.astimezone(EASTERN).isoformat() if irrevocable_at else "",
                "covers_pay_from": covers_pay_from.isoformat() if covers_pay_from else "",
                "performance_period_end": period_end.isoformat() if period_end else "",
                "cancelled_from": c[0].isoformat() if c else "",
                "cancelled_to": c[1].isoformat() if c else "",
            }


def payroll_reductions(
    *, plan: Plan, plan_year: int | None = None, participation: Participation | None = None
) -> QuerySet[Any]:  # the books' PayrollDeferral rows (elections sits below the books)
    """Pay lines whose deferral payroll reduced (EDCP 1.14: never more than the cash pay left after taxes) or
    cancelled (EDCP 3.7), with the reason payroll recorded; the books keep the pay lines."""
    return hooks.ask("payroll_reductions", plan=plan, plan_year=plan_year, participation=participation)


# --- plan text quoted in documents -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Quote:
    citation: str
    title: str
    text: str
    source: str


def _section_candidates(section: str) -> list[str]:
    out = [section]
    while "(" in section:
        section = section[: section.rindex("(")]
        out.append(section)
    return out


def provision_quote(*, version: PlanVersion, citation: str) -> Quote | None:
    """The plan text behind a citation ('EDCP 3.2(b)'): the paragraph when the section is split into (a), (b)...,
    from this version of the plan or, where its text is missing from the catalog, the nearest version that has it."""
    code, _, section = citation.partition(" ")
    if not section or code != version.plan.code:
        return None
    versions = sorted(
        version.plan.versions.all(),
        key=lambda v: (v.pk != version.pk, abs((v.effective_date - version.effective_date).days)),
    )
    for candidate_version in versions:
        for candidate in _section_candidates(section):
            found = PlanSection.objects.filter(version=candidate_version, section=candidate).first()
            if found is None:
                continue
            text, notes = found.text, []
            if candidate != section:
                paragraph = _paragraph(text, section[len(candidate) :])
                if paragraph:
                    text = paragraph
                else:
                    notes.append(
                        f"the catalog's text of {code} {candidate} has no paragraph {section[len(candidate) :]}; "
                        f"the whole section is quoted"
                    )
            if candidate_version.pk != version.pk:
                notes.append(f"text of the {candidate_version.title}")
            return Quote(citation, found.title, text, "; ".join(notes))
    return None


def _paragraph(text: str, marks: str) -> str | None:
    """From a section's text, the paragraph that starts with the first mark of `marks` ('(b)' of '(b)(ii)')."""
    first = marks[: marks.index(")") + 1] if ")" in marks else marks
    for line in text.splitlines():
        if line.strip().startswith(first):
            return line.strip()
    return None


def provision_quotes(*, version: PlanVersion, citations: list[str]) -> list[Quote]:
    out, seen = [], set()
    for citation in citations:
        if not citation or citation in seen:
            continue
        seen.add(citation)
        quote = provision_quote(version=version, citation=citation)
        if quote is not None:
            out.append(quote)
        else:
            out.append(
                Quote(
                    citation,
                    "",
                    "(The text of this provision is available from the Committee on request.)",
                    "",
                )
            )
    return out
