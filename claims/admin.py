"""Back office: read-only. Claims change only through claims.services (each change logged with its actor)."""

from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from claims.models import Claim, ClaimAppeal, ClaimDecision, ClaimDocument, ClaimExtension, ClaimFileRequest


class ReadOnly(SimpleHistoryAdmin):
    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Claim)
class ClaimAdmin(ReadOnly):
    list_display = ["id", "plan", "claimant_name", "state", "received_on", "next_deadline_on"]
    list_filter = ["plan", "state"]


for model in (ClaimAppeal, ClaimDecision, ClaimDocument, ClaimExtension, ClaimFileRequest):
    admin.site.register(model, ReadOnly)
