"""Payment advice: when a run is released, each participant paid in it gets an advice (gross, withholding,
net, date) by email with the PDF attached, or on paper (core.notices). Rerunning sends nothing twice."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from decimal import Decimal

from django.urls import reverse

from core.audit import Actor, actor_label
from core.models import Notice
from core.money import ZERO
from core.notices import NoticeKind, notice_send, reachable
from core.pdf import document_store
from payments.models import PaymentRun, ScheduledPayment

ADVICE_KIND = "payment_advice"  # the Document kind
ADVICE_TEMPLATE = "payments/pdf/advice.html"


def _fmt(value: Decimal | None) -> str:
    return f"{value or ZERO:,.2f}"


def payment_advice_send(*, run: PaymentRun, actor: Actor, now: dt.datetime) -> dict:
    """One advice per participant paid in a released run (payments to a named payee, a Beneficiary or an
    alternate payee, are not the participant's and get none here). Idempotent per run and person."""
    if run.status != PaymentRun.Status.RELEASED:
        raise ValueError(f"payment run {run.pk} is not released: no advice before approval")
    by_person: dict[int, list[ScheduledPayment]] = defaultdict(list)
    payments = (
        run.payments.exclude(status=ScheduledPayment.Status.CANCELLED)
        .filter(payee_name="")
        .select_related("participation__person", "participation__plan", "account")
        .order_by("participation__person_id", "release_date", "id")
    )
    for p in payments:
        by_person[p.participation.person_id].append(p)
    # Resumable: those already advised (sent, queued or printed) are skipped before any PDF is rendered.
    done = set(
        Notice.objects.filter(
            kind=NoticeKind.PAYMENT_ADVICE, object_type=run._meta.label, object_id=str(run.pk)
        )
        .exclude(status=Notice.Status.FAILED)
        .values_list("person_id", flat=True)
    )
    stats = {"advices": 0, "already": 0}
    for person_id, rows in by_person.items():
        if person_id in done:
            stats["already"] += 1
            continue
        person = rows[0].participation.person
        lines = [
            {
                "plan": p.participation.plan.name,
                "benefit": p.benefit or p.label,
                "date": p.release_date,
                "gross": _fmt(p.amount),
                "federal": _fmt(p.federal_withholding),
                "state": _fmt(p.state_withholding),
                "net": _fmt(p.net_amount),
                "cite": p.cite,
            }
            for p in rows
        ]
        withholding = sum(
            ((p.federal_withholding or ZERO) + (p.state_withholding or ZERO) for p in rows), ZERO
        )
        totals = {
            "gross": _fmt(sum((p.amount or ZERO for p in rows), ZERO)),
            "withholding": _fmt(withholding),
            "net": _fmt(sum((p.net_amount or ZERO for p in rows), ZERO)),
        }
        # A payee no notice can reach gets no PDF rendered; the notice is still recorded (undeliverable).
        document = (
            None
            if not reachable(person=person)
            else document_store(
                kind=ADVICE_KIND,
                title=f"Payment advice, run {run.pk}",
                template=ADVICE_TEMPLATE,
                context={
                    "person": person,
                    "run": run,
                    "lines": lines,
                    "totals": totals,
                    "title": "Payment advice",
                },
                actor=actor_label(actor),
                person=person,
                obj=run,
                now=now,
            )
        )
        notice_send(
            kind=NoticeKind.PAYMENT_ADVICE,
            subject="Payment advice: your plan payment is released",
            template="email/payment_advice.txt",
            context={"lines": lines, "totals": totals},
            link=reverse("payments_portal:calendar"),
            as_of=now,
            actor=actor,
            person=person,
            obj=run,
            document=document,
        )
        stats["advices"] += 1
    return stats
