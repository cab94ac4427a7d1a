"""Reads of payment schedules: what elections ask, the portal calendar, the staff queues and forecasts."""
from __future__ import annotations

import datetime as dt

from participants.models import Participation
from payments.models import PaymentSchedule, ScheduledPayment

S = ScheduledPayment.Status
STARTED = (S.APPROVED, S.RELEASED, S.PAID)


def account_payments_started(*, participation: Participation, account_kind: str, specified_month: dt.date | None) -> bool:
    """Has a benefit payment of this account been released or paid (EDCP 6.2: its schedule can no longer change)?"""
    return ScheduledPayment.objects.filter(
        participation=participation, account__kind=account_kind, account__specified_month=specified_month,
        schedule__kind=PaymentSchedule.Kind.BENEFIT, status__in=STARTED).exists()
