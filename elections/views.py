"""Portal and staff pages of the elections. Thin: they read through selectors and write through the
same services the API and the simulator use; every portal query is scoped to request.user.person."""

from __future__ import annotations

import dataclasses
import datetime as dt

from django import forms as djforms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from core import hooks, memo
from core.dates import EASTERN, year_in_range
from core.decorators import capability_required, participant_required
from core.errors import ApplicationError, InvalidInput
from core.inputs import int_or_none
from core.lists import list_search, page_of, staff_list
from core.models import Document
from core.money import money
from core.pdf import document_bytes
from core.report_files import csv_chunks
from core.roles import Cap, has_cap
from elections import forms as F
from elections import selectors as S
from elections import services
from elections import validators as V
from elections.models import Channel, EnrollmentWindow, InvestmentElection, Status
from elections.pdf import confirmation_context
from elections.report_files import ELECTIONS_EXPORT, export_csv_rows
from participants.models import Participation
from participants.selectors import beneficiaries_in_force, employment_status_on
from plans import selectors as plan_selectors
from plans.models import Fund, Plan

# --- shared pieces ---------------------------------------------------------------------------------------------


def _today() -> dt.date:
    return timezone.localdate()


def _participation_of(request, plan_code: str) -> Participation:
    return get_object_or_404(
        Participation.objects.select_related("plan", "person"),
        person=request.user.person,
        plan__code=plan_code,
    )


def _election_of(kind: str, pk: int, person=None):
    model = S.ELECTION_MODELS.get(kind)
    if model is None:
        raise Http404("no such election")
    qs = model.objects.select_related("participation__person", "participation__plan")
    if person is not None:
        qs = qs.filter(participation__person=person)
    return get_object_or_404(qs, pk=pk)


def _pdf_response(document: Document) -> HttpResponse:
    response = HttpResponse(document_bytes(document), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{document.kind}-{document.pk}.pdf"'
    response["X-Content-SHA256"] = document.sha256
    return response


def _confirmation(election, actor) -> Document:
    """The stored confirmation, rendered now if the worker has not yet (same bytes, same document)."""
    return S.confirmation_of(election=election) or services.election_confirmation_render(
        election=election, actor=actor, now=timezone.now()
    )


def _after_submit(request, election, *, staff: bool):
    if election.status == Status.ACCEPTED:
        services.confirmation_queue(election=election)
        messages.success(request, "Accepted.")
    else:
        messages.error(request, f"Refused under {election.rule}.")
    name = "elections_staff:election" if staff else "elections_portal:election"
    return redirect(name, kind=S.kind_of(election=election), pk=election.pk)


def _enrol_context(
    participation: Participation,
    *,
    now: dt.datetime,
    plan_year: int | None,
    kind: str | None,
    window_id: int | None,
) -> dict:
    today = now.astimezone(EASTERN).date()
    version = participation.plan.version_on(today)
    chances = S.election_chances(participation=participation, now=now)
    chance = None
    for c in chances:
        if (
            (plan_year is None or c.plan_year == plan_year)
            and (kind is None or c.kind == kind)
            and (window_id is None or (c.window and c.window.pk == window_id))
        ):
            chance = c
            break
    year = plan_year or (chance.plan_year if chance else today.year + 1)
    limits = S.deferral_limits(participation=participation, plan_year=year, as_of=today)
    if chance and chance.kind == "performance":
        limits = [c for c in limits if c.performance_based]
    schedules = {s.account: s for s in S.account_schedules(participation=participation, as_of=today)}
    default_account = version.provision("default_deferral_account", None)
    spec = version.account_spec("specified_date")
    rule_default = V.distribution_rule_for(version=version, kind=default_account) if default_account else None
    rule_sd = V.distribution_rule_for(version=version, kind="specified_date")
    default_open = bool(
        default_account
        and rule_default
        and V.check_distribution(
            participation=participation,
            account_kind=default_account,
            specified_month=None,
            form=rule_default.get("default_form", "lump_sum"),
            installments=None,
            lump_sum_percent=None,
            delay_months=0,
            submitted_on=today,
            submitted_at=now,
        )
        is None
        and (schedules.get(default_account) is None or schedules[default_account].is_default)
    )
    in_force = S.deferral_election_in_force(participation=participation, plan_year=year)
    context = {
        "participation": participation,
        "plan": participation.plan,
        "version": version,
        "chances": chances,
        "chance": chance,
        "plan_year": year,
        "limits": limits,
        "default_account": default_account,
        "default_label": (version.account_spec(default_account) or {}).get("label", "")
        if default_account
        else "",
        "specified_rows": range(1, (spec["max_count"] if spec else 0) + 1),
        "specified_spec": spec,
        "months_in_use": sorted(V.specified_months_in_use(participation=participation)),
        "rule_default": rule_default,
        "rule_sd": rule_sd,
        "default_schedule_open": default_open,
        "schedules": list(schedules.values()),
        "in_force": in_force,
        "form_labels": V.FORM_LABELS,
        "timing_cite": version.cite("election_deadline"),
        "allocation_cite": version.cite("default_deferral_account"),
    }
    return _with_form(context, {}, {})


def _submit_enrolment(request, participation: Participation, *, submitted_at: dt.datetime, channel: str):
    today = submitted_at.astimezone(EASTERN).date()
    version = participation.plan.version_on(today)
    plan_year = int_or_none(request.POST.get("plan_year"))
    if plan_year is None:
        raise Http404("no plan year")
    period = None
    window_id = request.POST.get("window")
    if request.POST.get("kind") == "performance" and window_id:
        window = get_object_or_404(
            EnrollmentWindow, pk=window_id, plan=participation.plan, kind=EnrollmentWindow.Kind.PERFORMANCE
        )
        period = window.performance_period
    components = [c["code"] for c in version.provision("deferral_components", []) or []]
    default_account = version.provision("default_deferral_account", None)
    spec = version.account_spec("specified_date")
    args = F.deferral_arguments(
        request.POST,
        components=components,
        default_account=default_account,
        specified_rows=spec["max_count"] if spec else 0,
        with_schedules={default_account} if default_account else set(),
    )
    election, _ = services.enrollment_submit(
        participation=participation,
        plan_year=plan_year,
        percentages=args["percentages"],
        accounts=args["accounts"],
        schedules=args["schedules"],
        performance_period=period,
        submitted_at=submitted_at,
        channel=channel,
        actor=request.user,
    )
    return election


def _payment_context(participation: Participation, account: str, today: dt.date) -> dict:
    version = participation.plan.version_on(today)
    schedules = {s.account: s for s in S.account_schedules(participation=participation, as_of=today)}
    current = schedules.get(account)
    if current is None:
        raise Http404("no such account")
    return {
        "participation": participation,
        "plan": participation.plan,
        "schedule": current,
        "rule": V.distribution_rule_for(version=version, kind=current.kind),
        "form_labels": V.FORM_LABELS,
    }


def _investment_context(participation: Participation, today: dt.date) -> dict:
    version = participation.plan.version_on(today)
    funds = list(Fund.objects.filter(plan=participation.plan, active=True).order_by("code"))
    return {
        "participation": participation,
        "plan": participation.plan,
        "funds": funds,
        "in_force": S.investment_in_force(participation=participation, as_of=today),
        "applies_to": InvestmentElection.AppliesTo.choices,
        "cite": version.cite("investment_increment_percent"),
        "default_cite": version.cite("default_fund_rule"),
        "default_rule": version.provision("default_fund_rule", ""),
        "employed": employment_status_on(person=participation.person, day=today).employed,
        "after_separation_cite": version.cite("investment_change_after_separation"),
    }


def _annuity_context(participation: Participation, today: dt.date) -> dict:
    version = participation.plan.version_on(today)
    forms = version.provision("db_forms", None) or {}
    current = S.annuity_in_force(participation=participation, as_of=today)
    change = version.provision("db_election_change", None) or {}
    return {
        "participation": participation,
        "plan": participation.plan,
        "current": current,
        "forms": [(f, V.FORM_LABELS.get(f, f)) for f in forms.get("forms", [])],
        "forms_cite": version.cite("db_forms"),
        "change_cite": version.cite("db_election_change"),
        "change": change,
        "commencement": S.benefit_commencement(participation=participation, defer_years=current.defer_years),
        "default_married": V.FORM_LABELS.get(forms.get("default_married", ""), ""),
        "default_single": V.FORM_LABELS.get(forms.get("default_single", ""), ""),
    }


def _schedule_change_context(participation: Participation, account: str, today: dt.date) -> dict:
    schedules = {s.account: s for s in S.account_schedules(participation=participation, as_of=today)}
    if account not in schedules:
        raise Http404("no such account")
    preview = services.schedule_change_preview(participation=participation, account=account, as_of=today)
    version = participation.plan.version_on(today)
    rule = version.provision("schedule_change", None) or {}
    return {
        "participation": participation,
        "plan": participation.plan,
        "schedule": schedules[account],
        "preview": preview,
        "rule": rule,
        "cites": rule.get("cites", {}),
        "d_rule": V.distribution_rule_for(version=version, kind=schedules[account].kind),
        "form_labels": V.FORM_LABELS,
    }


def _overview(participation: Participation, *, now: dt.datetime) -> dict:
    today = now.astimezone(EASTERN).date()
    version = participation.plan.version_on(today)
    account_balance = participation.plan.kind == Plan.Kind.ACCOUNT_BALANCE
    out = {
        "participation": participation,
        "plan": participation.plan,
        "version": version,
        "account_balance": account_balance,
        "employed": employment_status_on(person=participation.person, day=today).employed,
        "beneficiaries": beneficiaries_in_force(person=participation.person, plan=participation.plan),
        "beneficiary_definition": plan_selectors.beneficiary_definition(plan=participation.plan, as_of=today),
        "next_year": today.year + 1,
    }
    if account_balance:
        schedules = S.account_schedules(participation=participation, as_of=today)
        out.update(
            {
                "chances": S.election_chances(participation=participation, now=now),
                "this_year": S.deferral_election_in_force(participation=participation, plan_year=today.year),
                "next_year_election": S.deferral_election_in_force(
                    participation=participation, plan_year=today.year + 1
                ),
                "schedules": schedules,
                "deferral_offer": services.deferral_offer(participation=participation, now=now),
                "account_offers": [
                    (
                        s,
                        services.distribution_offer(participation=participation, schedule=s, now=now),
                        services.schedule_change_offer(
                            participation=participation, account=s.account, as_of=today
                        ),
                    )
                    for s in schedules
                ],
                "investments": S.investment_in_force(participation=participation, as_of=today),
                "can_change_schedule": version.has("schedule_change"),
                "cancellation": S.cancellation_on(participation=participation, day=today),
            }
        )
    else:
        out["annuity"] = S.annuity_in_force(participation=participation, as_of=today)
        out["annuity_offer"] = services.annuity_offer(participation=participation, as_of=today)
        out["annuity_cite"] = version.cite("db_forms")
    return out


# --- portal -------------------------------------------------------------------------------------------------------


@participant_required
def portal_home(request):
    person = request.user.person
    now = timezone.now()
    with (
        memo.run_memo()
    ):  # issue 15: each account's offers share one read of the person's elections and books
        plans = [
            _overview(p, now=now) for p in person.participations.select_related("plan").order_by("plan__code")
        ]
    return render(
        request,
        "elections/portal/home.html",
        {"person": person, "plans": plans, "history": S.elections_of(person=person)[:50]},
    )


def _in_force_values(election) -> dict[str, str]:
    """The form's fields as the election in force fills them (issue 11: prefilled with what is in force)."""
    if election is None:
        return {}
    values = {f"pct_{line.component}": f"{line.percent:.0f}" for line in election.lines.all()}
    rows = 0
    for a in election.allocations.all():
        if a.account_kind == "specified_date" and a.specified_month:
            rows += 1
            values[f"sd_month_{rows}"] = f"{a.specified_month:%Y-%m}"
            values[f"sd_percent_{rows}"] = str(a.percent)
        else:
            values["alloc_default"] = str(a.percent)
    return values


def _with_form(context: dict, values: dict, errors: dict[str, list[str]]) -> dict:
    """The enrolment context with each field's value and problems, for the form's rows."""
    context["values"] = values
    context["errors"] = errors
    context["limit_rows"] = [
        (c, values.get(f"pct_{c.code}", ""), errors.get(f"pct_{c.code}", [])) for c in context["limits"]
    ]
    context["sd_rows"] = [
        {
            "i": i,
            "month": values.get(f"sd_month_{i}", ""),
            "percent": values.get(f"sd_percent_{i}", ""),
            "form": values.get(f"sd_{i}_form", ""),
            "installments": values.get(f"sd_{i}_installments", ""),
            "month_errors": errors.get(f"sd_month_{i}", []),
            "percent_errors": errors.get(f"sd_percent_{i}", []),
            "form_errors": errors.get(f"sd_{i}_form", []),
        }
        for i in context["specified_rows"]
    ]
    context["error_count"] = sum(len(v) for v in errors.values())
    context["general_errors"] = errors.get("__all__", [])
    return context


def _performance_period(request, participation: Participation):
    window_id = request.POST.get("window")
    if request.POST.get("kind") == "performance" and window_id:
        window = get_object_or_404(
            EnrollmentWindow, pk=window_id, plan=participation.plan, kind=EnrollmentWindow.Kind.PERFORMANCE
        )
        return window.performance_period
    return None


def _enrol_review(participation: Participation, preview, context: dict, today: dt.date) -> dict:
    """Old against new and the effect: the deferral per paycheck from the last pay line, the account shares."""
    version = participation.plan.version_on(today)
    old = context["in_force"] or S.deferral_election_in_force(
        participation=participation, plan_year=today.year
    )
    old_pct = {line.component: line.percent for line in old.lines.all()} if old else {}
    pay = {
        component: gross
        for _day, component, gross in hooks.ask("last_pay_lines", person=participation.person)
    }
    pay_day = next(iter(hooks.ask("last_pay_lines", person=participation.person)), (None,))[0]
    rows = []
    for comp in version.provision("deferral_components", []) or []:
        code = comp["code"]
        new = preview.percentages.get(code)
        before = old_pct.get(code)
        if new is None and before is None:
            continue
        gross = pay.get(code)
        rows.append(
            {
                "label": comp["label"],
                "old": before,
                "new": new or 0,
                "gross": gross,
                "old_amount": money(gross * before / 100)
                if gross is not None and before is not None
                else None,
                "new_amount": money(gross * (new or 0) / 100) if gross is not None else None,
            }
        )
    return {
        "review_rows": rows,
        "pay_day": pay_day,
        "old_election": old,
        "new_accounts": [
            (services.account_label(participation=participation, account=name), share)
            for name, share in (preview.accounts or {}).items()
        ],
        "new_schedules": [
            (services.account_label(participation=participation, account=name), sched)
            for name, sched in preview.schedules.items()
        ],
    }


@participant_required
def portal_enrol(request, plan_code: str):
    participation = _participation_of(request, plan_code)
    action = request.POST.get("action", "submit") if request.method == "POST" else ""
    if action == "submit":
        # A submission after the review (or from an older form): the plan's refusal is stored, as always.
        election = _submit_enrolment(
            request, participation, submitted_at=timezone.now(), channel=Channel.PORTAL
        )
        return _after_submit(request, election, staff=False)
    now = timezone.now()
    offer = services.deferral_offer(participation=participation, now=now)
    source = request.POST if request.method == "POST" else request.GET
    context = _enrol_context(
        participation,
        now=now,
        plan_year=_year(source.get("plan_year") or source.get("year")),
        kind=source.get("kind") or None,
        window_id=_int(source.get("window")),
    )
    context["offer"] = offer
    if request.method != "POST":
        in_force = context["in_force"] or S.deferral_election_in_force(
            participation=participation, plan_year=now.astimezone(EASTERN).year
        )
        _with_form(context, _in_force_values(in_force), {})
        return render(request, "elections/portal/enrol.html", {**context, "enrol": context})
    values = {k: (request.POST.get(k) or "").strip() for k in request.POST if k != "csrfmiddlewaretoken"}
    preview = services.enrollment_preview(
        participation=participation,
        plan_year=context["plan_year"],
        data=values,
        performance_period=_performance_period(request, participation),
        submitted_at=now,
    )
    if action == "edit" or not preview.ok:
        _with_form(context, values, {} if action == "edit" else preview.errors)
        status = 200 if action == "edit" else 400
        return render(request, "elections/portal/enrol.html", {**context, "enrol": context}, status=status)
    context.update(_enrol_review(participation, preview, context, now.astimezone(EASTERN).date()))
    context["hidden"] = sorted((k, v) for k, v in values.items() if k != "action" and v != "")
    return render(request, "elections/portal/enrol_review.html", context)


def _int(text) -> int | None:
    """A whole number a database integer column can hold, else None (issue 12: 99999999999 is not a 500)."""
    value = int_or_none(text)
    return value if value is not None and -(2**31) < value < 2**31 else None


def _year(text) -> int | None:
    """A plan year from a query string, or None when absent or outside 1900-2199 (issue 12: year 0 is no 500)."""
    value = _int(text)
    return value if value is not None and year_in_range(value) else None


@participant_required
def portal_stop(request, plan_code: str):
    """Stop deferring: a summary of what stops (the election in force against 0%), then the submit."""
    participation = _participation_of(request, plan_code)
    year = _int((request.POST if request.method == "POST" else request.GET).get("plan_year"))
    if year is None:
        raise Http404("no plan year")
    if request.method != "POST":
        now = timezone.now()
        in_force = S.deferral_election_in_force(participation=participation, plan_year=year)
        return render(
            request,
            "elections/portal/stop.html",
            {
                "plan": participation.plan,
                "plan_year": year,
                "in_force": in_force,
                "offer": services.deferral_offer(participation=participation, now=now),
                "deadline": V.annual_deadline(
                    version=participation.plan.version_on(_today()), plan_year=year
                ),
                "timing_cite": participation.plan.version_on(_today()).cite("election_deadline"),
            },
        )
    election = services.deferral_election_stop(
        participation=participation,
        plan_year=year,
        submitted_at=timezone.now(),
        channel=Channel.PORTAL,
        actor=request.user,
    )
    return _after_submit(request, election, staff=False)


@participant_required
def portal_payment(request, plan_code: str):
    """The payment election: prefilled with the schedule in force, every problem at once beside its field, a review
    of old against new (the engine's payment dates), then the submit (a refusal is stored, as always)."""
    participation = _participation_of(request, plan_code)
    action = request.POST.get("action", "submit") if request.method == "POST" else ""
    if action == "submit":
        args = F.distribution_arguments(request.POST)
        election = services.distribution_election_submit(
            participation=participation,
            submitted_at=timezone.now(),
            channel=Channel.PORTAL,
            actor=request.user,
            **args,
        )
        return _after_submit(request, election, staff=False)
    now = timezone.now()
    today = now.astimezone(EASTERN).date()
    source = request.POST if request.method == "POST" else request.GET
    context = _payment_context(participation, source.get("account", ""), today)
    context["offer"] = services.distribution_offer(
        participation=participation, schedule=context["schedule"], now=now
    )
    if request.method != "POST":
        return render(
            request, "elections/portal/payment.html", _form_state(context, _payment_values(context), {})
        )
    values = _posted(request, PAYMENT_FIELDS)
    preview = services.distribution_preview(
        participation=participation,
        data={name.removeprefix("dist_"): value for name, value in values.items()},
        as_of=today,
        now=now,
    )
    if action == "edit" or not preview.ok:
        errors = {} if action == "edit" else preview.errors
        return render(
            request,
            "elections/portal/payment.html",
            _form_state(context, values, errors),
            status=200 if action == "edit" else 400,
        )
    context.update(_payment_review(participation, context["schedule"], preview.arguments, today))
    context["hidden"] = sorted((k, v) for k, v in values.items() if v != "")
    return render(request, "elections/portal/payment_review.html", context)


@participant_required
def portal_schedule_change(request, plan_code: str):
    """A change of payment schedule (EDCP Article VI): every problem at once beside its field (a malformed month is
    a form error, never stored), a review of the old dates against the new, then the submit."""
    participation = _participation_of(request, plan_code)
    action = request.POST.get("action", "submit") if request.method == "POST" else ""
    if action == "submit":
        args = _schedule_change_submitted(request)
        if args is not None:
            change = services.schedule_change_submit(
                participation=participation,
                submitted_at=timezone.now(),
                channel=Channel.PORTAL,
                actor=request.user,
                **args,
            )
            return _after_submit(request, change, staff=False)
        action = "review"  # a format mistake: the form again, with every problem beside its field
    now = timezone.now()
    today = now.astimezone(EASTERN).date()
    source = request.POST if request.method == "POST" else request.GET
    context = _schedule_change_context(participation, source.get("account", ""), today)
    context["offer"] = services.schedule_change_offer(
        participation=participation, account=context["schedule"].account, as_of=today
    )
    if request.method != "POST":
        return render(request, "elections/portal/schedule_change.html", _form_state(context, {}, {}))
    values = _posted(request, SCHEDULE_CHANGE_FIELDS)
    preview = services.schedule_change_form_preview(
        participation=participation, data=values, as_of=today, now=now
    )
    if action == "edit" or not preview.ok or preview.check is None:
        errors = {} if action == "edit" else preview.errors
        return render(
            request,
            "elections/portal/schedule_change.html",
            _form_state(context, values, errors),
            status=200 if action == "edit" else 400,
        )
    context.update(_schedule_change_review(participation, context, preview, today))
    context["hidden"] = sorted((k, v) for k, v in values.items() if v != "")
    return render(request, "elections/portal/schedule_change_review.html", context)


# --- preview, then submit: the payment election and the change of schedule (issue 11) ---------------------------

PAYMENT_FIELDS = ("account", "dist_form", "dist_installments", "dist_lump_sum_percent", "dist_delay_years")
SCHEDULE_CHANGE_FIELDS = ("account", "new_month", "delay_years", "form", "installments")


def _posted(request, names: tuple[str, ...]) -> dict[str, str]:
    return {name: (request.POST.get(name) or "").strip() for name in names}


def _form_state(context: dict, values: dict, errors: dict[str, list[str]]) -> dict:
    """The form's typed (or prefilled) values and each field's problems; "__all__" above the form."""
    context["values"] = values
    context["errors"] = errors
    context["error_count"] = sum(len(v) for v in errors.values())
    context["general_errors"] = errors.get("__all__", [])
    return context


def _payment_values(context: dict) -> dict[str, str]:
    """The payment form as the schedule in force fills it (issue 11: prefilled with what is in force)."""
    s = context["schedule"]
    return {
        "account": s.account,
        "dist_form": s.form,
        "dist_installments": str(s.installments or ""),
        "dist_lump_sum_percent": str(s.lump_sum_percent or ""),
        "dist_delay_years": str(s.delay_months // 12) if s.delay_months else "",
    }


def _dates(
    participation: Participation, schedule, *, election=None, change=None, separation: dt.date
) -> dict:
    """The schedule engine's payments for this account (payments answers; elections never imports it)."""
    return hooks.ask(
        "payment_dates_preview",
        participation=participation,
        account_kind=schedule.kind,
        specified_month=schedule.specified_month,
        election=election,
        change=change,
        separation=separation,
        as_of=_today(),
    )


def _payment_review(participation: Participation, schedule, arguments: dict, today: dt.date) -> dict:
    """Old against new: the form of payment and the dates the engine would pay on (for a separation today when the
    participant has not separated), with the plan section."""
    new = dataclasses.replace(
        schedule,
        form=arguments["form"],
        installments=arguments["installments"],
        lump_sum_percent=arguments["lump_sum_percent"],
        delay_months=arguments["delay_months"],
        is_default=False,
    )
    election = {k: arguments[k] for k in ("form", "installments", "lump_sum_percent", "delay_months")}
    return {
        "new_schedule": new,
        "old_dates": _dates(participation, schedule, separation=today),
        "new_dates": _dates(participation, schedule, election=election, separation=today),
    }


def _schedule_change_submitted(request) -> dict | None:
    """The arguments of schedule_change_submit from the form, or None when a field is malformed."""
    try:
        return F.schedule_change_arguments(request.POST)
    except InvalidInput:
        return None


def _schedule_change_review(participation: Participation, context: dict, preview, today: dt.date) -> dict:
    """Old against new: the first payment and the dates the engine would pay on, before and after the change. An
    account paid after separation is shown for a separation on the day the change takes effect (EDCP 6.2)."""
    schedule, check, args = context["schedule"], preview.check, preview.arguments
    separation = check.takes_effect_on or today
    change = {
        "submitted_on": today,
        "delay_years": args.get("delay_years"),
        "form": args.get("form"),
        "installments": args.get("installments"),
        "new_first_payment": check.new_first_payment,
    }
    new_form = dataclasses.replace(
        schedule,
        form=args.get("form") or schedule.form,
        installments=args.get("installments") or schedule.installments,
    )
    return {
        "check": check,
        "new_schedule": new_form,
        "delay_years": args.get("delay_years"),
        "old_dates": _dates(participation, schedule, separation=separation),
        "new_dates": _dates(participation, schedule, change=change, separation=separation),
    }


@participant_required
def portal_investments(request, plan_code: str):
    """Preview, then submit (issue 11): the form starts from the mix in force, every problem shows beside its field
    (nothing is stored), a review shows the fund mix old against new and its Valuation Date, then the submit."""
    participation = _participation_of(request, plan_code)
    today = _today()
    context = _investment_context(participation, today)
    action = request.POST.get("action", "submit") if request.method == "POST" else ""
    if action == "submit":
        # A submission after the review (or from an older form): the plan's refusal is stored, as always.
        election = services.investment_election_submit(
            participation=participation,
            submitted_at=timezone.now(),
            channel=Channel.PORTAL,
            actor=request.user,
            **F.investment_arguments(request.POST, context["funds"]),
        )
        return _after_submit(request, election, staff=False)
    if request.method != "POST":
        _investment_form(context, _investment_in_force_values(context["in_force"]), {})
        return render(request, "elections/portal/investments.html", context)
    values = _typed(request)
    preview = services.investment_preview(
        participation=participation,
        as_of=today,
        **F.investment_arguments(request.POST, context["funds"], include_unknown=True),
    )
    if action == "edit" or not preview.ok:
        _investment_form(context, values, {} if action == "edit" else preview.errors)
        status = 200 if action == "edit" else 400
        return render(request, "elections/portal/investments.html", context, status=status)
    context.update(_investment_review(participation, preview, context, today))
    context["hidden"] = sorted((k, v) for k, v in values.items() if k != "action" and v != "")
    return render(request, "elections/portal/investments_review.html", context)


@participant_required
def portal_annuity(request, plan_code: str):
    """Preview, then submit (issue 11): the form starts from the form in force; the form and the delay are checked
    together (nothing is stored); a review shows the monthly amount of each form from the quote, then the submit.
    A participant whose benefit has begun is offered no form."""
    participation = _participation_of(request, plan_code)
    action = request.POST.get("action", "submit") if request.method == "POST" else ""
    if action == "submit":
        election = services.annuity_election_submit(
            participation=participation,
            form=request.POST.get("form", ""),
            defer_years=_annuity_years(request.POST.get("defer_years")),
            submitted_at=timezone.now(),
            channel=Channel.PORTAL,
            actor=request.user,
        )
        return _after_submit(request, election, staff=False)
    today = _today()
    context = _annuity_context(participation, today)
    context["offer"] = services.annuity_offer(participation=participation, as_of=today)
    if request.method != "POST":
        current = context["current"]
        _annuity_form(context, {"form": current.form, "defer_years": str(current.defer_years)}, {})
        return render(request, "elections/portal/annuity.html", context)
    values = {name: (request.POST.get(name) or "").strip() for name in ("form", "defer_years")}
    preview = services.annuity_preview(
        participation=participation,
        form=values["form"],
        defer_years=_annuity_years(values["defer_years"]),
        as_of=today,
    )
    if action == "edit" or not preview.ok:
        _annuity_form(context, values, {} if action == "edit" else preview.errors)
        status = 200 if action == "edit" else 400
        return render(request, "elections/portal/annuity.html", context, status=status)
    context.update(_annuity_review(participation, preview, today))
    context["hidden"] = sorted(values.items())
    return render(request, "elections/portal/annuity_review.html", context)


# --- preview, then submit: the investment and form-of-benefit pages (issue 11) -----------------------------------


def _typed(request) -> dict[str, str]:
    return {k: (request.POST.get(k) or "").strip() for k in request.POST if k != "csrfmiddlewaretoken"}


def _annuity_years(text) -> int | str:
    """The delay as typed: a whole number, else the text (the validator refuses it with its section)."""
    raw = (text or "").strip() or "0"
    years = _int(raw)
    return years if years is not None else raw


def _investment_in_force_values(in_force) -> dict[str, str]:
    """The form's fields as the mix in force fills them: its shares, and what it applies to."""
    values = {f"fund_{fund.pk}": str(pct) for fund, pct in in_force.lines if fund is not None}
    election = in_force.election
    values["applies_to"] = election.applies_to if election else InvestmentElection.AppliesTo.BOTH
    return values


def _investment_form(context: dict, values: dict[str, str], errors: dict[str, list[str]]) -> dict:
    """The investment context with each fund's typed share and its problems; problems of funds not on the form
    (a fund withdrawn since) join the general ones at the top."""
    on_form = {f"fund_{f.pk}" for f in context["funds"]}
    context["values"] = values
    context["errors"] = errors
    context["fund_rows"] = [
        (f, values.get(f"fund_{f.pk}", ""), errors.get(f"fund_{f.pk}", [])) for f in context["funds"]
    ]
    typed = [V.whole_number(value=values.get(name) or "0") for name in sorted(on_form)]
    context["typed_total"] = sum(t for t in typed if t is not None) if None not in typed else None
    context["general_errors"] = errors.get("__all__", []) + [
        e
        for name, errs in sorted(errors.items())
        if name.startswith("fund_") and name not in on_form
        for e in errs
    ]
    context["error_count"] = sum(len(v) for v in errors.values())
    return context


def _mix(lines) -> dict[int, int]:
    return {fund.pk: pct for fund, pct in lines if fund is not None}


def _investment_review(participation: Participation, preview, context: dict, today: dt.date) -> dict:
    """The fund mix in force (future credits; existing balances as last exchanged) against the new one."""
    in_force = context["in_force"]
    exchanged = S.investment_exchange_in_force(participation=participation, as_of=today)
    future = _mix(in_force.lines)
    existing = _mix((line.fund, line.percent) for line in exchanged.lines.all()) if exchanged else None
    funds = {f.pk: f for f in context["funds"]}
    funds.update({fund.pk: fund for fund, _ in in_force.lines if fund is not None})
    if exchanged:
        funds.update({line.fund.pk: line.fund for line in exchanged.lines.all()})
    order = sorted(funds.values(), key=lambda f: (f.code, f.pk))
    rows = [
        {
            "fund": f,
            "future": future.get(f.pk, 0),
            "existing": existing.get(f.pk, 0) if existing is not None else None,
            "new": preview.allocation.get(f.pk, 0),
        }
        for f in order
        if future.get(f.pk) or preview.allocation.get(f.pk) or (existing and existing.get(f.pk))
    ]
    applies_to = preview.applies_to
    return {
        "mix_rows": rows,
        "effective_on": preview.effective_on,
        "applies_to_value": applies_to,
        "applies_to_label": InvestmentElection.AppliesTo(applies_to).label,
        "to_future": applies_to != InvestmentElection.AppliesTo.EXISTING,
        "to_existing": applies_to != InvestmentElection.AppliesTo.FUTURE,
        "exchanged": exchanged,
        "pending": in_force.pending,
    }


def _annuity_form(context: dict, values: dict[str, str], errors: dict[str, list[str]]) -> dict:
    context["values"] = values
    context["errors"] = errors
    context["general_errors"] = errors.get("__all__", [])
    context["error_count"] = sum(len(v) for v in errors.values())
    return context


def _annuity_review(participation: Participation, preview, today: dt.date) -> dict:
    """The form in force against the new one: each one's monthly amount and start from the benefit quote (asked of
    pensions through core.hooks), and when the change takes effect under the plan (BRP 4.2(d))."""
    current = preview.current
    version = participation.plan.version_on(today)

    def quote(form: str, years: int):
        return hooks.ask(
            "annuity_form_quote", participation=participation, form=form, defer_years=years, as_of=today
        )

    return {
        "old_quote": quote(current.form, current.defer_years),
        "new_quote": quote(preview.form, preview.defer_years or 0),
        "old_label": V.FORM_LABELS.get(current.form, current.form),
        "new_label": V.FORM_LABELS.get(preview.form, preview.form),
        "new_defer_years": preview.defer_years or 0,
        "is_change": preview.is_change,
        "both_annuities": V.is_life_annuity(form=current.form) and V.is_life_annuity(form=preview.form),
        "takes_effect_on": preview.takes_effect_on,
        "change": version.provision("db_election_change", None) or {},
        "change_cite": version.cite("db_election_change"),
        "forms_cite": version.cite("db_forms"),
    }


@participant_required
def portal_election(request, kind: str, pk: int):
    election = _election_of(kind, pk, person=request.user.person)
    return render(request, "elections/portal/election.html", {**_election_detail(election), "portal": True})


@participant_required
def portal_election_pdf(request, kind: str, pk: int):
    election = _election_of(kind, pk, person=request.user.person)
    if election.status not in (Status.ACCEPTED, Status.SUPERSEDED):
        raise Http404("a refused election has no confirmation")
    return _pdf_response(_confirmation(election, request.user))


@participant_required
def portal_blank_form(request, plan_code: str, year: int):
    participation = _participation_of(request, plan_code)
    if participation.plan.kind != Plan.Kind.ACCOUNT_BALANCE:
        raise Http404("this plan takes no deferral elections")
    return _pdf_response(
        services.blank_form_render(
            plan=participation.plan, plan_year=year, actor=request.user, now=timezone.now()
        )
    )


def _election_detail(election) -> dict:
    kind = S.kind_of(election=election)
    context = {
        "election": election,
        "kind": kind,
        "document": S.confirmation_of(election=election),
        "plan": election.participation.plan,
        "participation": election.participation,
    }
    if kind == "deferral" and election.status == Status.ACCEPTED:
        context["open_accounts"] = [
            s
            for s in S.account_schedules(participation=election.participation, as_of=_today())
            if s.is_default
        ]
    if election.status == Status.ACCEPTED or election.status == Status.SUPERSEDED:
        context["summary"] = confirmation_context(election)
    return context


# --- staff --------------------------------------------------------------------------------------------------------


@capability_required(Cap.VIEW_STAFF)
def staff_windows(request):
    form = F.WindowForm(request.POST or None)
    if request.method == "POST":
        if not has_cap(request.user, Cap.MANAGE_PLANS):
            raise PermissionDenied("opening a window needs the manage_plans capability")
        if form.is_valid():
            d = form.cleaned_data
            try:
                period = (
                    (d["performance_period_start"], d["performance_period_end"])
                    if d["kind"] == EnrollmentWindow.Kind.PERFORMANCE
                    else None
                )
                window = services.enrollment_window_open(
                    plan=d["plan"],
                    plan_year=d["plan_year"],
                    opens_at=d["opens"],
                    closes_at=d["closes"],
                    kind=d["kind"],
                    performance_period=period,
                    reminder_days=d["reminder_days"],
                    note=d["note"],
                    actor=request.user,
                    now=timezone.now(),
                )
            except services.ElectionError as exc:
                form.add_error(None, f"{exc.message} ({exc.rule})")
            except ApplicationError as exc:
                form.add_error(None, exc.message)
            else:
                messages.success(request, f"Window opened: {window}.")
                return redirect("elections_staff:windows")
    windows = EnrollmentWindow.objects.select_related("plan", "participation__person").order_by(
        "-plan_year", "opens_at"
    )
    years = sorted({w.plan_year for w in windows} | {_today().year, _today().year + 1}, reverse=True)
    return render(
        request,
        "elections/staff/windows.html",
        {
            "form": form,
            "windows": windows[:300],
            "now": timezone.now(),
            "years": years,
            "plans": Plan.objects.filter(kind=Plan.Kind.ACCOUNT_BALANCE),
        },
    )


@capability_required(Cap.MANAGE_PLANS)
@require_POST
def staff_window_cancel(request, pk: int):
    window = get_object_or_404(EnrollmentWindow, pk=pk)
    try:
        services.enrollment_window_cancel(window=window, actor=request.user, now=timezone.now())
    except ApplicationError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "Window withdrawn.")
    return redirect("elections_staff:windows")


@capability_required(Cap.RUN_JOBS)
@require_POST
def staff_send_reminders(request):
    now = timezone.now()
    stats = services.election_reminders_send(today=timezone.localdate(now), actor=request.user, now=now)
    messages.success(
        request,
        f"Sent {stats['opened']} window notices and {stats['reminders']} reminders "
        f"({stats['undeliverable']} without an email address).",
    )
    return redirect("elections_staff:windows")


@capability_required(Cap.VIEW_STAFF)
def staff_plan_year(request, plan_code: str, year: int):
    plan = get_object_or_404(Plan, code=plan_code)
    version = plan.version_on(dt.date(year, 1, 1))
    return render(
        request,
        "elections/staff/plan_year.html",
        {
            "plan": plan,
            "year": year,
            "summary": S.plan_year_summary(plan=plan, plan_year=year),
            "prepare": {
                "name": ELECTIONS_EXPORT.name,
                "params": [("plan_code", plan.code), ("year", str(year))],
            },
            "net_pay_cap": version.provision("net_pay_cap_percent", None),
            "net_pay_cite": version.cite("net_pay_cap_percent"),
            "cancellation_cite": version.cite("deferral_cancellation")
            if version.provision("deferral_cancellation", None)
            else "",
            "reductions": S.payroll_reductions(plan=plan, plan_year=year)[:200],
            "windows": EnrollmentWindow.objects.filter(plan=plan, plan_year=year).order_by(
                "kind", "opens_at"
            ),
            "blank_forms": Document.objects.filter(
                kind=services.BLANK_FORM_KIND, object_type=plan._meta.label, object_id=str(plan.pk)
            ).order_by("-created_at")[:10],
        },
    )


@capability_required(Cap.VIEW_STAFF)
def staff_export(request, plan_code: str, year: int):
    plan = get_object_or_404(Plan, code=plan_code)
    rows = export_csv_rows(S.payroll_export_rows(plan=plan, plan_year=year))
    response = StreamingHttpResponse(csv_chunks(ELECTIONS_EXPORT, rows), content_type="text/csv")
    response["Content-Disposition"] = (
        f'attachment; filename="{ELECTIONS_EXPORT.filename(plan.code, str(year))}"'
    )
    return response


@capability_required(Cap.VIEW_STAFF)
def staff_refused(request):
    plan = Plan.objects.filter(code=request.GET.get("plan", "")).first()
    year = _year(request.GET.get("year"))
    listing = list_search(request)
    refused = S.refused_elections(plan=plan, submitted_in=year, query=listing["query"])
    return render(
        request,
        "elections/staff/refused.html",
        {
            **listing,
            "page": page_of(request, refused),
            "keep": [("plan", plan.code if plan else ""), ("year", year or "")],
            "plan": plan,
            "year": year,
            "plans": Plan.objects.all(),
        },
    )


@capability_required(Cap.VIEW_STAFF)
def staff_blank_form(request, plan_code: str, year: int):
    plan = get_object_or_404(Plan, code=plan_code, kind=Plan.Kind.ACCOUNT_BALANCE)
    return _pdf_response(
        services.blank_form_render(plan=plan, plan_year=year, actor=request.user, now=timezone.now())
    )


@capability_required(Cap.VIEW_STAFF)
def staff_participant(request, pk: int):
    participation = get_object_or_404(Participation.objects.select_related("person", "plan"), pk=pk)
    now = timezone.now()
    today = now.astimezone(EASTERN).date()
    context = _overview(participation, now=now)
    context.update(
        {
            "history": [
                e
                for e in S.elections_of(person=participation.person)
                if e.participation_id == participation.pk
            ],
            "notices": participation.election_notices.all()[:50],
            "cancellations": participation.deferral_cancellations.all(),
            "reductions": S.payroll_reductions(plan=participation.plan, participation=participation)[:100],
            "received_form": F.ReceivedForm(
                initial={"received_at": now.astimezone(EASTERN).strftime("%Y-%m-%dT%H:%M")}
            ),
            "notice_form": F.NoticeForm(initial={"notice_on": today}),
            "cancel_form": F.CancellationForm(),
            "can_record": has_cap(request.user, Cap.RECORD_EVENTS),
            "can_cancel": has_cap(request.user, Cap.APPROVE_EMERGENCY)
            and participation.plan.version_on(today).provision("deferral_cancellation", None) is not None,
            "cancellation_cite": participation.plan.version_on(today).cite("deferral_cancellation"),
        }
    )
    if participation.plan.kind == Plan.Kind.ACCOUNT_BALANCE:
        version = participation.plan.version_on(today)
        context["enrol"] = _enrol_context(
            participation, now=now, plan_year=_year(request.GET.get("year")), kind=None, window_id=None
        )
        context["investment"] = _investment_context(participation, today)
        context["accounts"] = [
            {
                "schedule": s,
                "rule": V.distribution_rule_for(version=version, kind=s.kind),
                "preview": services.schedule_change_preview(
                    participation=participation, account=s.account, as_of=today
                )
                if version.has("schedule_change")
                else None,
            }
            for s in S.account_schedules(participation=participation, as_of=today)
        ]
        context["schedule_rule"] = version.provision("schedule_change", None) or {}
    else:
        context["annuity_form"] = _annuity_context(participation, today)
    return render(request, "elections/staff/participant.html", context)


def _received(request) -> dt.datetime | None:
    form = F.ReceivedForm(request.POST)
    if not form.is_valid():
        return None
    try:
        return form.received(timezone.now())
    except djforms.ValidationError:
        return None


@capability_required(Cap.RECORD_EVENTS)
@require_POST
def staff_paper(request, pk: int, kind: str):
    """A paper election keyed by staff: the same services, the time the Committee received the form."""
    participation = get_object_or_404(Participation.objects.select_related("person", "plan"), pk=pk)
    received = _received(request)
    if received is None:
        messages.error(request, "Give the date and time the Committee received the form (not in the future).")
        return redirect("elections_staff:participant", pk=pk)
    if kind == "deferral":
        election = _submit_enrolment(request, participation, submitted_at=received, channel=Channel.STAFF)
    elif kind == "distribution":
        election = services.distribution_election_submit(
            participation=participation,
            submitted_at=received,
            channel=Channel.STAFF,
            actor=request.user,
            **F.distribution_arguments(request.POST),
        )
    elif kind == "schedule_change":
        try:
            args = F.schedule_change_arguments(request.POST)
        except InvalidInput as exc:
            messages.error(request, str(exc))
            return redirect("elections_staff:participant", pk=pk)
        election = services.schedule_change_submit(
            participation=participation,
            submitted_at=received,
            channel=Channel.STAFF,
            actor=request.user,
            **args,
        )
    elif kind == "investment":
        funds = Fund.objects.filter(plan=participation.plan, active=True)
        election = services.investment_election_submit(
            participation=participation,
            submitted_at=received,
            channel=Channel.STAFF,
            actor=request.user,
            **F.investment_arguments(request.POST, funds),
        )
    elif kind == "annuity":
        years = _int(request.POST.get("defer_years") or "0")
        election = services.annuity_election_submit(
            participation=participation,
            form=request.POST.get("form", ""),
            defer_years=years if years is not None else request.POST.get("defer_years"),
            submitted_at=received,
            channel=Channel.STAFF,
            actor=request.user,
        )
    else:
        raise Http404("no such election")
    return _after_submit(request, election, staff=True)


@capability_required(Cap.RECORD_EVENTS)
@require_POST
def staff_notice(request, pk: int):
    participation = get_object_or_404(Participation.objects.select_related("person", "plan"), pk=pk)
    form = F.NoticeForm(request.POST)
    if form.is_valid():
        try:
            services.eligibility_notice_send(
                participation=participation,
                notice_on=form.cleaned_data["notice_on"],
                actor=request.user,
                now=timezone.now(),
            )
        except services.ElectionError as exc:
            messages.error(request, f"{exc.message} ({exc.rule})")
        else:
            messages.success(request, "Notice of initial eligibility sent; the first-year window is open.")
    else:
        messages.error(request, "Give the date of the notice.")
    return redirect("elections_staff:participant", pk=pk)


@capability_required(Cap.APPROVE_EMERGENCY)
@require_POST
def staff_cancel_deferrals(request, pk: int):
    participation = get_object_or_404(Participation.objects.select_related("person", "plan"), pk=pk)
    form = F.CancellationForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            c = services.deferral_cancel(
                participation=participation,
                ground=d["ground"],
                event_on=d["event_on"],
                reason=d["reason"],
                actor=request.user,
                now=timezone.now(),
            )
        except ApplicationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(request, f"Deferrals cancelled {c.starts_on} to {c.ends_on} ({c.cite}).")
    else:
        messages.error(request, "Give the ground, the date and the reason.")
    return redirect("elections_staff:participant", pk=pk)


@capability_required(Cap.VIEW_STAFF)
def staff_election(request, kind: str, pk: int):
    election = _election_of(kind, pk)
    return render(request, "elections/staff/election.html", _election_detail(election))


@capability_required(Cap.VIEW_STAFF)
def staff_election_pdf(request, kind: str, pk: int):
    election = _election_of(kind, pk)
    if election.status not in (Status.ACCEPTED, Status.SUPERSEDED):
        raise Http404("a refused election has no confirmation")
    return _pdf_response(_confirmation(election, request.user))


@capability_required(Cap.VIEW_STAFF)
def staff_participants(request):
    plan = Plan.objects.filter(code=request.GET.get("plan", "")).first()
    qs = Participation.objects.select_related("person", "plan").order_by(
        "plan__code", "person__last_name", "person__first_name", "person__employee_number", "id"
    )
    if plan:
        qs = qs.filter(plan=plan)
    return render(
        request,
        "elections/staff/participants.html",
        {
            **staff_list(request, qs, person_path="person__"),
            "plan": plan,
            "plans": Plan.objects.order_by("code"),
            "keep": [("plan", plan.code if plan else "")],
        },
    )


# What each page's URL kwarg names (tests/test_access.py walks every URL with these); `kind`-keyed
# election pages are walked with kind "deferral".
from elections.models import DeferralElection  # noqa: E402

staff_window_cancel.access_model = EnrollmentWindow
for _view in (staff_participant, staff_paper, staff_notice, staff_cancel_deferrals):
    _view.access_model = Participation
for _view in (staff_election, staff_election_pdf, portal_election, portal_election_pdf):
    _view.access_model = DeferralElection
