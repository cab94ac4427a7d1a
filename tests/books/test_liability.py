"""The liability report: what the Company owes under each unfunded plan on a date (EDCP 10.1, RRP 8.02, BRP 8.1).

Account plans: every account's value, vested and unvested by the plan's vesting rule. The BRP: the single lump
sum BRP 8.1 has a rabbi trust hold before a Change in Control, on the toy basis of tests/pensions/factories.py
(nobody dies before 66, everybody during 66, 0% interest: ä(12)65 = 18.5/12, ä(12)60 = 78.5/12, ä(12)65:60 = 18.5/12).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.utils import timezone

from books.liability import plan_liabilities, plan_liability
from core.models import JobRun
from participants.services import vesting_service_record
from payments.models import Annuity
from plans.models import Plan
from tests.books.test_contributions_and_vesting import cc_account
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation, separate
from tests.report_pages import compute_form, computed
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
ON = dt.date(2026, 1, 2)


def brp_line(participation, as_of):
    report = plan_liability(plan=participation.plan, as_of=as_of)
    (line,) = [b for b in report.benefits if b.participation == participation]
    return report, line


def test_account_plan_liability_is_every_account_split_into_vested_and_unvested(edcp):
    cc_account(edcp, 2)  # 4,000 credited, vested after two years of service (EDCP 4.2)
    cc_account(edcp, 1)  # 4,000 credited, not vested
    report = plan_liability(plan=edcp, as_of=ON)
    (line,) = [a for a in report.accounts if a.kind == "company_contribution"]
    assert (line.accounts, line.value, line.vested, line.unvested) == (
        2,
        Decimal("8000.00"),
        Decimal("4000.00"),
        Decimal("4000.00"),
    )
    assert report.total == Decimal("8000.00") and report.vested == Decimal("4000.00")
    assert report.cite == "EDCP 10.1"
    # every sub-account of the plan is listed, empty ones too
    assert [a.kind for a in report.accounts][:1] == ["retirement_termination"]


def test_a_date_before_the_credit_owes_nothing(edcp):
    cc_account(edcp, 2)
    assert plan_liability(plan=edcp, as_of=ON - dt.timedelta(days=1)).total == Decimal("0.00")


def test_an_employed_brp_participant_is_valued_as_the_lump_sum_of_a_separation_on_the_date(
    toy_basis, no_key_employees
):
    participation = brp_participation()  # 70,000 a year as a Single Life Annuity; 65 on May 1, 2026
    report, line = brp_line(participation, dt.date(2026, 4, 30))
    # separation on April 30 -> commencement May 1 at exactly 65: 70,000 x 18.5/12 = 107,916.67 (BRP 4.2(c))
    assert (line.status, line.value) == ("employed", Decimal("107916.67"))
    assert report.cite == "BRP 8.1" and report.total == Decimal("107916.67")


def test_a_benefit_in_pay_is_what_is_due_and_unpaid_plus_the_payments_to_come(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.monthly == Decimal("5833.33")
    _, line = brp_line(participation, dt.date(2026, 5, 1))
    # May 1 has fallen due (not yet released: 5,833.33 owed) and 17.5 more monthly payments are expected at 65
    # (12 x ä65 - 1 = 18.5 - 1): 5,833.33 x 17.5 = 102,083.28
    assert line.status == "in pay"
    assert line.value == Decimal("5833.33") + Decimal("102083.28")


def test_a_joint_and_survivor_benefit_counts_the_spouse_after_the_participant(toy_basis, no_key_employees):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Pat Doe"
    )
    separate(participation, dt.date(2026, 4, 20))
    annuity = Annuity.objects.get(participation=participation)
    assert annuity.form == "qjsa" and annuity.survivor_percent == 50
    _, line = brp_line(participation, dt.date(2026, 5, 1))
    monthly, survivor = annuity.monthly, annuity.survivor_monthly
    # participant: due May 1 + 17.5 more; survivor's part: 12 x (ä60 - ä65:60) = 78.5 - 18.5 = 60 monthly payments
    expected = monthly + (monthly * Decimal("17.5")).quantize(Decimal("0.01")) + survivor * 60
    assert abs(line.value - expected) <= Decimal("0.01")


def test_a_single_life_annuity_ends_with_the_participant(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 8, 10), kind="death")
    _, line = brp_line(participation, dt.date(2026, 9, 1))
    # May-August fell due before death (4 x 5,833.33, none released in this test); nothing after death
    assert line.status == "ended at death"
    assert line.value == Decimal("5833.33") * 4


def test_a_participant_who_would_not_be_eligible_is_listed_as_not_valued_never_as_zero(
    toy_basis, no_key_employees
):
    participation = brp_participation(
        service="5.00", erd=dt.date(2031, 5, 1), nrd=dt.date(2036, 5, 1), birth=dt.date(1971, 5, 1)
    )
    report, line = brp_line(participation, dt.date(2026, 4, 30))
    assert line.value is None and "BRP 3.1" in line.note
    assert report.not_valued == [line] and report.total == Decimal("0.00")


def test_the_staff_page_and_its_csv_show_every_plan(
    client, edcp, toy_basis, no_key_employees, eager_jobs, django_capture_on_commit_callbacks
):
    cc_account(edcp, 2)
    participation = brp_participation()
    sign_in(client, staff_user("aud", "auditor"))
    url = "/staff/books/liability/?as_of=2026-04-30"
    before = client.get(url).content.decode()
    # Not computed in the request: the page offers the job, and shows no figure before it has run.
    assert "Compute the report" in before and "107,916.67" not in before and "4,000.00" not in before
    page = computed(client, url, django_capture_on_commit_callbacks)
    for text in (
        "EDCP 10.1",
        "RRP 8.02",
        "BRP 8.1",
        "107,916.67",
        "4,000.00",
        participation.person.full_name,
    ):
        assert text in page
    run = JobRun.objects.get(kind="report", key="liability:2026-04-30")
    assert "Computed " in page and "the liability as of April 30, 2026" in page
    assert f'href="/documents/{run.stats["document"]}/"' in page
    # The CSV link is the file the same run wrote: the same answer as the page.
    response = client.get(url + "&format=csv")
    assert response.status_code == 302 and response["Location"] == f"/documents/{run.stats['document']}/"
    csv = client.get(response["Location"]).content.decode()
    assert "BRP,BRP 8.1," in csv and ",107916.67," in csv
    assert "not a date" in client.get("/staff/books/liability/?as_of=April").content.decode()


def test_the_page_shows_a_job_in_progress_and_a_csv_not_yet_prepared_sends_back_to_the_page(
    client, edcp, django_capture_on_commit_callbacks
):
    sign_in(client, staff_user("aud", "auditor"))
    url = "/staff/books/liability/?as_of=2026-04-30"
    response = client.get(url + "&format=csv")
    assert response.status_code == 302 and response["Location"] == "/staff/books/liability/?as_of=2026-04-30"
    action, fields = compute_form(client.get(url).content.decode())
    with django_capture_on_commit_callbacks(execute=False) as queued:  # no worker has claimed it yet
        client.post(action, fields)
    assert len(queued) == 1
    page = client.get(fields["next"]).content.decode()
    assert 'role="progressbar"' in page and 'aria-valuenow="0"' in page and "data-reload-when-done" in page
    assert "Compute the report" not in page
    JobRun.objects.create(
        kind="report",
        key="liability:2026-04-30",
        status=JobRun.Status.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=timezone.now(),
        progress_done=3,
        progress_total=4,
    )
    page = client.get(url).content.decode()
    assert 'aria-valuenow="75"' in page and "/staff/jobs/report/liability:2026-04-30/progress" in page


def test_the_report_lists_every_plan_of_the_catalog(db):
    assert [r.plan.code for r in plan_liabilities(as_of=ON)] == list(
        Plan.objects.order_by("code").values_list("code", flat=True)
    )


def test_participants_cannot_open_the_report(client, edcp):
    part, _ = cc_account(edcp, 2)
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.create_user("p1", password="x")
    part.person.user = user
    part.person.save()
    sign_in(client, user)
    assert client.get("/staff/books/liability/").status_code in (302, 403, 404)


def test_vesting_service_recorded_later_changes_the_split(edcp):
    part, _ = cc_account(edcp, 1)
    assert plan_liability(plan=edcp, as_of=ON).vested == Decimal("0.00")
    vesting_service_record(person=part.person, through_year=2025, years=2)
    assert plan_liability(plan=edcp, as_of=ON).vested == Decimal("4000.00")


def test_after_the_participant_dies_the_survivor_part_goes_on(toy_basis, no_key_employees):
    participation = brp_participation(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Pat Doe"
    )
    separate(participation, dt.date(2026, 4, 20))
    separate(participation, dt.date(2026, 8, 10), kind="death")
    annuity = Annuity.objects.get(participation=participation)
    _, line = brp_line(participation, dt.date(2026, 9, 1))
    # May-August to the participant, September 1 to the survivor (none released here); then the Spouse, 60 and
    # 4 months, expects 68 certain payments and 6.5 during age 66: 12 x ä = 74.5, less the one just counted
    assert line.status == "in pay to the survivor"
    assert (
        line.value
        == annuity.monthly * 4 + annuity.survivor_monthly * 1 + annuity.survivor_monthly * Decimal("73.5")
    )


def test_brp_appendix_a_the_liability_values_the_pre_2005_benefit_apart(toy_basis, no_key_employees):
    from books.models import DefinedBenefitRecord

    participation = brp_participation()
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    _, line = brp_line(participation, dt.date(2026, 4, 30))
    # employed: Post-2004 50,000 x 18.5/12 = 77,083.33 plus Pre-2005 20,000 x 18.5/12 = 30,833.33
    assert line.value == Decimal("107916.66") and "Pre-2005 30,833.33" in line.method
    separate(participation, dt.date(2026, 4, 20))
    _, line = brp_line(participation, dt.date(2026, 5, 1))
    # in pay: Post-2004 4,166.67 due on May 1 + 4,166.67 x 17.5 = 72,916.73; Pre-2005 1,666.67 + 1,666.67 x 17.5
    # = 29,166.73: each part's own payments and factor
    post = Decimal("4166.67") + Decimal("72916.73")
    pre = Decimal("1666.67") + Decimal("29166.73")
    assert line.value == post + pre and "Pre-2005 (BRP App. A 3(b))" in line.method
