"""The payments lines of the staff work queue (core.workqueue): runs awaiting approval, held payments,
emergency requests awaiting the Committee's decision. Registered in PaymentsConfig.ready()."""

from __future__ import annotations

import datetime as dt

from django.urls import reverse

from core.workqueue import QueueLine
from payments.models import EmergencyWithdrawal, PaymentRun, ScheduledPayment


def payments_work_queue(*, today: dt.date, now: dt.datetime) -> list[QueueLine]:
    awaiting = PaymentRun.objects.filter(status=PaymentRun.Status.PREPARED)
    held = ScheduledPayment.objects.filter(status=ScheduledPayment.Status.HELD)
    overdue_held = held.filter(payment_date__lt=today).count()
    requested = EmergencyWithdrawal.objects.filter(status=EmergencyWithdrawal.Status.REQUESTED).count()
    return [
        QueueLine(
            key="runs",
            label="Payment runs awaiting approval",
            count=awaiting.count(),
            url=reverse("payments_staff:runs"),
            detail="prepared by one person, approved and released by another",
        ),
        QueueLine(
            key="held",
            label="Held payments",
            count=held.count(),
            url=reverse("payments_staff:held"),
            detail=f"{overdue_held} past their Payment Date" if overdue_held else "an input is missing",
            urgent=bool(overdue_held),
        ),
        QueueLine(
            key="emergencies",
            label="Emergency requests awaiting a decision",
            count=requested,
            url=reverse("payments_staff:emergencies") + "?status=requested",
            detail="EDCP 5.5: the Committee decides",
        ),
    ]
