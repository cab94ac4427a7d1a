"""Session limits and the staff second factor, for every request.

SessionLimitsMiddleware signs a session out after SESSION_IDLE_MINUTES without a request and
SESSION_MAX_HOURS after sign-in. SecondFactorRequiredMiddleware keeps a signed-in user who owes a second
factor (every staff user; a participant with an authenticator) away from everything but the sign-in pages
until they enter a code, sending staff without an authenticator to enrol one.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import JsonResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode

from core.signin.services import has_authenticator, second_factor_satisfied

SIGNED_IN_AT = "signin_at"
LAST_SEEN_AT = "signin_seen_at"
END_REASON_ATTR = "_signin_end_reason"
SEEN_EVERY_SECONDS = 60  # how often the time of the last request is written to the session


class SessionLimitsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.user.is_authenticated:
            now = timezone.now().timestamp()
            signed_in = request.session.setdefault(SIGNED_IN_AT, now)
            last_seen = request.session.get(LAST_SEEN_AT, now)
            reason = ""
            if now - last_seen > settings.SESSION_IDLE_MINUTES * 60:
                reason = f"idle for more than {settings.SESSION_IDLE_MINUTES} minutes"
            elif now - signed_in > settings.SESSION_MAX_HOURS * 3600:
                reason = f"signed in for more than {settings.SESSION_MAX_HOURS} hours"
            if reason:
                setattr(request, END_REASON_ATTR, f"session ended: {reason}")
                logout(request)
                if not request.path.startswith("/api/"):
                    messages.info(request, f"You were signed out ({reason}). Please sign in again.")
                    return redirect_to_login(request.get_full_path(), settings.LOGIN_URL)
            elif LAST_SEEN_AT not in request.session or now - last_seen >= SEEN_EVERY_SECONDS:
                # Not on every request: a changed session is a write and a commit on each page (issue 15). The idle
                # time is counted from the last request written, so a session may end up to a minute early, never late.
                request.session[LAST_SEEN_AT] = now
        return self.get_response(request)


# What a user who still owes a second factor may reach: signing in and out, entering or enrolling the code.
SECOND_FACTOR_OPEN = (
    "/accounts/login/",
    "/accounts/logout/",
    "/accounts/two-factor/",
    "/static/",
    "/healthz",
)


class SecondFactorRequiredMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = request.user
        if (
            user.is_authenticated
            and not request.path.startswith(SECOND_FACTOR_OPEN)
            and not second_factor_satisfied(user=user)
        ):
            if request.path.startswith("/api/"):
                return JsonResponse(
                    {"detail": "Second factor required: sign in on the web page and enter your code."},
                    status=403,
                )
            target = "signin_verify" if has_authenticator(user=user) else "signin_enrol"
            return redirect(f"{reverse(target)}?{urlencode({'next': request.get_full_path()})}")
        return self.get_response(request)
