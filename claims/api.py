"""API of the claims: a participant reads their own claims (as claimant or representative), staff read all.

One set of endpoints for both: the queryset is scoped to the caller, so someone else's claim answers 404.
Writes go through the services the pages use. A participant files a claim as themselves (or as an authorized
representative, with the claimant's authorisation, as in the portal) and appeals their own denied claim; staff
holding record_events record paper claims and appeals; other staff get 403. A refusal answers 400 with the
plan section it rests on, and nothing is created.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from claims import services as S
from claims.models import Capacity, Claim
from claims.selectors import claims_visible_to
from claims.serializers import (
    AppealIn,
    ClaimFileIn,
    ClaimSerializer,
    InformationIn,
    PaperAppealIn,
    PaperClaimIn,
    PaperInformationIn,
    RefusalOut,
    StaffClaimSerializer,
)
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap, has_cap, is_participant_user
from participants.models import Person


def claims_for(user):
    if has_cap(user, Cap.VIEW_STAFF):
        return Claim.objects.select_related("plan", "reviewer")
    if is_participant_user(user):
        return claims_visible_to(person=user.person)
    return Claim.objects.none()


def _valid(serializer_class, data) -> dict:
    s = serializer_class(data=data)
    s.is_valid(raise_exception=True)
    return s.validated_data


def _refused(exc: S.ClaimRefused) -> Response:
    return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


REFUSED = OpenApiResponse(
    RefusalOut,
    description="Bad input: the fields in error, or `detail` with the reason and "
    "the plan section (a file of the wrong type, a missing "
    "authorisation, an appeal out of time...). Nothing is created.",
)


class _ClaimAccess(generics.GenericAPIView):
    permission_classes = [HasCapability | IsParticipant]
    required_capability = Cap.VIEW_STAFF
    write_capability = Cap.RECORD_EVENTS  # staff recording paper claims, appeals and claim-file requests

    def get_queryset(self):
        return claims_for(self.request.user).prefetch_related(
            "transitions", "decisions", "extensions", "file_requests"
        )

    def get_serializer_class(self):
        return StaffClaimSerializer if has_cap(self.request.user, Cap.VIEW_STAFF) else ClaimSerializer

    def _records_paper(self) -> bool:
        """Staff recording on paper; anyone else got past the permissions as a participant acting for themselves."""
        return has_cap(self.request.user, Cap.RECORD_EVENTS)

    def _person(self) -> Person:
        """The caller as a participant (IsParticipant let them in, so they are signed in and have a person)."""
        user = self.request.user
        if not isinstance(user, User):
            raise PermissionDenied("this endpoint is for signed-in participants")
        return user.person

    def _claim_to_act_on(self, pk: int) -> tuple[Claim, bool]:
        """(the claim, whether staff record it on paper): staff reach any claim, a participant only their own (404)."""
        paper = self._records_paper()
        return get_object_or_404(Claim if paper else claims_visible_to(person=self._person()), pk=pk), paper

    def _who(self, data: dict, paper: bool) -> dict:
        """Staff give the date a paper submission was received; in person it is today, filed by the caller."""
        return {"received_on": data["received_on"]} if paper else {"filed_by": self._person()}

    def _answer(self, claim: Claim, code: int = status.HTTP_201_CREATED) -> Response:
        claim = self.get_queryset().get(pk=claim.pk)
        return Response(self.get_serializer_class()(claim).data, status=code)


class ClaimList(_ClaimAccess, generics.ListAPIView):
    @extend_schema(
        request={"multipart/form-data": ClaimFileIn},
        responses={
            201: ClaimSerializer,
            202: OpenApiResponse(
                RefusalOut,
                description="Filed for someone else (recorded, pending verification), or a Beneficiary's claim "
                "naming the participant: the same answer whether or not the employee number is known",
            ),
            400: REFUSED,
        },
        description="File a claim (EDCP 11.1, BRP 7.1, RRP 7.01) through the claim_file service the portal uses. "
        "A participant or beneficiary files as the claimant, or as the claimant's representative with "
        "`on_behalf_of` and their signed `authorisation`. A Beneficiary names the participant with "
        "`participant_number`. Staff holding record_events record a paper "
        "claim instead, with the fields of PaperClaimIn (received_on, claimant_number or claimant_name, "
        "delivery...). Attachments: PDF, PNG or JPEG of at most 10 MB each.",
    )
    def post(self, request):
        now = timezone.now()
        try:
            if self._records_paper():
                d = _valid(PaperClaimIn, request.data)
                claim = S.claim_file(
                    plan=d["plan"],
                    claimant=d.get("claimant_number"),
                    capacity=d["capacity"],
                    subject=d["subject"],
                    description=d["description"],
                    now=now,
                    actor=request.user,
                    channel=Claim.Channel.PAPER,
                    participant=d.get("participant_number"),
                    claimant_name=d["claimant_name"],
                    claimant_address=d["claimant_address"],
                    representative=d.get("representative_number"),
                    authorisation=d.get("authorisation"),
                    files=d.get("attachments") or (),
                    received_on=d["received_on"],
                    delivery=d["delivery"],
                )
            else:
                d, me = _valid(ClaimFileIn, request.data), request.user.person
                beneficiary = d["capacity"] == Capacity.BENEFICIARY
                participant_number = (d.get("participant_number") or "").strip() if beneficiary else ""
                number = d["on_behalf_of"].strip()
                if number and number != me.employee_number:
                    # The same answer whoever the number belongs to (29 CFR 2560.503-1(b)(4)).
                    _claim, answer = S.claim_file_as_representative(
                        plan=d["plan"],
                        claimant_number=number,
                        capacity=d["capacity"],
                        subject=d["subject"],
                        description=d["description"],
                        representative=me,
                        authorisation=d.get("authorisation"),
                        now=now,
                        actor=request.user,
                        participant_number=participant_number,
                        files=d.get("attachments") or (),
                    )
                    return Response({"detail": answer}, status=status.HTTP_202_ACCEPTED)
                if participant_number:
                    # The same answer whoever the participant's number belongs to (issue 12).
                    _claim, answer = S.claim_file_as_beneficiary(
                        plan=d["plan"],
                        participant_number=participant_number,
                        subject=d["subject"],
                        description=d["description"],
                        beneficiary=me,
                        now=now,
                        actor=request.user,
                        files=d.get("attachments") or (),
                    )
                    return Response({"detail": answer}, status=status.HTTP_202_ACCEPTED)
                claim = S.claim_file(
                    plan=d["plan"],
                    claimant=me,
                    capacity=d["capacity"],
                    subject=d["subject"],
                    description=d["description"],
                    now=now,
                    actor=request.user,
                    channel=Claim.Channel.PORTAL,
                    filed_by=me,
                    files=d.get("attachments") or (),
                )
        except S.ClaimRefused as exc:
            return _refused(exc)
        return self._answer(claim)


class ClaimDetail(_ClaimAccess, generics.RetrieveAPIView):
    pass


class ClaimAppealView(_ClaimAccess, APIView):
    """POST: a notice of appeal of a denied claim."""

    @extend_schema(
        request={"multipart/form-data": AppealIn},
        responses={201: ClaimSerializer, 400: REFUSED},
        description="Appeal a denied claim within 60 days after receiving the denial (EDCP 11.3, BRP 7.3, RRP 7.03), "
        "through the appeal_file service the portal uses. A participant appeals only a claim of their "
        "own (as claimant or representative); any other answers 404. An appeal after the window is "
        "refused and the claim is marked abandoned. Staff holding record_events record a paper appeal "
        "with `received_on` (PaperAppealIn).",
    )
    def post(self, request, pk: int):
        claim, paper = self._claim_to_act_on(pk)
        try:
            d = _valid(PaperAppealIn if paper else AppealIn, request.data)
            S.appeal_file(
                claim=claim,
                issues=d["issues"],
                evidence=d["evidence"],
                files=d.get("files") or (),
                now=timezone.now(),
                actor=request.user,
                **self._who(d, paper),
            )
        except S.ClaimRefused as exc:
            return _refused(exc)
        return self._answer(claim)

    def get_serializer_class(self):  # for the schema
        return ClaimSerializer


class ClaimInformationView(_ClaimAccess, APIView):
    """POST: the claimant's response to an extension notice that asked for information."""

    @extend_schema(
        request={"multipart/form-data": InformationIn},
        responses={201: ClaimSerializer, 400: REFUSED},
        description="Answer an extension notice that asked for information needed to decide the claim (or the "
        "appeal). The decision period, tolled since the notice was sent, runs again from the day the "
        "response is received (29 CFR 2560.503-1(f)(4), (i)(4)), through the claim_information_receive "
        "service the portal uses. Refused when no request awaits a response. A participant answers only "
        "for a claim of their own; staff holding record_events record a paper response with "
        "`received_on` (PaperInformationIn).",
    )
    def post(self, request, pk: int):
        claim, paper = self._claim_to_act_on(pk)
        try:
            d = _valid(PaperInformationIn if paper else InformationIn, request.data)
            S.claim_information_receive(
                claim=claim,
                response=d["response"],
                files=d.get("files") or (),
                now=timezone.now(),
                actor=request.user,
                **self._who(d, paper),
            )
        except S.ClaimRefused as exc:
            return _refused(exc)
        return self._answer(claim)

    def get_serializer_class(self):  # for the schema
        return ClaimSerializer


class ClaimFileRequestView(_ClaimAccess, APIView):
    """POST: log a request for the claim file and furnish it (free); answers the Document to download."""

    def post(self, request, pk: int):
        claim = get_object_or_404(self.get_queryset(), pk=pk)
        now = timezone.now()
        req = S.claim_file_request(claim=claim, now=now, actor=request.user)
        req = S.claim_file_fulfil(request=req, now=now, actor="system")
        return Response(
            {
                "request": req.pk,
                "requested_on": req.requested_on,
                "fulfilled_on": req.fulfilled_on,
                "document": req.document_id,
                "url": f"/documents/{req.document_id}/",
            },
            status=status.HTTP_201_CREATED,
        )

    def get_serializer_class(self):  # for the schema
        return ClaimSerializer
