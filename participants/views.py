"""Staff pages about people: the participant list and page, and the Key Employee lists."""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from books import selectors as books
from books.models import Forfeiture, LedgerEntry, PendingTransaction
from core import hooks, notices
from core.audit_links import events_about_person
from core.charts import line_chart_with_table
from core.dates import add_months
from core.decorators import capability_required
from core.lists import page_of
from core.models import AuditEvent, Document
from core.roles import Cap, has_cap
from participants import selectors
from participants.forms import KeyEmployeeListForm, SearchForm
from participants.models import KeyEmployeeList, Person
from participants.services import key_employee_list_record
from plans.models import Plan

PAGE_SIZE = 50


@capability_required(Cap.VIEW_STAFF)
def participant_list(request):
    form = SearchForm(request.GET or None)
    query, plan = "", ""
    if form.is_valid():
        query, plan = form.cleaned_data["q"], form.cleaned_data["plan"]
    return render(
        request,
        "participants/list.html",
        {
            "form": form,
            "page": page_of(
                request, selectors.people_search(query=query, plan_code=plan), per_page=PAGE_SIZE
            ),
            "query": query,
            "plan": plan,
        },
    )


def _history(person: Person) -> list[dict]:
    """The person's model history (simple-history), newest first, with what each change changed."""
    records = list(person.history.select_related("history_user").order_by("-history_date", "-history_id"))
    out = []
    for i, record in enumerate(records):
        previous = records[i + 1] if i + 1 < len(records) else None
        changes = []
        if previous is not None:
            changes = [(c.field, c.old, c.new) for c in record.diff_against(previous).changes]
        out.append({"record": record, "changes": changes})
    return out


def _key_effective(plans, on: dt.date) -> tuple[int, int]:
    """When a year's Key Employees become key: the plans' key_employee provision (EDCP 1.20: April 1)."""
    for plan in plans:
        rule = plan.version_on(on).provision("key_employee", None)
        if rule:
            return rule["effective_month"], rule["effective_day"]
    return 4, 1


@capability_required(Cap.VIEW_STAFF)
def participant_detail(request, pk: int):
    person = get_object_or_404(Person, pk=pk)
    today = timezone.localdate()
    participations = books.person_books(person=person, on=today)
    account_ids = [row["account"].id for p in participations for row in p["accounts"]]
    ledger = Paginator(
        LedgerEntry.objects.filter(account_id__in=account_ids)
        .select_related("position__fund", "account__participation__plan")
        .order_by("-valuation_date", "-id"),
        PAGE_SIZE,
    ).get_page(request.GET.get("page"))
    # At most one row per Valuation Date of the 400 days: read them all in one statement and page them here. Paged
    # in SQL, the page's LIMIT made PostgreSQL walk the (valuation_date, position) index backwards over every
    # position's rows (1.5 s at 10,000 participants), and the count was a second pass over the same rows.
    earnings = Paginator(list(books.daily_earnings(account_ids=account_ids)), 30).get_page(
        request.GET.get("epage")
    )
    month, day = _key_effective([p["plan"] for p in participations] or Plan.objects.all(), today)
    try:
        tax_years = hooks.ask("tax_years", person=person)
    except LookupError:  # the taxes app is not installed
        tax_years = []
    return render(
        request,
        "participants/detail.html",
        {
            "person": person,
            "today": today,
            "tax_years": tax_years,
            "participations": participations,
            "events": person.employment_events.all(),
            "key_years": selectors.key_employee_years(
                person=person, effective_month=month, effective_day=day
            ),
            "key_now": selectors.key_employee_status(
                person=person, on=today, effective_month=month, effective_day=day
            ),
            "service": person.vesting_service.order_by("-through_year"),
            "service_now": selectors.years_of_vesting_service(person=person, on=today),
            "beneficiaries": [
                (p["plan"], selectors.beneficiaries_in_force(person=person, plan=p["plan"]))
                for p in participations
            ],
            "designations": person.beneficiary_designations.select_related("plan").prefetch_related(
                "beneficiaries"
            ),
            "pending": PendingTransaction.objects.filter(
                account_id__in=account_ids, status=PendingTransaction.Status.PENDING
            ).select_related("account"),
            "forfeitures": Forfeiture.objects.filter(account_id__in=account_ids).select_related("account"),
            # statements are core Documents of the person (kind statement_*): no import of the statements app
            "statements": person.documents.filter(kind__startswith="statement_").order_by(
                "-created_at", "-id"
            )[:20],
            "ledger": ledger,
            "earnings": earnings,
            # issue 11: the page links everything about the person
            "documents": Document.objects.filter(person=person).order_by("-created_at", "-id")[:20],
            "events_about": events_about_person(
                AuditEvent.objects.select_related("actor"), person_pk=person.pk
            )[:10],
            "chart": line_chart_with_table(
                books.value_history(account_ids=account_ids, start=today - dt.timedelta(days=730), end=today),
                title="Balance, all plans",
            ),
            "history": _history(person),
            "notices": notices.notices_labelled(person=person),
            "delivery": notices.delivery_in_force(person=person),
            "participation_history": [
                h
                for p in participations
                for h in p["participation"].history.select_related("history_user").order_by("-history_date")
            ],
        },
    )


def _key_lists_page(request, form: KeyEmployeeListForm | None = None, status: int = 200):
    month, day = _key_effective(Plan.objects.all(), timezone.localdate())
    rows = []
    for lst in KeyEmployeeList.objects.prefetch_related("members").order_by("-identification_year"):
        start = dt.date(lst.identification_year + 1, month, day)
        rows.append({"list": lst, "from": start, "to": add_months(start, 12) - dt.timedelta(days=1)})
    return render(
        request,
        "participants/key_employees.html",
        {
            "rows": rows,
            "form": form or KeyEmployeeListForm(),
            "can_edit": has_cap(request.user, Cap.MAINTAIN_TABLES),
        },
        status=status,
    )


@capability_required(Cap.VIEW_STAFF)
def key_employees(request):
    return _key_lists_page(request)


@require_POST
@capability_required(Cap.MAINTAIN_TABLES)
def key_employees_record(request):
    form = KeyEmployeeListForm(request.POST)
    if not form.is_valid():
        return _key_lists_page(request, form, status=400)
    d = form.cleaned_data
    lst = key_employee_list_record(
        identification_year=d["identification_year"],
        people=d["employee_numbers"],
        note=d["note"],
        actor=request.user,
        now=timezone.now(),
    )
    messages.success(request, f"{lst}: {len(d['employee_numbers'])} Key Employee(s) recorded.")
    return redirect("participants_staff:key_employees")


participant_detail.access_model = Person  # tests/test_access.py: the URL's pk is a Person
