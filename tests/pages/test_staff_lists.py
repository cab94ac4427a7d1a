"""Every staff list pages on the server and searches by name, employee number and status (issue 15, core.lists):
page 2 shows the rows after page 1 in a deterministic order, each search finds only its rows, and the number of
queries a list page makes does not grow with its rows."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from books.models import Account
from claims.models import Claim, State
from core.lists import PAGE_SIZE
from core.models import JobRun
from core.roles import Role
from elections.models import AnnuityElection
from participants.models import Participation, Person
from payments.models import (
    DomesticRelationsOrder,
    EmergencyWithdrawal,
    PaymentRun,
    PaymentSchedule,
    ScheduledPayment,
)
from plans.models import Plan
from tests.claims.factories import at, file_claim
from tests.factories import ParticipationFactory, PersonFactory
from tests.pages.conftest import client_of, make_user

pytestmark = pytest.mark.django_db

TODAY = dt.date(2026, 3, 2)
NOW = timezone.now()


@pytest.fixture
def client(db):
    return client_of(make_user("lister", Role.ADMINISTRATOR))


def _person(n: int, *, last: str = "", first: str = "") -> Person:
    return PersonFactory(
        employee_number=f"L{n:05d}", last_name=last or f"Zimmer{n:03d}", first_name=first or f"Ann{n:03d}"
    )


def _participation(edcp, n: int, **names) -> Participation:
    return ParticipationFactory(plan=edcp, person=_person(n, **names))


def _held(participation: Participation, *, status: str = ScheduledPayment.Status.HELD, day: dt.date = TODAY):
    account, _ = Account.objects.get_or_create(
        participation=participation,
        kind="retirement_termination",
        defaults={"opened_on": dt.date(2020, 1, 1)},
    )
    schedule, _ = PaymentSchedule.objects.get_or_create(
        participation=participation, account=account, defaults={"trigger": "separation", "computed_at": NOW}
    )
    return ScheduledPayment.objects.create(
        schedule=schedule,
        number=ScheduledPayment.objects.filter(schedule=schedule).count() + 1,
        account=account,
        participation=participation,
        trigger="separation",
        kind="lump_sum",
        share="all",
        payment_date=day,
        valuation_rule="release_date",
        valuable_on=day,
        release_date=day,
        cite="EDCP 5.2",
        reason="test",
        status=status,
        amount=Decimal("100.00"),
        hold_reason="held for the test" if status == ScheduledPayment.Status.HELD else "",
        created_at=NOW,
    )


def _emergency(participation: Participation, *, status: str = EmergencyWithdrawal.Status.REQUESTED):
    return EmergencyWithdrawal.objects.create(
        participation=participation,
        requested_amount=Decimal("10.00"),
        requested_on=TODAY,
        recorded_by="t",
        recorded_at=NOW,
        status=status,
    )


def _order(participation: Participation):
    return DomesticRelationsOrder.objects.create(
        participation=participation,
        alternate_payee="Ex",
        order_date=TODAY,
        percent=10,
        total=Decimal("1.00"),
        cite="EDCP 5.9",
        recorded_by="t",
        recorded_at=NOW,
    )


def _run(n: int, *, status: str = PaymentRun.Status.PREPARED) -> PaymentRun:
    preparer = make_user(f"preparer{n}", Role.ADMINISTRATOR)
    return PaymentRun.objects.create(
        status=status, period_end=TODAY, prepared_by=preparer, prepared_at=NOW - dt.timedelta(minutes=n)
    )


def _job(n: int, *, status: str = JobRun.Status.DONE) -> JobRun:
    return JobRun.objects.create(
        kind="crediting",
        key=f"2026-01-{n:02d}",
        status=status,
        started_at=NOW - dt.timedelta(days=n),
        heartbeat_at=NOW,
    )


def _refused(participation: Participation):
    return AnnuityElection.objects.create(
        participation=participation,
        submitted_at=NOW,
        status="rejected",
        channel="staff",
        actor="t",
        form="single_life",
        message="refused for the test",
    )


def _brp(participation: Participation):
    return Participation.objects.create(
        person=participation.person,
        plan=Plan.objects.filter(kind=Plan.Kind.DEFINED_BENEFIT).order_by("code").first(),
        entered_on=dt.date(2002, 1, 1),
    )


def _get(client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def _count(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        _get(client, url)
    return len(queries)


# --- paging -------------------------------------------------------------------------------------------------


def test_participant_list_pages_in_name_order(client):
    for n in range(PAGE_SIZE + 5):
        _person(n)
    url = reverse("participants_staff:list")
    first, second = _get(client, url), _get(client, url + "?page=2")
    numbers = [f"L{n:05d}" for n in range(PAGE_SIZE + 5)]  # Zimmer000.. sort as their numbers do
    assert all(number in first for number in numbers[:PAGE_SIZE])
    assert not any(number in first for number in numbers[PAGE_SIZE:])
    assert re.findall(r"L\d{5}", second) == sorted(set(re.findall(r"L\d{5}", second)), key=numbers.index)
    assert set(re.findall(r"L\d{5}", second)) == set(numbers[PAGE_SIZE:])
    assert "Page 2 of 2" in second and 'rel="prev"' in second


def test_emergency_list_pages_on_the_server(client, edcp):
    for n in range(PAGE_SIZE + 3):
        _emergency(_participation(edcp, n))
    url = reverse("payments_staff:emergencies")
    first, second = _get(client, url), _get(client, url + "?page=2")
    ids = list(EmergencyWithdrawal.objects.order_by("-requested_on", "-id").values_list("pk", flat=True))
    shown = lambda page: [int(x) for x in re.findall(r">Request (\d+)</a>", page)]  # noqa: E731
    assert shown(first) == ids[:PAGE_SIZE]
    assert shown(second) == ids[PAGE_SIZE:]
    assert f"{PAGE_SIZE + 3} rows" in first


# --- search -------------------------------------------------------------------------------------------------


def test_participant_search_by_name_and_employee_number(client):
    _person(1, last="Okafor", first="Grace")
    _person(2, last="Okonkwo", first="Daniel")
    _person(3, last="Brandt", first="Okke")
    url = reverse("participants_staff:list")
    page = _get(client, url + "?q=okaf")
    assert "L00001" in page and "L00002" not in page and "L00003" not in page
    page = _get(client, url + "?q=ok")  # a prefix of either name
    assert all(n in page for n in ("L00001", "L00002", "L00003"))
    page = _get(client, url + "?q=ok+dan")  # every word must match
    assert "L00002" in page and "L00001" not in page and "L00003" not in page
    page = _get(client, url + "?q=l00003")
    assert "L00003" in page and "L00001" not in page


LISTS = {
    # name: (url, how a row is made for a participation and a status, two statuses or None)
    "held": ("payments_staff:held", lambda p, s: _held(p), None),
    "upcoming": (
        "payments_staff:upcoming",
        lambda p, s: _held(p, status=s, day=timezone.localdate() + dt.timedelta(days=5)),
        (ScheduledPayment.Status.SCHEDULED, ScheduledPayment.Status.VALUED),
    ),
    "emergencies": (
        "payments_staff:emergencies",
        lambda p, s: _emergency(p, status=s),
        (EmergencyWithdrawal.Status.REQUESTED, EmergencyWithdrawal.Status.DENIED),
    ),
    "orders": ("payments_staff:orders", lambda p, s: _order(p), None),
    "elections": ("elections_staff:participants", lambda p, s: None, None),
    "refused": ("elections_staff:refused", lambda p, s: _refused(p), None),
    "brp": ("pensions_staff:defined_benefit", lambda p, s: _brp(p), None),
}


@pytest.mark.parametrize("name", sorted(LISTS))
def test_each_list_searches_by_name_employee_number_and_status(client, edcp, name):
    url_name, make, statuses = LISTS[name]
    first, second = statuses or ("", "")
    make(_participation(edcp, 1, last="Okafor", first="Grace"), first)
    make(_participation(edcp, 2, last="Brandt", first="Daniel"), second)
    url = reverse(url_name)
    page = _get(client, url + "?q=OKAF")
    assert "L00001" in page and "L00002" not in page, name
    page = _get(client, url + "?q=dan")
    assert "L00002" in page and "L00001" not in page, name
    page = _get(client, url + "?q=L00002")
    assert "L00002" in page and "L00001" not in page, name
    assert 'for="list-q"' in page  # the search box has its label
    if statuses:
        page = _get(client, url + f"?status={second}")
        assert "L00002" in page and "L00001" not in page, name
        assert 'for="list-status"' in page


def test_claims_queue_searches_by_participant_and_state(client, edcp):
    grace = _person(1, last="Okafor", first="Grace")
    daniel = _person(2, last="Brandt", first="Daniel")
    for person in (grace, daniel):
        ParticipationFactory(plan=edcp, person=person)
        file_claim(person, now=at(2025, 1, 10))
    Claim.objects.filter(participant=daniel).update(state=State.UNDER_REVIEW)
    url = reverse("claims_staff:queue")
    grace_claim = Claim.objects.get(participant=grace).number
    daniel_claim = Claim.objects.get(participant=daniel).number
    page = _get(client, url + "?q=okafor")
    assert grace_claim in page and daniel_claim not in page
    page = _get(client, url + "?q=L00002")
    assert daniel_claim in page and grace_claim not in page
    page = _get(client, url + f"?status={State.UNDER_REVIEW}")
    assert daniel_claim in page and grace_claim not in page


def test_payment_runs_and_jobs_filter_by_status(client):
    prepared, released = _run(1), _run(2, status=PaymentRun.Status.RELEASED)
    page = _get(client, reverse("payments_staff:runs") + f"?status={PaymentRun.Status.RELEASED}")
    assert f">Run {released.pk}<" in page and f">Run {prepared.pk}<" not in page
    _job(1), _job(2, status=JobRun.Status.FAILED)
    page = _get(client, reverse("core:job_runs") + f"?status={JobRun.Status.FAILED}")
    assert "2026-01-02" in page and "2026-01-01" not in page


# --- queries that do not grow with the rows -----------------------------------------------------------------


def _fill(edcp, start: int, count: int) -> None:
    for n in range(start, start + count):
        participation = _participation(edcp, n)
        _held(participation)
        _held(
            participation,
            status=ScheduledPayment.Status.SCHEDULED,
            day=timezone.localdate() + dt.timedelta(days=5),
        )
        _emergency(participation)
        _order(participation)
        file_claim(participation.person, now=at(2025, 1, 10))
        _run(n)
        _job(n)
        _refused(participation)
        _brp(participation)


PAGES = (
    "participants_staff:list",
    "payments_staff:held",
    "payments_staff:upcoming",
    "payments_staff:runs",
    "payments_staff:emergencies",
    "payments_staff:orders",
    "claims_staff:queue",
    "elections_staff:participants",
    "core:job_runs",
    "elections_staff:refused",
    "pensions_staff:defined_benefit",
)


def test_list_queries_do_not_grow_with_rows(client, edcp):
    _fill(edcp, 1, 2)
    few = {name: _count(client, reverse(name)) for name in PAGES}
    _fill(edcp, 3, 8)
    many = {name: _count(client, reverse(name)) for name in PAGES}
    assert many == few
