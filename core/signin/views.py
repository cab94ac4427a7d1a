"""Sign-in pages: the second factor (enter a code, enrol an authenticator, recovery codes), password change
and reset by email (Django's token views, audited), and the staff page that lifts a lockout."""

from __future__ import annotations

from axes.models import AccessAttempt
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db.models import Max, Sum
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_POST

from core.audit import audit_record
from core.decorators import capability_required
from core.roles import Cap
from core.signin import services as S
from core.signin.forms import ResetByEmailForm, TokenForm


def _next(request, default: str = "home") -> str:
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return reverse(default)


@login_required
def verify(request):
    """Enter a code from the authenticator (or a recovery code): at sign-in, and again before a decision."""
    if not S.has_authenticator(user=request.user):
        return redirect(f"{reverse('signin_enrol')}?{urlencode({'next': _next(request)})}")
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        device = S.token_check(user=request.user, token=form.cleaned_data["token"])
        if device is not None:
            S.session_second_factor_passed(request=request, device=device, now=timezone.now())
            if device.persistent_id.startswith("otp_static"):
                left = S.recovery_codes_left(user=request.user)
                messages.warning(
                    request, f"You used a recovery code; {left} left. Make new ones if few remain."
                )
            return redirect(_next(request))
        form.add_error("token", "That code is not right (or was already used). Try the current one.")
    return render(
        request,
        "registration/second_factor_verify.html",
        {"form": form, "next": _next(request), "again": bool(request.GET.get("again"))},
    )


@login_required
def enrol(request):
    """Add an authenticator app: show its key, confirm it with a first code, then show the recovery codes."""
    if S.has_authenticator(user=request.user) and not S.second_factor_verified(user=request.user):
        return redirect(f"{reverse('signin_verify')}?{urlencode({'next': _next(request)})}")
    device = S.authenticator_start(user=request.user)
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        codes = S.authenticator_confirm(device=device, token=form.cleaned_data["token"], now=timezone.now())
        if codes is not None:
            S.session_second_factor_passed(request=request, device=device, now=timezone.now())
            return render(
                request, "registration/recovery_codes.html", {"codes": codes, "next": _next(request)}
            )
        form.add_error("token", "That code does not match the key: check the device's clock and try again.")
    return render(
        request,
        "registration/second_factor_enrol.html",
        {
            "form": form,
            "secret": S.secret_base32(device=device),
            "config_url": device.config_url,
            "next": _next(request),
            "mandatory": S.second_factor_mandatory(user=request.user),
            "replacing": S.has_authenticator(user=request.user),
        },
    )


@login_required
def overview(request):
    return render(
        request,
        "registration/second_factor.html",
        {
            "has_authenticator": S.has_authenticator(user=request.user),
            "mandatory": S.second_factor_mandatory(user=request.user),
            "codes_left": S.recovery_codes_left(user=request.user),
        },
    )


@require_POST
@login_required
def recovery_codes_new(request):
    if not (S.has_authenticator(user=request.user) and S.second_factor_verified(user=request.user)):
        return redirect("signin_overview")
    codes = S.recovery_codes_issue(user=request.user, now=timezone.now())
    return render(request, "registration/recovery_codes.html", {"codes": codes, "next": reverse_lazy("home")})


class PasswordChangeView(auth_views.PasswordChangeView):
    def form_valid(self, form):
        response = super().form_valid(form)
        audit_record(
            action="signin.password_changed",
            actor=self.request.user,
            at=timezone.now(),
            obj=self.request.user,
            reason="changed by the user, signed in",
        )
        return response


class PasswordResetView(auth_views.PasswordResetView):
    form_class = ResetByEmailForm


class PasswordResetConfirmView(auth_views.PasswordResetConfirmView):
    def form_valid(self, form):
        response = super().form_valid(form)
        audit_record(
            action="signin.password_changed",
            actor=form.user,
            at=timezone.now(),
            obj=form.user,
            reason="reset through the link sent by email",
        )
        return response


@capability_required(Cap.UNLOCK_ACCOUNTS)
def locks(request):
    """Accounts and addresses locked after AXES_FAILURE_LIMIT wrong passwords, with an unlock button each."""
    if request.method == "POST":
        username = request.POST.get("username", "")
        ip_address = request.POST.get("ip_address", "")
        reason = request.POST.get("reason", "").strip()
        if not (username or ip_address) or not reason:
            messages.error(request, "Not unlocked: name the account or address and give a reason.")
            return redirect("core:signin_locks")
        removed = axes_reset(username=username or None, ip=ip_address or None)
        audit_record(
            action="signin.unlocked",
            actor=request.user,
            at=timezone.now(),
            reason=reason,
            data={"username": username, "ip_address": ip_address, "attempts_cleared": removed},
        )
        messages.success(request, f"Unlocked {username or ip_address}.")
        return redirect("core:signin_locks")
    recent = AccessAttempt.objects.all()
    if settings.AXES_COOLOFF_TIME is not None:
        recent = recent.filter(attempt_time__gte=timezone.now() - settings.AXES_COOLOFF_TIME)
    limit = settings.AXES_FAILURE_LIMIT
    # An account is locked by its own failures, an address by the failures from it over every account tried.
    accounts = (
        recent.values("username")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=limit)
        .order_by("-last")[:200]
    )
    addresses = (
        recent.values("ip_address")
        .annotate(failures=Sum("failures_since_start"), last=Max("attempt_time"))
        .filter(failures__gte=limit)
        .order_by("-last")[:200]
    )
    return render(
        request, "core/signin_locks.html", {"accounts": accounts, "addresses": addresses, "limit": limit}
    )
