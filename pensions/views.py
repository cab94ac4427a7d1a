"""Staff and portal pages of the BRP: Pension Plan figures, the benefit quote and its PDF, the benefit in pay.

Staff read with Cap.VIEW_STAFF and record with Cap.RECORD_EVENTS. Portal pages start from
request.user.person: another participant's participation answers 404.
"""

from __future__ import annotations

import datetime as dt

from django.contrib import messages
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from books.services.accounts import BooksError
from core import hooks, lists
from core.decorators import capability_required, participant_required
from core.errors import ApplicationError
from core.models import ImportBatch
from core.roles import Cap, has_cap
from participants.models import Participation
from pensions.forms import BenefitOrderForm, PensionFiguresForm, QuoteForm, SurvivorDeathForm
from pensions.selectors import brp_benefit_page, brp_participations
from pensions.services.benefit import BenefitError, brp_quote_document, pension_figures_record
from pensions.services.orders import BenefitOrderError, benefit_order_record
from plans.models import Plan


def _db_participations():
    return Participation.objects.filter(plan__kind=Plan.Kind.DEFINED_BENEFIT).select_related("person", "plan")


def _asked(request) -> tuple[QuoteForm, dt.date | None, dt.date | None]:
    form = QuoteForm(request.GET or None)
    if form.is_bound and form.is_valid():
        return form, form.cleaned_data["separation"], form.cleaned_data["spouse_birth_date"]
    return form, None, None


# --- staff ------------------------------------------------------------------------------------------------


@capability_required(Cap.VIEW_STAFF)
def staff_list(request):
    return render(
        request,
        "pensions/staff_list.html",
        {
            **lists.staff_list(request, brp_participations(), person_path="person__"),
            "can_import": has_cap(request.user, Cap.IMPORT_DATA),
            "import_kind": ImportBatch.Kind.PENSION_FIGURES,
        },
    )


@capability_required(Cap.VIEW_STAFF)
def staff_detail(request, pk: int):
    participation = get_object_or_404(_db_participations(), pk=pk)
    form, separation, spouse = _asked(request)
    context = brp_benefit_page(
        participation=participation,
        today=timezone.localdate(),
        separation=separation,
        spouse_birth_date=spouse,
    )
    can_record = has_cap(request.user, Cap.RECORD_EVENTS)
    return render(
        request,
        "pensions/staff_detail.html",
        {
            **context,
            "quote_form": form,
            "can_record": can_record,
            "figures_form": PensionFiguresForm(initial={"as_of": timezone.localdate()})
            if can_record
            else None,
            "survivor_form": SurvivorDeathForm() if can_record else None,
            "order_form": BenefitOrderForm() if can_record else None,
        },
    )


staff_detail.access_model = Participation


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def staff_order(request, pk: int):
    """BRP 6.7: record a Domestic Relations Order; its share is accounted for separately from then on."""
    participation = get_object_or_404(_db_participations(), pk=pk)
    form = BenefitOrderForm(request.POST)
    if not form.is_valid():
        messages.error(
            request, "Not recorded: " + " ".join(str(e) for errs in form.errors.values() for e in errs)
        )
        return redirect("pensions_staff:brp_participant", pk=pk)
    try:
        order = benefit_order_record(
            participation=participation, actor=request.user, now=timezone.now(), **form.cleaned_data
        )
    except BenefitOrderError as exc:
        messages.error(request, f"Not recorded: {exc}")
    else:
        messages.success(
            request, f"Order recorded: {order.share_label} to {order.alternate_payee} ({order.cite})."
        )
    return redirect("pensions_staff:brp_participant", pk=pk)


staff_order.access_model = Participation


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def staff_figures(request, pk: int):
    participation = get_object_or_404(_db_participations(), pk=pk)
    form = PensionFiguresForm(request.POST)
    if form.is_valid():
        data = dict(form.cleaned_data)
        try:
            pension_figures_record(
                participation=participation,
                as_of=data.pop("as_of"),
                actor=request.user,
                now=timezone.now(),
                **data,
            )
        except BooksError as exc:
            messages.error(request, f"Not recorded: {exc}")
        else:
            messages.success(request, "Pension Plan figures recorded.")
        return redirect("pensions_staff:brp_participant", pk=pk)
    context = brp_benefit_page(participation=participation, today=timezone.localdate())
    return render(
        request,
        "pensions/staff_detail.html",
        {
            **context,
            "quote_form": QuoteForm(),
            "can_record": True,
            "figures_form": form,
            "survivor_form": SurvivorDeathForm(),
        },
        status=400,
    )


staff_figures.access_model = Participation


@require_POST
@capability_required(Cap.ISSUE_DOCUMENTS)  # writes a stored document: not the auditor
def staff_quote_pdf(request, pk: int):
    participation = get_object_or_404(_db_participations(), pk=pk)
    return _quote_pdf(request, participation, "pensions_staff:brp_participant")


staff_quote_pdf.access_model = Participation


@require_POST
@capability_required(Cap.RECORD_EVENTS)
def staff_survivor_death(request, pk: int):
    participation = get_object_or_404(_db_participations(), pk=pk)
    box: dict = {"annuity": None}
    hooks.emit("benefit_in_pay_read", participation=participation, out=box)
    if box["annuity"] is None:
        raise Http404("no benefit is in pay")
    form = SurvivorDeathForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the date the survivor died.")
    else:
        try:  # payments stops the survivor's payments (payments imports pensions, never the reverse)
            hooks.emit(
                "benefit_survivor_death",
                participation=participation,
                died_on=form.cleaned_data["died_on"],
                actor=request.user,
                now=timezone.now(),
            )
        except ApplicationError as exc:
            messages.error(request, str(exc))
        else:
            messages.success(
                request, "The survivor's death is recorded: their payments stop after that month."
            )
    return redirect("pensions_staff:brp_participant", pk=pk)


staff_survivor_death.access_model = Participation


@capability_required(Cap.DIRECT_DISTRIBUTIONS)
def staff_pre_2005_cash_out(request, pk: int):
    """BRP App. A 4: the Committee, for the Company, pays the Pre-2005 Supplemental Benefit as its Actuarial
    Equivalent lump sum. GET shows the lump sum, its basis and the payments it replaces; POST with `confirm` does it."""
    participation = get_object_or_404(_db_participations(), pk=pk)
    today = timezone.localdate()
    if request.method == "POST" and request.POST.get("confirm") == "yes":
        try:  # payments replaces the payments (payments imports pensions, never the reverse)
            hooks.emit(
                "benefit_pre_2005_cash_out",
                participation=participation,
                as_of=today,
                actor=request.user,
                now=timezone.now(),
            )
        except ApplicationError as exc:
            messages.error(request, f"Not distributed: {exc}")
        else:
            messages.success(
                request,
                "The Pre-2005 Supplemental Benefit will be paid as one lump sum through the payment runs; "
                "its later monthly payments are cancelled.",
            )
        return redirect("pensions_staff:brp_participant", pk=pk)
    box: dict = {"cash_out": None, "error": ""}
    hooks.emit("benefit_pre_2005_cash_out_read", participation=participation, as_of=today, out=box)
    return render(
        request,
        "pensions/staff_pre_2005_cash_out.html",
        {"participation": participation, "person": participation.person, "today": today, **box},
        status=200 if box["cash_out"] is not None else 400,
    )


staff_pre_2005_cash_out.access_model = Participation


def _quote_pdf(request, participation: Participation, back: str):
    separation = None
    spouse = None
    quote_form = QuoteForm(request.POST)
    if quote_form.is_valid():
        separation, spouse = (
            quote_form.cleaned_data["separation"],
            quote_form.cleaned_data["spouse_birth_date"],
        )
    today = timezone.localdate()
    context = brp_benefit_page(
        participation=participation, today=today, separation=separation, spouse_birth_date=spouse
    )
    if context["quote"] is None:
        messages.error(request, f"No statement: {context['error'] or 'no Supplemental Benefit to quote'}")
        return redirect(back, pk=participation.pk)
    try:
        doc = brp_quote_document(quote=context["quote"], as_of=today, actor=request.user, now=timezone.now())
    except BenefitError as exc:
        messages.error(request, str(exc))
        return redirect(back, pk=participation.pk)
    return redirect("document_download", pk=doc.pk)


# --- portal -----------------------------------------------------------------------------------------------


def _own(request, pk: int) -> Participation:
    return get_object_or_404(_db_participations(), pk=pk, person=request.user.person)


@participant_required
def portal_index(request):
    own = list(_db_participations().filter(person=request.user.person))
    if len(own) == 1:
        return redirect("pensions_portal:brp_benefit", pk=own[0].pk)
    return render(request, "pensions/portal_index.html", {"participations": own})


@participant_required
def portal_benefit(request, pk: int):
    participation = _own(request, pk)
    form, separation, spouse = _asked(request)
    context = brp_benefit_page(
        participation=participation,
        today=timezone.localdate(),
        separation=separation,
        spouse_birth_date=spouse,
    )
    return render(request, "pensions/portal_benefit.html", {**context, "quote_form": form, "portal": True})


portal_benefit.access_model = Participation


@require_POST
@participant_required
def portal_quote_pdf(request, pk: int):
    return _quote_pdf(request, _own(request, pk), "pensions_portal:brp_benefit")


portal_quote_pdf.access_model = Participation
