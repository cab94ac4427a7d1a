"""Signing a test client in the way the site now requires: staff with a confirmed authenticator and a
session that has passed the second factor (just now, so approvals do not ask again)."""

from __future__ import annotations

from django.test import Client
from django.utils import timezone
from django_otp import DEVICE_ID_SESSION_KEY
from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from core.signin.services import VERIFIED_AT_SESSION_KEY, second_factor_expected

# Headless Chromium (Debian's /usr/bin/chromium) as the browser tests launch it: no sandbox (root in CI), nothing
# fetched in the background.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-sync",
    "--no-first-run",
]
TEST_KEY = "3132333435363738393031323334353637383930"  # RFC 6238's test key, as hex


def authenticator_of(user) -> TOTPDevice:
    """The user's confirmed authenticator (made with the test key if they have none)."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    return device or TOTPDevice.objects.create(user=user, name="authenticator", key=TEST_KEY, confirmed=True)


def current_code(device: TOTPDevice) -> str:
    return f"{totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits):0{device.digits}d}"


def sign_in(client: Client, user, *, second_factor: bool = True) -> Client:
    """force_login, then (for a user who owes one) a second factor passed now; second_factor=False leaves
    the session unverified, as right after the password."""
    client.force_login(user)
    if second_factor and second_factor_expected(user=user):
        device = authenticator_of(user)
        session = client.session
        session[DEVICE_ID_SESSION_KEY] = device.persistent_id
        session[VERIFIED_AT_SESSION_KEY] = timezone.now().timestamp()
        session.save()
    return client


def authenticator_code_now() -> str:
    """The current code of an authenticator made by authenticator_of (no database: for browser tests)."""
    return f"{totp(bytes.fromhex(TEST_KEY)):06d}"


def browser_sign_in(page, base: str, username: str, password: str) -> None:
    """The sign-in form, then the code page when the site asks (staff: call authenticator_of(user) first,
    before Playwright starts)."""
    page.goto(f"{base}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()
    if "/accounts/two-factor/verify/" in page.url:
        page.fill("input[name=token]", authenticator_code_now())
        page.click("#verify-form button[type=submit]")
        page.wait_for_load_state()
