"""The payroll export of the elections in force (issue 15): a number of queries that does not grow with the
participants, and the same CSV, byte for byte, as reading each participant's election one at a time."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from elections import selectors as S
from elections.services import deferral_cancel, deferral_election_submit
from participants.models import Participation
from tests.elections.factories import at, participant, user_with_role
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
YEAR = 2027


def _elect(p, year: int, percent: int):
    deferral_election_submit(
        participation=p,
        plan_year=year,
        percentages={"base_salary": percent},
        accounts=None,
        submitted_at=at(year - 1, 11, 1),
        channel="portal",
        actor="test",
    )


def _cancel(p, ground: str, day: dt.date):
    deferral_cancel(
        participation=p, ground=ground, event_on=day, reason="x", actor="committee", now=at(2026, 9, 1)
    )


def _population(start: int, per_kind: int) -> None:
    for i in range(start, start + per_kind):
        own = participant(employee_number=f"E{i:03}a")
        _elect(own, YEAR, 10 + i)  # its own election for the year
        carried = participant(employee_number=f"E{i:03}b")
        _elect(carried, YEAR - 1, 5 + i)  # carried forward (EDCP 3.2(d): evergreen)
        ended = participant(employee_number=f"E{i:03}c")
        _elect(ended, YEAR - 1, 7)
        _cancel(ended, "emergency", dt.date(2026, 5, 20))  # ended before the year: not in force
        hardship = participant(employee_number=f"E{i:03}d")
        _elect(hardship, YEAR, 12)
        _cancel(hardship, "hardship", dt.date(2026, 8, 3))  # cancelled through 2027: listed with its dates


def _export(client) -> tuple[bytes, int]:
    # The export is streamed: its rows (and their queries) are read as the body is consumed, inside the count.
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("elections_staff:export", args=["EDCP", YEAR]))
        body = b"".join(response.streaming_content)
    assert response.status_code == 200
    return body, len(queries)


def test_the_export_reads_in_the_same_number_of_queries_and_writes_the_same_bytes(client, monkeypatch):
    sign_in(client, user_with_role("auditor1", "auditor"))
    _population(0, 1)
    few_bytes, few = _export(client)
    _population(1, 2)
    many_bytes, many = _export(client)
    assert many == few
    assert (
        many_bytes.count(b"\n") == 1 + 3 * 3
    )  # a header; own, carried and hardship of each of 3 people a kind

    # One at a time (the reading before issue 15): the same bytes
    def one_at_a_time_ids(*, plan, plan_year):
        out = {}
        for p in Participation.objects.filter(plan=plan).select_related("plan"):
            election = S.deferral_election_in_force(participation=p, plan_year=plan_year)
            if election is not None:
                out[p.pk] = election.pk
        return out

    monkeypatch.setattr(S, "_in_force_election_ids", one_at_a_time_ids)
    one_at_a_time, slow = _export(client)
    assert one_at_a_time == many_bytes and slow > many


def _plan_year_page(client) -> tuple[str, int]:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("elections_staff:plan_year", args=["EDCP", YEAR]))
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_the_plan_year_page_reads_in_the_same_number_of_queries_and_counts_every_participant(
    client, monkeypatch
):
    sign_in(client, user_with_role("auditor1", "auditor"))
    _population(0, 1)
    _, few = _plan_year_page(client)
    _population(1, 2)
    monkeypatch.setattr(S, "SUMMARY_SHOWN", 2)
    page, many = _plan_year_page(client)
    assert many == few
    summary = S.plan_year_summary(plan=Participation.objects.first().plan, plan_year=YEAR)
    # One at a time (the reading before): the same groups, counted in full, the lists the first two by name.
    elected, carried, not_elected = [], [], []
    for p in (
        Participation.objects.filter(plan__code="EDCP")
        .select_related("person", "plan")
        .order_by("person__last_name", "person__first_name", "id")
    ):
        election = S.deferral_election_in_force(participation=p, plan_year=YEAR)
        if election is not None:
            (elected if election.plan_year == YEAR else carried).append((p, election))
        elif p.eligible:
            not_elected.append(p)
    assert (summary.elected_count, summary.carried_count, summary.not_elected_count) == (
        len(elected),
        len(carried),
        len(not_elected),
    )
    assert (len(elected), len(carried)) == (
        6,
        3,
    )  # own and hardship (cancelled, still in force) of 3; carried 3
    assert summary.elected == elected[:2] and summary.carried == carried[:2]
    assert summary.not_elected == not_elected[:2]
    (base,) = [t for t in summary.totals if t["code"] == "base_salary"]
    percents = [
        line.percent
        for _, e in elected + carried
        for line in e.lines.all()
        if line.component == "base_salary"
    ]
    assert base["count"] == len(percents) and (base["min"], base["max"]) == (min(percents), max(percents))
    assert '<div class="kpi">6</div>' in page and "every election in force is in the export" in page
