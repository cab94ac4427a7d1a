"""Forms of the claims pages. They collect input and demand what a notice must contain; the rules
themselves (deadlines, states, elements (a)-(d)) are checked again by claims.services."""

from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model

from claims.models import Capacity, ClaimDocument, Delivery, Outcome, Subject
from claims.selectors import sections_for_claim
from core.fields import DateField
from core.roles import Cap, has_cap
from participants.models import Person
from plans.models import Plan


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files in one input; each is checked (type, size) by claims.services.upload_check."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".pdf,.png,.jpg,.jpeg"}))
        kwargs.setdefault("required", False)
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        if not data:
            return []
        single = super().clean
        if isinstance(data, list | tuple):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


def _person_by_number(number: str, what: str) -> Person | None:
    number = (number or "").strip()
    if not number:
        return None
    person = Person.objects.filter(employee_number=number).first()
    if person is None:
        raise forms.ValidationError(f"No {what} has employee number {number}.")
    return person


class PortalClaimForm(forms.Form):
    plan = forms.ModelChoiceField(queryset=Plan.objects.all(), empty_label=None)
    capacity = forms.ChoiceField(
        choices=Capacity.choices, initial=Capacity.PARTICIPANT, label="The claimant is a"
    )
    subject = forms.ChoiceField(choices=Subject.choices)
    description = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}), label="What do you claim, and why?"
    )
    attachments = MultipleFileField(label="Attachments (PDF, PNG or JPEG, up to 10 MB each)")
    participant_number = forms.CharField(
        required=False, max_length=20, label="Beneficiary claims: employee number of the participant"
    )
    on_behalf_of = forms.CharField(
        required=False, max_length=20, label="Filing for someone else? Their employee number"
    )
    authorisation = forms.FileField(
        required=False,
        label="Their signed authorisation of you as representative",
        widget=forms.ClearableFileInput(attrs={"accept": ".pdf,.png,.jpg,.jpeg"}),
    )

    def __init__(self, *args, person=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.own_plans: set[int] = set()
        if person is not None:
            self.own_plans = set(
                Plan.objects.filter(participations__person=person).values_list("pk", flat=True)
            )
        if self.own_plans:
            # Issue 11: the claimant's own plans first and preselected; other plans only for a claim as a
            # Beneficiary or on someone else's behalf (clean() refuses them for a claim of one's own).
            plans = list(Plan.objects.order_by("code"))
            own = [(p.pk, str(p)) for p in plans if p.pk in self.own_plans]
            other = [(p.pk, str(p)) for p in plans if p.pk not in self.own_plans]
            self.fields["plan"].choices = [("Your plans", own)] + (
                [("Only for a Beneficiary's claim or a claim for someone else", other)] if other else []
            )
            self.fields["plan"].initial = own[0][0]

    def clean(self):
        data = super().clean()
        plan = data.get("plan")
        own_claim = data.get("capacity") == Capacity.PARTICIPANT and not data.get("on_behalf_of")
        if self.own_plans and plan is not None and own_claim and plan.pk not in self.own_plans:
            # EDCP 11.1 (and the other plans' claims sections): a claim is for a benefit under a plan one is in.
            self.add_error(
                "plan",
                f"You have no account in {plan.name}: a claim of your own is under a plan you are in. "
                f"Choose one of your plans.",
            )
        return data

    def clean_participant_number(self):
        # Kept as typed: whether the number exists is never told to the filer (issue 12).
        return (self.cleaned_data.get("participant_number") or "").strip()

    def clean_on_behalf_of(self):
        # Kept as typed: whether the number exists is never told to the filer (29 CFR 2560.503-1(b)(4)).
        return (self.cleaned_data.get("on_behalf_of") or "").strip()


class StaffClaimForm(forms.Form):
    """A paper claim, recorded with the date the Committee's delegate received it."""

    plan = forms.ModelChoiceField(queryset=Plan.objects.all(), empty_label=None)
    capacity = forms.ChoiceField(choices=Capacity.choices)
    claimant_number = forms.CharField(
        required=False, max_length=20, label="Claimant's employee number (if on record)"
    )
    claimant_name = forms.CharField(
        required=False, max_length=200, label="Claimant's name (if not on record)"
    )
    claimant_address = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="Claimant's mailing address (if not on record)",
    )
    participant_number = forms.CharField(
        required=False, max_length=20, label="Participant's employee number (Beneficiary claims)"
    )
    subject = forms.ChoiceField(choices=Subject.choices)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="What is claimed, and why")
    received_on = DateField(widget=forms.DateInput(attrs={"type": "date"}), label="Received on")
    delivery = forms.ChoiceField(choices=Delivery.choices, initial=Delivery.MAIL, label="Send notices by")
    representative_number = forms.CharField(
        required=False, max_length=20, label="Authorized representative's employee number"
    )
    authorisation = forms.FileField(required=False, label="Representative's authorisation")
    attachments = MultipleFileField(label="The claim and its attachments (PDF, PNG or JPEG)")

    def clean_claimant_number(self):
        return _person_by_number(self.cleaned_data.get("claimant_number"), "claimant")

    def clean_participant_number(self):
        return _person_by_number(self.cleaned_data.get("participant_number"), "participant")

    def clean_representative_number(self):
        return _person_by_number(self.cleaned_data.get("representative_number"), "representative")


class ClaimBound(forms.Form):
    """A form about one claim: the provisions and records offered are that claim's."""

    def __init__(self, *args, claim, **kwargs):
        super().__init__(*args, **kwargs)
        self.claim = claim
        if "provisions" in self.fields:
            self.fields["provisions"].choices = [
                (
                    q.section.pk,
                    f"{q.citation} {q.section.title}".strip()
                    + (f" (text of {q.section.version.effective_date:%Y})" if q.note else ""),
                )
                for q in sections_for_claim(claim=claim)
            ]
        if "records" in self.fields:
            self.fields["records"].choices = [
                (d.pk, f"{d.original_name} ({d.get_kind_display()})") for d in claim.documents.all()
            ]


class DenyForm(ClaimBound):
    reasons = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), label="(a) The specific reasons for the denial"
    )
    provisions = forms.MultipleChoiceField(
        label="(b) The plan provisions the denial is based on",
        widget=forms.SelectMultiple(attrs={"size": 8, "style": "width: 100%"}),
    )
    additional_material = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        label="(c) Additional material needed to perfect the claim, and why (say so if none)",
    )
    review_procedure = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 8}),
        label="(d) The review procedure and its time limits, with the right to sue under ERISA 502(a)",
    )
    partial = forms.BooleanField(required=False, label="Denied only in part")
    records = forms.MultipleChoiceField(required=False, label="Records relied on")
    delivery = forms.ChoiceField(choices=Delivery.choices, label="Deliver the notice by")


class ApproveForm(ClaimBound):
    approved_benefit = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="What is approved")
    reasons = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), label="Reasons")
    provisions = forms.MultipleChoiceField(
        required=False,
        label="Plan provisions applied",
        widget=forms.SelectMultiple(attrs={"size": 6, "style": "width: 100%"}),
    )
    records = forms.MultipleChoiceField(required=False, label="Records relied on")


class ExtendForm(forms.Form):
    special_circumstances = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), label="The special circumstances that require more time"
    )
    expected_on = DateField(
        widget=forms.DateInput(attrs={"type": "date"}), label="Date by which a decision is expected"
    )
    requests_information = forms.BooleanField(
        required=False,
        label="The claimant has not submitted information necessary to decide: ask for it (the "
        "time for deciding is suspended until the claimant responds)",
    )
    information_requested = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        label="The information needed from the claimant",
    )

    def clean(self):
        data = super().clean()
        asked, what = data.get("requests_information"), (data.get("information_requested") or "").strip()
        if asked and not what:
            self.add_error("information_requested", "Say what information the claimant must send.")
        if what and not asked:
            self.add_error(
                "requests_information", "Tick this to ask the claimant for the information described."
            )
        return data


class InformationForm(forms.Form):
    """The claimant's answer to a request for information (portal)."""

    response = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="The information requested (or a note about the files you attach)",
    )
    files = MultipleFileField(label="Documents (PDF, PNG or JPEG, up to 10 MB each)")  # type: ignore[assignment]  # a declared field: the form metaclass moves it to base_fields, so it never replaces BaseForm.files

    def clean(self):
        data = super().clean()
        if not (data.get("response") or "").strip() and not data.get("files"):
            raise forms.ValidationError("Write the information requested or attach it.")
        return data


class StaffInformationForm(InformationForm):
    """A response received on paper, recorded by staff with the date it came in."""

    received_on = DateField(widget=forms.DateInput(attrs={"type": "date"}), label="Response received on")


class AppealDecideForm(ClaimBound):
    outcome = forms.ChoiceField(choices=Outcome.choices)
    reasons = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), label="(a) The specific reasons")
    provisions = forms.MultipleChoiceField(
        required=False,
        label="(b) The plan provisions relied on (required for a denial)",
        widget=forms.SelectMultiple(attrs={"size": 8, "style": "width: 100%"}),
    )
    approved_benefit = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), label="What is approved (approvals)"
    )
    partial = forms.BooleanField(required=False, label="Denied only in part")
    records = forms.MultipleChoiceField(required=False, label="Records relied on")

    def clean(self):
        data = super().clean()
        if data.get("outcome") == Outcome.DENIED and not data.get("provisions"):
            self.add_error("provisions", "A denial on review must name the plan provisions it is based on.")
        if data.get("outcome") == Outcome.APPROVED and not (data.get("approved_benefit") or "").strip():
            self.add_error("approved_benefit", "Say what is approved.")
        return data


def _deciders():
    users = get_user_model().objects.filter(is_active=True).prefetch_related("groups").order_by("username")
    return [u for u in users if has_cap(u, Cap.DECIDE_CLAIMS) or has_cap(u, Cap.DECIDE_APPEALS)]


class AssignForm(forms.Form):
    reviewer = forms.ChoiceField()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reviewer"].choices = [(u.pk, u.get_full_name() or u.get_username()) for u in _deciders()]

    def clean_reviewer(self):
        return get_user_model().objects.get(pk=self.cleaned_data["reviewer"])


class ReasonForm(forms.Form):
    reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))


class RepresentativeDecisionForm(forms.Form):
    decision = forms.ChoiceField(
        choices=[
            ("verify", "The authorisation is genuine: verify the representative"),
            ("reject", "Not verified"),
        ]
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}), max_length=2000, label="How it was checked, or why not"
    )


class CloseForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), label="Why the file is closed")


class AppealForm(forms.Form):
    issues = forms.CharField(widget=forms.Textarea(attrs={"rows": 5}), label="The issues you raise")
    evidence = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), label="The evidence you deem relevant"
    )
    files = MultipleFileField(label="Evidence (PDF, PNG or JPEG, up to 10 MB each)")  # type: ignore[assignment]  # a declared field: the form metaclass moves it to base_fields, so it never replaces BaseForm.files


class StaffAppealForm(AppealForm):
    received_on = DateField(widget=forms.DateInput(attrs={"type": "date"}), label="Appeal received on")


class DocumentAddForm(forms.Form):
    kind = forms.ChoiceField(
        choices=[
            (ClaimDocument.Kind.RECORD, ClaimDocument.Kind.RECORD.label),
            (ClaimDocument.Kind.SUBMISSION, ClaimDocument.Kind.SUBMISSION.label),
        ]
    )
    file = forms.FileField(widget=forms.ClearableFileInput(attrs={"accept": ".pdf,.png,.jpg,.jpeg"}))
