from __future__ import annotations

import functools

from django.core.exceptions import PermissionDenied

from core.roles import Cap, has_cap, is_participant_user


def capability_required(cap: Cap):
    """A staff page: the signed-in user must hold `cap`, else 403."""

    def decorator(view):
        @functools.wraps(view)
        def wrapped(request, *args, **kwargs):
            if not has_cap(request.user, cap):
                denied = PermissionDenied(f"this page needs the {cap.value} capability")
                denied.capability = cap  # the 403 page names it (core.views)
                raise denied
            return view(request, *args, **kwargs)

        wrapped.required_capability = cap
        return wrapped

    return decorator


def participant_required(view):
    """A portal page: the signed-in user must be a participant; the view reads request.user.person only."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if not is_participant_user(request.user):
            raise PermissionDenied("this page is for participants")
        return view(request, *args, **kwargs)

    wrapped.participant_only = True
    return wrapped
