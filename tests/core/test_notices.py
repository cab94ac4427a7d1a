"""Notices people receive (core.notices): paper until consent, email with the document once consented, one
record per notice, idempotent per kind, object and recipient, the print queue's merged PDF; the portal pages
(delivery choice with a review step, own history only) and the staff pages (print queue, participant page)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.urls import reverse

from core import notices
from core.models import AuditEvent, DeliveryChoice, Notice
from core.notices import CONSENT_VERSION, NoticeError, NoticeKind, delivery_choose, notice_send
from core.pdf import document_store, pdf_text
from tests.factories import PersonFactory, consent_to_email
from tests.signin import sign_in

pytestmark = pytest.mark.django_db
NOW = dt.datetime(2026, 6, 1, 14, 0, tzinfo=dt.UTC)


def _person(username: str = "", **fields):
    person = PersonFactory(**{"email": "ann@example.com", "first_name": "Ann", "last_name": "Lee", **fields})
    if username:
        user = User.objects.create_user(username=username, password="a-long-test-password")
        user.groups.add(Group.objects.get(name="participant"))
        person.user = user
        person.save()
    return person


def _document(person, text: str = "The plan document body"):
    return document_store(
        kind="test_document",
        title="A test document",
        template="email/pdf/letter.html",
        context={"subject": "Test document", "body": text, "person": person},
        actor="test",
        person=person,
        now=NOW,
    )


def _send(person, *, document=None, obj=None, at=NOW):
    return notice_send(
        kind=NoticeKind.STATEMENT_AVAILABLE,
        subject="Your statement is available",
        template="email/statement_available.txt",
        context={"period": "Q2 2026"},
        link="/portal/",
        as_of=at,
        actor="test",
        person=person,
        obj=obj or person,
        document=document,
    )


# --- delivery: paper until consent ------------------------------------------------------------------------


def test_without_consent_a_notice_goes_to_the_print_queue_and_no_email_is_sent():
    person = _person()
    notice = _send(person, document=_document(person))
    assert mail.outbox == []
    assert (notice.channel, notice.status, notice.queued_on) == ("paper", "queued", dt.date(2026, 6, 1))
    assert notice.print_document == notice.document


def test_a_paper_notice_without_a_document_prints_a_letter_of_the_notice():
    person = _person()
    notice = _send(person)
    assert notice.print_document is not None and notice.print_document.kind == notices.LETTER_KIND
    assert "Q2 2026" in pdf_text(notices.document_bytes(notice.print_document))


def test_after_consent_the_notice_is_emailed_with_the_link_and_the_document_attached():
    person = _person()
    consent_to_email(person)
    document = _document(person)
    notice = _send(person, document=document)
    assert (notice.channel, notice.status, notice.to) == ("email", "sent", "ann@example.com")
    [message] = mail.outbox
    assert message.to == ["ann@example.com"] and message.subject == "Your statement is available"
    assert "http://127.0.0.1:8000/portal/" in message.body and "Q2 2026" in message.body
    [(name, data, mimetype)] = message.attachments
    assert name.endswith(".pdf") and mimetype == "application/pdf" and data.startswith(b"%PDF")
    assert notice.document == document and notice.sent_at == NOW


def test_a_second_send_of_the_same_kind_and_object_sends_nothing():
    person = _person()
    consent_to_email(person)
    first = _send(person)
    again = _send(person, at=NOW + dt.timedelta(hours=1))
    assert again.pk == first.pk and len(mail.outbox) == 1 and Notice.objects.count() == 1


def test_a_failed_email_is_recorded_and_the_next_call_sends_it(monkeypatch):
    person = _person()
    consent_to_email(person)

    def refuse(self, fail_silently=False):
        raise ConnectionRefusedError("SMTP server down")

    with monkeypatch.context() as m:
        m.setattr("django.core.mail.EmailMessage.send", refuse)
        failed = _send(person)
    assert (failed.status, failed.attempts) == ("failed", 1) and "SMTP server down" in failed.error
    retried = _send(person)
    assert (retried.pk, retried.status, retried.attempts, retried.error) == (failed.pk, "sent", 2, "")
    assert len(mail.outbox) == 1


def test_a_person_with_neither_consent_nor_address_is_recorded_undeliverable():
    person = _person(address_line1="")
    notice = _send(person)
    assert notice.status == "undeliverable" and mail.outbox == []


def test_a_staff_user_is_emailed_without_a_consent():
    user = User.objects.create_user(username="delegate", email="delegate@example.com")
    notice = notice_send(
        kind=NoticeKind.CLAIM_STAFF,
        subject="Deadline",
        template="email/claim_notice.txt",
        context={"subject": "Deadline", "claim": {"number": "C-1", "plan": {"name": "EDCP"}}},
        link="/staff/",
        as_of=NOW,
        actor="test",
        user=user,
        obj=user,
    )
    assert notice.status == "sent" and mail.outbox[0].to == ["delegate@example.com"]


# --- consent ---------------------------------------------------------------------------------------------


def test_electronic_delivery_needs_consent_to_the_current_text_and_an_email_address():
    person = _person()
    with pytest.raises(NoticeError, match="needs your consent"):
        delivery_choose(
            person=person,
            delivery="electronic",
            consented=False,
            consent_version=CONSENT_VERSION,
            actor="ann",
            as_of=NOW,
        )
    with pytest.raises(NoticeError, match="consent text changed"):
        delivery_choose(
            person=person,
            delivery="electronic",
            consented=True,
            consent_version="1999-1",
            actor="ann",
            as_of=NOW,
        )
    nobody = _person(email="")
    with pytest.raises(NoticeError, match="email address"):
        delivery_choose(
            person=nobody,
            delivery="electronic",
            consented=True,
            consent_version=CONSENT_VERSION,
            actor="x",
            as_of=NOW,
        )
    assert not DeliveryChoice.objects.exists() and not notices.delivers_electronically(person=person)


def test_consent_is_recorded_with_its_version_text_hash_address_and_browser_and_can_be_withdrawn():
    person = _person()
    choice = delivery_choose(
        person=person,
        delivery="electronic",
        consented=True,
        consent_version=CONSENT_VERSION,
        actor="ann",
        as_of=NOW,
        ip_address="192.0.2.7",
        user_agent="Firefox",
    )
    assert (choice.consent_version, choice.ip_address, choice.user_agent) == (
        CONSENT_VERSION,
        "192.0.2.7",
        "Firefox",
    )
    assert len(choice.consent_sha256) == 64 and notices.delivers_electronically(person=person)
    delivery_choose(
        person=person,
        delivery="paper",
        consented=False,
        consent_version="",
        actor="ann",
        as_of=NOW + dt.timedelta(1),
    )
    assert not notices.delivers_electronically(person=person)
    assert DeliveryChoice.objects.filter(person=person).count() == 2  # the consent stays on record
    assert AuditEvent.objects.filter(action="notices.delivery_choose").count() == 2


def test_the_database_refuses_electronic_delivery_without_a_recorded_consent():
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        DeliveryChoice.objects.create(person=_person(), delivery="electronic", chosen_at=NOW, actor="x")


# --- the print queue -------------------------------------------------------------------------------------


def test_the_days_print_pdf_has_an_address_page_before_each_document():
    ann = _person(address_line1="12 Oak Street", city="Richmond", state="VA", postal_code="23219")
    zed = _person(first_name="Zed", last_name="Young", address_line1="9 Elm Road", city="Norfolk", state="VA")
    _send(zed, document=_document(zed, "Zed's statement text"))
    _send(ann, document=_document(ann, "Ann's statement text"))
    text = pdf_text(notices.print_batch_pdf(day=dt.date(2026, 6, 1)))
    order = [
        text.index("12 Oak Street"),
        text.index("Ann's statement text"),
        text.index("9 Elm Road"),
        text.index("Zed's statement text"),
    ]
    assert order == sorted(order)  # Ann (by last name) first: her address page, then her document, then Zed's
    assert text.index("Richmond, VA 23219") < text.index("Ann's statement text")


def test_marking_a_day_printed_marks_its_queue_once():
    person = _person()
    _send(person)
    assert notices.print_batch_mark_printed(day=dt.date(2026, 6, 1), actor="clerk", as_of=NOW) == 1
    notice = Notice.objects.get()
    assert (notice.status, notice.printed_by) == ("printed", "clerk")
    with pytest.raises(NoticeError, match="Nothing is waiting"):
        notices.print_batch_mark_printed(day=dt.date(2026, 6, 1), actor="clerk", as_of=NOW)
    with pytest.raises(NoticeError, match="No paper notice"):
        notices.print_batch_pdf(day=dt.date(2026, 6, 2))


def test_statements_can_announce_a_statement_through_the_service():
    person = _person()
    consent_to_email(person)
    document = _document(person)
    notice = notices.statement_available_send(
        person=person, statement=document, document=document, link="/portal/", period="Q2 2026", as_of=NOW
    )
    assert notice.kind == "statement_available" and "Q2 2026" in mail.outbox[0].subject
    assert mail.outbox[0].attachments


# --- pages -----------------------------------------------------------------------------------------------


def test_a_participant_changes_delivery_through_a_review_step(client):
    person = _person("ann")
    sign_in(client, person.user)
    url = reverse("participants_portal:delivery")
    page = client.get(url)
    assert page.status_code == 200 and "Consent to electronic delivery" in page.content.decode()
    refused = client.post(url, {"delivery": "electronic", "consent_version": CONSENT_VERSION})
    assert refused.status_code == 400 and "needs your consent" in refused.content.decode()
    review = client.post(url, {"delivery": "electronic", "consent": "on", "consent_version": CONSENT_VERSION})
    assert review.status_code == 200 and "Review your choice" in review.content.decode()
    assert not DeliveryChoice.objects.exists()  # nothing recorded before the confirmation
    done = client.post(
        url,
        {"delivery": "electronic", "consent": "on", "consent_version": CONSENT_VERSION, "confirm": "1"},
        HTTP_USER_AGENT="TestBrowser/1.0",
    )
    assert done.status_code == 302
    choice = DeliveryChoice.objects.get()
    assert (choice.delivery, choice.user_agent, choice.ip_address) == (
        "electronic",
        "TestBrowser/1.0",
        "127.0.0.1",
    )
    assert "Electronic delivery" in client.get(reverse("participants_portal:notices")).content.decode()


def test_a_participant_sees_only_their_own_notices(client):
    ann, bob = _person("ann"), _person("bob", first_name="Bob", last_name="Ormsby")
    _send(ann)
    notice_send(
        kind=NoticeKind.STATEMENT_AVAILABLE,
        subject="Bob's private subject",
        template="email/statement_available.txt",
        context={"period": "Q2"},
        link="/portal/",
        as_of=NOW,
        actor="test",
        person=bob,
        obj=bob,
    )
    sign_in(client, ann.user)
    body = client.get(reverse("participants_portal:notices")).content.decode()
    assert "Your statement is available" in body and "Bob&#x27;s private subject" not in body
    assert "Bob's private subject" not in body


def test_staff_see_a_participants_notices_and_the_print_queue_needs_its_capability(client):
    person = _person()
    _send(person)
    admin = User.objects.create_user(username="admin1")
    admin.groups.add(Group.objects.get(name="administrator"))
    auditor = User.objects.create_user(username="auditor1")
    auditor.groups.add(Group.objects.get(name="auditor"))
    sign_in(client, auditor)
    page = client.get(reverse("participants_staff:detail", args=[person.pk])).content.decode()
    assert "Your statement is available" in page and "In the print queue" in page
    assert client.get(reverse("core:print_queue")).status_code == 403
    sign_in(client, admin)
    queue = client.get(reverse("core:print_queue"))
    assert queue.status_code == 200 and "Ann Lee" in queue.content.decode()
    pdf = client.get(reverse("core:print_batch", args=["2026-06-01"]))
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert client.get(reverse("core:print_batch", args=["2026-13-01"])).status_code == 404
    client.post(reverse("core:print_batch_printed", args=["2026-06-01"]))
    assert Notice.objects.get().status == "printed"
