"""API of the claims: a participant reads their own claims (as claimant or representative), staff read all.

One set of endpoints for both: the queryset is scoped to the caller, so someone else's claim answers 404.
"""
from __future__ import annotations

from django.shortcuts import get_object_or_404
from django.utils import timezone
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from claims import services as S
from claims.models import Claim
from claims.selectors import claims_visible_to
from claims.serializers import ClaimSerializer, StaffClaimSerializer
from core.permissions import HasCapability, IsParticipant
from core.roles import Cap, has_cap, is_participant_user


def claims_for(user):
    if has_cap(user, Cap.VIEW_STAFF):
        return Claim.objects.select_related("plan", "reviewer")
    if is_participant_user(user):
        return claims_visible_to(user.person)
    return Claim.objects.none()


class _ClaimAccess:
    permission_classes = [HasCapability | IsParticipant]
    required_capability = Cap.VIEW_STAFF

    def get_queryset(self):
        return claims_for(self.request.user).prefetch_related("transitions", "decisions", "extensions",
                                                              "file_requests")

    def get_serializer_class(self):
        return StaffClaimSerializer if has_cap(self.request.user, Cap.VIEW_STAFF) else ClaimSerializer


class ClaimList(_ClaimAccess, generics.ListAPIView):
    pass


class ClaimDetail(_ClaimAccess, generics.RetrieveAPIView):
    pass


class ClaimFileRequestView(_ClaimAccess, APIView):
    """POST: log a request for the claim file and furnish it (free); answers the Document to download."""

    write_capability = Cap.RECORD_EVENTS

    def post(self, request, pk: int):
        claim = get_object_or_404(self.get_queryset(), pk=pk)
        now = timezone.now()
        req = S.claim_file_request(claim=claim, now=now, actor=request.user)
        req = S.claim_file_fulfil(request=req, now=now, actor="system")
        return Response({"request": req.pk, "requested_on": req.requested_on, "fulfilled_on": req.fulfilled_on,
                         "document": req.document_id, "url": f"/documents/{req.document_id}/"},
                        status=status.HTTP_201_CREATED)

    def get_serializer_class(self):  # for the schema
        return ClaimSerializer
