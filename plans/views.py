"""Staff pages of the plan catalog: plans and their provisions, funds and prices, committee-maintained tables.

Reading needs VIEW_STAFF; changing a table, a figure or a market closure needs MAINTAIN_TABLES and goes
through plans.services (audited; model history from simple-history).
"""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from core.charts import line_chart_with_table, plain_number
from core.decorators import capability_required
from core.models import MarketClosure
from core.roles import Cap, has_cap
from plans import selectors
from plans.forms import ClosureForm, ClosureRemoveForm, ContactForm, FigureForm, TableForm, VersionOnForm
from plans.models import DatedFigure, Plan, PlanTable
from plans.services import (
    TableError,
    committee_contact_set,
    figure_set,
    market_closure_add,
    market_closure_remove,
    parse_table_rows,
    table_set,
)


@capability_required(Cap.VIEW_STAFF)
def catalog(request):
    plans = Plan.objects.prefetch_related("versions", "funds", "tables").all()
    return render(request, "plans/catalog.html", {"plans": plans, "today": timezone.localdate()})


@capability_required(Cap.VIEW_STAFF)
def plan_detail(request, code: str, contact_form: ContactForm | None = None):
    plan = get_object_or_404(Plan.objects.prefetch_related("versions"), code=code)
    today = timezone.localdate()
    form = VersionOnForm(request.GET or None)
    on = form.cleaned_data["on"] if form.is_valid() and form.cleaned_data.get("on") else today
    version = plan.version_on(on)
    tables = list(plan.tables.all())
    in_force: dict[str, PlanTable] = {}
    for t in tables:
        if t.effective_date <= on and (
            t.code not in in_force or in_force[t.code].effective_date < t.effective_date
        ):
            in_force[t.code] = t
    return render(
        request,
        "plans/plan_detail.html",
        {
            "plan": plan,
            "version": version,
            "on": on,
            "form": form if form.is_bound else VersionOnForm(initial={"on": on}),
            "versions": plan.versions.all(),
            "provisions": selectors.provisions_in_order(version=version),
            "sections": version.sections.all(),
            "tables": tables,
            "tables_in_force": {t.pk for t in in_force.values()},
            **_contact_context(request, plan, on, contact_form),
        },
        status=200 if contact_form is None else 400,
    )


def _contact_context(request, plan: Plan, on: dt.date, form: ContactForm | None = None) -> dict:
    contact = selectors.committee_contact(plan=plan, as_of=on)
    if form is None and has_cap(request.user, Cap.MANAGE_PLANS):
        form = ContactForm(
            initial={
                "effective_date": timezone.localdate(),
                "name": (contact or {}).get("name", ""),
                "address": "\n".join((contact or {}).get("address", [])),
                "email": (contact or {}).get("email", ""),
            }
        )
    return {
        "contact": contact,
        "contact_history": selectors.setting_history(plan=plan, key="committee_contact"),
        "contact_form": form,
    }


@require_POST
@capability_required(Cap.MANAGE_PLANS)
def contact_set(request, code: str):
    """The committee contact from a date (a dated plan setting, audited, with history)."""
    plan = get_object_or_404(Plan, code=code)
    form = ContactForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            setting = committee_contact_set(
                plan=plan,
                effective_date=d["effective_date"],
                name=d["name"],
                address=d["address"].splitlines(),
                email=d["email"],
                reason=d["reason"],
                actor=request.user,
                now=timezone.now(),
            )
        except TableError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"The committee contact from {setting.effective_date} is recorded.")
            return redirect("plans_staff:plan", code=plan.code)
    return plan_detail(request, code, contact_form=form)


@capability_required(Cap.VIEW_STAFF)
def funds(request, code: str):
    plan = get_object_or_404(Plan, code=code)
    today = timezone.localdate()
    days = request.GET.get("days", "")
    start = today - dt.timedelta(days=int(days) if days.isdigit() and 0 < int(days) <= 20000 else 730)
    latest = selectors.latest_prices(plan=plan, on=today)
    rows = []
    for fund in plan.funds.all():
        series = selectors.price_series(fund=fund, start=start, end=today)
        rows.append(
            {
                "fund": fund,
                "latest": latest.get(fund.id),
                "chart": line_chart_with_table(
                    series,
                    title=f"{fund.code} price",
                    y_format=plain_number,
                    include_zero=False,
                    height=200,
                    empty_text="No prices loaded",
                ),
            }
        )
    return render(request, "plans/funds.html", {"plan": plan, "rows": rows, "start": start, "today": today})


# --- dated figures --------------------------------------------------------------------------------


def _figures_page(request, form: FigureForm | None = None, status: int = 200):
    codes, years = selectors.figures_by_year()
    return render(
        request,
        "plans/figures.html",
        {
            "codes": codes,
            "years": years,
            "form": form or FigureForm(),
            "can_edit": has_cap(request.user, Cap.MAINTAIN_TABLES),
            "history": DatedFigure.history.select_related("history_user").order_by(
                "-history_date", "-history_id"
            )[:50],
        },
        status=status,
    )


@capability_required(Cap.VIEW_STAFF)
def figures(request):
    return _figures_page(request)


@require_POST
@capability_required(Cap.MAINTAIN_TABLES)
def figure_save(request):
    form = FigureForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            figure = figure_set(
                code=d["code"],
                year=d["year"],
                amount=d["amount"],
                source=d["source"],
                reason=d["reason"],
                actor=request.user,
                now=timezone.now(),
            )
        except TableError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{figure.code} for {figure.year} is {figure.amount:,}.")
            return redirect("plans_staff:figures")
    return _figures_page(request, form, status=400)


# --- plan tables ----------------------------------------------------------------------------------


def _table_page(request, table: PlanTable, form: TableForm | None = None, status: int = 200):
    return render(
        request,
        "plans/table_detail.html",
        {
            "table": table,
            "plan": table.plan,
            "versions": PlanTable.objects.filter(plan=table.plan, code=table.code).order_by(
                "-effective_date"
            ),
            "history": table.history.select_related("history_user").order_by("-history_date", "-history_id")[
                :50
            ],
            "can_edit": has_cap(request.user, Cap.MAINTAIN_TABLES),
            "form": form
            or TableForm(
                initial={
                    "effective_date": table.effective_date,
                    "rows": TableForm.rows_text(table.rows),
                    "citation": table.citation,
                    "description": table.description,
                }
            ),
        },
        status=status,
    )


@capability_required(Cap.VIEW_STAFF)
def table_detail(request, pk: int):
    return _table_page(request, get_object_or_404(PlanTable.objects.select_related("plan"), pk=pk))


@require_POST
@capability_required(Cap.MAINTAIN_TABLES)
def table_save(request, pk: int):
    table = get_object_or_404(PlanTable.objects.select_related("plan"), pk=pk)
    form = TableForm(request.POST)
    if form.is_valid():
        d = form.cleaned_data
        try:
            saved = table_set(
                plan=table.plan,
                code=table.code,
                effective_date=d["effective_date"],
                rows=parse_table_rows(text=d["rows"]),
                citation=d["citation"],
                description=d["description"],
                reason=d["reason"],
                actor=request.user,
                now=timezone.now(),
            )
        except TableError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{saved} recorded.")
            return redirect("plans_staff:table", pk=saved.pk)
    return _table_page(request, table, form, status=400)


# --- market closures ------------------------------------------------------------------------------


def _closures_page(request, form: ClosureForm | None = None, status: int = 200):
    return render(
        request,
        "plans/closures.html",
        {
            "closures": MarketClosure.objects.select_related("recorded_by").all(),
            "form": form or ClosureForm(),
            "can_edit": has_cap(request.user, Cap.MAINTAIN_TABLES),
            "history": MarketClosure.history.select_related("history_user").order_by(
                "-history_date", "-history_id"
            )[:50],
        },
        status=status,
    )


@capability_required(Cap.VIEW_STAFF)
def closures(request):
    return _closures_page(request)


@require_POST
@capability_required(Cap.MAINTAIN_TABLES)
def closure_add(request):
    form = ClosureForm(request.POST)
    if form.is_valid():
        try:
            closure = market_closure_add(
                date=form.cleaned_data["date"],
                reason=form.cleaned_data["reason"],
                actor=request.user,
                now=timezone.now(),
            )
        except TableError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"{closure.date} is no Valuation Date: {closure.reason}.")
            return redirect("plans_staff:closures")
    return _closures_page(request, form, status=400)


@require_POST
@capability_required(Cap.MAINTAIN_TABLES)
def closure_remove(request, pk: int):
    closure = get_object_or_404(MarketClosure, pk=pk)
    form = ClosureRemoveForm(request.POST)
    form.is_valid()
    try:
        market_closure_remove(
            closure=closure,
            reason=form.cleaned_data.get("reason", ""),
            actor=request.user,
            now=timezone.now(),
        )
    except TableError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"The closure on {closure.date} is removed: it is a Valuation Date again.")
    return redirect("plans_staff:closures")


# What each page's URL kwarg names (tests/test_access.py walks every URL with these).
for _view, _model in (
    (plan_detail, Plan),
    (contact_set, Plan),
    (funds, Plan),
    (table_detail, PlanTable),
    (table_save, PlanTable),
    (closure_remove, MarketClosure),
):
    _view.access_model = _model
