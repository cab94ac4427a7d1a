"""Sign-in audit events: login, logout, failed login and lockout (the rest are recorded by the services)."""

from __future__ import annotations

from axes.signals import user_locked_out
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.utils import timezone

from core.audit import audit_record
from core.signin.middleware import END_REASON_ATTR, LAST_SEEN_AT, SIGNED_IN_AT

USERNAME_MAX = 150


def _address(request) -> str:
    return (
        (getattr(request, "axes_ip_address", None) or request.META.get("REMOTE_ADDR", "")) if request else ""
    )


@receiver(user_logged_in, dispatch_uid="core.signin.logged_in")
def logged_in(sender, request, user, **kwargs):
    now = timezone.now()
    if request is not None and hasattr(request, "session"):
        request.session[SIGNED_IN_AT] = request.session[LAST_SEEN_AT] = now.timestamp()
    audit_record(action="signin.login", actor=user, at=now, obj=user, data={"ip_address": _address(request)})


@receiver(user_logged_out, dispatch_uid="core.signin.logged_out")
def logged_out(sender, request, user, **kwargs):
    if user is None:
        return
    audit_record(
        action="signin.logout",
        actor=user,
        at=timezone.now(),
        obj=user,
        reason=getattr(request, END_REASON_ATTR, "") or "signed out",
        data={"ip_address": _address(request)},
    )


@receiver(user_login_failed, dispatch_uid="core.signin.login_failed")
def login_failed(sender, credentials, request=None, **kwargs):
    audit_record(
        action="signin.failed",
        actor="anonymous",
        at=timezone.now(),
        data={
            "username": str(credentials.get("username", ""))[:USERNAME_MAX],
            "ip_address": _address(request),
        },
    )


@receiver(user_locked_out, dispatch_uid="core.signin.locked_out")
def locked_out(sender, request, username, ip_address, **kwargs):
    audit_record(
        action="signin.locked_out",
        actor="anonymous",
        at=timezone.now(),
        reason="too many failed sign-ins",
        data={"username": str(username or "")[:USERNAME_MAX], "ip_address": ip_address or ""},
    )
