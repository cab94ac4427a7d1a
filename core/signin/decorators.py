"""Approving a payment run, deciding an emergency withdrawal and deciding an appeal ask for the second
factor again when the session's last check is older than SECOND_FACTOR_FRESH_MINUTES."""

from __future__ import annotations

import functools

from django.conf import settings
from django.contrib import messages
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from rest_framework.permissions import SAFE_METHODS, BasePermission

from core.signin.services import second_factor_fresh

ASK_AGAIN = (
    "This decision needs your authenticator code again (the last check was more than "
    "{minutes} minutes ago). Enter it, then submit the decision again."
)


def fresh_second_factor_required(view):
    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if second_factor_fresh(user=request.user, session=request.session, now=timezone.now()):
            return view(request, *args, **kwargs)
        back = request.META.get("HTTP_REFERER", "")
        if request.method == "GET" or not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            back = request.get_full_path() if request.method == "GET" else reverse("home")
        messages.info(request, ASK_AGAIN.format(minutes=settings.SECOND_FACTOR_FRESH_MINUTES))
        return redirect(f"{reverse('signin_verify')}?{urlencode({'next': back, 'again': 1})}")

    wrapped.fresh_second_factor = True
    return wrapped


class FreshSecondFactor(BasePermission):
    """The API's counterpart: a write is refused (403) until the session checks the code again."""

    message = (
        "This decision needs a second-factor check within the last "
        f"{settings.SECOND_FACTOR_FRESH_MINUTES} minutes: enter your code on /accounts/two-factor/verify/."
    )

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return second_factor_fresh(user=request.user, session=request.session, now=timezone.now())
