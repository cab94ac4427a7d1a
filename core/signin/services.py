"""Second-factor actions and the checks the middleware, decorators and API permissions share.

Services take `now`; only views, middleware and signal receivers read the clock.
"""

from __future__ import annotations

import base64
import datetime as dt

import django_otp
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.backends.base import SessionBase
from django.db import transaction
from django.http import HttpRequest
from django_otp.models import Device
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.audit import audit_record
from core.roles import is_staff_user

VERIFIED_AT_SESSION_KEY = "signin_second_factor_at"
AUTHENTICATOR_NAME = "authenticator"
RECOVERY_NAME = "recovery codes"


def second_factor_mandatory(*, user: User | AnonymousUser) -> bool:
    """Every staff user, and whoever can open the Django admin, signs in with a second factor."""
    return bool(user.is_authenticated and (is_staff_user(user) or user.is_staff or user.is_superuser))


def has_authenticator(*, user: User | AnonymousUser) -> bool:
    return TOTPDevice.objects.filter(user=user, confirmed=True).exists()


def second_factor_expected(*, user: User | AnonymousUser) -> bool:
    """Staff always; a participant once they have added an authenticator."""
    return second_factor_mandatory(user=user) or (user.is_authenticated and has_authenticator(user=user))


def second_factor_verified(*, user: User | AnonymousUser) -> bool:
    """True when this session passed the second factor (django-otp's OTPMiddleware; never for HTTP Basic)."""
    is_verified = getattr(user, "is_verified", None)
    return bool(is_verified is not None and is_verified())


def second_factor_satisfied(*, user: User | AnonymousUser) -> bool:
    # Verified first: a session that passed the second factor needs no look at roles or authenticators (a query
    # on every request of a participant who added one).
    return second_factor_verified(user=user) or not second_factor_expected(user=user)


def second_factor_fresh(*, user: User | AnonymousUser, session: SessionBase, now: dt.datetime) -> bool:
    """Checked within SECOND_FACTOR_FRESH_MINUTES (approvals and decisions ask again after that)."""
    at = session.get(VERIFIED_AT_SESSION_KEY)
    if not second_factor_verified(user=user) or at is None:
        return False
    return now.timestamp() - float(at) <= settings.SECOND_FACTOR_FRESH_MINUTES * 60


def session_second_factor_passed(*, request: HttpRequest, device: Device, now: dt.datetime) -> None:
    """Mark this session verified by `device` and remember when (for the 15-minute re-check)."""
    django_otp.login(request, device)
    request.session[VERIFIED_AT_SESSION_KEY] = now.timestamp()


def token_check(*, user: User | AnonymousUser, token: str) -> Device | None:
    """The confirmed device (authenticator or an unused recovery code) that accepts `token`, or None.
    A recovery code is used up by the check (django-otp deletes the static token)."""
    token = "".join(token.split())
    if not token:
        return None
    return django_otp.match_token(user, token)


def authenticator_start(*, user: User | AnonymousUser) -> TOTPDevice:
    """The unconfirmed authenticator being enrolled (a new random key on first call, the same one after)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False, name=AUTHENTICATOR_NAME).first()
    if device is None:
        device = TOTPDevice.objects.create(user=user, name=AUTHENTICATOR_NAME, confirmed=False)
    return device


def secret_base32(*, device: TOTPDevice) -> str:
    """The key as authenticator apps take it when typed in by hand."""
    return base64.b32encode(device.bin_key).decode("ascii")


@transaction.atomic
def authenticator_confirm(*, device: TOTPDevice, token: str, now: dt.datetime) -> list[str] | None:
    """Confirm the device with a first code from the app. Returns fresh recovery codes, or None when the
    code is wrong (nothing changed then)."""
    token = "".join(token.split())
    if not token or not device.verify_token(token):
        return None
    TOTPDevice.objects.filter(user=device.user).exclude(pk=device.pk).delete()
    device.confirmed = True
    device.save(update_fields=["confirmed"])
    audit_record(
        action="signin.second_factor_enrolled",
        actor=device.user,
        at=now,
        obj=device.user,
        reason="authenticator (TOTP) confirmed with a code",
    )
    return recovery_codes_issue(user=device.user, now=now)


@transaction.atomic
def recovery_codes_issue(*, user: User, now: dt.datetime) -> list[str]:
    """Replace the user's recovery codes: each works once, in place of an authenticator code."""
    StaticDevice.objects.filter(user=user).delete()
    device = StaticDevice.objects.create(user=user, name=RECOVERY_NAME, confirmed=True)
    codes = [StaticToken.random_token() for _ in range(settings.RECOVERY_CODE_COUNT)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=code) for code in codes])
    audit_record(
        action="signin.recovery_codes_issued",
        actor=user,
        at=now,
        obj=user,
        data={"count": len(codes)},
    )
    return codes


def recovery_codes_left(*, user: User | AnonymousUser) -> int:
    return StaticToken.objects.filter(device__user=user).count()


@transaction.atomic
def demo_authenticator_enrol(*, user: User, key_hex: str, now: dt.datetime) -> TOTPDevice:
    """The demo's staff authenticators: a fixed key, so a second load_demo run keeps the same secret."""
    device, created = TOTPDevice.objects.get_or_create(
        user=user, name=AUTHENTICATOR_NAME, defaults={"key": key_hex, "confirmed": True}
    )
    if not created and (device.key != key_hex or not device.confirmed):
        device.key, device.confirmed = key_hex, True
        device.save(update_fields=["key", "confirmed"])
    if created:
        audit_record(
            action="signin.second_factor_enrolled",
            actor="load_demo",
            at=now,
            obj=user,
            reason="demo staff authenticator",
        )
    return device
