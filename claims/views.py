"""Staff and portal pages of the claims. Thin: forms collect, services decide, selectors read.

Only views read the clock (timezone.now()); every service is given that moment. A claim is shown in the
portal only to its claimant and their representative; anyone else gets 404, as does anyone outside the
staff on a staff claim page.
"""

from __future__ import annotations

import functools
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.http import Http404, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.crypto import constant_time_compare, salted_hmac
from django.views.decorators.http import require_http_methods, require_POST

from claims import services as S
from claims.forms import (
    AppealDecideForm,
    AppealForm,
    ApproveForm,
    AssignForm,
    CloseForm,
    DenyForm,
    DocumentAddForm,
    ExtendForm,
    InformationForm,
    PortalClaimForm,
    ReasonForm,
    RepresentativeDecisionForm,
    StaffAppealForm,
    StaffClaimForm,
    StaffInformationForm,
)
from claims.models import (
    AWAITING_DECISION,
    AWAITING_REVIEW,
    OPEN_STATES,
    Capacity,
    Claim,
    ClaimDocument,
    Delivery,
    Level,
    State,
)
from claims.selectors import (
    average_days_to_decision,
    claim_deadlines,
    claim_notices,
    claim_rules,
    claims_by_status_and_plan,
    claims_of_person,
    claims_visible_to,
    information_request_pending,
    late_decisions,
    open_claims,
    queue_rows,
    representative_filings_awaiting_verification,
    review_procedure_text,
)
from core.decorators import capability_required, participant_required
from core.lists import staff_list
from core.models import Document
from core.pdf import document_bytes, pdf_page_images, pdf_text
from core.roles import Cap, is_staff_user
from core.signin.decorators import fresh_second_factor_required
from plans.models import Plan


def staff_page(cap: Cap):
    """A staff claim page: outside the staff it does not exist (404); inside, `cap` is needed (403)."""

    def decorator(view):
        guarded = capability_required(cap)(view)

        @functools.wraps(guarded)
        def wrapped(request, *args, **kwargs):
            if not is_staff_user(request.user):
                raise Http404("no such page")
            return guarded(request, *args, **kwargs)

        return wrapped

    return decorator


def _serve_upload(doc: ClaimDocument) -> HttpResponse:
    data = (Path(settings.MEDIA_ROOT) / doc.path).read_bytes()
    response = HttpResponse(data, content_type=doc.content_type)
    response["Content-Disposition"] = f'attachment; filename="{doc.sha256[:12]}{Path(doc.path).suffix}"'
    response["X-Content-SHA256"] = doc.sha256
    return response


def _serve_document(doc: Document) -> HttpResponse:
    response = HttpResponse(document_bytes(doc), content_type="application/pdf")
    response["Content-Disposition"] = f'inline; filename="{doc.kind}-{doc.pk}.pdf"'
    response["X-Content-SHA256"] = doc.sha256
    return response


# --- staff --------------------------------------------------------------------------------------------
@staff_page(Cap.VIEW_STAFF)
def staff_queue(request):
    plan = Plan.objects.filter(code=request.GET.get("plan", "")).first()
    number = request.GET.get("participant", "").strip()[:40]
    today = timezone.localdate()
    if number:
        listing = {"rows": claims_of_person(employee_number=number, today=today)}
    else:
        listing = staff_list(
            request,
            open_claims(plan=plan),
            person_path="participant__",
            statuses=[(state, State(state).label) for state in OPEN_STATES],
            status_field="state",
        )
        listing["rows"] = queue_rows(claims=listing["page"].object_list, today=today)
    return render(
        request,
        "claims/staff_queue.html",
        {
            **listing,
            "plans": Plan.objects.order_by("code"),
            "plan": plan,
            "participant": number,
            "keep": [("plan", plan.code if plan else "")],
        },
    )


@staff_page(Cap.VIEW_STAFF)
def staff_reports(request):
    today = [("on", timezone.localdate().isoformat())]
    return render(
        request,
        "claims/staff_reports.html",
        {
            "by_status": claims_by_status_and_plan(),
            "late": late_decisions()[:200],
            "averages": average_days_to_decision(),
            "prepare_by_status": {"name": "claims_by_status", "params": today},
            "prepare_late": {"name": "claims_late", "params": today},
            "prepare_averages": {"name": "claims_average_days", "params": today},
        },
    )


@staff_page(Cap.RECORD_EVENTS)
def staff_new(request):
    form = StaffClaimForm(request.POST or None, request.FILES or None)
    refusal = ""
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            claim = S.claim_file(
                plan=d["plan"],
                claimant=d["claimant_number"],
                capacity=d["capacity"],
                subject=d["subject"],
                description=d["description"],
                now=timezone.now(),
                actor=request.user,
                channel=Claim.Channel.PAPER,
                participant=d["participant_number"],
                claimant_name=d["claimant_name"],
                claimant_address=d["claimant_address"],
                representative=d["representative_number"],
                authorisation=d["authorisation"],
                files=d["attachments"],
                received_on=d["received_on"],
                delivery=d["delivery"],
            )
        except S.ClaimRefused as exc:
            refusal = str(exc)
        else:
            messages.success(request, f"Claim {claim.number} recorded.")
            return redirect("claims_staff:detail", pk=claim.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "claims/staff_new.html", {"form": form, "refusal": refusal}, status=status)


def _claim_page(request, claim: Claim, forms: dict | None = None, refusal: str = "", status: int = 200):
    claim = (
        Claim.objects.select_related("plan", "reviewer", "participant", "claimant", "representative")
        .prefetch_related(
            "decisions__provisions__version__plan", "decisions__records_relied_on", "extensions"
        )
        .get(pk=claim.pk)
    )
    context = {
        "claim": claim,
        "rules": claim_rules(claim=claim),
        "deadlines": claim_deadlines(claim=claim),
        "today": timezone.localdate(),
        "transitions": claim.transitions.select_related("actor"),
        "uploads": claim.documents.all(),
        "notices": claim_notices(claim=claim),
        "decisions": claim.decisions.all(),
        "extensions": claim.extensions.all(),
        "appeal": getattr(claim, "appeal", None),
        "file_requests": claim.file_requests.select_related("document"),
        "flags": claim.flags.all()[:20],
        "refusal": refusal,
        "awaiting_decision": claim.state in AWAITING_DECISION,
        "awaiting_review": claim.state in AWAITING_REVIEW,
        "closable": claim.state in (State.APPROVED, State.APPEAL_APPROVED, State.APPEAL_DENIED),
        "pending_request": information_request_pending(claim=claim),
        "information_form": StaffInformationForm(),
        "assign_form": AssignForm(initial={"reviewer": claim.reviewer_id}),
        "extend_form": ExtendForm(),
        "approve_form": ApproveForm(claim=claim),
        "deny_form": DenyForm(
            claim=claim,
            initial={"review_procedure": review_procedure_text(claim=claim), "delivery": claim.delivery},
        ),
        "appeal_form": StaffAppealForm(),
        "decide_form": AppealDecideForm(claim=claim),
        "close_form": CloseForm(),
        "document_form": DocumentAddForm(),
        "start_form": ReasonForm(),
        "representative_form": RepresentativeDecisionForm(),
    }
    context.update(forms or {})
    return render(request, "claims/staff_claim.html", context, status=status)


@staff_page(Cap.VIEW_STAFF)
def staff_claim(request, pk: int):
    return _claim_page(request, get_object_or_404(Claim, pk=pk))


def _act(request, pk: int, form_name: str, form, call, success: str):
    claim = get_object_or_404(Claim, pk=pk)
    if form.is_valid():
        try:
            call(claim, form.cleaned_data, timezone.now())
        except S.ClaimRefused as exc:
            return _claim_page(request, claim, {form_name: form}, refusal=str(exc), status=400)
        messages.success(request, success)
        return redirect("claims_staff:detail", pk=pk)
    return _claim_page(
        request, claim, {form_name: form}, refusal="The form is incomplete: see below.", status=400
    )


def _ids(values) -> list[int]:
    return [int(v) for v in values or ()]


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_assign(request, pk: int):
    return _act(
        request,
        pk,
        "assign_form",
        AssignForm(request.POST),
        lambda c, d, now: S.claim_assign(claim=c, reviewer=d["reviewer"], now=now, actor=request.user),
        "Reviewer assigned.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_representative(request, pk: int):
    """Staff verify the representative's authorisation, or refuse it, with a reason (29 CFR 2560.503-1(b)(4))."""
    return _act(
        request,
        pk,
        "representative_form",
        RepresentativeDecisionForm(request.POST),
        lambda c, d, now: S.claim_representative_decide(
            claim=c, verified=d["decision"] == "verify", reason=d["reason"], now=now, actor=request.user
        ),
        "Decision on the representative recorded.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_start_review(request, pk: int):
    return _act(
        request,
        pk,
        "start_form",
        ReasonForm(request.POST),
        lambda c, d, now: S.claim_start_review(claim=c, now=now, actor=request.user, reason=d["reason"]),
        "Review started.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_extend(request, pk: int):
    return _act(
        request,
        pk,
        "extend_form",
        ExtendForm(request.POST),
        lambda c, d, now: S.claim_extend(
            claim=c,
            special_circumstances=d["special_circumstances"],
            expected_on=d["expected_on"],
            now=now,
            actor=request.user,
            requests_information=d["requests_information"],
            information_requested=d["information_requested"],
        ),
        "Extension notice issued.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_approve(request, pk: int):
    claim = get_object_or_404(Claim, pk=pk)
    return _act(
        request,
        pk,
        "approve_form",
        ApproveForm(request.POST, claim=claim),
        lambda c, d, now: S.claim_approve(
            claim=c,
            reasons=d["reasons"],
            approved_benefit=d["approved_benefit"],
            provisions=_ids(d["provisions"]),
            records=_ids(d["records"]),
            now=now,
            actor=request.user,
        ),
        "Claim approved; the approval letter is issued.",
    )


DENY_DRAFT = "claims.deny_draft.{pk}"  # the session key of a denial being reviewed


def _draft_data(draft: dict[str, list[str]]) -> QueryDict:
    data = QueryDict(mutable=True)
    for name, values in draft.items():
        data.setlist(name, values)
    return data


def _deny_letter(request, claim: Claim, d: dict) -> bytes:
    """The denial notice as claim_deny would issue it now from the form's data (nothing kept)."""
    return S.claim_deny_preview(
        claim=claim,
        reasons=d["reasons"],
        provisions=_ids(d["provisions"]),
        additional_material=d["additional_material"],
        review_procedure=d["review_procedure"],
        partial=d["partial"],
        records=_ids(d["records"]),
        delivery=d["delivery"],
        now=timezone.now(),
        actor=request.user,
    )


def _letter_reviewed(request, claim: Claim, text: str) -> str:
    """A token of the letter's text as the reviewer was shown it (issue 11): the deny POST carries it and the
    server renders the letter again; a POST without it, or whose letter now reads differently, issues nothing."""
    return salted_hmac(
        "claims.deny_reviewed", f"{claim.pk}|{request.user.pk}|{text}", algorithm="sha256"
    ).hexdigest()


@require_http_methods(["GET", "POST"])
@staff_page(Cap.DECIDE_CLAIMS)
def staff_deny_review(request, pk: int):
    """Issue 11: a denial is read as the claimant will read it before it is issued. POST keeps the filled-in
    form (nothing is decided) and redirects; GET shows the notice rendered from it, then "Issue" posts to deny
    with the token of the letter shown."""
    claim = get_object_or_404(Claim, pk=pk)
    key = DENY_DRAFT.format(pk=pk)
    if request.method == "POST":
        form = DenyForm(request.POST, claim=claim)
        if not form.is_valid():
            return _claim_page(
                request, claim, {"deny_form": form}, refusal="The form is incomplete: see below.", status=400
            )
        request.session[key] = {name: request.POST.getlist(name) for name in form.fields}
        return redirect("claims_staff:deny_review", pk=pk)
    draft = request.session.get(key)
    reviewed = DenyForm(_draft_data(draft), claim=claim) if draft else None
    if reviewed is None or not reviewed.is_valid():
        messages.info(request, "Fill in the denial form first: its notice is shown before it is issued.")
        return redirect("claims_staff:detail", pk=pk)
    d = reviewed.cleaned_data
    try:
        letter = _deny_letter(request, claim, d)
    except S.ClaimRefused as exc:
        return _claim_page(request, claim, {"deny_form": reviewed}, refusal=str(exc), status=400)
    text = pdf_text(letter)
    return render(
        request,
        "claims/staff_deny_review.html",
        {
            "claim": claim,
            "pages": pdf_page_images(letter),
            "text": text,
            "reviewed": _letter_reviewed(request, claim, text),
            "hidden": [(name, value) for name, values in draft.items() for value in values],
            "partial": d["partial"],
            "delivery": Delivery(d["delivery"]).label if d["delivery"] in Delivery.values else d["delivery"],
        },
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_deny(request, pk: int):
    claim = get_object_or_404(Claim, pk=pk)
    form = DenyForm(request.POST, claim=claim)
    if form.is_valid():
        try:
            text = pdf_text(_deny_letter(request, claim, form.cleaned_data))
        except S.ClaimRefused as exc:
            return _claim_page(request, claim, {"deny_form": form}, refusal=str(exc), status=400)
        if not constant_time_compare(
            request.POST.get("reviewed", ""), _letter_reviewed(request, claim, text)
        ):
            # The letter was not shown, or reads differently now: show it (again); nothing is issued.
            request.session[DENY_DRAFT.format(pk=pk)] = {
                name: request.POST.getlist(name) for name in form.fields
            }
            messages.error(
                request,
                "Nothing is issued yet: read the denial notice as the claimant will receive it, then issue it.",
            )
            return redirect("claims_staff:deny_review", pk=pk)
    request.session.pop(DENY_DRAFT.format(pk=pk), None)
    return _act(
        request,
        pk,
        "deny_form",
        form,
        lambda c, d, now: S.claim_deny(
            claim=c,
            reasons=d["reasons"],
            provisions=_ids(d["provisions"]),
            additional_material=d["additional_material"],
            review_procedure=d["review_procedure"],
            partial=d["partial"],
            records=_ids(d["records"]),
            delivery=d["delivery"],
            now=now,
            actor=request.user,
        ),
        "Claim denied; the denial notice is issued.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_close(request, pk: int):
    return _act(
        request,
        pk,
        "close_form",
        CloseForm(request.POST),
        lambda c, d, now: S.claim_close(claim=c, reason=d["reason"], now=now, actor=request.user),
        "Claim closed.",
    )


@require_POST
@staff_page(Cap.DECIDE_CLAIMS)
def staff_add_document(request, pk: int):
    return _act(
        request,
        pk,
        "document_form",
        DocumentAddForm(request.POST, request.FILES),
        lambda c, d, now: S.claim_document_add(
            claim=c, file=d["file"], kind=d["kind"], now=now, actor=request.user
        ),
        "Document added to the claim file.",
    )


@require_POST
@staff_page(Cap.RECORD_EVENTS)
def staff_record_appeal(request, pk: int):
    return _act(
        request,
        pk,
        "appeal_form",
        StaffAppealForm(request.POST, request.FILES),
        lambda c, d, now: S.appeal_file(
            claim=c,
            issues=d["issues"],
            evidence=d["evidence"],
            files=d["files"],
            received_on=d["received_on"],
            now=now,
            actor=request.user,
        ),
        "Appeal recorded.",
    )


@require_POST
@staff_page(Cap.RECORD_EVENTS)
def staff_information_received(request, pk: int):
    """The claimant answered a request for information on paper: the tolled period runs again from that date."""
    return _act(
        request,
        pk,
        "information_form",
        StaffInformationForm(request.POST, request.FILES),
        lambda c, d, now: S.claim_information_receive(
            claim=c,
            response=d["response"],
            files=d["files"],
            received_on=d["received_on"],
            now=now,
            actor=request.user,
        ),
        "Response recorded; the time for deciding runs again.",
    )


@require_POST
@staff_page(Cap.DECIDE_APPEALS)
def staff_appeal_start_review(request, pk: int):
    return _act(
        request,
        pk,
        "start_form",
        ReasonForm(request.POST),
        lambda c, d, now: S.appeal_start_review(claim=c, now=now, actor=request.user, reason=d["reason"]),
        "Review of the appeal started.",
    )


@require_POST
@staff_page(Cap.DECIDE_APPEALS)
def staff_appeal_extend(request, pk: int):
    return _act(
        request,
        pk,
        "extend_form",
        ExtendForm(request.POST),
        lambda c, d, now: S.appeal_extend(
            claim=c,
            special_circumstances=d["special_circumstances"],
            expected_on=d["expected_on"],
            now=now,
            actor=request.user,
            requests_information=d["requests_information"],
            information_requested=d["information_requested"],
        ),
        "Extension notice on review issued.",
    )


@require_POST
@staff_page(Cap.DECIDE_APPEALS)
@fresh_second_factor_required
def staff_appeal_decide(request, pk: int):
    claim = get_object_or_404(Claim, pk=pk)
    return _act(
        request,
        pk,
        "decide_form",
        AppealDecideForm(request.POST, claim=claim),
        lambda c, d, now: S.appeal_decide(
            claim=c,
            outcome=d["outcome"],
            reasons=d["reasons"],
            provisions=_ids(d["provisions"]),
            approved_benefit=d["approved_benefit"],
            partial=d["partial"],
            records=_ids(d["records"]),
            now=now,
            actor=request.user,
        ),
        "Decision on review issued.",
    )


@require_POST
@staff_page(Cap.RECORD_EVENTS)
def staff_claim_file(request, pk: int):
    """A claimant asked by letter or phone: staff log the request and furnish the file at once."""
    claim = get_object_or_404(Claim, pk=pk)
    now = timezone.now()
    req = S.claim_file_request(claim=claim, now=now, actor=request.user)
    S.claim_file_fulfil(request=req, now=now, actor=request.user)
    messages.success(request, "Claim file assembled and furnished.")
    return redirect("claims_staff:detail", pk=pk)


@staff_page(Cap.VIEW_STAFF)
def staff_upload(request, pk: int, doc_pk: int):
    return _serve_upload(get_object_or_404(ClaimDocument, pk=doc_pk, claim_id=pk))


# --- portal -------------------------------------------------------------------------------------------
def _my_claim(request, pk: int) -> Claim:
    return get_object_or_404(claims_visible_to(person=request.user.person), pk=pk)


@participant_required
def portal_list(request):
    me = request.user.person
    claims = claims_visible_to(person=me).prefetch_related("extensions", "decisions")
    return render(
        request,
        "claims/portal_list.html",
        {
            "rows": [(c, claim_deadlines(claim=c).next) for c in claims],
            # Only the number and date: nothing about the claimant until staff verify the authorisation.
            "awaiting": representative_filings_awaiting_verification(person=me).only("pk", "received_on"),
        },
    )


@participant_required
def portal_new(request):
    form = PortalClaimForm(request.POST or None, request.FILES or None, person=request.user.person)
    refusal = ""
    if request.method == "POST" and form.is_valid():
        d, me = form.cleaned_data, request.user.person
        participant_number = d["participant_number"] if d["capacity"] == Capacity.BENEFICIARY else ""
        try:
            if d["on_behalf_of"] and d["on_behalf_of"] != me.employee_number:
                # The same answer whoever the number belongs to (29 CFR 2560.503-1(b)(4)).
                _claim, answer = S.claim_file_as_representative(
                    plan=d["plan"],
                    claimant_number=d["on_behalf_of"],
                    capacity=d["capacity"],
                    subject=d["subject"],
                    description=d["description"],
                    representative=me,
                    authorisation=d["authorisation"],
                    now=timezone.now(),
                    actor=request.user,
                    participant_number=participant_number,
                    files=d["attachments"],
                )
                messages.success(request, answer)
                return redirect("claims_portal:list")
            if participant_number:
                # The same answer whoever the participant's number belongs to (issue 12).
                _claim, answer = S.claim_file_as_beneficiary(
                    plan=d["plan"],
                    participant_number=participant_number,
                    subject=d["subject"],
                    description=d["description"],
                    beneficiary=me,
                    now=timezone.now(),
                    actor=request.user,
                    files=d["attachments"],
                )
                messages.success(request, answer)
                return redirect("claims_portal:list")
            claim = S.claim_file(
                plan=d["plan"],
                claimant=me,
                capacity=d["capacity"],
                subject=d["subject"],
                description=d["description"],
                now=timezone.now(),
                actor=request.user,
                channel=Claim.Channel.PORTAL,
                filed_by=me,
                files=d["attachments"],
            )
        except S.ClaimRefused as exc:
            refusal = str(exc)
        else:
            receipt = "; ".join(f"{k}: {v}" for k, v in S.claim_receipt_lines(claim=claim))
            messages.success(request, f"Your claim is filed. {receipt}.")
            return redirect(f"{reverse('claims_portal:detail', args=[claim.pk])}?receipt=1")
    status = 400 if request.method == "POST" else 200
    return render(request, "claims/portal_new.html", {"form": form, "refusal": refusal}, status=status)


def _portal_page(
    request, claim: Claim, appeal_form=None, refusal: str = "", status: int = 200, information_form=None
):
    return render(
        request,
        "claims/portal_claim.html",
        {
            "claim": claim,
            "deadlines": claim_deadlines(claim=claim),
            "today": timezone.localdate(),
            "transitions": claim.transitions.all(),
            "uploads": claim.documents.all(),
            "notices": claim_notices(claim=claim),
            "appeal": getattr(claim, "appeal", None),
            "file_requests": claim.file_requests.all(),
            "appeal_form": appeal_form or AppealForm(),
            "can_appeal": claim.state == State.DENIED,
            "pending_request": information_request_pending(claim=claim),
            "information_requests": [e for e in claim.extensions.all() if e.requests_information],
            "information_form": information_form or InformationForm(),
            "refusal": refusal,
            "initial_level": Level.INITIAL,
            "receipt": S.claim_receipt_lines(claim=claim) if request.GET.get("receipt") else None,
        },
        status=status,
    )


@participant_required
def portal_claim(request, pk: int):
    return _portal_page(request, _my_claim(request, pk))


@require_POST
@participant_required
def portal_appeal(request, pk: int):
    claim = _my_claim(request, pk)
    form = AppealForm(request.POST, request.FILES)
    if not form.is_valid():
        return _portal_page(request, claim, form, "The appeal is incomplete: see below.", status=400)
    try:
        S.appeal_file(
            claim=claim,
            issues=form.cleaned_data["issues"],
            evidence=form.cleaned_data["evidence"],
            files=form.cleaned_data["files"],
            filed_by=request.user.person,
            now=timezone.now(),
            actor=request.user,
        )
    except S.ClaimRefused as exc:
        return _portal_page(request, Claim.objects.get(pk=claim.pk), form, str(exc), status=400)
    messages.success(request, "Your appeal was received.")
    return redirect("claims_portal:detail", pk=pk)


@require_POST
@participant_required
def portal_information(request, pk: int):
    """The claimant (or representative) sends the information an extension notice asked for."""
    claim = _my_claim(request, pk)
    form = InformationForm(request.POST, request.FILES)
    if not form.is_valid():
        return _portal_page(
            request,
            claim,
            information_form=form,
            refusal="Your response is incomplete: see below.",
            status=400,
        )
    try:
        S.claim_information_receive(
            claim=claim,
            response=form.cleaned_data["response"],
            files=form.cleaned_data["files"],
            filed_by=request.user.person,
            now=timezone.now(),
            actor=request.user,
        )
    except S.ClaimRefused as exc:
        return _portal_page(request, claim, information_form=form, refusal=str(exc), status=400)
    messages.success(request, "Your information was received; the time for deciding runs again from today.")
    return redirect("claims_portal:detail", pk=pk)


@require_POST
@participant_required
def portal_claim_file(request, pk: int):
    claim = _my_claim(request, pk)
    now = timezone.now()
    req = S.claim_file_request(claim=claim, now=now, actor=request.user)
    S.claim_file_fulfil(request=req, now=now, actor="system")
    messages.success(request, "Your claim file is ready below, free of charge.")
    return redirect("claims_portal:detail", pk=pk)


@participant_required
def portal_notice(request, pk: int, doc_pk: int):
    claim = _my_claim(request, pk)
    doc = next((d for d in claim_notices(claim=claim) if d.pk == doc_pk), None)
    if doc is None:
        raise Http404("no such notice")
    return _serve_document(doc)


@participant_required
def portal_upload(request, pk: int, doc_pk: int):
    claim = _my_claim(request, pk)
    return _serve_upload(get_object_or_404(ClaimDocument, pk=doc_pk, claim=claim))
