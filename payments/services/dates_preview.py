"""The payment dates a payment election or a change of schedule would lead to (issue 11: the review page of the
portal shows old against new): the schedule engine on the account's facts with the election or change put in,
for the participant's separation or, before one, an illustrative separation. It reads and writes nothing else."""

from __future__ import annotations

import datetime as dt

from books.models import Account
from participants.models import Participation
from participants.selectors import key_employee_status
from payments.services.engine import AccountFacts, Change, Election, KeyStatus, compute_schedule
from payments.services.facts import load_facts


def _facts(
    participation: Participation, account_kind: str, specified_month: dt.date | None, as_of: dt.date
) -> AccountFacts:
    account = Account.objects.filter(
        participation=participation, kind=account_kind, specified_month=specified_month
    ).first() or Account(
        pk=0, participation=participation, kind=account_kind, specified_month=specified_month, opened_on=as_of
    )
    return next(iter(load_facts(accounts=[account], as_of=as_of, credited=None).values()))


def _assume_separation(f: AccountFacts, participation: Participation, separation: dt.date) -> None:
    """Before any event: a separation on `separation`, with the Key Employee list in force then (EDCP 5.1(b))."""
    spec = f.version.provision("key_employee", None) or {}
    status = key_employee_status(
        person=participation.person,
        on=separation,
        effective_month=spec.get("effective_month", 4),
        effective_day=spec.get("effective_day", 1),
    )
    f.separation = separation
    # An illustration: without a recorded list the standard date is shown, not a hold.
    f.key_status = KeyStatus(known=True, key=status.key, identification_year=status.identification_year)
    f.value_at_separation = (
        None  # the elected form is shown; the small-balance lump sum depends on the value then
    )
    f.value_known_through = f.separation_valuation_date = None


def payment_dates_preview(
    *,
    participation: Participation,
    account_kind: str,
    specified_month: dt.date | None,
    election: dict | None,
    change: dict | None,
    separation: dt.date,
    as_of: dt.date,
) -> dict:
    """The engine's payments for one account: with `election` (form, installments, lump_sum_percent, delay_months)
    in place of the one in force and `change` (submitted_on, delay_years, form, installments, new_first_payment)
    added to the accepted changes. `separation` is assumed when no separation, disability or death is recorded.
    Returns {"summary", "separation", "assumed", "payments": [{"date", "what", "cite"}], "hold"}."""
    f = _facts(participation, account_kind, specified_month, as_of)
    if election is not None:
        f.election = Election(
            form=election["form"],
            installments=election.get("installments"),
            lump_sum_percent=election.get("lump_sum_percent"),
            delay_months=election.get("delay_months") or 0,
        )
    if change is not None:
        f.changes = [
            *f.changes,
            Change(
                submitted_on=change["submitted_on"],
                delay_years=change.get("delay_years"),
                form=change.get("form") or None,
                installments=change.get("installments"),
            ),
        ]
        if change.get("new_first_payment") and f.specified_first_payment is not None:
            f.specified_first_payment, f.specified_changed = change["new_first_payment"], True
    assumed = f.separation is None and f.death is None and f.disability is None
    if assumed:
        _assume_separation(f, participation, separation)
    result = compute_schedule(f=f)
    payments = [
        {
            "date": p.payment_date,
            "what": "Lump sum" if p.kind == "lump_sum" else f"Installment {p.number} of {p.of}",
            "cite": p.cite,
        }
        for p in sorted(result.payments, key=lambda x: (x.payment_date, x.number))
    ]
    uses_separation = result.trigger in ("separation", "small_balance", "change_in_control")
    return {
        "summary": result.summary,
        "separation": f.separation if uses_separation else None,
        "assumed": assumed and uses_separation,
        "payments": payments,
        "hold": result.hold_reason,
    }
