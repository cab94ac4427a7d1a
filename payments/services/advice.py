"""Payment advice: when a run is released, each participant paid in it gets an advice (gross, withholding,
net, date) by email with the PDF attached, or on paper (core.notices); so does each named payee who is not a
participant (a Beneficiary paid after a death, EDCP 5.4, RRP 4.01(a); an alternate payee under a domestic
relations order, EDCP 5.9, RRP 2017 4.01(c)): by email when their record holds an address, else on paper to
the mailing address on their record. A payee's advice holds only the payments to that payee.

The sending is a claimed batch job (core.jobs): one JobRun per run (`payment_advice`, key "run N") under a
lock, progress recorded per recipient; a rerun of a done run sends nothing; a run that stopped (a crash, a
failed email server) is recorded failed with the recipient it stopped on, and a retry resumes there: every
recipient already advised (sent, queued or printed) is skipped before any PDF is rendered.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal

from django.urls import reverse
from django.utils import timezone

from core.audit import Actor, actor_label
from core.jobs import job_claim, job_finish, job_item, job_lock, job_progress
from core.models import JobRun, Notice
from core.money import ZERO
from core.notices import NoticeKind, Payee, notice_key, notice_send, reachable
from core.pdf import document_store
from participants.models import Beneficiary, Participation, Person
from participants.selectors import beneficiaries_in_force
from payments.models import DomesticRelationsOrder, PaymentRun, ScheduledPayment
from plans.selectors import committee_contact

ADVICE_KIND = "payment_advice"  # the Document kind
ADVICE_TEMPLATE = "payments/pdf/advice.html"
PAYEE_ADVICE_TEMPLATE = "payments/pdf/payee_advice.html"
ADVICE_JOB = "payment_advice"  # the JobRun kind
ADVICE_TASK = "payments.send_advice"  # what a staff retry of a failed run queues (core.jobs.job_retry)


def _fmt(value: Decimal | None) -> str:
    return f"{value or ZERO:,.2f}"


@dataclass
class _Recipient:
    """One advice: to a participant (`person`) or to a named payee (`payee`), for its payments in the run."""

    key: str
    person: Person | None = None
    payee: Payee | None = None
    kind: str = "participant"  # participant, beneficiary, alternate_payee, unknown
    rows: list[ScheduledPayment] = field(default_factory=list)


def advice_job_key(*, run: PaymentRun) -> str:
    return f"run {run.pk}"


def payment_advice_job(*, run: PaymentRun, actor: Actor, now: dt.datetime) -> JobRun:
    """The advice of a released run as a claimed batch job: once per run; a failed run is resumed by a retry."""
    if run.status != PaymentRun.Status.RELEASED:
        raise ValueError(f"payment run {run.pk} is not released: no advice before approval")
    with job_lock(f"{ADVICE_JOB}:{run.pk}"):
        job = job_claim(kind=ADVICE_JOB, key=advice_job_key(run=run), now=now)
        if job.status == JobRun.Status.DONE:
            return job
        job.stats = {"task": ADVICE_TASK, "args": [run.pk]}
        stats = payment_advice_send(run=run, actor=actor, now=now, job=job)
        return job_finish(
            job,
            status=JobRun.Status.DONE,
            message=f"{stats['advices']} advice(s) sent, {stats['already']} already sent",
            stats={**job.stats, **stats},
        )


def payment_advice_send(
    *, run: PaymentRun, actor: Actor, now: dt.datetime, job: JobRun | None = None
) -> dict:
    """One advice per participant and per named payee paid in a released run. Idempotent per run and
    recipient: those already advised are skipped (counted in `already`). With `job`, progress is recorded
    after each recipient and a failure names the recipient it stopped on."""
    if run.status != PaymentRun.Status.RELEASED:
        raise ValueError(f"payment run {run.pk} is not released: no advice before approval")
    recipients = advice_recipients(run=run)
    done = set(
        Notice.objects.filter(
            kind=NoticeKind.PAYMENT_ADVICE, object_type=run._meta.label, object_id=str(run.pk)
        )
        .exclude(status=Notice.Status.FAILED)
        .values_list("key", flat=True)
    )
    stats = {"advices": 0, "already": 0}
    for number, recipient in enumerate(recipients, start=1):
        key = notice_key(
            kind=NoticeKind.PAYMENT_ADVICE, obj=run, person=recipient.person, payee=recipient.payee
        )
        if key in done:
            stats["already"] += 1
        else:
            if job is not None:
                job_item(job, f"advice {number} of {len(recipients)} ({recipient.key})")
            _advise(run=run, recipient=recipient, actor=actor, now=now)
            stats["advices"] += 1
        if job is not None:
            job_progress(job, done=number, total=len(recipients), message="sending payment advice")
    return stats


def advice_recipients(*, run: PaymentRun) -> list[_Recipient]:
    """Who gets an advice for the run, in a fixed order: participants (by person), then named payees (by
    their record), each with their payments (by release date)."""
    payments = (
        run.payments.exclude(status=ScheduledPayment.Status.CANCELLED)
        .select_related("participation__person", "participation__plan", "account", "schedule__dro")
        .order_by("participation__person_id", "release_date", "id")
    )
    by_key: dict[str, _Recipient] = {}
    resolver = _PayeeResolver()
    for p in payments:
        if not p.payee_name:
            person = p.participation.person
            recipient = by_key.setdefault(
                f"person:{person.pk}", _Recipient(key=f"person:{person.pk}", person=person)
            )
        else:
            payee, kind = resolver.payee(p)
            recipient = by_key.setdefault(
                f"payee:{payee.key}", _Recipient(key=f"payee:{payee.key}", payee=payee, kind=kind)
            )
        recipient.rows.append(p)
    people = sorted((r for r in by_key.values() if r.person is not None), key=lambda r: r.person.pk)  # type: ignore[union-attr]
    payees = sorted((r for r in by_key.values() if r.payee is not None), key=lambda r: r.key)
    return people + payees


class _PayeeResolver:
    """The record of a named payee: the order (alternate payee), else the Beneficiary in the designation in
    force (its contact on BeneficiaryTaxInfo), else the name alone (no notice can reach it: recorded)."""

    def __init__(self) -> None:
        self._designations: dict[tuple[int, int], list[Beneficiary]] = {}

    def payee(self, p: ScheduledPayment) -> tuple[Payee, str]:
        order = p.schedule.dro
        if order is None and p.trigger == "domestic_relations_order":
            order = self._order_named(p.participation, p.payee_name)
        if order is not None:
            return _order_payee(order), "alternate_payee"
        beneficiary = self._beneficiary_named(p.participation, p.payee_name)
        if beneficiary is not None:
            return _beneficiary_payee(beneficiary), "beneficiary"
        order = self._order_named(p.participation, p.payee_name)
        if order is not None:  # a defined benefit in pay shared under an order
            return _order_payee(order), "alternate_payee"
        return Payee(key=f"name:{p.participation_id}:{p.payee_name}"[:150], name=p.payee_name), "unknown"

    @staticmethod
    def _order_named(participation: Participation, name: str) -> DomesticRelationsOrder | None:
        return (
            DomesticRelationsOrder.objects.filter(participation=participation, alternate_payee=name)
            .order_by("-order_date", "-id")
            .first()
        )

    def _beneficiary_named(self, participation: Participation, name: str) -> Beneficiary | None:
        cache_key = (participation.person_id, participation.plan_id)
        if cache_key not in self._designations:
            designation = beneficiaries_in_force(person=participation.person, plan=participation.plan)
            self._designations[cache_key] = (
                list(designation.beneficiaries.select_related("tax_info").order_by("id"))
                if designation is not None
                else []
            )
        return next((b for b in self._designations[cache_key] if b.name == name), None)


def _contacts(*, rows: list[ScheduledPayment], on: dt.date) -> list[dict]:
    """Where a payee who is not a participant writes with a question: each paying plan's Committee contact in
    force on the day of the advice (the dated setting, else the catalog's), once per plan, in the rows' order."""
    contacts: dict[int, dict] = {}
    for p in rows:
        plan = p.participation.plan
        if plan.pk not in contacts:
            contacts[plan.pk] = {"plan": plan.name, "contact": committee_contact(plan=plan, as_of=on)}
    return [c for c in contacts.values() if c["contact"]]


def _order_payee(order: DomesticRelationsOrder) -> Payee:
    lines = tuple(line for line in order.alternate_payee_address.splitlines() if line.strip())
    return Payee(
        key=f"dro:{order.pk}",
        name=order.alternate_payee,
        email=order.alternate_payee_email,
        address_lines=lines,
    )


def _beneficiary_payee(beneficiary: Beneficiary) -> Payee:
    info = getattr(beneficiary, "tax_info", None)
    return Payee(
        key=f"beneficiary:{beneficiary.pk}",
        name=beneficiary.name,
        email=info.email if info is not None else "",
        address_lines=tuple(info.address_lines) if info is not None else (),
    )


def _figures(rows: list[ScheduledPayment]) -> tuple[list[dict], dict]:
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
    withholding = sum(((p.federal_withholding or ZERO) + (p.state_withholding or ZERO) for p in rows), ZERO)
    totals = {
        "gross": _fmt(sum((p.amount or ZERO for p in rows), ZERO)),
        "withholding": _fmt(withholding),
        "net": _fmt(sum((p.net_amount or ZERO for p in rows), ZERO)),
    }
    return lines, totals


def _advise(*, run: PaymentRun, recipient: _Recipient, actor: Actor, now: dt.datetime) -> Notice:
    if recipient.payee is not None:
        return _advise_payee(run=run, recipient=recipient, actor=actor, now=now)
    person = recipient.person
    lines, totals = _figures(recipient.rows)
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
    return notice_send(
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


def _advise_payee(*, run: PaymentRun, recipient: _Recipient, actor: Actor, now: dt.datetime) -> Notice:
    """A named payee's advice: their own payments only; no participant's figures, no employee number. The
    document belongs to no participant (staff only), so it never shows in a participant's portal."""
    payee = recipient.payee
    assert payee is not None  # noqa: S101 - _advise sends only payees here
    lines, totals = _figures(recipient.rows)
    context = {
        "payee": payee,
        "kind": recipient.kind,
        "lines": lines,
        "totals": totals,
        "contacts": _contacts(rows=recipient.rows, on=timezone.localdate(now)),
    }
    document = (
        None
        if not (payee.email or payee.has_address)
        else document_store(
            kind=ADVICE_KIND,
            title=f"Payment advice, run {run.pk}",
            template=PAYEE_ADVICE_TEMPLATE,
            context={**context, "run": run, "title": "Payment advice"},
            actor=actor_label(actor),
            obj=run,
            now=now,
        )
    )
    return notice_send(
        kind=NoticeKind.PAYMENT_ADVICE,
        subject="Payment advice: a plan payment to you is released",
        template="email/payment_advice_payee.txt",
        context=context,
        link="",
        as_of=now,
        actor=actor,
        payee=payee,
        obj=run,
        document=document,
    )
