"""DRF permissions: deny by default; a view names the capability it needs."""

from __future__ import annotations

from rest_framework.permissions import BasePermission

from core.roles import Cap, has_cap, is_participant_user
from core.signin.services import second_factor_satisfied


class DenyAll(BasePermission):
    def has_permission(self, request, view) -> bool:
        return False


class HasCapability(BasePermission):
    """Allow users holding `view.required_capability` (read) or `view.write_capability` (writes)."""

    def has_permission(self, request, view) -> bool:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            cap = getattr(view, "required_capability", None)
        else:
            cap = getattr(view, "write_capability", None)
        # A staff user acts through the API only from a session that passed the second factor.
        return (
            cap is not None and has_cap(request.user, Cap(cap)) and second_factor_satisfied(user=request.user)
        )


class IsStaffReader(BasePermission):
    """Staff who read every record (view_staff): the API schema and its documentation page (issue 12)."""

    def has_permission(self, request, view) -> bool:
        return has_cap(request.user, Cap.VIEW_STAFF)


class IsParticipant(BasePermission):
    """A participant reading their own records; querysets must filter on request.user.person."""

    def has_permission(self, request, view) -> bool:
        return is_participant_user(request.user) and second_factor_satisfied(user=request.user)
