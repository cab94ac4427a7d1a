"""Submitting elections: every submission is validated by elections.validators and stored, accepted
or rejected with the rule it breaks (the audit trail keeps refusals too). The portal, the staff
screens (paper forms), the API and the simulator all call these functions, so they all apply the
same rules.

Enrollment windows and the plan's deadlines (a choice documented here, tested in
tests/elections/test_windows.py): the plan's own deadlines always apply (11:59 pm Eastern on
December 31 before the plan year, 30 days after the notice of initial eligibility, six months
before a performance period ends), and a window can never close after them. When the Committee
has opened windows of a kind for a plan year, an election of that kind outside every one of them
is refused; with no window recorded, only the plan's deadlines apply (the simulator records none).
An election made in a window becomes irrevocable when that window closes.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING

from django.db import transaction
from django.urls import reverse

from core import hooks
from core import valuation_calendar as cal
from core.audit import actor_label, audit_record
from core.dates import EASTERN, add_months, day_of_month_after, parse_month, year_in_range
from core.errors import ApplicationError, InvalidInput
from core.models import Document, Notice
from core.notices import NoticeKind, notice_send
from core.pdf import document_store
from elections import validators as V
from elections.models import (
    AnnuityElection,
    DeferralAllocation,
    DeferralCancellation,
    DeferralElection,
    DeferralElectionLine,
    DistributionElection,
    ElectionNotice,
    EnrollmentWindow,
    InvestmentElection,
    InvestmentElectionLine,
    ScheduleChange,
    Status,
)
from elections.pdf import blank_form_context, confirmation_context
from elections.selectors import (
    CONFIRMATION_KIND,
    AccountSchedule,
    AnnuityInForce,
    accepted_distribution_elections,
    accepted_schedule_changes,
    annuity_in_force,
    benefit_commencement,
    deferral_election_in_force,
    election_chances,
    kind_of,
)
from participants.models import Participation
from participants.selectors import employment_status_on, termination_event
from plans.models import Plan

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from core.audit import Actor
    from elections.selectors import Election
    from plans.models import PlanVersion

logger = logging.getLogger(__name__)


class ElectionError(ApplicationError):
    """A staff action the plan does not allow; `rule` is the section it breaks."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(f"{message} ({rule})")
        self.rule = rule
        self.message = message


def _local_date(moment: dt.datetime) -> dt.date:
    return moment.astimezone(EASTERN).date()


def _split_account(name: str) -> tuple[str, dt.date | None]:
    if ":" in name:
        kind, month = name.split(":", 1)
        return kind, parse_month(month)
    return name, None


def _jsonable(value: object) -> object:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


def _lock(participation: Participation) -> None:
    """Elections of one participant are decided one at a time (a replacement sees what it replaces)."""
    Participation.objects.select_for_update().filter(pk=participation.pk).first()


def _small(value: object) -> int | None:
    """A whole number small enough to store in a count column; the raw value stays in request_data."""
    n = _whole(value)
    return n if n is not None and 0 < n <= 1000 else None


def _whole(value: object) -> int | None:
    if V._is_whole(value):
        try:
            return int(Decimal(str(value)))
        except InvalidOperation:
            return None
    return None


# --- enrollment windows ------------------------------------------------------------------------------


def _deadline_version(plan: Plan, plan_year: int) -> PlanVersion:
    return plan.version_on(dt.date(plan_year - 1, 12, 31))


@transaction.atomic
def enrollment_window_open(
    *,
    plan: Plan,
    plan_year: int,
    opens_at: dt.datetime,
    closes_at: dt.datetime,
    actor: Actor,
    now: dt.datetime,
    kind: str = EnrollmentWindow.Kind.ANNUAL,
    performance_period: tuple[dt.date, dt.date] | None = None,
    reminder_days: list[int] | None = None,
    note: str = "",
) -> EnrollmentWindow:
    """The Committee opens a window (EDCP 3.1(a), 3.2; RRP 2.03). It may close earlier than the plan's
    deadline, never later."""
    version = _deadline_version(plan, plan_year)
    if opens_at.tzinfo is None or closes_at.tzinfo is None:
        raise ValueError("window times must be timezone-aware")
    if kind == EnrollmentWindow.Kind.ANNUAL:
        if not version.has("election_deadline"):
            raise ElectionError(
                version.cite("deferral_components"), f"{plan.name} takes no deferral elections."
            )
        deadline = V.annual_deadline(version=version, plan_year=plan_year)
        cite = version.cite("election_deadline")
        what = f"the plan's deadline for {plan_year} elections"
    elif kind == EnrollmentWindow.Kind.PERFORMANCE:
        if not performance_period:
            raise InvalidInput("a Performance-Based Compensation window needs its performance period")
        start, end = performance_period
        if not version.has("performance_election_months_before_end"):
            raise ElectionError(
                version.cite("deferral_components"), f"{plan.name} takes no performance-period elections."
            )
        cite = version.cite("performance_election_months_before_end")
        min_months = version.provision("performance_period_min_months", 12)
        if add_months(start, min_months) > end + dt.timedelta(days=1):
            raise ElectionError(
                version.cite("performance_period_min_months"),
                f"A performance period must last at least {min_months} months; {start} to {end} is shorter.",
            )
        deadline = V.performance_deadline(version=version, period_end=end)
        what = f"six months before the performance period ends ({end:%B %d, %Y})"
    else:
        raise InvalidInput("first-year windows are opened by the notice of initial eligibility")
    if closes_at <= opens_at:
        raise InvalidInput("a window must close after it opens")
    if closes_at > deadline:
        raise ElectionError(cite, f"A window cannot close after {what}: {V._when(deadline)}.")
    days = sorted(
        {int(d) for d in (reminder_days if reminder_days is not None else [14, 7, 1]) if int(d) >= 0},
        reverse=True,
    )
    window = EnrollmentWindow.objects.create(
        plan=plan,
        plan_year=plan_year,
        kind=kind,
        opens_at=opens_at,
        closes_at=closes_at,
        reminder_days=days,
        performance_period_start=performance_period[0] if performance_period else None,
        performance_period_end=performance_period[1] if performance_period else None,
        note=note,
        opened_by=actor_label(actor),
        opened_at=now,
    )
    audit_record(
        action="enrollment_window.open",
        actor=actor,
        at=now,
        obj=window,
        data={
            "plan": plan.code,
            "plan_year": plan_year,
            "kind": kind,
            "opens_at": opens_at.isoformat(),
            "closes_at": closes_at.isoformat(),
        },
    )
    return window


@transaction.atomic
def enrollment_window_cancel(*, window: EnrollmentWindow, actor: Actor, now: dt.datetime) -> None:
    """A window may be withdrawn before it opens; once open its close fixes when elections become irrevocable."""
    if window.opens_at <= now:
        raise ElectionError(
            window.plan.version_on(_local_date(now)).cite("election_deadline"),
            "A window that has opened cannot be withdrawn or changed: elections made in it become "
            "irrevocable when it closes.",
        )
    if window.kind == EnrollmentWindow.Kind.FIRST_YEAR:
        raise InvalidInput("a first-year window follows the notice of eligibility and cannot be withdrawn")
    audit_record(
        action="enrollment_window.cancel",
        actor=actor,
        at=now,
        obj=window,
        data={"plan": window.plan.code, "plan_year": window.plan_year},
    )
    window.notices.all().delete()
    window.delete()


# --- notices and reminders -----------------------------------------------------------------------------


_NOTICE_KINDS: dict[str, NoticeKind] = {
    ElectionNotice.Kind.ELIGIBILITY: NoticeKind.ELIGIBILITY,
    ElectionNotice.Kind.OPENED: NoticeKind.WINDOW_OPENED,
    ElectionNotice.Kind.REMINDER: NoticeKind.WINDOW_REMINDER,
    ElectionNotice.Kind.CLOSING: NoticeKind.WINDOW_CLOSING,
}


def _send(
    *,
    participation: Participation,
    window: EnrollmentWindow | None,
    kind: str,
    template: str,
    context: dict,
    subject: str,
    today: dt.date,
    now: dt.datetime,
    actor: Actor,
) -> ElectionNotice | None:
    """Send one notice unless it was already sent for this window, kind and day (a rerun sends nothing)."""
    if ElectionNotice.objects.filter(
        participation=participation, window=window, kind=kind, sent_on=today
    ).exists():
        return None
    person = participation.person
    notice = notice_send(
        kind=_NOTICE_KINDS[kind],
        subject=subject,
        template=template,
        context={**context, "participation": participation, "plan": participation.plan, "window": window},
        link=reverse("elections_portal:home"),
        as_of=now,
        actor=actor,
        person=person,
        obj=window if window is not None else participation,
        key_extra=today.isoformat(),
    )
    delivered = notice.status in (Notice.Status.SENT, Notice.Status.QUEUED, Notice.Status.PRINTED)
    return ElectionNotice.objects.create(
        participation=participation,
        window=window,
        kind=kind,
        sent_on=today,
        sent_at=now,
        to=notice.to or ("paper" if delivered else ""),
        subject=subject,
        delivered=delivered,
        actor=actor_label(actor),
    )


@transaction.atomic
def eligibility_notice_send(
    *, participation: Participation, notice_on: dt.date, actor: Actor, now: dt.datetime
) -> ElectionNotice:
    """The Committee's notice of initial eligibility (EDCP 3.2(a), RRP 2.03(c)): it starts the participant's
    30-day first-year window, recorded as an EnrollmentWindow of that participant."""
    version = participation.plan.version_on(notice_on)
    if not version.has("first_year_window_days"):
        raise ElectionError(
            version.cite("deferral_components"), f"{participation.plan.name} takes no deferral elections."
        )
    if participation.eligible_on and participation.eligible_on != notice_on:
        raise ElectionError(
            version.cite("first_year_window_days"),
            f"{participation.person} was already notified of initial eligibility on "
            f"{participation.eligible_on:%B %d, %Y}; the first-year window runs from that notice.",
        )
    if not participation.eligible:
        raise ElectionError(
            version.cite("participation"), f"{participation.person} is not an Eligible Employee."
        )
    if participation.eligible_on != notice_on:
        participation.eligible_on = notice_on
        participation.save(update_fields=["eligible_on"])
    opens = dt.datetime(notice_on.year, notice_on.month, notice_on.day, tzinfo=EASTERN)
    closes = V.first_year_window_end(version=version, eligible_on=notice_on)
    window, _ = EnrollmentWindow.objects.get_or_create(
        participation=participation,
        kind=EnrollmentWindow.Kind.FIRST_YEAR,
        defaults={
            "plan": participation.plan,
            "plan_year": notice_on.year,
            "opens_at": opens,
            "closes_at": closes,
            "reminder_days": [7, 1],
            "opened_by": actor_label(actor),
            "opened_at": now,
            "note": "Opened by the notice of initial eligibility",
        },
    )
    subject = f"{participation.plan.name}: you are eligible to defer pay"
    notice = _send(
        participation=participation,
        window=window,
        kind=ElectionNotice.Kind.ELIGIBILITY,
        template="elections/email/eligibility.txt",
        today=notice_on,
        now=now,
        actor=actor,
        subject=subject,
        context={
            "closes_at": closes,
            "days": version.provision("first_year_window_days"),
            "cite": version.cite("first_year_window_days"),
            "components": version.provision("deferral_components", []) or [],
        },
    )
    audit_record(
        action="elections.eligibility_notice",
        actor=actor,
        at=now,
        obj=participation,
        data={"notice_on": notice_on.isoformat(), "window": window.pk},
    )
    if notice is None:
        notice = ElectionNotice.objects.get(
            participation=participation,
            window=window,
            kind=ElectionNotice.Kind.ELIGIBILITY,
            sent_on=notice_on,
        )
    return notice


def _elections_in_window(
    participation: Participation, window: EnrollmentWindow
) -> QuerySet[DeferralElection]:
    qs = DeferralElection.objects.filter(
        participation=participation, status=Status.ACCEPTED, plan_year=window.plan_year, kind=window.kind
    )
    if window.kind == EnrollmentWindow.Kind.PERFORMANCE:
        qs = qs.filter(performance_period_end=window.performance_period_end)
    return qs


def _has_elected(participation: Participation, window: EnrollmentWindow) -> bool:
    return _elections_in_window(participation, window).exists()


def _window_audience(window: EnrollmentWindow, today: dt.date) -> list[Participation]:
    people: list[Participation]
    if window.kind == EnrollmentWindow.Kind.FIRST_YEAR:
        people = [window.participation] if window.participation is not None else []
    else:
        people = list(
            Participation.objects.filter(plan=window.plan, eligible=True).select_related("person", "plan")
        )
    out = []
    for p in people:
        if not p.eligible or not employment_status_on(person=p.person, day=today).employed:
            continue
        start = window.performance_period_start
        if (
            window.kind == EnrollmentWindow.Kind.PERFORMANCE
            and start
            and not V.employed_throughout(person=p.person, start=start, end=today)
        ):
            continue  # EDCP 3.2(c): only those employed since the performance period began may elect
        out.append(p)
    return out


def election_reminders_send(*, today: dt.date, actor: Actor, now: dt.datetime) -> dict:
    """Daily: announce windows opening today and remind those who have not elected N days before a window
    closes. Idempotent: a rerun for the same day sends nothing twice."""
    start = dt.datetime(today.year, today.month, today.day, tzinfo=EASTERN)
    end = start + dt.timedelta(days=1)
    stats = {"opened": 0, "reminders": 0, "closing": 0, "undeliverable": 0}
    windows = (
        EnrollmentWindow.objects.filter(closes_at__gte=start, opens_at__lt=end)
        .select_related("plan", "participation")
        .order_by("closes_at", "id")
    )
    for window in windows:
        close_day = _local_date(window.closes_at)
        days_left = (close_day - today).days
        if days_left == 0:  # the closing notice takes the place of a reminder on the last day
            window_closing_send(window=window, today=today, actor=actor, now=now, stats=stats)
        opening = _local_date(window.opens_at) == today and window.kind != EnrollmentWindow.Kind.FIRST_YEAR
        reminding = days_left in (window.reminder_days or []) and days_left != 0
        if not (opening or reminding):
            continue
        kind = ElectionNotice.Kind.OPENED if opening else ElectionNotice.Kind.REMINDER
        for participation in _window_audience(window, today):
            if _has_elected(participation, window):
                continue
            in_force = _in_force_summary(participation, window.plan_year)
            subject = (
                f"{window.plan.name}: {window.get_kind_display().lower()} for {window.plan_year} is open"
                if opening
                else f"{window.plan.name}: {days_left} day{'s' if days_left != 1 else ''} left to elect "
                f"for {window.plan_year}"
            )
            with transaction.atomic():
                notice = _send(
                    participation=participation,
                    window=window,
                    kind=kind,
                    today=today,
                    now=now,
                    actor=actor,
                    subject=subject,
                    template="elections/email/reminder.txt",
                    context={
                        "opening": opening,
                        "days_left": days_left,
                        "in_force": in_force,
                        "cite": window.plan.version_on(today).cite(V.KIND_PROVISION[window.kind]),
                    },
                )
            if notice is not None:
                stats["opened" if opening else "reminders"] += 1
                stats["undeliverable"] += int(not notice.delivered)
    return stats


def window_closing_send(
    *, window: EnrollmentWindow, today: dt.date, actor: Actor, now: dt.datetime, stats: dict | None = None
) -> dict:
    """On the day a window closes (EDCP 3.2, RRP 2.03): each eligible participant of its audience is told
    when it closes and what will be in force for the plan year: the election they filed in the window, else
    the election that carries forward, else none. Once per window and participant: a rerun sends nothing."""
    stats = stats if stats is not None else {"closing": 0, "undeliverable": 0}
    closed = now >= window.closes_at
    cite = window.plan.version_on(today).cite(V.KIND_PROVISION[window.kind])
    for participation in _window_audience(window, today):
        if ElectionNotice.objects.filter(
            participation=participation, window=window, kind=ElectionNotice.Kind.CLOSING
        ).exists():
            continue
        filed = (
            _elections_in_window(participation, window)
            .prefetch_related("lines")
            .order_by("-submitted_at", "-id")
            .first()
        )
        subject = f"{window.plan.name}: the {window.get_kind_display().lower()} for {window.plan_year} " + (
            "has closed" if closed else "closes today"
        )
        with transaction.atomic():
            notice = _send(
                participation=participation,
                window=window,
                kind=ElectionNotice.Kind.CLOSING,
                today=today,
                now=now,
                actor=actor,
                subject=subject,
                template="elections/email/closing.txt",
                context={
                    "closed": closed,
                    "filed": filed,
                    "filed_lines": _lines_summary(filed) if filed is not None else "",
                    "in_force": ""
                    if filed is not None
                    else _in_force_summary(participation, window.plan_year),
                    "cite": cite,
                },
            )
        if notice is not None:
            stats["closing"] += 1
            stats["undeliverable"] += int(not notice.delivered)
    return stats


def _lines_summary(election: DeferralElection) -> str:
    return ", ".join(
        f"{line.percent:.0f}% of {line.component.replace('_', ' ')}" for line in election.lines.all()
    )


def _in_force_summary(participation: Participation, plan_year: int) -> str:
    election = deferral_election_in_force(participation=participation, plan_year=plan_year)
    if election is None:
        return ""
    lines = ", ".join(
        f"{line.percent:.0f}% of {line.component.replace('_', ' ')}" for line in election.lines.all()
    )
    return f"your election of {election.plan_year} ({lines}) stays in force unless you replace it"


# --- deferral elections -----------------------------------------------------------------------------------


def _store_lines(election: DeferralElection, percentages: dict, accounts: dict | None) -> None:
    for comp, pct in percentages.items():
        DeferralElectionLine.objects.create(election=election, component=comp, percent=Decimal(str(pct)))
    for name, pct in (accounts or {}).items():
        whole = _whole(pct)
        if not whole:
            continue
        kind_name, month = _split_account(name)
        DeferralAllocation.objects.create(
            election=election, account_kind=kind_name, specified_month=month, percent=whole
        )


def _deferral_violation(req: V.DeferralRequest) -> tuple[V.Violation | None, EnrollmentWindow | None]:
    violation = V.check_deferral(req=req)
    window = None
    if violation is None:
        _, window = V.windows_for(req=req)
    return violation, window


def _irrevocable_at(req: V.DeferralRequest, kind: str, window: EnrollmentWindow | None) -> dt.datetime:
    if window is not None:
        return window.closes_at  # the Committee's earlier deadline (EDCP 3.2(b): "such earlier date")
    eligible_on = req.participation.eligible_on
    if kind == "first_year" and eligible_on is not None:  # election_kind(): first-year follows a notice
        return V.first_year_window_end(version=req.version, eligible_on=eligible_on)
    if kind == "performance":
        return V.performance_deadline(version=req.version, period_end=req.period[1])
    return V.annual_deadline(version=req.version, plan_year=req.plan_year)


@transaction.atomic
def deferral_election_submit(
    *,
    participation: Participation,
    plan_year: int,
    percentages: dict[str, object],
    accounts: dict[str, object] | None,
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
    performance_period: tuple[dt.date, dt.date] | None = None,
    _violation: V.Violation | None = None,
) -> DeferralElection:
    """A Compensation Deferral Agreement (EDCP 3.1-3.3, RRP 2.03). Changeable until its window (or the plan's
    deadline) closes, when it becomes irrevocable; a later one of the same plan year and kind replaces it."""
    _lock(participation)
    req = V.DeferralRequest(
        participation=participation,
        plan_year=plan_year,
        percentages=dict(percentages),
        accounts=dict(accounts) if accounts else None,
        performance_period=performance_period,
        submitted_at=submitted_at,
    )
    violation, window = _deferral_violation(req)
    violation = violation or _violation
    kind = V.election_kind(req=req)
    election = DeferralElection(
        participation=participation,
        plan_year=plan_year,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor_label(actor),
        kind=kind,
        window=window,
        performance_period_start=performance_period[0] if performance_period else None,
        performance_period_end=performance_period[1] if performance_period else None,
        request_data=_jsonable(
            {
                "plan_year": plan_year,
                "percentages": percentages,
                "accounts": accounts,
                "performance_period": performance_period,
            }
        ),
    )
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
        election.save()
    else:
        election.status = Status.ACCEPTED
        election.irrevocable_at = _irrevocable_at(req, kind, window)
        if kind == "first_year":
            # EDCP 3.2(a): only pay earned after the election becomes irrevocable.
            election.covers_pay_from = _local_date(election.irrevocable_at) + dt.timedelta(days=1)
        (
            DeferralElection.objects.filter(
                participation=participation,
                plan_year=plan_year,
                kind=election.kind,
                status=Status.ACCEPTED,
                performance_period_end=election.performance_period_end,
                irrevocable_at__gt=submitted_at,
            ).update(status=Status.SUPERSEDED)
        )
        election.save()
        _store_lines(election, percentages, accounts)
        _fix_pending_distribution_elections(election)
    audit_record(
        action=f"deferral_election.{election.status}",
        actor=actor,
        at=submitted_at,
        obj=election,
        reason=election.message,
        data={**election.request_data, "rule": election.rule, "channel": channel},
    )
    return election


def _fix_pending_distribution_elections(election: DeferralElection) -> None:
    """A payment schedule filed before the first deferral into its account becomes irrevocable with that deferral."""
    version = election.participation.plan.version_on(_local_date(election.submitted_at))
    if not any(line.percent for line in election.lines.all()):
        return
    for kind, month in V._accounts_of(election, version.provision("default_deferral_account", None)):
        (
            DistributionElection.objects.filter(
                participation=election.participation,
                status=Status.ACCEPTED,
                account_kind=kind,
                specified_month=month,
                irrevocable_at__isnull=True,
            ).update(irrevocable_at=election.irrevocable_at)
        )


def deferral_election_stop(
    *, participation: Participation, plan_year: int, submitted_at: dt.datetime, channel: str, actor: Actor
) -> DeferralElection:
    """Revoke an evergreen election for a plan year in time (EDCP 3.2(d)): an election of 0% of every component."""
    version = participation.plan.version_on(_local_date(submitted_at))
    zeros: dict[str, object] = {c["code"]: 0 for c in version.provision("deferral_components", []) or []}
    return deferral_election_submit(
        participation=participation,
        plan_year=plan_year,
        percentages=zeros,
        accounts=None,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor,
    )


@transaction.atomic
def enrollment_submit(
    *,
    participation: Participation,
    plan_year: int,
    percentages: dict[str, object],
    accounts: dict[str, object] | None,
    schedules: dict[str, dict] | None,
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
    performance_period: tuple[dt.date, dt.date] | None = None,
) -> tuple[DeferralElection, list[DistributionElection]]:
    """A deferral election filed with the payment schedule of each account it opens (EDCP 3.1(b)).

    All or nothing: when a payment schedule is refused, the deferral election is refused with it, so
    nothing is in force that the participant did not see accepted as a whole.
    """
    schedules = schedules or {}
    problem: V.Violation | None = None
    for account, sched in schedules.items():
        try:
            kind, month = _split_account(account)
        except ValueError as exc:
            problem = V.Violation(
                participation.plan.version_on(_local_date(submitted_at)).cite("default_deferral_account"),
                str(exc),
            )
            break
        problem = V.check_distribution(
            participation=participation,
            account_kind=kind,
            specified_month=month,
            form=sched.get("form"),
            installments=sched.get("installments"),
            lump_sum_percent=sched.get("lump_sum_percent"),
            delay_months=sched.get("delay_months", 0) or 0,
            submitted_on=_local_date(submitted_at),
            submitted_at=submitted_at,
        )
        if problem:
            problem = V.Violation(
                problem.rule,
                f"Payment schedule of {account_label(participation=participation, account=account)}: {problem.message}",
                problem.allowed,
            )
            break
    election = deferral_election_submit(
        participation=participation,
        plan_year=plan_year,
        percentages=percentages,
        accounts=accounts,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor,
        performance_period=performance_period,
        _violation=problem,
    )
    election.request_data["schedules"] = _jsonable(schedules)
    election.save(update_fields=["request_data"])
    filed = []
    if election.accepted:
        for account, sched in schedules.items():
            filed.append(
                distribution_election_submit(
                    participation=participation,
                    account=account,
                    form=sched["form"],
                    installments=sched.get("installments"),
                    lump_sum_percent=sched.get("lump_sum_percent"),
                    delay_months=sched.get("delay_months", 0) or 0,
                    submitted_at=submitted_at,
                    channel=channel,
                    actor=actor,
                )
            )
    return election, filed


def account_label(*, participation: Participation, account: str) -> str:
    try:
        kind, month = _split_account(account)
    except ValueError:
        return account
    spec = participation.plan.version_on(month or dt.date(2100, 1, 1)).account_spec(kind)
    base = spec["label"] if spec else kind.replace("_", " ").title()
    return f"{base} ({month:%B %Y})" if month else base


@transaction.atomic
def deferral_cancel(
    *,
    participation: Participation,
    ground: str,
    event_on: dt.date,
    reason: str,
    actor: Actor,
    now: dt.datetime,
) -> DeferralCancellation:
    """EDCP 3.7: the Committee cancels deferrals for the rest of the plan year of an unforeseeable emergency,
    or after a 401(k) hardship distribution through the end of the plan year holding its six-month
    anniversary. To resume, the participant files a new agreement (EDCP 3.1(c))."""
    version = participation.plan.version_on(event_on)
    rule = version.provision("deferral_cancellation", None)
    cite = version.cite("deferral_cancellation")
    if not rule:
        raise ElectionError(cite, f"{participation.plan.name} does not provide for cancelling deferrals.")
    if ground == "emergency":
        if not rule.get("emergency"):
            raise ElectionError(cite, "This plan does not cancel deferrals after an unforeseeable emergency.")
        ends_on = dt.date(event_on.year, 12, 31)
        label = "unforeseeable emergency"
    elif ground == "hardship":
        anniversary = add_months(event_on, rule["hardship_months"])
        ends_on = dt.date(anniversary.year, 12, 31)
        label = f"401(k) hardship distribution (its {rule['hardship_months']}-month anniversary is {anniversary:%B %d, %Y})"
    else:
        raise InvalidInput(f"unknown ground {ground!r}: emergency or hardship")
    if not reason.strip():
        raise InvalidInput("give the reason the Committee recorded")
    cancellation = DeferralCancellation.objects.create(
        participation=participation,
        starts_on=event_on,
        ends_on=ends_on,
        reason=f"{label}: {reason.strip()}"[:300],
        cite=cite,
        decided_by=actor_label(actor),
        decided_at=now,
    )
    audit_record(
        action="deferral.cancel",
        actor=actor,
        at=now,
        obj=cancellation,
        reason=reason,
        data={"ground": ground, "starts_on": event_on.isoformat(), "ends_on": ends_on.isoformat()},
    )
    return cancellation


# --- distribution elections and schedule changes ----------------------------------------------------------


def account_first_payment(
    *, participation: Participation, account_kind: str, specified_month: dt.date | None
) -> dt.date | None:
    """The first Payment Date under the current schedule: a Specified Date Account's 15th of its month (EDCP
    5.2(b)), as changed since; a separation-triggered account's date once separation is known (EDCP 5.1(b),
    plus any later start elected; the Key Employee delay is left out, which only makes the 12-month test stricter)."""
    # One read of the accepted changes and elections for every account (issue 15), filtered here.
    account_changes = [
        c
        for c in accepted_schedule_changes(participation=participation)
        if (c.account_kind, c.specified_month) == (account_kind, specified_month)
    ]
    last_change = account_changes[-1] if account_changes else None
    if account_kind == "specified_date" and specified_month is not None:
        if last_change and last_change.new_first_payment:
            return last_change.new_first_payment
        v = participation.plan.version_on(specified_month)
        rule = V.distribution_rule_for(version=v, kind="specified_date")
        day = rule["payment_date"].get("day", 15) if rule else 15
        return specified_month.replace(day=day)
    ended = termination_event(person=participation.person)
    if ended is None or ended.kind != "separation":
        return None
    v = participation.plan.version_on(ended.effective_date)
    rule = V.distribution_rule_for(version=v, kind=account_kind)
    if rule is None or rule["payment_date"]["rule"] != "day_of_month_after_event":
        return None
    pd = rule["payment_date"]
    first = day_of_month_after(ended.effective_date, pd.get("day", 15), pd.get("months", 1))
    election = next(
        (
            e
            for e in accepted_distribution_elections(participation=participation)
            if (e.account_kind, e.specified_month) == (account_kind, None)
        ),
        None,
    )
    if election and election.delay_months:
        first = add_months(first, election.delay_months)
    for change in accepted_schedule_changes(participation=participation):  # oldest first
        if (change.account_kind, change.specified_month) != (account_kind, None):
            continue
        if change.takes_effect_on is not None and change.takes_effect_on <= ended.effective_date:
            first = add_months(first, 12 * (change.delay_years or 0))
    return first


def _parse_account(
    participation: Participation, account: str, submitted_at: dt.datetime, provision: str
) -> tuple[str, dt.date | None, V.Violation | None]:
    try:
        kind, month = _split_account(account)
    except ValueError:
        return (
            str(account).split(":")[0][:30],
            None,
            V.Violation(
                participation.plan.version_on(_local_date(submitted_at)).cite(provision),
                f"{account} is not an account: a Specified Date Account is named by its month and year.",
                "Give the month as YYYY-MM, for example specified_date:2031-03.",
            ),
        )
    return kind[:30], month, None


@transaction.atomic
def distribution_election_submit(
    *,
    participation: Participation,
    account: str,
    form: str,
    installments: int | None,
    lump_sum_percent: int | None,
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
    delay_months: int = 0,
) -> DistributionElection:
    """The payment schedule of an account (EDCP 5.1(c), 5.2(c)), filed with the first deferral into it."""
    _lock(participation)
    kind, month, violation = _parse_account(participation, account, submitted_at, "distribution")
    violation = violation or V.check_distribution(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        form=form,
        installments=installments,
        lump_sum_percent=lump_sum_percent,
        delay_months=delay_months,
        submitted_on=_local_date(submitted_at),
        submitted_at=submitted_at,
    )
    election = DistributionElection(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        form=str(form or "")[:30],
        installments=_small(installments) if form != "lump_sum" else None,
        lump_sum_percent=_small(lump_sum_percent) if form == "lump_sum_and_installments" else None,
        delay_months=_small(delay_months) or 0,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor_label(actor),
        request_data=_jsonable(
            {
                "account": account,
                "form": form,
                "installments": installments,
                "lump_sum_percent": lump_sum_percent,
                "delay_months": delay_months,
            }
        ),
    )
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
    else:
        election.status = Status.ACCEPTED
        (
            DistributionElection.objects.filter(
                participation=participation, account_kind=kind, specified_month=month, status=Status.ACCEPTED
            ).update(status=Status.SUPERSEDED)
        )
        election.irrevocable_at = _pending_deferral_deadline(participation, kind, month, submitted_at)
    election.save()
    if election.status == Status.ACCEPTED:
        hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=submitted_at)
    audit_record(
        action=f"distribution_election.{election.status}",
        actor=actor,
        at=submitted_at,
        obj=election,
        reason=election.message,
        data={**election.request_data, "rule": election.rule, "channel": channel},
    )
    return election


def _pending_deferral_deadline(
    participation: Participation, kind: str, month: dt.date | None, after: dt.datetime
) -> dt.datetime | None:
    """When the first deferral election into this account becomes irrevocable (and the schedule with it)."""
    default_kind = participation.plan.version_on(_local_date(after)).provision(
        "default_deferral_account", None
    )
    pending = (
        DeferralElection.objects.filter(
            participation=participation, status=Status.ACCEPTED, irrevocable_at__gt=after
        )
        .prefetch_related("allocations", "lines")
        .order_by("irrevocable_at")
    )
    for election in pending:
        if any(line.percent for line in election.lines.all()) and (kind, month) in V._accounts_of(
            election, default_kind
        ):
            return election.irrevocable_at
    return None


def schedule_change_preview(
    *, participation: Participation, account: str, as_of: dt.date
) -> V.ScheduleChangeCheck:
    """What a change filed on `as_of` would be held to: the current first payment, the last day to file and the
    earliest new first payment that would be accepted (EDCP 6.2, 6.3), before anything is submitted."""
    kind, month = _split_account(account)
    current = account_first_payment(participation=participation, account_kind=kind, specified_month=month)
    return V.check_schedule_change(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        current_first_payment=current,
        new_month=None,
        delay_years=None,
        form=None,
        installments=None,
        submitted_on=as_of,
        already_paying=hooks.ask(
            "account_payments_started", participation=participation, account_kind=kind, specified_month=month
        ),
    )


def _schedule_change_account(
    participation: Participation, account: str, submitted_at: dt.datetime
) -> tuple[str, dt.date | None, V.Violation | None]:
    """The account a change of schedule names, and why it cannot be changed if it is not one of the participant's."""
    kind, month, problem = _parse_account(participation, account, submitted_at, "schedule_change")
    if (
        problem is None
        and kind == "specified_date"
        and month not in V.specified_months_in_use(participation=participation)
    ):
        problem = V.Violation(
            participation.plan.version_on(_local_date(submitted_at)).cite("schedule_change"),
            f"You have no Specified Date Account for {month:%B %Y}.",
            "Choose one of your accounts.",
        )
    return kind, month, problem


@transaction.atomic
def schedule_change_submit(
    *,
    participation: Participation,
    account: str,
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
    new_month: dt.date | None = None,
    delay_years: int | None = None,
    form: str | None = None,
    installments: int | None = None,
    lump_sum_percent: int | None = None,
) -> ScheduleChange:
    """EDCP Article VI: irrevocable on receipt (6.4); one account at a time (6.5)."""
    _lock(participation)
    kind, month, problem = _schedule_change_account(participation, account, submitted_at)
    current = account_first_payment(participation=participation, account_kind=kind, specified_month=month)
    if problem is not None:
        check = V.ScheduleChangeCheck(problem, current, None, None)
    else:
        check = V.check_schedule_change(
            participation=participation,
            account_kind=kind,
            specified_month=month,
            current_first_payment=current,
            new_month=new_month,
            delay_years=delay_years,
            form=form,
            installments=installments,
            submitted_on=_local_date(submitted_at),
            already_paying=hooks.ask(
                "account_payments_started",
                participation=participation,
                account_kind=kind,
                specified_month=month,
            ),
        )
    change = ScheduleChange(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        new_month=new_month,
        delay_years=_small(delay_years),
        form=(form or "")[:30],
        installments=_small(installments),
        previous_first_payment=current,
        new_first_payment=check.new_first_payment,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor_label(actor),
        request_data=_jsonable(
            {
                "account": account,
                "new_month": new_month,
                "delay_years": delay_years,
                "form": form,
                "installments": installments,
                "lump_sum_percent": lump_sum_percent,
            }
        ),
    )
    if check.violation:
        change.status, change.rule, change.message = (
            Status.REJECTED,
            check.violation.rule,
            check.violation.text,
        )
    else:
        change.status = Status.ACCEPTED
        change.irrevocable_at = submitted_at  # EDCP 6.4: irrevocable when the Committee receives it
        change.takes_effect_on = check.takes_effect_on
    change.save()
    if change.status == Status.ACCEPTED:
        hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=submitted_at)
    audit_record(
        action=f"schedule_change.{change.status}",
        actor=actor,
        at=submitted_at,
        obj=change,
        reason=change.message,
        data={**change.request_data, "rule": change.rule, "channel": channel},
    )
    return change


# --- investment elections ---------------------------------------------------------------------------


@transaction.atomic
def investment_election_submit(
    *,
    participation: Participation,
    allocation: dict[int, object],
    applies_to: str,
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
) -> InvestmentElection:
    """EDCP 7.4, RRP 3.05: effective on the next Valuation Date after it is received."""
    _lock(participation)
    submitted_on = _local_date(submitted_at)
    violation = V.check_investment(
        participation=participation, allocation=allocation, submitted_on=submitted_on
    )
    if violation is None:
        violation = V.v_investment_applies_to(
            version=participation.plan.version_on(submitted_on), applies_to=applies_to
        )
    election = InvestmentElection(
        participation=participation,
        applies_to=applies_to if applies_to in InvestmentElection.AppliesTo.values else "both",
        submitted_at=submitted_at,
        channel=channel,
        actor=actor_label(actor),
        request_data=_jsonable({"allocation": allocation, "applies_to": applies_to}),
    )
    if violation:
        election.status, election.rule, election.message = Status.REJECTED, violation.rule, violation.text
        election.save()
    else:
        election.status = Status.ACCEPTED
        election.effective_on = cal.next_valuation_date_after(submitted_on)
        election.save()
        for fund_id, pct in sorted(allocation.items()):
            InvestmentElectionLine.objects.create(
                election=election, fund_id=fund_id, percent=int(Decimal(str(pct)))
            )
    audit_record(
        action=f"investment_election.{election.status}",
        actor=actor,
        at=submitted_at,
        obj=election,
        reason=election.message,
        data={**election.request_data, "rule": election.rule, "channel": channel},
    )
    return election


# --- BRP annuity form elections ------------------------------------------------------------------------


@transaction.atomic
def annuity_election_submit(
    *,
    participation: Participation,
    form: str,
    defer_years: int | str,  # as typed: anything but a whole number is refused with the section
    submitted_at: dt.datetime,
    channel: str,
    actor: Actor,
) -> AnnuityElection:
    """BRP 4.2(c) form of benefit; 4.2(d) a change of time or form takes effect 12 months after it is made and
    defers payment at least five years (switching between Actuarially Equivalent annuities is not such a change)."""
    _lock(participation)
    submitted_on = _local_date(submitted_at)
    current = annuity_in_force(participation=participation, as_of=submitted_on)
    check = V.check_annuity(
        participation=participation,
        form=form,
        defer_years=defer_years,
        current_form=current.form,
        current_defer_years=current.defer_years,
        commencement=benefit_commencement(participation=participation, defer_years=current.defer_years),
        submitted_on=submitted_on,
    )
    election = AnnuityElection(
        participation=participation,
        form=str(form)[:30],
        defer_years=_small(defer_years) or 0,
        previous_form=current.form,
        previous_defer_years=current.defer_years,
        is_change=check.is_change,
        submitted_at=submitted_at,
        channel=channel,
        actor=actor_label(actor),
        request_data=_jsonable({"form": form, "defer_years": defer_years}),
    )
    if check.violation:
        election.status, election.rule, election.message = (
            Status.REJECTED,
            check.violation.rule,
            check.violation.text,
        )
    else:
        election.status = Status.ACCEPTED
        election.takes_effect_on = check.takes_effect_on
        election.irrevocable_at = submitted_at if check.is_change else None
        (
            AnnuityElection.objects.filter(
                participation=participation, status=Status.ACCEPTED, takes_effect_on__gt=submitted_on
            ).update(status=Status.SUPERSEDED)
        )
    election.save()
    if election.status == Status.ACCEPTED:  # a separated participant's benefit follows the form (BRP 4.2(c))
        hooks.emit("payment_schedule_input", participation=participation, actor=actor, now=submitted_at)
    audit_record(
        action=f"annuity_election.{election.status}",
        actor=actor,
        at=submitted_at,
        obj=election,
        reason=election.message,
        data={**election.request_data, "rule": election.rule, "channel": channel},
    )
    return election


# --- documents ---------------------------------------------------------------------------------------------

BLANK_FORM_KIND = "election_form"


def election_confirmation_render(*, election: Election, actor: Actor, now: dt.datetime) -> Document:
    """The confirmation PDF of an accepted election: the election, the provisions it rests on (quoted), when it
    became (or becomes) irrevocable, the participant's name. Rendering again gives the same document."""
    if election.status not in (Status.ACCEPTED, Status.SUPERSEDED):
        raise ValueError("only an accepted election has a confirmation")
    context = confirmation_context(election)
    return document_store(
        kind=CONFIRMATION_KIND,
        title=context["title"],
        template=context["template"],
        context=context,
        actor=actor_label(actor),
        person=election.participation.person,
        obj=election,
        now=now,
    )


def election_confirmation_send(*, election: Election, actor: Actor, now: dt.datetime) -> Document:
    """Render the confirmation and send it to the participant (core.notices: email with the PDF attached, or
    the print queue for paper delivery); once per election, so a retried task sends nothing twice."""
    document = election_confirmation_render(election=election, actor=actor, now=now)
    participation = election.participation
    kind = kind_of(election=election)
    notice_send(
        kind=NoticeKind.ELECTION_CONFIRMATION,
        subject=f"{participation.plan.name}: your election is confirmed",
        template="email/election_confirmation.txt",
        context={"plan": participation.plan, "what": document.title},
        link=reverse("elections_portal:election", kwargs={"kind": kind, "pk": election.pk}),
        as_of=now,
        actor=actor,
        person=participation.person,
        obj=election,
        document=document,
    )
    return document


def blank_form_render(*, plan: Plan, plan_year: int, actor: Actor, now: dt.datetime) -> Document:
    """The paper Compensation Deferral Agreement of a plan and plan year, for paper enrolment."""
    context = blank_form_context(plan, plan_year)
    return document_store(
        kind=BLANK_FORM_KIND,
        title=context["title"],
        template="elections/pdf/blank_form.html",
        context=context,
        actor=actor_label(actor),
        obj=plan,
        now=now,
    )


def confirmation_queue(*, election: Election) -> None:
    """After the transaction commits, render the confirmation in a worker (STYLE 8). Should the broker be
    unreachable the election stands: its confirmation is rendered when first downloaded (same bytes)."""
    from elections.tasks import election_confirmation_task  # on use: the tasks module imports this one

    label, pk = election._meta.label, election.pk

    def queue() -> None:
        try:
            election_confirmation_task.delay(label, pk)
        except Exception:  # the broker is down; the download renders it instead
            logger.warning("could not queue the confirmation of %s %s", label, pk, exc_info=True)

    transaction.on_commit(queue)


# --- what the portal offers (issue 11): the same checks as the submits, for this person today; writes nothing ---


@dataclass(frozen=True)
class Offer:
    """An action the portal may offer: allowed, or why not (a sentence with its plan section) and from when."""

    allowed: bool
    reason: str = ""
    cite: str = ""
    from_date: dt.date | None = None


OFFERED = Offer(True)


def _refused(violation: V.Violation, from_date: dt.date | None = None) -> Offer:
    return Offer(False, violation.text, violation.rule, from_date)


def deferral_offer(*, participation: Participation, now: dt.datetime) -> Offer:
    """Would a deferral election (or an election to stop deferring) be accepted now? The eligibility rule of
    deferral_election_submit (EDCP 3.1, RRP 2.01), then whether any election period is open."""
    today = _local_date(now)
    version = participation.plan.version_on(today)
    if not version.has("deferral_components"):
        return Offer(
            False, f"{participation.plan.name} takes no deferral elections.", version.cite("accounts")
        )
    req = V.DeferralRequest(
        participation=participation,
        plan_year=today.year + 1,
        percentages={},
        accounts=None,
        performance_period=None,
        submitted_at=now,
    )
    violation = V.v_eligible(req=req)
    if violation is not None:
        return _refused(violation)
    if not election_chances(participation=participation, now=now):
        deadline = V.annual_deadline(version=version, plan_year=today.year + 2)
        opens = dt.date(deadline.year, 1, 1)
        return Offer(
            False,
            f"No election period is open for you now: elections for {today.year + 2} can be made during "
            f"{deadline.year}, until {deadline:%B %-d, %Y}.",
            version.cite("election_deadline"),
            opens,
        )
    return OFFERED


def distribution_offer(*, participation: Participation, schedule: AccountSchedule, now: dt.datetime) -> Offer:
    """Would a payment election for this account be accepted today (check_distribution with the plan's default
    form, as distribution_election_submit asks it)?"""
    as_of = _local_date(now)
    version = participation.plan.version_on(as_of)
    rule = V.distribution_rule_for(version=version, kind=schedule.kind)
    if rule is None:
        return Offer(
            False,
            f"The {schedule.label} is paid as the plan sets; there is no payment election to make.",
            version.cite("distribution"),
        )
    violation = V.check_distribution(
        participation=participation,
        account_kind=schedule.kind,
        specified_month=schedule.specified_month,
        form=rule.get("default_form") or rule["forms"][0],
        installments=rule["installments"]["min"] if "installments" in rule else None,
        lump_sum_percent=None,
        delay_months=0,
        submitted_on=as_of,
        submitted_at=now,
    )
    return OFFERED if violation is None else _refused(violation)


def schedule_change_offer(*, participation: Participation, account: str, as_of: dt.date) -> Offer:
    """Would the smallest change the plan allows (a delay of the minimum years, EDCP 6.2) be accepted today?"""
    version = participation.plan.version_on(as_of)
    rule = version.provision("schedule_change", None)
    if not rule:
        return Offer(
            False, "This plan does not allow changes to a payment schedule.", version.cite("schedule_change")
        )
    kind, month = _split_account(account)
    current = account_first_payment(participation=participation, account_kind=kind, specified_month=month)
    check = V.check_schedule_change(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        current_first_payment=current,
        new_month=None,
        delay_years=rule["min_years_later"],
        form=None,
        installments=None,
        submitted_on=as_of,
        already_paying=hooks.ask(
            "account_payments_started", participation=participation, account_kind=kind, specified_month=month
        ),
    )
    return OFFERED if check.violation is None else _refused(check.violation)


def annuity_offer(*, participation: Participation, as_of: dt.date) -> Offer:
    """Would any other form of benefit be accepted today (check_annuity for each form, BRP 4.2(c), 4.2(d))?"""
    version = participation.plan.version_on(as_of)
    forms = (version.provision("db_forms", None) or {}).get("forms", [])
    current = annuity_in_force(participation=participation, as_of=as_of)
    first: V.Violation | None = None
    # at the same time, or put off by the least a change of time or form needs (4.2(d))
    later = (version.provision("db_election_change", None) or {}).get("min_years_later", 0)
    tries = [(form, current.defer_years) for form in forms if form != current.form]
    tries += [(form, current.defer_years + later) for form in forms if later]
    commencement = benefit_commencement(participation=participation, defer_years=current.defer_years)
    for form, years in tries:
        check = V.check_annuity(
            participation=participation,
            form=form,
            defer_years=years,
            current_form=current.form,
            current_defer_years=current.defer_years,
            commencement=commencement,
            submitted_on=as_of,
        )
        if check.violation is None:
            return OFFERED
        first = first or check.violation
    if first is None:
        return Offer(False, "There is no other form of benefit to choose.", version.cite("db_forms"))
    return _refused(first)


# --- preview, then submit (issue 11): every problem of an enrolment form at once, beside its field; writes nothing


@dataclass
class EnrollmentPreview:
    """What an enrolment form would file: the parsed arguments of enrollment_submit and every problem found,
    by form field ("__all__" for the election as a whole), each message ending with its plan section."""

    percentages: dict[str, int]
    accounts: dict[str, int] | None
    schedules: dict[str, dict]
    errors: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.errors


def _cited(violation: V.Violation) -> str:
    return f"{violation.text} ({violation.rule})" if violation.rule else violation.text


class _Errors(dict[str, list[str]]):
    """The problems of a form by field, each message once, in the order found: the one collector of the previews."""

    def add(self, name: str, message: str) -> None:
        if message not in self.setdefault(name, []):
            self[name].append(message)

    def violation(self, name: str, violation: V.Violation | None) -> None:
        """A rule's violation (None when the rule holds), as its message ending with its section."""
        if violation is not None:
            self.add(name, _cited(violation))


def _whole_text(raw: str) -> int | None:
    """A whole number typed as such ("5", "5.0"), else None."""
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return None
    if not value.is_finite() or value != value.to_integral_value() or abs(value) > 1000:
        return None
    return int(value)


def _enrol_schedule(
    participation: Participation, account: str, sched: dict, today: dt.date, submitted_at: dt.datetime
) -> str | None:
    kind, month = _split_account(account)
    problem = V.check_distribution(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        form=sched.get("form"),
        installments=sched.get("installments"),
        lump_sum_percent=sched.get("lump_sum_percent"),
        delay_months=sched.get("delay_months", 0) or 0,
        submitted_on=today,
        submitted_at=submitted_at,
    )
    return _cited(problem) if problem else None


def enrollment_preview(  # noqa: C901 - one pass over the fields of the form, in the order they are shown
    *,
    participation: Participation,
    plan_year: int,
    data: Mapping[str, str],
    performance_period: tuple[dt.date, dt.date] | None,
    submitted_at: dt.datetime,
) -> EnrollmentPreview:
    """The checks of enrollment_submit (EDCP 3.1-3.4, 5.2; RRP 2.03) on a form as typed, each field on its own so
    that every problem is reported at once; nothing is stored (a typo is not a refused election)."""
    today = _local_date(submitted_at)
    version = participation.plan.version_on(today)
    errors = _Errors()

    def request(percentages: dict, accounts: dict | None = None) -> V.DeferralRequest:
        return V.DeferralRequest(
            participation=participation,
            plan_year=plan_year,
            percentages=percentages,
            accounts=accounts,
            performance_period=performance_period,
            submitted_at=submitted_at,
        )

    def raw(name: str) -> str:
        return (data.get(name) or "").strip()

    percentages: dict[str, int] = {}
    for comp in version.provision("deferral_components", []) or []:
        name = f"pct_{comp['code']}"
        if raw(name) == "":
            continue
        try:
            Decimal(raw(name))
        except InvalidOperation:
            errors.add(name, f"Enter a whole percentage such as 5; {raw(name)!r} is not a number.")
            continue
        one = request({comp["code"]: raw(name)})
        problem = V.v_whole_percentages(req=one) or V.v_percent_limits(req=one)
        if problem:
            errors.add(name, _cited(problem))
        else:
            percentages[comp["code"]] = _whole_text(raw(name)) or 0

    allocation_cite = version.cite("default_deferral_account")
    default_account = version.provision("default_deferral_account", None)
    spec = version.account_spec("specified_date")
    accounts: dict[str, int] = {}
    schedules: dict[str, dict] = {}
    shares_complete = True

    def share(name: str) -> int | None:
        value = _whole_text(raw(name) or "0")
        if value is None or not 0 <= value <= 100:
            errors.add(
                name,
                f"A share is a whole percentage from 0 to 100; you entered {raw(name)!r} ({allocation_cite}).",
            )
            return None
        return value

    share_total = 0
    if default_account and raw("alloc_default") != "":
        value = share("alloc_default")
        shares_complete &= value is not None
        share_total += value or 0
        accounts[default_account] = value or 0
    for i in range(1, (spec["max_count"] if spec else 0) + 1):
        if raw(f"sd_month_{i}") == "" and raw(f"sd_percent_{i}") == "":
            continue
        value = share(f"sd_percent_{i}")
        shares_complete &= value is not None
        share_total += value or 0
        try:
            month = parse_month(raw(f"sd_month_{i}"))
        except InvalidInput:
            errors.add(
                f"sd_month_{i}",
                f"Give the month the payment starts as YYYY-MM, for example {today.year + 5}-03; "
                f"{raw(f'sd_month_{i}') or 'nothing'} is not one ({allocation_cite}).",
            )
            continue
        account = f"specified_date:{month:%Y-%m}"
        accounts[account] = (accounts.get(account) or 0) + (value or 0)
        if raw(f"sd_{i}_form"):
            schedule = _enrol_form_schedule(data, f"sd_{i}")
            schedules[account] = schedule
            if (
                schedule_problem := _enrol_schedule(participation, account, schedule, today, submitted_at)
            ) is not None:
                errors.add(f"sd_{i}_form", schedule_problem)
    if accounts and default_account and default_account not in accounts:
        accounts[default_account] = 0
    if (accounts or share_total) and shares_complete and share_total != 100:
        errors.add(
            "alloc_default",
            f"The account shares add up to {share_total}%, not 100%: make them add up to exactly 100% "
            f"({allocation_cite}).",
        )
    if default_account and raw("default_form"):
        schedule = _enrol_form_schedule(data, "default")
        schedules[default_account] = schedule
        if (
            default_problem := _enrol_schedule(participation, default_account, schedule, today, submitted_at)
        ) is not None:
            errors.add("default_form", default_problem)

    if not percentages and not errors:
        if (problem := V.v_components(req=request({}))) is not None:
            errors.add("__all__", _cited(problem))
    # The rules of the election as a whole: asked even when a field is wrong, so every problem shows at once.
    whole = request(dict(percentages), dict(accounts) if accounts and not errors else None)
    for rule in (V.v_eligible, V.v_timing, V.v_window, V.v_not_yet_irrevocable, V.v_specified_dates):
        if rule is V.v_specified_dates and not whole.accounts:
            continue
        if (problem := rule(req=whole)) is not None:
            errors.add("__all__", _cited(problem))
    return EnrollmentPreview(percentages, accounts or None, schedules, errors)


def _enrol_form_schedule(data: Mapping[str, str], prefix: str) -> dict:
    """A payment schedule typed beside an account: form, installments, lump sum share and later start."""

    def raw(name: str) -> str:
        return (data.get(f"{prefix}_{name}") or "").strip()

    out: dict = {"form": raw("form")}
    for name in ("installments", "lump_sum_percent"):
        if raw(name):
            value = _whole_text(raw(name))
            out[name] = value if value is not None else raw(name)
    if raw("delay_years"):
        years = _whole_text(raw("delay_years"))
        out["delay_months"] = years * 12 if years is not None else raw("delay_years")
    return out


# --- preview, then submit (issue 11): an investment election and a form of benefit, every problem at once ---------


@dataclass
class InvestmentPreview:
    """What an investment form would file: the fund shares that pass their rules, for what, from when, and every
    problem found by form field ("fund_<id>", "total", "applies_to", "__all__"), each ending with its section."""

    allocation: dict[int, int]
    applies_to: str
    effective_on: dt.date
    errors: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.errors


def investment_preview(
    *, participation: Participation, allocation: Mapping[int, object], applies_to: str, as_of: dt.date
) -> InvestmentPreview:
    """The rules of investment_election_submit (EDCP 7.4, 7.5, 2.2(b); RRP 3.05), each share on its own so that
    every problem shows at once, and the Valuation Date it would take effect; nothing is stored."""
    version = participation.plan.version_on(as_of)
    errors = _Errors()
    funds = V.investment_menu(participation=participation)
    menu = list(funds.values())
    errors.violation("__all__", V.v_investment_chosen(version=version, allocation=allocation))
    shares: dict[int, int] = {}
    total, all_whole = 0, True
    for fund_id, percent in sorted(allocation.items()):
        fund = funds.get(fund_id)
        problem = V.v_investment_fund(version=version, fund=fund, menu=menu)
        if problem is None and fund is not None:
            problem = V.v_investment_share(version=version, fund=fund, percent=percent)
        errors.violation(f"fund_{fund_id}", problem)
        value = V.whole_number(value=percent)
        all_whole &= value is not None
        total += value or 0
        if problem is None and value is not None:
            shares[fund_id] = value
    if allocation and all_whole:
        errors.violation("total", V.v_investment_total(version=version, total=total))
    errors.violation("applies_to", V.v_investment_applies_to(version=version, applies_to=applies_to))
    errors.violation(
        "__all__",
        V.v_investment_allowed(participation=participation, version=version, submitted_on=as_of),
    )
    return InvestmentPreview(shares, applies_to, cal.next_valuation_date_after(as_of), errors)


@dataclass
class AnnuityPreview:
    """What a form-of-benefit election would file (BRP 4.2(c), 4.2(d)): the election in force, the new form and
    delay, whether it is a change of time or form and when it takes effect, and every problem by form field."""

    current: AnnuityInForce
    form: str
    defer_years: int | None
    is_change: bool
    takes_effect_on: dt.date | None
    errors: dict[str, list[str]]

    @property
    def ok(self) -> bool:
        return not self.errors


def annuity_preview(
    *, participation: Participation, form: str, defer_years: int | str, as_of: dt.date
) -> AnnuityPreview:
    """The checks of annuity_election_submit on a form as typed: the form and the delay each on its own, then the
    rules of the election as a whole (V.check_annuity); nothing is stored."""
    version = participation.plan.version_on(as_of)
    current = annuity_in_force(participation=participation, as_of=as_of)
    errors = _Errors()
    if version.has("db_forms"):
        errors.violation("form", V.v_annuity_form(version=version, form=form))
        errors.violation("defer_years", V.v_annuity_defer_years(version=version, defer_years=defer_years))
    check = None
    if not errors:
        check = V.check_annuity(
            participation=participation,
            form=form,
            defer_years=defer_years,
            current_form=current.form,
            current_defer_years=current.defer_years,
            commencement=benefit_commencement(participation=participation, defer_years=current.defer_years),
            submitted_on=as_of,
        )
        if check.violation is not None:
            errors.violation(check.violation.field or "__all__", check.violation)
    return AnnuityPreview(
        current=current,
        form=form,
        defer_years=defer_years if isinstance(defer_years, int) else None,
        is_change=bool(check and check.is_change),
        takes_effect_on=check.takes_effect_on if check else None,
        errors=errors,
    )


# --- preview, then submit (issue 11): payment elections and changes of schedule, every problem at once; writes nothing


@dataclass
class FormPreview:
    """What a payment-election or schedule-change form would file: the arguments of its submit function and every
    problem found, by field ("__all__" for the account as a whole), each message ending with its plan section.
    `check` is the schedule-change check of the whole change (its dates) when there is no problem."""

    arguments: dict
    errors: dict[str, list[str]]
    check: V.ScheduleChangeCheck | None = None

    @property
    def ok(self) -> bool:
        return not self.errors


def _typed_whole(errors: _Errors, data: Mapping[str, str], name: str, what: str, example: str) -> int | None:
    """A whole number typed in field `name`, None when blank; a form error (never a refusal) when it is not one."""
    raw = (data.get(name) or "").strip()
    if raw == "":
        return None
    value = _whole_text(raw)
    if value is None:
        errors.add(name, f"Enter {what} as a whole number such as {example}; {raw!r} is not one.")
    return value


def distribution_preview(
    *, participation: Participation, data: Mapping[str, str], as_of: dt.date, now: dt.datetime
) -> FormPreview:
    """The checks of distribution_election_submit (V.distribution_problems: EDCP 5.1(b)-(c), 5.2(b)-(c)) on a form
    as typed (account, form, installments, lump_sum_percent, delay_years), every problem at once; stores nothing."""
    errors = _Errors()
    account = (data.get("account") or "").strip()
    kind, month, problem = _parse_account(participation, account, now, "distribution")
    if problem is not None:
        errors.add("account", _cited(problem))
    form = (data.get("form") or "").strip()
    if form == "":
        errors.add("form", "Choose a form of payment.")
    installments = _typed_whole(errors, data, "installments", "the number of annual installments", "5")
    lump = _typed_whole(errors, data, "lump_sum_percent", "the lump-sum percentage", "25")
    years = _typed_whole(errors, data, "delay_years", "the years of a later first payment", "2")
    delay_months = years * 12 if years is not None else 0
    if problem is None:
        for name, violation in V.distribution_problems(
            participation=participation,
            account_kind=kind,
            specified_month=month,
            form=form,
            installments=installments,
            lump_sum_percent=lump,
            delay_months=delay_months,
            submitted_on=as_of,
            submitted_at=now,
        ):
            if name in errors:
                continue  # the field's format mistake is what to fix first
            if name == "installments" and installments is None:
                errors.add(name, f"Give the number of installments. {violation.allowed} ({violation.rule})")
            else:
                errors.add(name, _cited(violation))
    arguments = {
        "account": account,
        "form": form,
        "installments": installments if form != "lump_sum" else None,
        "lump_sum_percent": lump if form == "lump_sum_and_installments" else None,
        "delay_months": delay_months,
    }
    return FormPreview(arguments, dict(errors))


def schedule_change_form_preview(
    *, participation: Participation, data: Mapping[str, str], as_of: dt.date, now: dt.datetime
) -> FormPreview:
    """The checks of schedule_change_submit (EDCP 6.1-6.3; 5.1(c), 5.2(c) for a new form) on a form as typed
    (account, new_month, delay_years, form, installments), every problem at once; stores nothing."""
    errors = _Errors()
    account = (data.get("account") or "").strip()
    kind, month, problem = _schedule_change_account(participation, account, now)
    if problem is not None:
        errors.add("__all__", _cited(problem))
    new_month = None
    raw_month = (data.get("new_month") or "").strip()
    if raw_month:
        try:
            new_month = parse_month(raw_month)
        except InvalidInput:
            new_month = None
        if new_month is None or not year_in_range(new_month.year):
            new_month = None
            errors.add(
                "new_month",
                f"Give the month of the new first payment as YYYY-MM, for example {as_of.year + 6}-03; "
                f"{raw_month!r} is not one.",
            )
    delay_years = _typed_whole(errors, data, "delay_years", "the years of delay", "5")
    installments = _typed_whole(errors, data, "installments", "the number of installments", "3")
    form = (data.get("form") or "").strip() or None
    arguments: dict = {"account": account}
    for name, value in (
        ("new_month", new_month),
        ("delay_years", delay_years),
        ("form", form),
        ("installments", installments if form else None),
    ):
        if value is not None:
            arguments[name] = value
    if problem is not None:
        return FormPreview(arguments, dict(errors))
    for name, violation in V.schedule_change_form_problems(
        participation=participation,
        account_kind=kind,
        form=form,
        installments=installments,
        submitted_on=as_of,
    ):
        if name not in errors:
            errors.add(name, _cited(violation))
    offer = schedule_change_offer(participation=participation, account=account, as_of=as_of)
    if not offer.allowed:
        errors.add("__all__", f"{offer.reason} ({offer.cite})" if offer.cite else offer.reason)
    date_field = "new_month" if month is not None else "delay_years"
    current = account_first_payment(participation=participation, account_kind=kind, specified_month=month)
    check = V.check_schedule_change(
        participation=participation,
        account_kind=kind,
        specified_month=month,
        current_first_payment=current,
        new_month=new_month,
        delay_years=delay_years,
        form=None,
        installments=None,
        submitted_on=as_of,
        already_paying=hooks.ask(
            "account_payments_started", participation=participation, account_kind=kind, specified_month=month
        ),
    )
    if check.violation is not None and offer.allowed and date_field not in errors:
        errors.add(date_field, _cited(check.violation))
    return FormPreview(arguments, dict(errors), check if not errors else None)
