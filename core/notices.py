"""Notices people receive: the one way every app sends an email or a paper letter (issue 13).

`notice_send` renders the body from a template under templates/email/, looks at the recipient's delivery choice
and either emails it (Django's mail: the console or file backend in `make run`, SMTP from EMAIL_URL in
production) with the document attached, or puts it in the staff print queue (paper). Each notice is recorded
(`core.models.Notice`: what, to whom, when, which document, how it went).

Rules (29 CFR 2520.104b-1(c), the DOL's electronic disclosure safe harbor, as this system reads it):
- paper is the default; a person receives notices electronically only after consenting to it, and the consent
  (date, version and hash of the text agreed to, optionally address and browser) is kept (`DeliveryChoice`);
- a paper notice is printed: its document, else a letter of the notice, with an address page before it, in one
  merged PDF per day (`print_batch_pdf`);
- the body of an email holds a link to the page and no personal figures beyond the recipient's own.

A named payee who is not a participant (a beneficiary paid after a death, an alternate payee under a domestic
relations order) has no portal and no consent to record: a notice reaches them by email when their record holds
an address for it, else on paper to the mailing address on their record (`Payee`).

Idempotent per (kind, object, recipient): a second call with the same key sends nothing and returns the first
record; a failed email is retried by the next call.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.mail import EmailMessage
from django.db import models, transaction
from django.template.loader import render_to_string
from django.utils import timezone
from pypdf import PdfReader, PdfWriter

from core.audit import Actor, actor_label, audit_record
from core.errors import ApplicationError
from core.models import DeliveryChoice, Document, Notice
from core.pdf import document_bytes, document_store, render_pdf

if TYPE_CHECKING:
    from django.db.models import QuerySet

log = logging.getLogger(__name__)

# The consent text a person agrees to (templates/email/consent.txt); a new text gets a new version.
CONSENT_VERSION = "2026-1"
CONSENT_TEMPLATE = "email/consent.txt"
LETTER_TEMPLATE = "email/pdf/letter.html"
ADDRESS_PAGE_TEMPLATE = "email/pdf/address_page.html"
LETTER_KIND = "notice_letter"
PRINT_BATCH_KIND = "print_batch"


class NoticeKind(StrEnum):
    """What a notice is about; the label shows in the portal and on the staff pages."""

    ELECTION_CONFIRMATION = "election_confirmation"
    ELIGIBILITY = "eligibility"
    WINDOW_OPENED = "window_opened"
    WINDOW_REMINDER = "window_reminder"
    WINDOW_CLOSING = "window_closing"
    PAYMENT_ADVICE = "payment_advice"
    EMERGENCY_DECISION = "emergency_decision"
    CLAIM_NOTICE = "claim_notice"
    CLAIM_STAFF = "claim_staff"
    STATEMENT_AVAILABLE = "statement_available"

    @property
    def label(self) -> str:
        return KIND_LABELS[self.value]


KIND_LABELS: dict[str, str] = {
    NoticeKind.ELECTION_CONFIRMATION: "Election confirmation",
    NoticeKind.ELIGIBILITY: "Notice of initial eligibility",
    NoticeKind.WINDOW_OPENED: "Enrollment window open",
    NoticeKind.WINDOW_REMINDER: "Reminder to elect",
    NoticeKind.WINDOW_CLOSING: "Enrollment window closing",
    NoticeKind.PAYMENT_ADVICE: "Payment advice",
    NoticeKind.EMERGENCY_DECISION: "Emergency withdrawal decision",
    NoticeKind.CLAIM_NOTICE: "Claim notice",
    NoticeKind.CLAIM_STAFF: "Claim deadline (staff)",
    NoticeKind.STATEMENT_AVAILABLE: "Statement available",
}


class NoticeError(ApplicationError):
    """A refused delivery choice or print action; the message says why."""


@dataclass(frozen=True)
class Payee:
    """A named payee who is not a participant: a beneficiary after a death, an alternate payee under a domestic
    relations order. `key` names their record (e.g. "beneficiary:12", "dro:3") for the notice's idempotency key.
    The email goes to `email` when the record holds one, else the paper goes to `address_lines`."""

    key: str
    name: str
    email: str = ""
    address_lines: tuple[str, ...] = ()

    @property
    def has_address(self) -> bool:
        return bool(self.address_lines)


# --- delivery choice -------------------------------------------------------------------------------------


def consent_text() -> str:
    return render_to_string(CONSENT_TEMPLATE, {"version": CONSENT_VERSION})


def delivery_in_force(*, person: Any) -> DeliveryChoice | None:
    """The person's newest delivery choice, or None (paper, the default)."""
    return DeliveryChoice.objects.filter(person=person).order_by("-chosen_at", "-id").first()


def delivers_electronically(*, person: Any) -> bool:
    choice = delivery_in_force(person=person)
    return (
        choice is not None
        and choice.delivery == DeliveryChoice.Delivery.ELECTRONIC
        and bool(choice.consent_version)
        and bool(person.email)
    )


def reachable(*, person: Any) -> bool:
    """Whether a notice can reach the person at all: by email (consented) or by mail (an address on file)."""
    return delivers_electronically(person=person) or bool(person.has_address)


@transaction.atomic
def delivery_choose(
    *,
    person: Any,
    delivery: str,
    consented: bool,
    consent_version: str,
    actor: Actor,
    as_of: dt.datetime,
    ip_address: str | None = None,
    user_agent: str = "",
) -> DeliveryChoice:
    """Record a delivery choice. Electronic needs consent to the current text and an email address on file;
    paper needs a mailing address (29 CFR 2520.104b-1(c))."""
    if delivery not in DeliveryChoice.Delivery.values:
        raise NoticeError(f"Unknown delivery {delivery!r}: choose electronic or paper.")
    electronic = delivery == DeliveryChoice.Delivery.ELECTRONIC
    if electronic:
        if not consented:
            raise NoticeError(
                "Electronic delivery needs your consent to the text shown (29 CFR 2520.104b-1(c)); "
                "without it notices stay on paper."
            )
        if consent_version != CONSENT_VERSION:
            raise NoticeError(
                f"The consent text changed (version {CONSENT_VERSION}): read it again and consent to it."
            )
        if not person.email:
            raise NoticeError(
                "Electronic delivery needs an email address on file; ask the Committee to add one."
            )
    elif not person.has_address:
        raise NoticeError("Paper delivery needs a mailing address on file; ask the Committee to add one.")
    text = consent_text() if electronic else ""
    choice = DeliveryChoice.objects.create(
        person=person,
        delivery=delivery,
        consent_version=CONSENT_VERSION if electronic else "",
        consent_sha256=hashlib.sha256(text.encode()).hexdigest() if electronic else "",
        chosen_at=as_of,
        ip_address=ip_address or None,
        user_agent=(user_agent or "")[:300],
        actor=actor_label(actor),
    )
    audit_record(
        action="notices.delivery_choose",
        actor=actor,
        at=as_of,
        obj=person,
        data={"delivery": delivery, "consent_version": choice.consent_version},
    )
    return choice


# --- sending ------------------------------------------------------------------------------------------------


def notice_key(
    *,
    kind: str,
    obj: models.Model | None,
    person: Any = None,
    user: Any = None,
    payee: Payee | None = None,
    extra: str = "",
) -> str:
    """The idempotency key: one notice of a kind per object and recipient (and `extra`, e.g. a day)."""
    if payee is not None:
        who = f"payee:{payee.key}"
    elif person is not None:
        who = f"person:{person.pk}"
    else:
        who = f"user:{getattr(user, 'pk', '')}"
    what = f"{obj._meta.label}:{obj.pk}" if obj is not None else "-"
    return ":".join(p for p in (kind, what, who, extra) if p)[:200]


def absolute_link(link: str) -> str:
    if not link or link.startswith(("http://", "https://")):
        return link
    return settings.SITE_URL.rstrip("/") + "/" + link.lstrip("/")


def notice_send(
    *,
    kind: NoticeKind | str,
    subject: str,
    template: str,
    context: dict,
    link: str,
    as_of: dt.datetime,
    actor: Actor,
    person: Any = None,
    user: User | None = None,
    payee: Payee | None = None,
    obj: models.Model | None = None,
    document: Document | None = None,
    key_extra: str = "",
) -> Notice:
    """Send one notice to a participant (`person`), a staff user (`user`) or a named payee who is not a
    participant (`payee`), once per (kind, object, recipient).

    Electronic delivery (consented, with an email address), a staff user, or a payee whose record holds an
    email address: an email with the link and the document attached. Otherwise paper: the document (or a
    letter of the notice) goes to the print queue.
    """
    if sum(r is not None for r in (person, user, payee)) != 1:
        raise ValueError("a notice goes to exactly one recipient: a person, a staff user or a named payee")
    kind = NoticeKind(kind)
    key = notice_key(kind=kind, obj=obj, person=person, user=user, payee=payee, extra=key_extra)
    with transaction.atomic():
        # The row is the claim: a concurrent call with the same key waits on it here, then finds it sent.
        notice, created = Notice.objects.select_for_update().get_or_create(
            key=key,
            defaults={
                "kind": kind,
                "person": person,
                "user": user,
                "payee_name": payee.name[:200] if payee is not None else "",
                "object_type": obj._meta.label if obj is not None else "",
                "object_id": str(obj.pk) if obj is not None else "",
                "channel": Notice.Channel.EMAIL,
                "status": Notice.Status.FAILED,
                "error": "not sent yet",
                "subject": subject[:300],
                "created_at": as_of,
                "actor": actor_label(actor),
            },
        )
        if not created and notice.status != Notice.Status.FAILED:
            return notice  # already sent, queued or printed: a retry sends nothing
        full_link = absolute_link(link)
        electronic, to = _electronic_to(person=person, user=user, payee=payee)
        body = render_to_string(
            template,
            {
                **context,
                "person": person,
                "user": user,
                "payee": payee,
                "link": full_link,
                "electronic": electronic,
            },
        )
        notice.channel = Notice.Channel.EMAIL if electronic else Notice.Channel.PAPER
        notice.to, notice.subject, notice.body, notice.link = to, subject[:300], body, full_link
        notice.document, notice.attempts = document, notice.attempts + 1
        if electronic:
            _email(notice, document, as_of=as_of)
        elif payee is not None:
            _queue_payee_for_print(notice, payee=payee, document=document, as_of=as_of)
        else:
            _queue_for_print(notice, person=person, document=document, as_of=as_of)
        notice.save()
    return notice


def _electronic_to(*, person: Any, user: Any, payee: Payee | None) -> tuple[bool, str]:
    """Whether the notice goes by email, and to which address ("" on paper)."""
    if user is not None:
        return True, user.email
    if payee is not None:
        return bool(payee.email), payee.email
    electronic = delivers_electronically(person=person)
    return electronic, person.email if electronic else ""


def _email(notice: Notice, document: Document | None, *, as_of: dt.datetime) -> None:
    if not notice.to:
        notice.status, notice.error = Notice.Status.UNDELIVERABLE, "no email address on file"
        return
    message = EmailMessage(
        subject=notice.subject, body=notice.body, from_email=settings.DEFAULT_FROM_EMAIL, to=[notice.to]
    )
    try:
        if document is not None:
            message.attach(_file_name(document), document_bytes(document), "application/pdf")
        message.send()
    except Exception as exc:  # noqa: BLE001 - recorded on the notice; the next call retries it
        log.warning("notice %s to %s failed", notice.key, notice.to, exc_info=True)
        notice.status, notice.error = Notice.Status.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
        return
    notice.status, notice.error, notice.sent_at = Notice.Status.SENT, "", as_of


def _file_name(document: Document) -> str:
    stem = "".join(c if c.isalnum() else "-" for c in document.title.lower()).strip("-")[:80] or document.kind
    return f"{stem}.pdf"


def _queue_for_print(notice: Notice, *, person: Any, document: Document | None, as_of: dt.datetime) -> None:
    if not person.has_address:
        notice.status, notice.error = Notice.Status.UNDELIVERABLE, "paper delivery and no mailing address"
        return
    if document is None:
        document = document_store(
            kind=LETTER_KIND,
            title=notice.subject,
            template=LETTER_TEMPLATE,
            context={"subject": notice.subject, "body": notice.body, "person": person},
            actor=notice.actor,
            person=person,
            now=as_of,
        )
    notice.print_document = document
    notice.status, notice.error = Notice.Status.QUEUED, ""
    notice.queued_on = _local_day(as_of)


def _queue_payee_for_print(
    notice: Notice, *, payee: Payee, document: Document | None, as_of: dt.datetime
) -> None:
    """Paper to a named payee: the address lines are kept on the notice for its address page."""
    if not payee.has_address:
        notice.status, notice.error = Notice.Status.UNDELIVERABLE, "no email and no mailing address on file"
        return
    if document is None:
        document = document_store(
            kind=LETTER_KIND,
            title=notice.subject,
            template=LETTER_TEMPLATE,
            context={"subject": notice.subject, "body": notice.body, "payee": payee},
            actor=notice.actor,
            now=as_of,
        )
    notice.address = "\n".join(payee.address_lines)
    notice.print_document = document
    notice.status, notice.error = Notice.Status.QUEUED, ""
    notice.queued_on = _local_day(as_of)


def _local_day(moment: dt.datetime) -> dt.date:
    return timezone.localdate(moment)


def statement_available_send(
    *, person: Any, statement: models.Model, document: Document, link: str, period: str, as_of: dt.datetime
) -> Notice:
    """For the statements app: tell a participant their statement for `period` is in the portal (one per
    statement). The email carries the link and the PDF (electronic delivery), else the statement is printed."""
    return notice_send(
        kind=NoticeKind.STATEMENT_AVAILABLE,
        subject=f"Your statement for {period} is available",
        template="email/statement_available.txt",
        context={"period": period},
        link=link,
        as_of=as_of,
        actor="statements",
        person=person,
        obj=statement,
        document=document,
    )


# --- reads ----------------------------------------------------------------------------------------------------


def notices_of(*, person: Any) -> QuerySet[Notice]:
    return Notice.objects.filter(person=person).select_related("document").order_by("-created_at", "-id")


def notices_labelled(*, person: Any, limit: int = 200) -> list[Notice]:
    """The person's newest notices, each with `kind_label` (what it is about, in words)."""
    rows = list(notices_of(person=person)[:limit])
    for n in rows:
        n.kind_label = KIND_LABELS.get(n.kind, n.kind)  # type: ignore[attr-defined]
    return rows


# --- the print queue ---------------------------------------------------------------------------------------


def print_days() -> list[dict]:
    """Each day with paper notices: how many, how many printed."""
    rows = (
        Notice.objects.filter(channel=Notice.Channel.PAPER, queued_on__isnull=False)
        .values("queued_on")
        .annotate(
            total=models.Count("id"),
            printed=models.Count("id", filter=models.Q(status=Notice.Status.PRINTED)),
        )
        .order_by("-queued_on")
    )
    return [dict(r) for r in rows]


def print_queue(*, day: dt.date) -> QuerySet[Notice]:
    return (
        Notice.objects.filter(
            channel=Notice.Channel.PAPER,
            queued_on=day,
            status__in=(Notice.Status.QUEUED, Notice.Status.PRINTED),
        )
        .select_related("person", "print_document")
        .order_by("person__last_name", "person__first_name", "payee_name", "id")
    )


def print_batch_pdf(*, day: dt.date) -> bytes:
    """The day's paper notices as one PDF: before each document an address page (for a window envelope)."""
    notices = list(print_queue(day=day))
    if not notices:
        raise NoticeError(f"No paper notice is queued for {day:%B %d, %Y}.")
    writer = PdfWriter()
    for notice in notices:
        if notice.print_document is None:  # never: queued notices always carry what to print
            continue
        page = render_pdf(
            ADDRESS_PAGE_TEMPLATE,
            {
                "notice": notice,
                "person": notice.person,
                "payee_lines": notice.address.splitlines() if notice.payee_name else [],
                "day": day,
            },
        )
        for source in (page, document_bytes(notice.print_document)):
            for p in PdfReader(io.BytesIO(source)).pages:
                writer.add_page(p)
    writer.add_metadata({"/Title": f"Print queue {day.isoformat()}"})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


@transaction.atomic
def print_batch_mark_printed(*, day: dt.date, actor: Actor, as_of: dt.datetime) -> int:
    """Staff mark the day's queue printed and mailed; returns how many notices it marks."""
    count = (
        print_queue(day=day)
        .filter(status=Notice.Status.QUEUED)
        .update(status=Notice.Status.PRINTED, printed_at=as_of, printed_by=actor_label(actor), sent_at=as_of)
    )
    if not count:
        raise NoticeError(f"Nothing is waiting to be printed for {day:%B %d, %Y}.")
    audit_record(
        action="notices.print_batch_printed",
        actor=actor,
        at=as_of,
        data={"day": day.isoformat(), "notices": count},
    )
    return count
