"""Staff and portal pages of payments. Thin: reads through selectors, writes through services."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.html import escape
from django.views.decorators.http import require_http_methods, require_POST

from core.dates import date_in_range, parse_date
from core.decorators import capability_required, participant_required
from core.errors import ApplicationError
from core.inputs import date_or_none
from core.lists import staff_list
from core.money import parse_decimal
from core.report_files import report_file_state
from core.report_pages import report_csv, report_page
from core.roles import Cap, has_cap
from core.signin.decorators import fresh_second_factor_required
from participants.models import Person
from payments import selectors
from payments.forms import (
    EmergencyDecisionForm,
    OrderForm,
    PortalEmergencyRequestForm,
    StaffEmergencyRequestForm,
    WhatIfForm,
)
from payments.models import (
    DomesticRelationsOrder,
    EmergencyWithdrawal,
    PaymentRun,
    ScheduledPayment,
    WithholdingRate,
)
from payments.report_files import FORECAST, FORECAST_BY_YEAR, forecast_figures
from payments.services.runs import (
    PaymentRunError,
    payment_run_approve,
    payment_run_csv,
    payment_run_prepare,
    payment_run_register,
)
from payments.services.schedules import participant_schedules_recompute
from payments.services.whatif import WhatIfRefused, account_whatif
from payments.services.withdrawals import (
    WithdrawalError,
    dro_record,
    emergency_approve,
    emergency_available,
    emergency_deny,
    emergency_request_record,
)
from payments.services.withholding import withholding_rate_record

PERSON = "participation__person__"  # where a payment, request or order names its participant (core.lists)
# The upcoming list's statuses: a cancelled payment is never upcoming (payments_upcoming leaves it out).
UPCOMING_STATUSES = [
    (v, label) for v, label in ScheduledPayment.Status.choices if v != ScheduledPayment.Status.CANCELLED
]


def _date(raw: str | None, default: dt.date) -> dt.date:
    day = date_or_none(raw) or default
    return day if date_in_range(day) else default


@capability_required(Cap.VIEW_STAFF)
def upcoming(request):
    today = timezone.localdate()
    start = _date(request.GET.get("start"), today)
    end = _date(request.GET.get("end"), today + dt.timedelta(days=60))
    period = selectors.payments_upcoming(start=start, end=end)
    listing = staff_list(request, period, person_path=PERSON, statuses=UPCOMING_STATUSES)
    payments = list(listing["page"].object_list)
    amounts = selectors.payment_estimates(payments=payments, on=today)
    return render(
        request,
        "payments/staff_upcoming.html",
        {
            **listing,
            "payments": [(p, amounts[p.id]) for p in payments],
            "keep": [("start", start.isoformat()), ("end", end.isoformat())],
            "start": start,
            "end": end,
            "ready_count": period.filter(status=ScheduledPayment.Status.VALUED, run__isnull=True).count(),
            "can_prepare": has_cap(request.user, Cap.PREPARE_PAYMENTS),
        },
    )


@capability_required(Cap.VIEW_STAFF)
def held(request):
    return render(
        request,
        "payments/staff_held.html",
        staff_list(request, selectors.payments_held(), person_path=PERSON),
    )


@capability_required(Cap.VIEW_STAFF)
def runs(request):
    runs = PaymentRun.objects.select_related("prepared_by", "approved_by").order_by("-prepared_at", "-id")
    return render(
        request,
        "payments/staff_runs.html",
        staff_list(request, runs, person_path=None, statuses=PaymentRun.Status.choices),
    )


@capability_required(Cap.VIEW_STAFF)
def run_detail(request, pk: int):
    run = get_object_or_404(
        PaymentRun.objects.select_related("prepared_by", "approved_by", "register"), pk=pk
    )
    payments = run.payments.select_related(
        "participation__person", "participation__plan", "account"
    ).order_by("release_date", "id")
    can_approve = (
        has_cap(request.user, Cap.APPROVE_PAYMENTS)
        and run.status == PaymentRun.Status.PREPARED
        and run.prepared_by_id != request.user.pk
    )
    return render(
        request,
        "payments/staff_run.html",
        {
            "run": run,
            "payments": payments,
            "can_approve": can_approve,
            "own_run": run.prepared_by_id == request.user.pk and run.status == PaymentRun.Status.PREPARED,
        },
    )


@require_POST
@capability_required(Cap.PREPARE_PAYMENTS)
def run_prepare(request):
    end = _date(request.POST.get("period_end"), timezone.localdate())
    start = _date(request.POST.get("period_start"), None) if request.POST.get("period_start") else None
    try:
        run = payment_run_prepare(period_end=end, period_start=start, actor=request.user, now=timezone.now())
    except PaymentRunError as exc:
        messages.error(request, str(exc))
        return redirect("payments_staff:upcoming")
    messages.success(
        request,
        f"Payment run {run.pk} prepared: {run.payments_count} payments. A different person must approve it.",
    )
    return redirect("payments_staff:run", pk=run.pk)


def _run_reviewed(run: PaymentRun) -> str:
    """What the approver saw on the review page: a run whose totals differ since is reviewed again."""
    return "|".join(
        str(v)
        for v in (run.payments_count, run.gross_total, run.federal_total, run.state_total, run.net_total)
    )


@require_http_methods(["GET", "POST"])
@capability_required(Cap.APPROVE_PAYMENTS)
@fresh_second_factor_required
def run_approve(request, pk: int):
    """GET: the summary to approve (count, gross, withholding, net, by plan); POST: approve and release it."""
    run = get_object_or_404(PaymentRun.objects.select_related("prepared_by"), pk=pk)
    if request.method == "GET":
        if run.status != PaymentRun.Status.PREPARED:
            messages.info(
                request, f"Payment run {run.pk} is {run.get_status_display().lower()}: nothing to approve."
            )
            return redirect("payments_staff:run", pk=pk)
        return render(
            request,
            "payments/staff_run_approve.html",
            {
                "run": run,
                "reviewed": _run_reviewed(run),
                "withholding": run.federal_total + run.state_total,
                "by_plan": selectors.run_totals_by_plan(run=run),
                "own_run": run.prepared_by_id == request.user.pk,
            },
        )
    if run.prepared_by_id != request.user.pk and request.POST.get("reviewed") != _run_reviewed(run):
        messages.error(
            request, f"Review payment run {run.pk}'s totals before approving it (they are shown here)."
        )
        return redirect("payments_staff:run_approve", pk=pk)
    try:
        payment_run_approve(run=run, actor=request.user, now=timezone.now())
    except PaymentRunError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Payment run {run.pk} approved and released to the books.")
    return redirect("payments_staff:run", pk=pk)


@capability_required(Cap.VIEW_STAFF)
def run_csv(request, pk: int):
    run = get_object_or_404(PaymentRun, pk=pk)
    try:
        text = payment_run_csv(run=run)
    except PaymentRunError as exc:
        messages.error(request, str(exc))
        return redirect("payments_staff:run", pk=pk)
    response = HttpResponse(text, content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="payment-run-{run.pk}.csv"'
    return response


@require_POST
@capability_required(Cap.ISSUE_DOCUMENTS)  # writes a stored document: not the auditor
def run_register(request, pk: int):
    run = get_object_or_404(PaymentRun, pk=pk)
    doc = payment_run_register(run=run, actor=request.user, now=timezone.now())
    return redirect("document_download", pk=doc.pk)


def _bar_chart(rows: list[tuple[str, Decimal]], *, title: str) -> str:
    """A server-rendered SVG bar chart (no scripts, no CDN)."""
    width, height, left, bottom, top = 760, 240, 70, 30, 20
    peak = max([v for _, v in rows] + [Decimal(1)])
    bar_w = (width - left - 10) / max(len(rows), 1)
    parts = [
        f'<svg class="chart payments-chart" viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f'<line class="axis" x1="{left}" y1="{height - bottom}" x2="{width - 5}" y2="{height - bottom}"/>',
    ]
    for i in range(5):
        y = top + (height - top - bottom) * i / 4
        value = peak * (4 - i) / 4
        parts.append(
            f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{width - 5}" y2="{y:.1f}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,.0f}</text>'
        )
    for i, (label, value) in enumerate(rows):
        h = float((height - top - bottom) * value / peak)
        x = left + i * bar_w + 3
        parts.append(
            f'<rect class="payments-bar" x="{x:.1f}" y="{height - bottom - h:.1f}" width="{bar_w - 6:.1f}" '
            f'height="{h:.1f}"><title>{escape(label)}: {value:,.2f}</title></rect>'
            f'<text x="{x + (bar_w - 6) / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


@capability_required(Cap.VIEW_STAFF)
def forecast(request):
    """Scheduled payments from today by month and by year (payments.selectors.forecast). Its work grows with the
    scheduled payments, so the page shows the figures the report job computed today, with its CSV, or offers to
    compute them (core.report_pages); the by-year file is its own report job."""
    today = timezone.localdate()
    now = timezone.now()
    params = [("start", today.isoformat())]
    page = report_page(request, name=FORECAST.name, params=params, now=now)
    by_year = report_file_state(name=FORECAST_BY_YEAR.name, args=[today.isoformat()], now=now)
    if request.GET.get("format") == "csv":
        state = by_year if request.GET.get("by") == "year" else page["report_state"]
        return report_csv(state, page=request.path)
    summary = page["report_state"].summary
    data = forecast_figures(summary) if summary else None
    return render(
        request,
        "payments/staff_forecast.html",
        {
            "data": data,
            "today": today,
            "month_chart": data
            and _bar_chart(
                [(m.strftime("%b %y"), v) for m, v in data["by_month"]], title="Payments by month"
            ),
            "year_chart": data
            and _bar_chart([(str(y), v) for y, v in data["by_year"]], title="Payments by year"),
            "by_year": by_year,
            "prepare_year": {"name": FORECAST_BY_YEAR.name, "params": params},
            "report_what": f"the forecast from {today:%B %-d, %Y}",
            **page,
        },
    )


@capability_required(Cap.VIEW_STAFF)
def participant_schedule(request, pk: int | None = None):
    person = None
    if pk is not None:
        person = get_object_or_404(Person, pk=pk)
    elif request.GET.get("q"):
        q = request.GET["q"].strip()
        person = Person.objects.filter(employee_number__iexact=q).first()
        if person is None:
            messages.error(request, f"No participant with employee number {q}.")
    calendar = selectors.person_calendar(person=person) if person else []
    amounts = selectors.payment_estimates(payments=calendar, on=timezone.localdate()) if calendar else {}
    return render(
        request,
        "payments/staff_participant.html",
        {
            "person": person,
            "schedules": selectors.person_schedules(person=person) if person else [],
            "calendar": [(p, amounts.get(p.id)) for p in calendar],
            "can_recompute": has_cap(request.user, Cap.RECORD_EVENTS),
        },
    )


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def participant_recompute(request, pk: int):
    """Compute the schedules again (after a beneficiary designation or a beneficiary's death was recorded)."""
    person = get_object_or_404(Person, pk=pk)
    changed = participant_schedules_recompute(
        person=person, now=timezone.now(), because=f"recomputed by {request.user.get_username()}"
    )
    messages.success(request, f"Schedules computed again: {len(changed)} changed.")
    return redirect("payments_staff:participant", pk=pk)


def _errors(form) -> str:
    return "; ".join(
        f"{'' if field == '__all__' else field.replace('_', ' ') + ': '}{' '.join(errs)}"
        for field, errs in form.errors.items()
    )


# --- unforeseeable emergencies (EDCP 5.5) ---------------------------------------------------------------


@capability_required(Cap.VIEW_STAFF)
def emergency_list(request):
    return render(
        request,
        "payments/staff_emergencies.html",
        {
            **staff_list(
                request,
                selectors.emergencies().order_by("-requested_on", "-id"),
                person_path=PERSON,
                statuses=EmergencyWithdrawal.Status.choices,
            ),
            "can_record": has_cap(request.user, Cap.RECORD_EVENTS),
            "form": StaffEmergencyRequestForm(initial={"requested_on": timezone.localdate()}),
        },
    )


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def emergency_record(request):
    form = StaffEmergencyRequestForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not recorded: {_errors(form)}")
        return redirect("payments_staff:emergencies")
    d = form.cleaned_data
    try:
        emergency = emergency_request_record(
            participation=d["participation"],
            amount=d["amount"],
            requested_on=d["requested_on"],
            need=d["need"],
            documents=d["documents"],
            channel="staff",
            actor=request.user,
            now=timezone.now(),
        )
    except WithdrawalError as exc:
        messages.error(request, f"Not recorded: {exc}")
        return redirect("payments_staff:emergencies")
    messages.success(request, "Request recorded; the Committee decides it.")
    return redirect("payments_staff:emergency", pk=emergency.pk)


@capability_required(Cap.VIEW_STAFF)
def emergency_detail(request, pk: int):
    emergency = get_object_or_404(selectors.emergencies(), pk=pk)
    today = timezone.localdate()
    open_ = emergency.status == EmergencyWithdrawal.Status.REQUESTED
    available, accounts = (
        emergency_available(participation=emergency.participation, on=today) if open_ else (None, "")
    )
    return render(
        request,
        "payments/staff_emergency.html",
        {
            "emergency": emergency,
            "payments": selectors.emergency_payments(emergency=emergency),
            "available": available,
            "accounts": accounts,
            "today": today,
            "can_decide": open_ and has_cap(request.user, Cap.APPROVE_EMERGENCY),
            "form": EmergencyDecisionForm(
                initial={"decided_on": today, "amount": emergency.requested_amount}
            ),
        },
    )


def _emergency_reviewed(emergency: EmergencyWithdrawal, decision: dict, available, user) -> str:
    """A token of the summary the decider was shown (issue 11, as _run_reviewed for a run): the request, the
    decision as summarised and the amount available then. A decide POST without it, or after any of these
    changed, shows the summary again and records nothing."""
    text = "|".join(
        str(v)
        for v in (
            emergency.pk,
            emergency.status,
            emergency.requested_amount,
            decision.get("decision"),
            decision.get("amount") if decision.get("decision") == "approve" else "",
            decision.get("decided_on"),
            (decision.get("reason") or "").strip(),
            bool(decision.get("cancel_deferrals")),
            available,
            getattr(user, "pk", ""),
        )
    )
    return salted_hmac("payments.emergency_reviewed", text, algorithm="sha256").hexdigest()


def _emergency_summary(
    request, emergency: EmergencyWithdrawal, form: EmergencyDecisionForm, *, status: int = 200
):
    d = form.cleaned_data
    available, accounts = emergency_available(participation=emergency.participation, on=timezone.localdate())
    return render(
        request,
        "payments/staff_emergency_review.html",
        {
            "emergency": emergency,
            "decision": d,
            "available": available,
            "accounts": accounts,
            "hidden": [
                (name, form.data.get(name)) for name in form.fields if form.data.get(name) is not None
            ],
            "reviewed": _emergency_reviewed(emergency, d, available, request.user),
            "again": status != 200,
        },
        status=status,
    )


@capability_required(Cap.APPROVE_EMERGENCY)
@fresh_second_factor_required
def emergency_review(request, pk: int):
    """Issue 11: the Committee's decision summarised before it is recorded (GET, nothing changes); the page's
    button posts the same fields, with the summary's token, to emergency_decide."""
    emergency = get_object_or_404(selectors.emergencies(), pk=pk)
    if emergency.status != EmergencyWithdrawal.Status.REQUESTED:
        messages.info(
            request, f"Emergency request {emergency.pk} is already {emergency.get_status_display().lower()}."
        )
        return redirect("payments_staff:emergency", pk=pk)
    form = EmergencyDecisionForm(request.GET)
    if not form.is_valid():
        messages.error(request, f"Not decided: {_errors(form)}")
        return redirect("payments_staff:emergency", pk=pk)
    return _emergency_summary(request, emergency, form)


@require_POST
@capability_required(Cap.APPROVE_EMERGENCY)
@fresh_second_factor_required
def emergency_decide(request, pk: int):
    emergency = get_object_or_404(selectors.emergencies(), pk=pk)
    form = EmergencyDecisionForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not decided: {_errors(form)}")
        return redirect("payments_staff:emergency", pk=pk)
    d = form.cleaned_data
    if emergency.status == EmergencyWithdrawal.Status.REQUESTED:
        available, _accounts = emergency_available(
            participation=emergency.participation, on=timezone.localdate()
        )
        if not constant_time_compare(
            request.POST.get("reviewed", ""), _emergency_reviewed(emergency, d, available, request.user)
        ):
            # Not from the summary, or the summary changed since: show it (again); nothing is recorded.
            return _emergency_summary(request, emergency, form, status=409)
    try:
        if d["decision"] == "approve":
            payments = emergency_approve(
                emergency=emergency,
                amount=d["amount"],
                approved_on=d["decided_on"],
                reason=d["reason"],
                cancel_deferrals=d["cancel_deferrals"],
                actor=request.user,
                now=timezone.now(),
            )
            messages.success(
                request, f"Approved: {len(payments)} payment(s) with Payment Date {d['decided_on']}."
            )
        else:
            emergency_deny(
                emergency=emergency,
                decided_on=d["decided_on"],
                reason=d["reason"],
                cancel_deferrals=d["cancel_deferrals"],
                actor=request.user,
                now=timezone.now(),
            )
            messages.success(request, "Denied.")
    except WithdrawalError as exc:
        messages.error(request, f"Not decided: {exc}")
    return redirect("payments_staff:emergency", pk=pk)


@participant_required
def portal_emergencies(request):
    person = request.user.person
    today = timezone.localdate()
    participations = selectors.emergency_participations(person=person, on=today)
    form = PortalEmergencyRequestForm(request.POST or None, participations=participations)
    if request.method == "POST" and participations and form.is_valid():
        d = form.cleaned_data
        try:
            emergency = emergency_request_record(
                participation=d["participation"],
                amount=d["amount"],
                requested_on=today,
                need=d["need"],
                documents=d["documents"],
                channel="portal",
                actor=request.user,
                now=timezone.now(),
            )
        except WithdrawalError as exc:
            messages.error(request, f"Not filed: {exc}")
        else:
            messages.success(
                request,
                "Your request is filed. The Committee will decide it and you will see the decision here.",
            )
            return redirect("payments_portal:emergency", pk=emergency.pk)
    return render(
        request,
        "payments/portal_emergencies.html",
        {
            "emergencies": selectors.person_emergencies(person=person),
            "form": form,
            "can_file": bool(participations),
        },
    )


@participant_required
def portal_emergency(request, pk: int):
    emergency = get_object_or_404(selectors.person_emergencies(person=request.user.person), pk=pk)
    payments = selectors.emergency_payments(emergency=emergency)
    figures = selectors.payment_figures(payments=payments, on=timezone.localdate())
    return render(
        request,
        "payments/portal_emergency.html",
        {
            "emergency": emergency,
            "payments": [(p, figures[p.id]) for p in payments if p.id in figures],
        },
    )


# --- domestic relations orders (EDCP 5.9, RRP 2017 4.01(c)) ------------------------------------------------


@capability_required(Cap.VIEW_STAFF)
def order_list(request):
    return render(
        request,
        "payments/staff_orders.html",
        {
            **staff_list(request, selectors.orders().order_by("-order_date", "-id"), person_path=PERSON),
            "can_record": has_cap(request.user, Cap.RECORD_EVENTS),
            "form": OrderForm(initial={"order_date": timezone.localdate()}),
        },
    )


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def order_record(request):
    form = OrderForm(request.POST)
    if not form.is_valid():
        messages.error(request, f"Not recorded: {_errors(form)}")
        return redirect("payments_staff:orders")
    d = form.cleaned_data
    try:
        order = dro_record(
            participation=d["participation"],
            alternate_payee=d["alternate_payee"],
            order_date=d["order_date"],
            percent=d["percent"],
            amount=d["amount"],
            account_name=d["account"].strip(),
            alternate_payee_email=d["alternate_payee_email"] or "",
            alternate_payee_address=d["alternate_payee_address"] or "",
            actor=request.user,
            now=timezone.now(),
        )
    except ApplicationError as exc:
        messages.error(request, f"Not recorded: {exc}")
        return redirect("payments_staff:orders")
    messages.success(request, f"Order recorded: {order.total:,.2f} to {order.alternate_payee} as a lump sum.")
    return redirect("payments_staff:order", pk=order.pk)


@capability_required(Cap.VIEW_STAFF)
def order_detail(request, pk: int):
    order = get_object_or_404(selectors.orders(), pk=pk)
    return render(
        request,
        "payments/staff_order.html",
        {"order": order, "payments": selectors.order_payments(order=order)},
    )


@capability_required(Cap.VIEW_STAFF)
def withholding(request):
    can_edit = has_cap(request.user, Cap.MAINTAIN_TABLES)
    if request.method == "POST":
        if not can_edit:
            raise Http404
        try:
            raw_threshold = request.POST.get("threshold")
            threshold = parse_decimal(raw_threshold, field="threshold") if raw_threshold else None
            withholding_rate_record(
                kind=request.POST.get("kind", ""),
                rate=parse_decimal(request.POST.get("rate", ""), field="rate"),
                jurisdiction=request.POST.get("jurisdiction", ""),
                threshold=threshold,
                effective_date=parse_date(request.POST.get("effective_date", ""), field="effective date"),
                source=request.POST.get("source", ""),
                actor=request.user,
                now=timezone.now(),
            )
        except ApplicationError as exc:
            messages.error(request, f"Not recorded: {exc}")
        else:
            messages.success(request, "Rate recorded.")
        return redirect("payments_staff:withholding")
    return render(
        request,
        "payments/staff_withholding.html",
        {"rates": WithholdingRate.objects.all(), "kinds": WithholdingRate.Kind.choices, "can_edit": can_edit},
    )


@participant_required
def portal_calendar(request):
    person = request.user.person
    calendar = selectors.person_calendar(person=person)
    figures = selectors.payment_figures(payments=calendar, on=timezone.localdate())
    parts = selectors.benefit_parts(payments=calendar)
    # BRP Appendix A: on a date that pays both parts, the Post-2004 part first, then the Pre-2005 part
    calendar.sort(key=lambda p: (p.payment_date, p.account_id, parts.get(p.id, ("",))[0]))
    return render(
        request,
        "payments/portal_calendar.html",
        {
            "person": person,
            "calendar": [(p, figures.get(p.id), parts.get(p.id)) for p in calendar],
            "key_waits": selectors.key_employee_waits(person=person, on=timezone.localdate()),
            "unscheduled": selectors.unscheduled_balances(person=person, on=timezone.localdate()),
            "schedules": selectors.person_schedules(person=person),
        },
    )


@participant_required
def portal_whatif(request):
    """What each account would pay after a separation on a chosen date: the engine, nothing stored."""
    person = request.user.person
    today = timezone.localdate()
    form = WhatIfForm(request.GET or None, initial={"separation": today, "annual_return": 0})
    result, refusal = None, ""
    if request.GET and form.is_valid():
        d = form.cleaned_data
        try:
            result = account_whatif(
                person=person,
                separation=d["separation"],
                as_of=today,
                annual_return=d["annual_return"],
                deferral_percent=d["deferral_percent"],
            )
        except WhatIfRefused as exc:
            refusal = str(exc)
    return render(
        request, "payments/portal_whatif.html", {"form": form, "result": result, "refusal": refusal}
    )


participant_recompute.access_model = Person
for _view in (emergency_detail, emergency_decide, emergency_review, portal_emergency):
    _view.access_model = EmergencyWithdrawal
order_detail.access_model = DomesticRelationsOrder
