"""Signing in (issue 12, findings 3, 4 and 8): lockout after repeated failures and its unlock, the staff
second factor and its re-check before decisions, password reset by email, passwords that are not the
person's name, session limits, API throttling and no HTTP Basic, and the audit events of each."""

from __future__ import annotations

import base64
import datetime as dt
import re

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.contrib.sessions.models import Session
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django_otp.plugins.otp_static.models import StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from freezegun import freeze_time

from core.models import AuditEvent
from tests.factories import PersonFactory
from tests.signin import authenticator_of, current_code, sign_in

pytestmark = pytest.mark.django_db
PASSWORD = "a-long-test-password"
User = get_user_model()


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def user_in(role: str | None, username: str, **fields) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD, **fields)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


def password_sign_in(client: Client, username: str, password: str = PASSWORD, address: str = "198.51.100.7"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def actions(*names: str) -> list[str]:
    return list(AuditEvent.objects.filter(action__in=names).order_by("id").values_list("action", flat=True))


# --- lockout (finding 3) --------------------------------------------------------------------------------


def test_after_the_failure_limit_even_the_right_password_is_refused_with_a_clear_message(client, settings):
    user_in("participant", "carol")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        password_sign_in(client, "carol", "wrong-password-1")
    answer = password_sign_in(client, "carol")
    assert answer.status_code == 429
    assert (
        "Sign-in locked" in answer.content.decode() and "Too many wrong passwords" in answer.content.decode()
    )
    assert "_auth_user_id" not in client.session
    assert actions("signin.failed").count("signin.failed") >= settings.AXES_FAILURE_LIMIT
    assert "signin.locked_out" in actions("signin.locked_out")


def test_one_failure_short_of_the_limit_the_right_password_still_works(client, settings):
    user_in("participant", "carol")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        password_sign_in(client, "carol", "wrong-password-1")
    assert password_sign_in(client, "carol").status_code == 302
    assert actions("signin.login") == ["signin.login"]


def test_an_address_that_tried_many_accounts_is_locked_for_every_account(client, settings):
    user_in("participant", "dave")
    for i in range(settings.AXES_FAILURE_LIMIT):
        password_sign_in(client, f"guess{i}", "wrong-password-1", address="203.0.113.9")
    assert password_sign_in(client, "dave", address="203.0.113.9").status_code == 429
    assert password_sign_in(client, "dave", address="203.0.113.10").status_code == 302
    staff = sign_in(Client(), user_in("committee", "ruth"))
    assert "203.0.113.9" in staff.get("/staff/signin/locks/").content.decode()
    assert password_sign_in(Client(), "dave", address="203.0.113.9").status_code == 429
    staff.post("/staff/signin/locks/", {"ip_address": "203.0.113.9", "reason": "Office proxy, checked"})
    assert password_sign_in(Client(), "dave", address="203.0.113.9").status_code == 302


def test_an_administrator_unlocks_an_account_from_the_staff_page_with_a_reason(client, settings):
    user_in("participant", "carol")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        password_sign_in(Client(), "carol", "wrong-password-1")
    page = sign_in(Client(), user_in("administrator", "ada"))
    listing = page.get("/staff/signin/locks/").content.decode()
    assert "carol" in listing

    refused = page.post("/staff/signin/locks/", {"username": "carol", "reason": ""})
    assert refused.status_code == 302 and AccessAttempt.objects.filter(username="carol").exists()
    page.post("/staff/signin/locks/", {"username": "carol", "reason": "Called from her desk phone"})
    assert not AccessAttempt.objects.filter(username="carol").exists()
    event = AuditEvent.objects.get(action="signin.unlocked")
    assert (event.actor.username, event.reason, event.data["username"]) == (
        "ada",
        "Called from her desk phone",
        "carol",
    )
    assert password_sign_in(client, "carol").status_code == 302


def test_an_auditor_cannot_unlock(settings):
    auditor = sign_in(Client(), user_in("auditor", "audrey"))
    assert auditor.get("/staff/signin/locks/").status_code == 403
    assert auditor.post("/staff/signin/locks/", {"username": "x", "reason": "y"}).status_code == 403


def test_the_axes_reset_username_command_unlocks_an_account(client, settings):
    user_in("participant", "carol")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        password_sign_in(client, "carol", "wrong-password-1")
    call_command("axes_reset_username", "carol", stdout=__import__("io").StringIO())
    assert password_sign_in(client, "carol").status_code == 302


# --- the second factor ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["committee", "administrator", "auditor"])
def test_a_staff_session_without_the_second_factor_reaches_no_staff_page_or_staff_api(role):
    staff = user_in(role, "s1")
    authenticator_of(staff)
    client = sign_in(Client(), staff, second_factor=False)
    page = client.get("/staff/")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/two-factor/verify/?next=")
    assert client.get("/staff/payments/").status_code == 302
    api = client.get("/api/participants/people/")
    assert api.status_code == 403 and "Second factor required" in api.json()["detail"]
    assert client.get("/api/schema/").status_code == 403
    assert sign_in(Client(), staff).get("/staff/").status_code == 200  # the control: verified, it opens


def test_a_staff_user_without_an_authenticator_is_sent_to_enrol_and_may_go_nowhere_else():
    client = sign_in(Client(), user_in("committee", "ruth"), second_factor=False)
    answer = client.get("/staff/payments/")
    assert answer.status_code == 302 and answer["Location"].startswith("/accounts/two-factor/enrol/")
    assert client.get("/accounts/password_change/").status_code == 302


def test_a_superuser_needs_the_second_factor_for_the_admin():
    root = User.objects.create_superuser("root", "root@example.com", PASSWORD)
    assert sign_in(Client(), root, second_factor=False).get("/admin/").status_code == 302
    assert sign_in(Client(), root).get("/admin/").status_code == 200


def test_staff_enrol_an_authenticator_and_receive_ten_recovery_codes():
    ruth = user_in("committee", "ruth")
    client = sign_in(Client(), ruth, second_factor=False)
    with freeze_time("2026-03-02 15:00:00") as clock:
        page = client.get("/accounts/two-factor/enrol/").content.decode()
        secret = re.search(r'id="totp-secret">([A-Z2-7]+)<', page).group(1)
        device = TOTPDevice.objects.get(user=ruth)
        assert base64.b32decode(secret) == device.bin_key and not device.confirmed
        assert client.post("/accounts/two-factor/enrol/", {"token": "000000"}).status_code == 200
        assert not TOTPDevice.objects.get(user=ruth).confirmed
        clock.tick(dt.timedelta(seconds=2))  # django-otp throttles: a second try waits a second after a miss
        done = client.post("/accounts/two-factor/enrol/", {"token": current_code(device)})
        codes = re.findall(r"<li><code>(\w+)</code></li>", done.content.decode())
        assert len(codes) == 10 and TOTPDevice.objects.get(user=ruth).confirmed
        assert client.get("/staff/").status_code == 200
    event = AuditEvent.objects.get(action="signin.second_factor_enrolled")
    assert event.actor == ruth


def test_a_staff_user_signs_in_with_password_then_code(client):
    ruth = user_in("committee", "ruth")
    device = authenticator_of(ruth)
    with freeze_time("2026-03-02 15:00:00") as clock:
        assert password_sign_in(client, "ruth").status_code == 302
        assert client.get("/staff/").status_code == 302
        wrong = client.post("/accounts/two-factor/verify/", {"token": "123456", "next": "/staff/"})
        assert wrong.status_code == 200 and "not right" in wrong.content.decode()
        clock.tick(dt.timedelta(seconds=31))
        right = client.post(
            "/accounts/two-factor/verify/", {"token": current_code(device), "next": "/staff/"}
        )
        assert right.status_code == 302 and right["Location"] == "/staff/"
        assert client.get("/staff/").status_code == 200
    assert actions("signin.login") == ["signin.login"]


def test_a_recovery_code_works_once_in_place_of_the_authenticator():
    from core.signin.services import recovery_codes_issue

    ruth = user_in("committee", "ruth")
    authenticator_of(ruth)
    codes = recovery_codes_issue(user=ruth, now=dt.datetime(2026, 3, 2, tzinfo=dt.UTC))
    first = sign_in(Client(), ruth, second_factor=False)
    assert first.post("/accounts/two-factor/verify/", {"token": codes[0]}).status_code == 302
    assert first.get("/staff/").status_code == 200
    second = sign_in(Client(), ruth, second_factor=False)
    assert second.post("/accounts/two-factor/verify/", {"token": codes[0]}).status_code == 200
    assert second.get("/staff/").status_code == 302
    assert StaticToken.objects.filter(device__user=ruth).count() == 9


def test_a_participant_may_sign_in_without_a_second_factor_until_they_add_one():
    person = PersonFactory()
    alice = user_in("participant", "alice")
    person.user = alice
    person.save()
    assert sign_in(Client(), alice, second_factor=False).get("/portal/").status_code == 200
    authenticator_of(alice)
    assert sign_in(Client(), alice, second_factor=False).get("/portal/").status_code == 302
    assert sign_in(Client(), alice).get("/portal/").status_code == 200


# --- asked again before decisions -------------------------------------------------------------------------


@pytest.fixture
def emergency(settings):
    from participants.models import Participation
    from tests.payments.factories import deferrals, scenario, simulate
    from tests.payments.test_emergencies_and_orders import _request

    simulate(scenario(events=deferrals(), through="2026-04-30"))
    return _request(Participation.objects.get(person__employee_number="P1"))


DECISION = {"decision": "approve", "amount": "11000.00", "decided_on": "2026-05-05", "reason": "Need"}


def test_deciding_an_emergency_asks_for_the_code_again_after_15_minutes(emergency):
    from tests.payments.test_emergencies_and_orders import reviewed_decision

    bea = user_in("committee", "bea")
    device = authenticator_of(bea)
    client = Client()
    url = f"/staff/payments/emergencies/{emergency.pk}/decide"
    with freeze_time("2026-05-05 14:00:00") as clock:
        sign_in(client, bea)
        clock.tick(dt.timedelta(minutes=16))
        asked = client.post(
            url, DECISION, HTTP_REFERER=f"http://testserver/staff/payments/emergencies/{emergency.pk}/"
        )
        assert asked.status_code == 302 and asked["Location"].startswith("/accounts/two-factor/verify/?next=")
        emergency.refresh_from_db()
        assert emergency.status == "requested"
        client.post("/accounts/two-factor/verify/", {"token": current_code(device)})
        clock.tick(dt.timedelta(minutes=14))
        client.post(url, reviewed_decision(client, emergency, DECISION))
    emergency.refresh_from_db()
    assert emergency.status == "approved"


def test_the_emergency_decision_api_refuses_a_check_older_than_15_minutes(emergency):
    bea = user_in("committee", "bea")
    client = Client()
    url = f"/api/payments/emergencies/{emergency.pk}/decision/"
    with freeze_time("2026-05-05 14:00:00") as clock:
        sign_in(client, bea)
        clock.tick(dt.timedelta(minutes=15, seconds=1))
        refused = client.post(url, DECISION, content_type="application/json")
        assert refused.status_code == 403 and "second-factor check" in refused.json()["detail"]
        sign_in(client, bea)
        assert client.post(url, DECISION, content_type="application/json").status_code in (200, 201)


@pytest.mark.parametrize(
    "url",
    ["/staff/payments/runs/999999/approve", "/staff/claims/999999/appeal/decide/"],
    ids=["run", "appeal"],
)
def test_approving_a_payment_run_and_deciding_an_appeal_ask_again_after_15_minutes(url):
    committee = user_in("committee", "bea")
    client = Client()
    with freeze_time("2026-05-05 14:00:00") as clock:
        sign_in(client, committee)
        clock.tick(dt.timedelta(minutes=15, seconds=1))
        asked = client.post(url, {})
        assert asked.status_code == 302 and asked["Location"].startswith("/accounts/two-factor/verify/")
        sign_in(client, committee)  # the code again, just now
        assert (
            client.post(url, {}).status_code == 404
        )  # past the check, the view itself answers (no such run)


# --- password reset and password rules (finding 8) --------------------------------------------------------


def test_a_forgotten_password_is_reset_through_the_emailed_link(client):
    person = PersonFactory(first_name="Maria", last_name="Lopez", email="maria.lopez@example.com")
    user = user_in("participant", "mlopez")
    person.user = user
    person.save()
    assert client.post("/accounts/password_reset/", {"email": "Maria.Lopez@example.com"}).status_code == 302
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["maria.lopez@example.com"]
    link = re.search(r"http://testserver(/accounts/reset/\S+/)", mail.outbox[0].body).group(1)
    form = client.get(link, follow=True)
    assert "Choose a new password" in form.content.decode()
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "tulip-harbor-9917", "new_password2": "tulip-harbor-9917"},
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert password_sign_in(Client(), "mlopez", "tulip-harbor-9917").status_code == 302
    assert "link does not work" in client.get(link, follow=True).content.decode()  # used once
    assert actions("signin.password_changed") == ["signin.password_changed"]


def test_an_unknown_address_gets_the_same_answer_and_no_mail(client):
    answer = client.post("/accounts/password_reset/", {"email": "nobody@example.com"})
    assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert mail.outbox == []


def test_a_password_change_is_audited():
    user = user_in("participant", "mlopez")
    client = sign_in(Client(), user)
    client.post(
        "/accounts/password_change/",
        {
            "old_password": PASSWORD,
            "new_password1": "tulip-harbor-9917",
            "new_password2": "tulip-harbor-9917",
        },
    )
    assert User.objects.get(pk=user.pk).check_password("tulip-harbor-9917")
    assert actions("signin.password_changed") == ["signin.password_changed"]


def test_a_password_made_of_the_username_is_refused():
    betty = User(username="betty.foster")
    with pytest.raises(ValidationError, match="user name or your name"):
        validate_password("bettyfoster", betty)
    with pytest.raises(ValidationError):
        validate_password("Foster-Betty-2026", betty)


def test_a_password_containing_the_persons_name_is_refused():
    person = PersonFactory(first_name="Margaret", last_name="Okonkwo")
    user = user_in("participant", "p0042")
    person.user = user
    person.save()
    with pytest.raises(ValidationError, match="user name or your name"):
        validate_password("okonkwo-summer-77", user)
    with pytest.raises(ValidationError):
        validate_password("MARGARET!garden1", user)
    validate_password("tulip-harbor-9917", user)  # the control: an unrelated password passes


# --- sessions (finding 8) ---------------------------------------------------------------------------------


def test_a_session_ends_after_30_minutes_idle(settings):
    assert settings.SESSION_IDLE_MINUTES == 30
    ruth = user_in("committee", "ruth")
    client = Client()
    with freeze_time("2026-03-02 15:00:00") as clock:
        sign_in(client, ruth)
        clock.tick(dt.timedelta(minutes=29))
        assert client.get("/staff/").status_code == 200
        clock.tick(dt.timedelta(minutes=29))
        assert client.get("/staff/").status_code == 200  # each request restarts the idle time
        clock.tick(dt.timedelta(minutes=30, seconds=1))
        ended = client.get("/staff/")
    assert ended.status_code == 302 and ended["Location"].startswith("/accounts/login/")
    assert "_auth_user_id" not in client.session
    event = AuditEvent.objects.get(action="signin.logout")
    assert "idle" in event.reason


def test_the_idle_limit_is_a_setting(settings):
    settings.SESSION_IDLE_MINUTES = 5
    ruth = user_in("committee", "ruth")
    client = Client()
    with freeze_time("2026-03-02 15:00:00") as clock:
        sign_in(client, ruth)
        clock.tick(dt.timedelta(minutes=6))
        assert client.get("/staff/").status_code == 302


def test_a_session_ends_12_hours_after_sign_in_however_busy(settings):
    assert settings.SESSION_MAX_HOURS == 12 and settings.SESSION_COOKIE_AGE == 12 * 3600
    alice = user_in("participant", "alice")
    PersonFactory(user=alice)
    client = Client()
    with freeze_time("2026-03-02 07:00:00") as clock:
        sign_in(client, alice)
        for _ in range(35):  # a request every 20 minutes: 11 h 40 min
            clock.tick(dt.timedelta(minutes=20))
            assert client.get("/accounts/two-factor/").status_code == 200
        clock.tick(dt.timedelta(minutes=21))
        assert client.get("/accounts/two-factor/").status_code == 302
    assert "12 hours" in AuditEvent.objects.get(action="signin.logout").reason


# --- the API (finding 3) ----------------------------------------------------------------------------------


def test_the_api_throttles_a_signed_in_caller(monkeypatch, settings):
    from rest_framework.throttling import UserRateThrottle

    assert "rest_framework.throttling.UserRateThrottle" in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["user"] == "600/minute"
    monkeypatch.setitem(UserRateThrottle.THROTTLE_RATES, "user", "5/minute")
    alice = user_in("participant", "alice")
    PersonFactory(user=alice)
    client = sign_in(Client(), alice)
    codes = [client.get("/api/books/me/accounts/").status_code for _ in range(6)]
    assert codes == [200] * 5 + [429]


def test_http_basic_is_off_unless_a_setting_turns_it_on():
    from django.conf import settings as live

    alice = user_in("participant", "alice")
    PersonFactory(user=alice)
    assert not live.API_BASIC_AUTH  # DEBUG is off in the tests, as in production
    basic = "Basic " + base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert Client().get("/api/books/me/accounts/", HTTP_AUTHORIZATION=basic).status_code in (401, 403)
    assert sign_in(Client(), alice).get("/api/books/me/accounts/").status_code == 200


# --- audit of sign-in and sign-out (finding 4) ------------------------------------------------------------


def test_sign_in_sign_out_and_a_failed_sign_in_are_audit_events(client):
    user_in("participant", "carol")
    password_sign_in(client, "carol", "wrong-password-1")
    password_sign_in(client, "carol")
    client.post("/accounts/logout/")
    assert actions("signin.failed", "signin.login", "signin.logout") == [
        "signin.failed",
        "signin.login",
        "signin.logout",
    ]
    failed = AuditEvent.objects.get(action="signin.failed")
    assert (failed.actor_label, failed.data["username"], failed.data["ip_address"]) == (
        "anonymous",
        "carol",
        "198.51.100.7",
    )
    assert "password" not in str(failed.data)


def test_the_time_of_the_last_request_is_written_at_most_once_a_minute():
    """A page view does not write the session each time (issue 15: a write and a commit on every page)."""
    ruth = user_in("committee", "ruth")
    client = Client()
    with freeze_time("2026-03-02 15:00:00") as clock:
        sign_in(client, ruth)
        client.get("/accounts/two-factor/")
        clock.tick(dt.timedelta(seconds=30))
        with CaptureQueriesContext(connection) as quiet:
            assert client.get("/accounts/two-factor/").status_code == 200
        clock.tick(dt.timedelta(seconds=31))
        with CaptureQueriesContext(connection) as written:
            client.get("/accounts/two-factor/")
    table = Session._meta.db_table
    assert not [q for q in quiet.captured_queries if q["sql"].startswith(f'UPDATE "{table}"')]
    assert [q for q in written.captured_queries if q["sql"].startswith(f'UPDATE "{table}"')]
