"""BRP Appendix A 4: the Company may distribute the Pre-2005 Supplemental Benefit as its Actuarial Equivalent lump
sum; the lump sum replaces the remaining Pre-2005 monthly payments and goes through the ordinary payment runs.

Figures on the toy basis of tests/pensions/factories.py (nobody dies before 66, everybody during age 66, 0%): a
Supplemental Benefit of 70,000 a year, of which 20,000 is the Pre-2005 part, paid from May 1, 2026 as a Single Life
Annuity of 1,666.67 a month (App. A 3(b)); the rest, 50,000, is the Post-2004 part (4,166.67 a month).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from freezegun import freeze_time

from books.models import DefinedBenefitRecord
from core.models import AuditEvent
from payments.models import Annuity, ScheduledPayment
from payments.services.annuities import AnnuityError, annuities_extend, annuity_pre_2005_cash_out
from payments.services.processing import payment_day_process
from payments.services.runs import payment_run_approve, payment_run_prepare
from tests.conftest import eastern
from tests.payments.factories import staff_user
from tests.pensions.factories import brp_participation, separate
from tests.pensions.test_pages import client_of, participant_user
from tests.pensions.test_payments import credited, rows

pytestmark = pytest.mark.django_db
S = ScheduledPayment.Status


def pre_2005_participant(**kw):
    participation = brp_participation(**kw)
    DefinedBenefitRecord.objects.filter(participation=participation).update(
        pre_2005_annual_benefit=Decimal("20000.00")
    )
    separate(participation, dt.date(2026, 4, 20))
    return participation


def pay_may_1(participation) -> None:
    credited(dt.date(2026, 4, 30))
    payment_day_process(day=dt.date(2026, 5, 1), now=eastern(2026, 5, 1, 7))
    run = payment_run_prepare(
        period_end=dt.date(2026, 5, 1), actor=staff_user("prep", "administrator"), now=eastern(2026, 5, 1, 8)
    )
    payment_run_approve(run=run, actor=staff_user("appr", "committee"), now=eastern(2026, 5, 1, 10))


def pre(participation, *, status=None):
    return [p for p in rows(participation, status=status) if p.benefit.startswith("Pre-2005")]


def test_brp_app_a_4_the_lump_sum_replaces_the_remaining_pre_2005_payments(toy_basis, no_key_employees):
    participation = pre_2005_participant()
    pay_may_1(participation)
    annuity = Annuity.objects.get(participation=participation)
    annuity_pre_2005_cash_out(
        annuity=annuity,
        as_of=dt.date(2026, 5, 15),
        actor=staff_user("comm", "committee"),
        now=eastern(2026, 5, 15),
    )
    # On June 1, 2026 the participant is 65 and 1 month: 11 certain monthly payments to age 66, then during age 66
    # month k is paid with probability 1 - k/12 (6.5 in all): 12 ä(12) = 17.5. 1,666.67 x 17.5 = 29,166.725
    kept = pre(participation)
    assert [(p.payment_date, p.kind, p.amount, p.status) for p in kept] == [
        (dt.date(2026, 5, 1), "annuity", Decimal("1666.67"), S.PAID),  # released before: never touched
        (dt.date(2026, 6, 1), "lump_sum", Decimal("29166.73"), S.SCHEDULED),
    ]
    assert kept[1].cite == "BRP App. A 4" and "accrued Pre-2005 Supplemental Benefit" in kept[1].reason
    cancelled = ScheduledPayment.objects.filter(
        participation=participation, benefit__startswith="Pre-2005", status=S.CANCELLED
    )
    # the twelve monthly payments planned from June 1, 2026 (the May 1 job planned through May 1, 2027)
    assert sorted(p.payment_date for p in cancelled) == [dt.date(2026, m, 1) for m in range(6, 13)] + [
        dt.date(2027, m, 1) for m in range(1, 6)
    ]
    # the Post-2004 part goes on as before
    post = [p for p in rows(participation) if not p.benefit.startswith("Pre-2005")]
    assert len(post) == 13 and {p.amount for p in post} == {Decimal("4166.67")}  # May 1, 2026 to May 1, 2027
    annuity.refresh_from_db()
    assert annuity.pre_2005["cash_out"]["amount"] == "29166.73"
    assert "toy table; 0.0% flat; age 65 on June 1, 2026" in annuity.pre_2005["cash_out"]["basis"]
    assert AuditEvent.objects.filter(action="annuity.pre_2005_cash_out").count() == 1
    # the daily job plans the Post-2004 part a year ahead and never brings the Pre-2005 monthly payments back
    annuities_extend(day=dt.date(2026, 6, 2), now=eastern(2026, 6, 2))
    assert [p.kind for p in pre(participation)] == ["annuity", "lump_sum"]
    assert rows(participation)[-1].payment_date == dt.date(2027, 6, 1)
    # the lump sum is paid by the June run like any other payment
    credited(dt.date(2026, 5, 29))
    payment_day_process(day=dt.date(2026, 6, 1), now=eastern(2026, 6, 1, 7))
    run = payment_run_prepare(
        period_end=dt.date(2026, 6, 1), actor=staff_user("prep2", "administrator"), now=eastern(2026, 6, 1, 8)
    )
    payment_run_approve(run=run, actor=staff_user("appr2", "committee"), now=eastern(2026, 6, 1, 10))
    assert [p.status for p in pre(participation)] == [S.PAID, S.PAID]


def test_brp_app_a_4_a_joint_and_survivor_pre_2005_benefit_is_valued_with_the_survivors_part(
    toy_basis, no_key_employees
):
    participation = pre_2005_participant(
        marital="married", spouse_birth=dt.date(1966, 5, 1), spouse_name="Dana Roe"
    )
    pay_may_1(participation)
    annuity = annuity_pre_2005_cash_out(
        annuity=Annuity.objects.get(participation=participation),
        as_of=dt.date(2026, 5, 15),
        actor="test",
        now=eastern(2026, 5, 15),
    )
    # The Pension Plan's QJSA: 635.74 a month, 317.87 to the Spouse. On June 1, 2026 the Spouse is 60 and 1 month:
    # 71 certain payments and 6.5, 12 ä(12)y = 77.5; both alive 17.5 (the participant's), so the survivor's part
    # is worth 77.5 - 17.5 = 60 payments: 635.74 x 17.5 + 317.87 x 60 = 11,125.45 + 19,072.20 = 30,197.65
    assert annuity.pre_2005["cash_out"]["amount"] == "30197.65"
    lump = [p for p in pre(participation) if p.kind == "lump_sum"]
    assert [(p.payment_date, p.amount) for p in lump] == [(dt.date(2026, 6, 1), Decimal("30197.65"))]
    assert not [p for p in pre(participation) if p.payment_date > dt.date(2026, 6, 1)]  # the survivor's too


def test_brp_app_a_4_is_refused_before_the_benefit_is_fixed_and_after_it_is_paid_out(
    toy_basis, no_key_employees
):
    participation = pre_2005_participant()
    annuity = Annuity.objects.get(participation=participation)
    planned = [(p.pk, p.status, p.amount) for p in rows(participation)]
    with pytest.raises(AnnuityError, match=r"not in pay with its amount fixed.*BRP App\. A 4\(a\)"):
        annuity_pre_2005_cash_out(
            annuity=annuity, as_of=dt.date(2026, 4, 25), actor="test", now=eastern(2026, 4, 25)
        )
    assert [(p.pk, p.status, p.amount) for p in rows(participation)] == planned  # nothing changed
    pay_may_1(participation)
    annuity_pre_2005_cash_out(
        annuity=annuity, as_of=dt.date(2026, 5, 15), actor="test", now=eastern(2026, 5, 15)
    )
    with pytest.raises(AnnuityError, match=r"already distributed.*29,166\.73.*BRP App\. A 4\(b\)"):
        annuity_pre_2005_cash_out(
            annuity=annuity, as_of=dt.date(2026, 5, 20), actor="test", now=eastern(2026, 5, 20)
        )


def test_brp_app_a_4_is_refused_without_a_pre_2005_benefit(toy_basis, no_key_employees):
    participation = brp_participation()
    separate(participation, dt.date(2026, 4, 20))
    pay_may_1(participation)
    with pytest.raises(AnnuityError, match="no Pre-2005 Supplemental Benefit"):
        annuity_pre_2005_cash_out(
            annuity=Annuity.objects.get(participation=participation),
            as_of=dt.date(2026, 5, 15),
            actor="test",
            now=eastern(2026, 5, 15),
        )


def test_the_committee_reviews_the_lump_sum_and_its_basis_before_confirming(
    toy_basis, no_key_employees, settings
):
    participation = pre_2005_participant()
    pay_may_1(participation)
    url = f"/staff/pensions/defined-benefit/{participation.pk}/pre-2005-cash-out"
    with freeze_time("2026-05-15 15:00:00"):
        committee = client_of(staff_user("comm", "committee"))
        assert (
            "Review the lump sum"
            in committee.get(f"/staff/pensions/defined-benefit/{participation.pk}/").content.decode()
        )
        page = committee.get(url).content.decode()
        for text in (
            "29,166.73",
            "June 1, 2026",
            "toy table; 0.0% flat; age 65",
            "BRP App. A 4",
            "Monthly payment 2",
        ):
            assert text in page, text
        assert not pre(participation, status=S.CANCELLED)  # reviewing changes nothing
        administrator = client_of(staff_user("adm", "administrator"))
        assert administrator.get(url).status_code == 403
        assert administrator.post(url, {"confirm": "yes"}).status_code == 403
        assert committee.post(url, {"confirm": "yes"}).status_code == 302
    assert [p.kind for p in pre(participation)] == ["annuity", "lump_sum"]


def test_the_portal_calendar_shows_the_post_2004_and_pre_2005_parts_apart(
    client, toy_basis, no_key_employees
):
    participation = pre_2005_participant()
    user = participant_user(participation, "pat")
    page = client_of(user).get("/portal/payments/").content.decode()
    may = page[page.index("May 1, 2026") : page.index("June 1, 2026")]
    # App. A 3(b): on May 1, 2026 the Post-2004 part (4,166.67) and the Pre-2005 part (1,666.67) are paid apart
    post, pre_part = may.index("Post-2004 part"), may.index("Pre-2005 part")
    assert post < may.index("4,166.67") < pre_part < may.index("1,666.67")
    assert "BRP 1.3(o)" in may and "BRP App. A 3(b)" in may
    other = pre_2005_participant(first_name="Other")
    assert str(other.person.full_name) not in page
