"""Issue 11, documents: the payment register shows amounts with separators, account labels, names rather than
user names, and signature lines for the preparer and the approver with dates."""

from __future__ import annotations

import datetime as dt

import pytest

from core.pdf import document_bytes
from payments.services.runs import payment_run_approve, payment_run_prepare, payment_run_register
from tests.payments.factories import deferrals, scenario, simulate, staff_user
from tests.staffui.pdfs import assert_no_internal_note_or_username, flat, text_of

pytestmark = pytest.mark.django_db


def named(username: str, role: str, first: str, last: str):
    user = staff_user(username, role)
    user.first_name, user.last_name = first, last
    user.save()
    return user


def test_the_register_has_separators_labels_names_and_two_dated_signature_lines():
    simulate(
        scenario(
            events=deferrals(gross="20000.00")
            + [{"on": "2026-04-10", "type": "separation", "participant": "P1", "reason": "resignation"}],
            through="2026-05-08",
        )
    )
    preparer = named("prep-u1", "administrator", "Ada", "Preparer")
    approver = named("appr-u2", "committee", "Bo", "Approver")
    run = payment_run_prepare(period_end=dt.date(2026, 5, 15), actor=preparer)
    run = payment_run_approve(run=run, actor=approver)
    raw = text_of(document_bytes(payment_run_register(run=run, actor=approver)), "payment-register")
    text = flat(raw)
    assert "60,000.00" in text and "60000.00" not in text
    assert "Retirement/Termination" in text and "Executive Deferred" in text  # the account and plan in words
    assert "Prepared by Ada Preparer: signature and date" in text
    assert "Approved by Bo Approver: signature and date" in text
    assert "prepared by Ada Preparer on" in text and "approved by Bo Approver on" in text
    assert_no_internal_note_or_username(raw, "prep-u1", "appr-u2")
