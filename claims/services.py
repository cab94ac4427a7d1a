"""Claims and appeals: one service per action (EDCP Article XI, BRP Article VII, RRP Article VII).

Each service takes the moment it acts (`now`, an aware datetime) and the actor; it never reads the
clock. A refused action raises ClaimRefused with the plan section it rests on and changes nothing,
with one exception the plans demand: an appeal filed after the window closes is refused *and* the
claim is marked abandoned (EDCP 11.3), since that is what the missed window means.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count, Sum
from django.urls import reverse

from claims import pdf
from claims.models import (
    AWAITING_CLAIMANT,
    AWAITING_DECISION,
    AWAITING_REVIEW,
    OPEN_STATES,
    TRANSITIONS,
    Capacity,
    Claim,
    ClaimAppeal,
    ClaimDecision,
    ClaimDocument,
    ClaimExtension,
    ClaimFileRequest,
    ClaimFlag,
    ClaimTransition,
    Delivery,
    Level,
    Outcome,
    RepresentativeStatus,
    State,
    Subject,
    upload_path,
)
from claims.selectors import (
    WARN_DAYS,
    ClaimsRules,
    claim_deadlines,
    claim_rules,
    claimant_receives_on,
    extension_notice_by,
    information_request_pending,
    local_date,
    regulation_paragraph,
    review_extension_notice_by,
    rules_for,
)
from core.audit import actor_label, audit_record
from core.errors import ApplicationError
from core.models import AuditEvent
from core.notices import NoticeKind, notice_send
from core.roles import Cap, has_cap
from participants.models import Participation, Person
from plans.models import Plan, PlanSection

if TYPE_CHECKING:
    from django.core.files.uploadedfile import UploadedFile

    from core.audit import Actor

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
# Allowed uploads: the extension must agree with the file's first bytes (no renamed executables).
ALLOWED_UPLOADS: dict[str, tuple[str, bytes]] = {
    ".pdf": ("application/pdf", b"%PDF-"),
    ".png": ("image/png", b"\x89PNG\r\n\x1a\n"),
    ".jpg": ("image/jpeg", b"\xff\xd8\xff"),
    ".jpeg": ("image/jpeg", b"\xff\xd8\xff"),
}
REGULATION = "29 CFR 2560.503-1"
log = logging.getLogger(__name__)


class ClaimRefused(ApplicationError):
    """An action the plan or the regulation does not allow; the message names the section."""


# --- uploads ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Upload:
    name: str
    data: bytes
    content_type: str
    extension: str
    sha256: str


def upload_check(*, file: UploadedFile, what: str = "file") -> Upload:
    """A PDF, PNG or JPEG of at most 10 MB whose content matches its name; ClaimRefused otherwise."""
    name = Path(getattr(file, "name", "") or "upload").name
    extension = Path(name).suffix.lower()
    if extension not in ALLOWED_UPLOADS:
        raise ClaimRefused(f"{what} {name!r} is not accepted: send a PDF, PNG or JPEG file")
    size = getattr(file, "size", None)
    if size is not None and size > MAX_UPLOAD_BYTES:
        raise ClaimRefused(
            f"{what} {name!r} is {size / 1048576:.1f} MB: the limit is {MAX_UPLOAD_BYTES // 1048576} MB"
        )
    if hasattr(file, "seek"):
        file.seek(0)
    data = file.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        raise ClaimRefused(f"{what} {name!r} is larger than the limit of {MAX_UPLOAD_BYTES // 1048576} MB")
    if not data:
        raise ClaimRefused(f"{what} {name!r} is empty")
    content_type, magic = ALLOWED_UPLOADS[extension]
    if not data.startswith(magic):
        raise ClaimRefused(
            f"{what} {name!r} is not a real {extension[1:].upper()} file: send a PDF, PNG or JPEG file"
        )
    return Upload(
        name=name,
        data=data,
        content_type=content_type,
        extension=extension,
        sha256=hashlib.sha256(data).hexdigest(),
    )


def _store(
    upload: Upload, *, claim: Claim | None, kind: str, now: dt.datetime, actor: Actor
) -> ClaimDocument:
    relative = upload_path(upload.sha256, upload.extension)
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.write_bytes(upload.data)
    return ClaimDocument.objects.create(
        claim=claim,
        kind=kind,
        original_name=upload.name[:255],
        content_type=upload.content_type,
        size=len(upload.data),
        sha256=upload.sha256,
        path=relative,
        uploaded_at=now,
        uploaded_by=actor_label(actor),
    )


def _size(n: int) -> str:
    return f"{n / 1048576:.1f} MB" if n >= 1048576 else f"{n:,} bytes"


def upload_quota_check(
    *, claim: Claim | None, uploads: Sequence[Upload], actor: Actor, filed_by: Person | None
) -> None:
    """Issue 12: what one person may upload through the portal or the API, per claim and in all (count and
    bytes, settings CLAIM_ATTACHMENTS_*). Staff recording paper are not limited."""
    if filed_by is None or not uploads:
        return
    count, size = len(uploads), sum(len(u.data) for u in uploads)
    per_claim = (
        claim.documents.aggregate(n=Count("id"), b=Sum("size")) if claim is not None else {"n": 0, "b": 0}
    )
    mine = ClaimDocument.objects.filter(uploaded_by=actor_label(actor)).aggregate(
        n=Count("id"), b=Sum("size")
    )
    for label, used, limit_n, limit_b in (
        (
            "this claim",
            per_claim,
            settings.CLAIM_ATTACHMENTS_PER_CLAIM,
            settings.CLAIM_ATTACHMENT_BYTES_PER_CLAIM,
        ),
        ("you", mine, settings.CLAIM_ATTACHMENTS_PER_PERSON, settings.CLAIM_ATTACHMENT_BYTES_PER_PERSON),
    ):
        n, b = (used["n"] or 0) + count, (used["b"] or 0) + size
        if n > limit_n or b > limit_b:
            raise ClaimRefused(
                f"too many attachments: {label} would hold {n} files ({_size(b)}); the limit is "
                f"{limit_n} files and {_size(limit_b)}. Send the documents that matter most, or ask "
                f"the plan administrator to add the rest to the claim file"
            )


# Filings that named an employee number and were answered like a received claim but refused (issue 12).
QUIET_REFUSALS = ("claim.representative_filing_refused", "claim.beneficiary_filing_refused")


def _filing_rate_check(*, actor: Actor, now: dt.datetime) -> None:
    """Issue 12: at most CLAIM_FILINGS_PER_DAY claims a day per person, counting the filings naming an employee
    number that were refused quietly, so trying numbers one by one is limited like filing."""
    label = actor_label(actor)
    since = now - dt.timedelta(days=1)
    filed = Claim.objects.filter(filed_by=label, received_at__gte=since).count()
    refused = AuditEvent.objects.filter(action__in=QUIET_REFUSALS, actor_label=label, at__gte=since).count()
    if filed + refused >= settings.CLAIM_FILINGS_PER_DAY:
        raise ClaimRefused(
            f"you have filed {filed + refused} claims in the last 24 hours, the most the portal accepts in a day; "
            f"file again tomorrow, or send the claim in writing to the plan administrator"
        )


def _portal_filing_limits(
    *, filed_by: Person | None, uploads: Sequence[Upload], actor: Actor, now: dt.datetime
) -> None:
    """A claim filed in the portal or the API: the filings a day and the attachments a person may send."""
    if filed_by is not None:
        _filing_rate_check(actor=actor, now=now)
        upload_quota_check(claim=None, uploads=uploads, actor=actor, filed_by=filed_by)


def claim_document_add(
    *, claim: Claim, file: UploadedFile, kind: str, now: dt.datetime, actor: Actor
) -> ClaimDocument:
    """Staff add a record relied on (or a paper submission) to the claim file."""
    if kind not in ClaimDocument.Kind.values:
        raise ClaimRefused(f"unknown document kind {kind!r}")
    upload = upload_check(file=file, what="the document")
    with transaction.atomic():
        doc = _store(upload, claim=claim, kind=kind, now=now, actor=actor)
        _log(
            claim,
            action="document_added",
            to=claim.state,
            actor=actor,
            now=now,
            reason=f"{doc.get_kind_display()}: {doc.original_name}",
        )
    return doc


# --- transitions --------------------------------------------------------------------------------------
def _user(actor: Actor) -> User | None:
    return None if actor is None or isinstance(actor, str) else actor


def _require_cap(actor: Actor, cap: Cap, what: str, cite: str) -> None:
    user = _user(actor)
    if user is None or not has_cap(user, cap):
        raise ClaimRefused(f"{what} is for holders of the {cap.value} capability ({cite})")


def _locked(claim: Claim) -> Claim:
    fresh = Claim.objects.select_for_update().select_related("plan").get(pk=claim.pk)
    fresh._rules = getattr(claim, "_rules", None)
    return fresh


def _require_state(claim: Claim, to: str, what: str, cite: str) -> None:
    if claim.state == State.ABANDONED:
        raise ClaimRefused(
            f"{claim.number} was abandoned: it may not be reasserted, so it cannot be {what} ({cite})"
        )
    if to not in TRANSITIONS[claim.state]:
        raise ClaimRefused(
            f"{claim.number} is {claim.get_state_display().lower()}: it cannot be {what} now ({cite})"
        )


def _refresh_deadlines(claim: Claim) -> None:
    """Store the deadlines. A period tolled while the claimant's information is awaited has no due date: the
    claim's next deadline is then empty with kind AWAITING_CLAIMANT, so the daily job never flags it and the
    queue lists it after the claims whose clock runs ((f)(4), (i)(4))."""
    deadlines = claim_deadlines(claim=claim)
    nxt = deadlines.next
    claim.decision_due_on = deadlines.decision.due_on
    claim.appeal_due_on = deadlines.appeal.due_on if deadlines.appeal else None
    claim.review_due_on = deadlines.review.due_on if deadlines.review else None
    claim.legal_action_until = deadlines.legal_action.due_on if deadlines.legal_action else None
    claim.next_deadline_on = nxt.due_on if nxt else None
    claim.next_deadline_kind = (AWAITING_CLAIMANT if nxt.suspended else nxt.kind) if nxt else ""


def _log(
    claim: Claim,
    *,
    action: str,
    to: str,
    actor: Actor,
    now: dt.datetime,
    reason: str = "",
    data: dict | None = None,
) -> ClaimTransition:
    row = ClaimTransition.objects.create(
        claim=claim,
        action=action,
        from_state=claim.state,
        to_state=to,
        at=now,
        actor=_user(actor),
        actor_label=actor_label(actor),
        reason=reason,
    )
    audit_record(
        action=f"claim.{action}",
        actor=actor,
        at=now,
        obj=claim,
        reason=reason,
        data={"from": claim.state, "to": to, **(data or {})},
    )
    return row


def _move(
    claim: Claim,
    *,
    to: str,
    action: str,
    actor: Actor,
    now: dt.datetime,
    reason: str = "",
    data: dict | None = None,
) -> Claim:
    _log(claim, action=action, to=to, actor=actor, now=now, reason=reason, data=data)
    claim.state = to
    _refresh_deadlines(claim)
    claim.save()
    return claim


# --- filing -------------------------------------------------------------------------------------------
def _require_participation(*, plan: Plan, participant: Person | None, cite: str) -> None:
    """Only the plans the participant is in: a claim is for a benefit under this plan (EDCP 11.1)."""
    if participant is not None and not Participation.objects.filter(person=participant, plan=plan).exists():
        raise ClaimRefused(
            f"{participant.full_name} has no account in {plan.name}: a claim is for a benefit under the plan "
            f"the participant is in ({cite})"
        )


@transaction.atomic
def claim_file(
    *,
    plan: Plan,
    claimant: Person | None,
    capacity: str,
    subject: str,
    description: str,
    now: dt.datetime,
    actor: Actor,
    channel: str = Claim.Channel.PORTAL,
    participant: Person | None = None,
    claimant_name: str = "",
    claimant_address: str = "",
    filed_by: Person | None = None,
    representative: Person | None = None,
    authorisation: UploadedFile | None = None,
    files: Sequence = (),
    received_on: dt.date | None = None,
    delivery: str | None = None,
) -> Claim:
    """A written claim for benefits (EDCP 11.1). In the portal `filed_by` is the signed-in person: filing for
    someone else needs them to be the representative, with the claimant's written authorisation attached."""
    rules = rules_for(plan=plan, on=received_on or now.date())
    received_on = received_on or local_date(moment=now, rules=rules)
    rules = rules_for(plan=plan, on=received_on)
    cite_filing, cite_review = rules.cite("filing"), rules.cite("review")
    if received_on > local_date(moment=now, rules=rules):
        raise ClaimRefused(f"a claim cannot be received in the future ({received_on}) ({cite_filing})")
    if capacity not in Capacity.values:
        raise ClaimRefused(
            f"a claimant is a Participant, Beneficiary or former Participant, not {capacity!r} "
            f"({cite_filing})"
        )
    if subject not in Subject.values:
        raise ClaimRefused(f"unknown claim subject {subject!r}")
    if not (description or "").strip():
        raise ClaimRefused(f"a claim must say in writing what is claimed ({cite_filing})")
    if claimant is None and not claimant_name.strip():
        raise ClaimRefused(f"a claim needs a claimant ({cite_filing})")
    if participant is None:
        if capacity == Capacity.BENEFICIARY:
            raise ClaimRefused(
                f"a Beneficiary's claim must name the participant whose benefit is claimed ({cite_filing})"
            )
        participant = claimant
    _require_participation(plan=plan, participant=participant, cite=cite_filing)
    if filed_by is not None and filed_by != claimant:
        if representative is None or representative != filed_by:
            raise ClaimRefused(
                f"{filed_by.full_name} is not the claimant: a claim on behalf of someone else must be filed by "
                f"their duly authorized representative, with the claimant's written authorisation attached "
                f"({cite_review}; {REGULATION}(b)(4))"
            )
    if representative is not None and authorisation is None:
        raise ClaimRefused(
            f"a claim filed by a representative needs the claimant's written authorisation of "
            f"{representative.full_name} ({cite_review}; {REGULATION}(b)(4))"
        )
    if representative is not None and representative == claimant:
        raise ClaimRefused(f"the claimant cannot be their own representative ({cite_review})")
    auth_upload = (
        upload_check(file=authorisation, what="the authorisation") if authorisation is not None else None
    )
    uploads = [upload_check(file=f, what="the attachment") for f in files]
    _portal_filing_limits(
        filed_by=filed_by, uploads=[u for u in (auth_upload, *uploads) if u], actor=actor, now=now
    )
    earlier = Claim.objects.filter(plan=plan, participant=participant, subject=subject, state=State.ABANDONED)
    earlier = (
        earlier.filter(claimant=claimant)
        if claimant is not None
        else earlier.filter(claimant_name__iexact=claimant_name.strip())
    )
    if (abandoned := earlier.first()) is not None:
        raise ClaimRefused(
            f"claim {abandoned.number} on the same subject was abandoned when no appeal was filed in "
            f"{rules.appeal_days} days: the claimant is precluded from reasserting it ({cite_review})"
        )

    auth_doc = (
        _store(auth_upload, claim=None, kind=ClaimDocument.Kind.AUTHORISATION, now=now, actor=actor)
        if auth_upload
        else None
    )
    claim = Claim(
        plan=plan,
        participant=participant,
        capacity=capacity,
        claimant=claimant,
        claimant_name=(claimant_name.strip() or (claimant.full_name if claimant else "")),
        claimant_address=(
            claimant_address.strip() or ("\n".join(claimant.address_lines) if claimant else "")
        ),
        representative=representative,
        representative_authorisation=auth_doc,
        # 29 CFR 2560.503-1(b)(4): the claim is received now; the representative waits for staff verification.
        representative_status=RepresentativeStatus.PENDING if representative is not None else "",
        subject=subject,
        description=description.strip(),
        channel=channel,
        delivery=delivery or (Delivery.PORTAL if channel == Claim.Channel.PORTAL else Delivery.MAIL),
        received_on=received_on,
        received_at=now,
        filed_by=actor_label(actor),
        decision_due_on=received_on,
    )
    claim._rules = rules
    _refresh_deadlines(claim)
    claim.save()
    if auth_doc is not None:
        auth_doc.claim = claim
        auth_doc.save(update_fields=["claim"])
    for upload in uploads:
        _store(upload, claim=claim, kind=ClaimDocument.Kind.SUBMISSION, now=now, actor=actor)
    ClaimTransition.objects.create(
        claim=claim,
        action="filed",
        from_state="",
        to_state=State.RECEIVED,
        at=now,
        actor=_user(actor),
        actor_label=actor_label(actor),
        reason=f"Claim received {received_on:%B %-d, %Y} ({cite_filing})",
    )
    audit_record(
        action="claim.filed",
        actor=actor,
        at=now,
        obj=claim,
        reason=claim.description[:200],
        data={"plan": plan.code, "received_on": received_on.isoformat(), "channel": channel},
    )
    _send_receipt(claim)
    return claim


def claim_receipt_lines(*, claim: Claim) -> list[tuple[str, str]]:
    """The filing receipt: claim number, date received and the date the decision is due (issue 11)."""
    return [
        ("Claim number", claim.number),
        ("Plan", claim.plan.name),
        ("Date received", f"{claim.received_on:%B %-d, %Y}"),
        ("Decision due by", f"{claim.decision_due_on:%B %-d, %Y}" if claim.decision_due_on else "not set"),
    ]


def _send_receipt(claim: Claim) -> None:
    """A claim filed in the portal by the claimant: the receipt as a notice too (email or paper, recorded, sent
    once), once the filing commits."""
    if claim.channel != Claim.Channel.PORTAL or claim.claimant is None:
        return
    if claim.representative is not None:
        return  # An unverified representative is sent nothing (29 CFR 2560.503-1(b)(4)).
    claimant = claim.claimant
    lines = claim_receipt_lines(claim=claim)
    link = reverse("claims_portal:detail", kwargs={"pk": claim.pk})

    def send() -> None:
        notice_send(
            kind=NoticeKind.CLAIM_NOTICE,
            subject=f"Claim {claim.number} received",
            template="email/claim_receipt.txt",
            context={"claim": claim, "lines": lines},
            link=link,
            as_of=claim.received_at,
            actor="claims",
            person=claimant,
            obj=claim,
            key_extra="receipt",
        )

    transaction.on_commit(send)


REPRESENTATIVE_FILING_ANSWER = (
    "Your filing for employee number {number} in {plan} is recorded. If that person is a participant of the "
    "plan, their claim is received today and its time limits run from today; staff will verify your "
    "authorisation before anything about the claim is shown or sent to you (29 CFR 2560.503-1(b)(4))."
)
BENEFICIARY_FILING_ANSWER = (
    "Your claim as a Beneficiary of employee number {number} in {plan} is recorded. If that person is a "
    "participant of the plan, your claim is received today and its time limits run from today; if not, no claim "
    "is opened: check the number, or send your claim in writing to the plan administrator ({cite})."
)


def _person_named(number: str) -> Person | None:
    return Person.objects.filter(employee_number=number).first() if number else None


def _quiet_filing_checks(
    *, plan: Plan, description: str, uploads: Sequence[Upload], filer: Person, now: dt.datetime, actor: Actor
) -> None:
    """What a filing naming an employee number is refused for at once, because it does not depend on whether
    the number exists: an empty description, a bad attachment, the filings a day and the attachments a person
    may send (issue 12)."""
    if not (description or "").strip():
        raise ClaimRefused(
            f"a claim must say in writing what is claimed ({rules_for(plan=plan, on=now.date()).cite('filing')})"
        )
    _filing_rate_check(actor=actor, now=now)
    upload_quota_check(claim=None, uploads=uploads, actor=actor, filed_by=filer)


def _file_quietly(
    *,
    refused_action: str,
    refusal: str,
    filer: Person,
    plan: Plan,
    number: str,
    now: dt.datetime,
    actor: Actor,
    **filing: Any,
) -> Claim | None:
    """claim_file for a filing that names an employee number typed by the filer, unless `refusal` already says
    why not. A refusal is not told to the filer (it would say who exists or who is in the plan): it is recorded
    as an audit event for staff, which the filing rate limit counts, and the caller answers as for a received
    claim."""
    claim = None
    if not refusal:
        try:
            with transaction.atomic():
                claim = claim_file(plan=plan, now=now, actor=actor, filed_by=filer, **filing)
        except ClaimRefused as exc:
            refusal = str(exc)
    if claim is None:
        audit_record(
            action=refused_action,
            actor=actor,
            at=now,
            obj=filer,
            reason=refusal,
            data={"plan": plan.code, "employee_number": number[:40]},
        )
    return claim


def claim_file_as_representative(
    *,
    plan: Plan,
    claimant_number: str,
    capacity: str,
    subject: str,
    description: str,
    representative: Person,
    authorisation: UploadedFile,
    now: dt.datetime,
    actor: Actor,
    participant_number: str = "",
    files: Sequence = (),
) -> tuple[Claim | None, str]:
    """A claim filed in the portal or the API by someone acting for the claimant (29 CFR 2560.503-1(b)(4)).

    Returns (the claim or None, the answer for the representative). The answer is the same whether the employee
    number (the claimant's, or for a Beneficiary's claim the participant's) is unknown, belongs to someone outside
    the plan, or a claim was received: the representative learns nothing about who exists. What does not depend
    on the claimant (a missing or wrong authorisation, an empty description, a bad attachment) is refused at once
    with ClaimRefused; the rest is recorded as an audit event for staff and answered like a received claim."""
    cite_review = rules_for(plan=plan, on=now.date()).cite("review")
    if authorisation is None:
        raise ClaimRefused(
            f"a claim filed by a representative needs the claimant's written authorisation of "
            f"{representative.full_name} ({cite_review}; {REGULATION}(b)(4))"
        )
    checked = [upload_check(file=authorisation, what="the authorisation")]
    checked += [upload_check(file=f, what="the attachment") for f in files]
    _quiet_filing_checks(
        plan=plan, description=description, uploads=checked, filer=representative, now=now, actor=actor
    )
    number = (claimant_number or "").strip()
    claimant = _person_named(number)
    # A Beneficiary's claim also names the participant: an unknown one is refused as quietly as the claimant.
    participant_number = (participant_number or "").strip() if capacity == Capacity.BENEFICIARY else ""
    participant = _person_named(participant_number)
    refusal = (
        "no person has this employee number"
        if claimant is None
        else f"no person has the participant's employee number {participant_number}"
        if participant_number and participant is None
        else ""
    )
    claim = _file_quietly(
        refused_action="claim.representative_filing_refused",
        refusal=refusal,
        filer=representative,
        plan=plan,
        number=f"{number} (participant {participant_number})" if participant_number else number,
        now=now,
        actor=actor,
        claimant=claimant,
        capacity=capacity,
        subject=subject,
        description=description,
        participant=participant,
        representative=representative,
        authorisation=authorisation,
        files=files,
    )
    return claim, REPRESENTATIVE_FILING_ANSWER.format(number=number, plan=plan.name)


def claim_file_as_beneficiary(
    *,
    plan: Plan,
    participant_number: str,
    subject: str,
    description: str,
    beneficiary: Person,
    now: dt.datetime,
    actor: Actor,
    files: Sequence = (),
) -> tuple[Claim | None, str]:
    """A Beneficiary's claim filed in the portal or the API, naming the participant by employee number (EDCP
    11.1: a Beneficiary may file a claim).

    Returns (the claim or None, the answer for the beneficiary). The answer is the same whether the number is
    unknown, belongs to someone outside the plan (or to someone whose earlier claim by this beneficiary was
    abandoned), or the claim was received: the filer learns nothing about who exists or who is in a plan. What
    does not depend on the number (an empty description, a bad attachment, the daily filings, the attachment
    quota) is refused at once with ClaimRefused; the rest is recorded as an audit event for staff."""
    uploads = [upload_check(file=f, what="the attachment") for f in files]
    _quiet_filing_checks(
        plan=plan, description=description, uploads=uploads, filer=beneficiary, now=now, actor=actor
    )
    number = (participant_number or "").strip()
    participant = _person_named(number)
    claim = _file_quietly(
        refused_action="claim.beneficiary_filing_refused",
        refusal="" if participant is not None else "no person has this employee number",
        filer=beneficiary,
        plan=plan,
        number=number,
        now=now,
        actor=actor,
        claimant=beneficiary,
        capacity=Capacity.BENEFICIARY,
        subject=subject,
        description=description,
        participant=participant,
        files=files,
    )
    cite = rules_for(plan=plan, on=now.date()).cite("filing")
    return claim, BENEFICIARY_FILING_ANSWER.format(number=number, plan=plan.name, cite=cite)


@transaction.atomic
def claim_representative_decide(
    *, claim: Claim, verified: bool, reason: str, now: dt.datetime, actor: Actor
) -> Claim:
    """Staff verify (or refuse) a representative's authorisation: a recorded decision with actor and reason.
    Until it is verified the representative sees nothing of the claim (29 CFR 2560.503-1(b)(4))."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = f"{rules.cite('review')}; {REGULATION}(b)(4)"
    _require_cap(actor, Cap.DECIDE_CLAIMS, "verifying a representative", cite)
    if claim.representative_id is None:
        raise ClaimRefused(f"{claim.number} names no representative: there is nothing to verify ({cite})")
    if not (reason or "").strip():
        raise ClaimRefused(f"say why the authorisation is or is not accepted ({cite})")
    status = RepresentativeStatus.VERIFIED if verified else RepresentativeStatus.REJECTED
    if claim.representative_status == status:
        raise ClaimRefused(
            f"the representative of {claim.number} is already {claim.get_representative_status_display().lower()}"
        )
    claim.representative_status = status
    claim.representative_decided_by = _user(actor)
    claim.representative_decided_at = now
    claim.representative_decision_reason = reason.strip()
    claim.save()
    _log(
        claim,
        action="representative_verified" if verified else "representative_rejected",
        to=claim.state,
        actor=actor,
        now=now,
        reason=reason.strip(),
        data={
            "representative": claim.representative.employee_number if claim.representative else "",
            "status": status,
        },
    )
    return claim


@transaction.atomic
def claim_assign(*, claim: Claim, reviewer: User, now: dt.datetime, actor: Actor) -> Claim:
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    _require_cap(actor, Cap.DECIDE_CLAIMS, "assigning a claim", rules.cite("filing"))
    if claim.state not in OPEN_STATES:
        raise ClaimRefused(
            f"{claim.number} is {claim.get_state_display().lower()}: there is nothing to assign "
            f"({rules.cite('filing')})"
        )
    if not (has_cap(reviewer, Cap.DECIDE_CLAIMS) or has_cap(reviewer, Cap.DECIDE_APPEALS)):
        raise ClaimRefused(
            f"{reviewer.get_username()} may not decide claims or appeals ({rules.cite('filing')})"
        )
    claim.reviewer = reviewer
    _log(
        claim,
        action="assigned",
        to=claim.state,
        actor=actor,
        now=now,
        reason=f"Assigned to {reviewer.get_full_name() or reviewer.get_username()}",
    )
    claim.save(update_fields=["reviewer"])
    return claim


@transaction.atomic
def claim_start_review(*, claim: Claim, now: dt.datetime, actor: Actor, reason: str = "") -> Claim:
    claim = _locked(claim)
    cite = claim_rules(claim=claim).cite("denial")
    _require_cap(actor, Cap.DECIDE_CLAIMS, "reviewing a claim", cite)
    _require_state(claim, State.UNDER_REVIEW, "put under review", cite)
    return _move(claim, to=State.UNDER_REVIEW, action="review_started", actor=actor, now=now, reason=reason)


def _only_once(claim: Claim, level: str, cite: str) -> None:
    if claim.extensions.filter(level=level).exists():
        raise ClaimRefused(
            f"{claim.number} has already been extended once: only one extension is allowed ({cite})"
        )


def _check_extension(
    *,
    claim: Claim,
    rules: ClaimsRules,
    level: str,
    today: dt.date,
    special_circumstances: str,
    expected_on: dt.date,
    last_notice_day: dt.date,
    limit: dt.date,
    cite: str,
    requests_information: bool,
    information_requested: str,
) -> None:
    if today > last_notice_day:
        raise ClaimRefused(
            f"the extension notice had to be sent before the period ended on {last_notice_day:%B %-d, %Y}"
            f"; on {today:%B %-d, %Y} it is too late to extend ({cite}; {REGULATION}(f)(1), (i)(1))"
        )
    if not (special_circumstances or "").strip():
        raise ClaimRefused(
            f"an extension notice must state the special circumstances that require it ({cite})"
        )
    if expected_on is None:
        raise ClaimRefused(
            f"an extension notice must state the date by which a decision is expected ({cite})"
        )
    if expected_on < today or expected_on > limit:
        raise ClaimRefused(
            f"the expected decision date {expected_on:%B %-d, %Y} must fall between today and "
            f"{limit:%B %-d, %Y}, the end of the one extension allowed ({cite})"
        )
    tolling = f"{REGULATION}{regulation_paragraph(level=level)}"
    if requests_information and not (information_requested or "").strip():
        raise ClaimRefused(
            f"an extension because the claimant has not submitted information necessary to decide "
            f"the claim must say what information is needed ({cite}; {tolling})"
        )
    if not requests_information and (information_requested or "").strip():
        raise ClaimRefused(
            f"information is requested from the claimant only when the extension is for their failure "
            f"to submit it (requests_information), which tolls the period ({cite}; {tolling})"
        )


@transaction.atomic
def claim_extend(
    *,
    claim: Claim,
    special_circumstances: str,
    expected_on: dt.date,
    now: dt.datetime,
    actor: Actor,
    requests_information: bool = False,
    information_requested: str = "",
) -> ClaimExtension:
    """One extension of the 90 days to 180, with a notice sent before day 90 ends (EDCP 11.2; (f)(1)).

    `requests_information`: the special circumstance is the claimant's failure to submit information necessary
    to decide; the notice says what is needed and the period is tolled until the claimant responds ((f)(4))."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = rules.cite("denial")
    _require_cap(actor, Cap.DECIDE_CLAIMS, "extending the time for a decision", cite)
    _only_once(claim, Level.INITIAL, cite)
    _require_state(claim, State.EXTENDED, "extended", cite)
    today = local_date(moment=now, rules=rules)
    limit = claim.received_on + dt.timedelta(days=rules.decision_days + rules.extension_days)
    _check_extension(
        claim=claim,
        rules=rules,
        level=Level.INITIAL,
        today=today,
        special_circumstances=special_circumstances,
        expected_on=expected_on,
        last_notice_day=extension_notice_by(received_on=claim.received_on, rules=rules),
        limit=limit,
        cite=cite,
        requests_information=requests_information,
        information_requested=information_requested,
    )
    return _extend(
        claim,
        rules=rules,
        level=Level.INITIAL,
        special_circumstances=special_circumstances,
        expected_on=expected_on,
        today=today,
        now=now,
        actor=actor,
        to=State.EXTENDED,
        cite=cite,
        requests_information=requests_information,
        information_requested=information_requested,
    )


def _extend(
    claim: Claim,
    *,
    rules: ClaimsRules,
    level: str,
    special_circumstances: str,
    expected_on: dt.date,
    today: dt.date,
    now: dt.datetime,
    actor: Actor,
    to: str,
    cite: str,
    requests_information: bool,
    information_requested: str,
) -> ClaimExtension:
    try:
        with transaction.atomic():
            extension = ClaimExtension.objects.create(
                claim=claim,
                level=level,
                special_circumstances=special_circumstances.strip(),
                expected_on=expected_on,
                issued_on=today,
                issued_at=now,
                issued_by=actor_label(actor),
                requests_information=requests_information,
                information_requested=(information_requested or "").strip(),
            )
    except IntegrityError:
        raise ClaimRefused(
            f"{claim.number} has already been extended once: only one extension is allowed ({cite})"
        )
    asked = (
        f" Information requested from the claimant: {extension.information_requested} The period for deciding "
        f"is suspended from {today:%B %-d, %Y} until the claimant responds ({cite}; "
        f"{REGULATION}{regulation_paragraph(level=level)})."
        if requests_information
        else ""
    )
    _move(
        claim,
        to=to,
        action="extended" if level == Level.INITIAL else "review_extended",
        actor=actor,
        now=now,
        reason=f"{special_circumstances.strip()} Decision expected by {expected_on:%B %-d, %Y}.{asked}",
        data={"expected_on": expected_on.isoformat(), "requests_information": requests_information},
    )
    extension.notice = pdf.extension_notice(extension, rules=rules, now=now, actor=actor)
    extension.save(update_fields=["notice"])
    _notify_claimant(claim, "An extension notice about your claim", now=now)
    return extension


# --- the claimant's information, asked for by an extension (tolling) ---------------------------------------
@transaction.atomic
def claim_information_receive(
    *,
    claim: Claim,
    now: dt.datetime,
    actor: Actor,
    response: str = "",
    files: Sequence = (),
    filed_by: Person | None = None,
    received_on: dt.date | None = None,
) -> ClaimExtension:
    """The claimant's response to an extension notice that asked for information: the period for deciding, tolled
    since the notice was sent, runs again from the day the response is received, and the decision is due later by
    the days it stood still (29 CFR 2560.503-1(f)(4) initial, (i)(4) on review).

    In the portal `filed_by` is the signed-in person (the claimant or their representative) and the response is
    received today; staff recording a paper response give the date it was received. The state does not change."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    level = Level.REVIEW if claim.state in AWAITING_REVIEW else Level.INITIAL
    cite = rules.cite("decision_on_review" if level == Level.REVIEW else "denial")
    tolling = f"{REGULATION}{regulation_paragraph(level=level)}"
    extension = information_request_pending(claim=claim)
    if extension is None:
        asked = claim.extensions.filter(level=level, requests_information=True).first()
        if claim.state not in (*AWAITING_DECISION, *AWAITING_REVIEW):
            why = f"{claim.number} is {claim.get_state_display().lower()}: no decision is pending"
        elif asked is not None:
            why = (
                f"the information requested on {asked.issued_on:%B %-d, %Y} was already received on "
                f"{asked.information_received_on:%B %-d, %Y}"
            )
        else:
            why = f"no extension notice of {claim.number} asked the claimant for information"
        raise ClaimRefused(f"{why}, so there is no request awaiting a response to record ({cite}; {tolling})")
    if filed_by is not None and not claim.may_act_for_claimant(filed_by):
        raise ClaimRefused(
            f"only the claimant or their duly authorized representative may answer the request for "
            f"information ({cite})"
        )
    today = local_date(moment=now, rules=rules)
    received_on = received_on or today
    if received_on > today:
        raise ClaimRefused(f"a response cannot be received in the future ({received_on}) ({cite})")
    if received_on < extension.issued_on:
        raise ClaimRefused(
            f"the information was requested on {extension.issued_on:%B %-d, %Y}: a response cannot be "
            f"received before that, on {received_on:%B %-d, %Y} ({cite}; {tolling})"
        )
    if not (response or "").strip() and not files:
        raise ClaimRefused(
            f"a response must give or attach the information requested: "
            f"{extension.information_requested} ({cite})"
        )
    uploads = [upload_check(file=f, what="the attachment") for f in files]
    upload_quota_check(claim=claim, uploads=uploads, actor=actor, filed_by=filed_by)
    extension.information_received_on, extension.information_received_at = received_on, now
    extension.information_response = (response or "").strip()
    extension.save(
        update_fields=["information_received_on", "information_received_at", "information_response"]
    )
    for upload in uploads:
        _store(upload, claim=claim, kind=ClaimDocument.Kind.INFORMATION, now=now, actor=actor)
    _refresh_deadlines(claim)
    due = claim.review_due_on if level == Level.REVIEW else claim.decision_due_on
    assert due is not None  # the information arrived: _refresh_deadlines() restarted the period
    days = extension.days_tolled
    _log(
        claim,
        action="information_received",
        to=claim.state,
        actor=actor,
        now=now,
        reason=f"Information requested on {extension.issued_on:%B %-d, %Y} received on {received_on:%B %-d, %Y}. "
        f"The period for deciding was suspended for {_days(days)}; the decision is now due by "
        f"{due:%B %-d, %Y} ({cite}; {tolling}).",
        data={
            "level": level,
            "received_on": received_on.isoformat(),
            "days_tolled": days,
            "due_on": due.isoformat(),
            "attachments": len(uploads),
        },
    )
    claim.save()
    _notify_reviewer(
        claim,
        now=now,
        subject=f"[{claim.plan.code} claims] {claim.number}: the claimant's information arrived",
        body=(
            f"The information requested from {claim.claimant_name} on {extension.issued_on:%B %-d, %Y} "
            f"was received on {received_on:%B %-d, %Y}.\nThe period for deciding, suspended for "
            f"{_days(days)}, runs again: the decision is due by {due:%B %-d, %Y} ({cite}; {tolling}).\n"
        ),
    )
    return extension


# --- initial decision ---------------------------------------------------------------------------------
def _sections(claim: Claim, provisions: Iterable, cite: str) -> list[PlanSection]:
    found = []
    for p in provisions or ():
        section = p if isinstance(p, PlanSection) else PlanSection.objects.filter(pk=p).first()
        if section is None or section.version.plan_id != claim.plan_id:
            raise ClaimRefused(f"{p} is not a section of the {claim.plan.name} ({cite})")
        found.append(section)
    return found


def _records(claim: Claim, records: Iterable) -> list[ClaimDocument]:
    found = []
    for r in records or ():
        doc = r if isinstance(r, ClaimDocument) else ClaimDocument.objects.filter(pk=r).first()
        if doc is None or doc.claim_id != claim.pk:
            raise ClaimRefused(f"document {r} is not in the file of {claim.number}")
        found.append(doc)
    return found


def _decide(
    claim: Claim,
    *,
    rules: ClaimsRules,
    level: str,
    outcome: str,
    reasons: str,
    sections: list[PlanSection],
    records: Iterable[ClaimDocument | int],
    now: dt.datetime,
    actor: User,
    additional_material: str = "",
    review_procedure: str = "",
    approved_benefit: str = "",
    partial: bool = False,
    delivery: str | None = None,
) -> ClaimDecision:
    today = local_date(moment=now, rules=rules)
    # A period still tolled for the claimant's information counts as tolled up to today: deciding then is on time.
    deadlines = claim_deadlines(claim=claim, deciding_on=today)
    deadline = deadlines.decision if level == Level.INITIAL else deadlines.review
    # deciding_on=today counts a period still tolled up to today, so a pending decision has its date
    assert deadline is not None and deadline.due_on is not None
    if level == Level.INITIAL:
        due, start, body = deadline.due_on, claim.received_on, "the Committee's delegate"
    else:
        due, start, body = deadline.due_on, claim.appeal.received_on, "the Committee"
    delivery = delivery or claim.delivery
    decision = ClaimDecision.objects.create(
        claim=claim,
        level=level,
        outcome=outcome,
        partial=partial,
        reasons=reasons.strip(),
        additional_material=(additional_material or "").strip(),
        review_procedure=(review_procedure or "").strip(),
        approved_benefit=(approved_benefit or "").strip(),
        decided_on=today,
        decided_at=now,
        decided_by=actor,
        deciding_body=body,
        due_on=due,
        late=today > due,
        days_taken=(today - start).days,
        delivery=delivery,
        claimant_receives_on=claimant_receives_on(notice_on=today, delivery=delivery),
    )
    decision.provisions.set(sections)
    decision.records_relied_on.set(records)
    return decision


def _check_decider(claim: Claim, *, actor: User, level: str, rules: ClaimsRules) -> None:
    if level == Level.INITIAL:
        _require_cap(actor, Cap.DECIDE_CLAIMS, "an initial decision", rules.cite("filing"))
    else:
        _require_cap(actor, Cap.DECIDE_APPEALS, "a decision on review", rules.cite("decision_on_review"))


@transaction.atomic
def claim_approve(
    *,
    claim: Claim,
    reasons: str,
    approved_benefit: str,
    now: dt.datetime,
    actor: User,
    provisions: Iterable = (),
    records: Iterable = (),
) -> ClaimDecision:
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = rules.cite("denial")
    _check_decider(claim, actor=actor, level=Level.INITIAL, rules=rules)
    _require_state(claim, State.APPROVED, "approved", cite)
    if not (reasons or "").strip():
        raise ClaimRefused(f"a decision must give its reasons ({cite})")
    if not (approved_benefit or "").strip():
        raise ClaimRefused(f"an approval must say what benefit is granted ({cite})")
    decision = _decide(
        claim,
        rules=rules,
        level=Level.INITIAL,
        outcome=Outcome.APPROVED,
        reasons=reasons,
        sections=_sections(claim, provisions, cite),
        records=_records(claim, records),
        now=now,
        actor=actor,
        approved_benefit=approved_benefit,
    )
    _move(
        claim,
        to=State.APPROVED,
        action="approved",
        actor=actor,
        now=now,
        reason=reasons.strip(),
        data={"late": decision.late},
    )
    decision.notice = pdf.decision_notice(decision, rules=rules, now=now, actor=actor)
    decision.save(update_fields=["notice"])
    _notify_claimant(claim, "A decision on your claim", now=now)
    return decision


def denial_missing(
    *, reasons: str, provisions: Sequence, additional_material: str, review_procedure: str, rules: ClaimsRules
) -> list[str]:
    """The elements (a)-(d) of EDCP 11.2 a denial notice lacks; empty when it may be issued."""
    missing = []
    if not (reasons or "").strip():
        missing.append("(a) the specific reasons for the denial")
    if not provisions:
        missing.append("(b) the specific plan provisions on which the denial is based")
    if not (additional_material or "").strip():
        missing.append(
            "(c) any additional material or information needed to perfect the claim and why "
            "(say so if none is needed)"
        )
    procedure = (review_procedure or "").strip()
    if not procedure:
        missing.append("(d) the review procedure and its time limits")
    else:
        if f"{rules.appeal_days} days" not in procedure:
            missing.append(f"(d) the time limit for an appeal ({rules.appeal_days} days)")
        if "502(a)" not in procedure:
            missing.append(
                "(d) the right to bring a civil action under ERISA section 502(a) after an adverse "
                "decision on review"
            )
    return missing


@transaction.atomic
def claim_deny(
    *,
    claim: Claim,
    reasons: str,
    provisions: Iterable,
    additional_material: str,
    review_procedure: str,
    now: dt.datetime,
    actor: User,
    partial: bool = False,
    records: Iterable = (),
    delivery: str | None = None,
) -> ClaimDecision:
    """Deny in whole or in part with a notice that contains (a)-(d) of EDCP 11.2 / BRP 7.2 / RRP 7.02."""
    decision, rules = _deny_rows(
        claim=claim,
        reasons=reasons,
        provisions=provisions,
        additional_material=additional_material,
        review_procedure=review_procedure,
        now=now,
        actor=actor,
        partial=partial,
        records=records,
        delivery=delivery,
    )
    decision.notice = pdf.decision_notice(decision, rules=rules, now=now, actor=actor)
    decision.save(update_fields=["notice"])
    _notify_claimant(decision.claim, "A decision on your claim", now=now)
    return decision


class _PreviewRendered(Exception):
    """Leaves the preview's savepoint (rolling it back) with the letter's bytes."""

    def __init__(self, data: bytes) -> None:
        super().__init__("preview rendered")
        self.data = data


def claim_deny_preview(
    *,
    claim: Claim,
    reasons: str,
    provisions: Iterable,
    additional_material: str,
    review_procedure: str,
    now: dt.datetime,
    actor: User,
    partial: bool = False,
    records: Iterable = (),
    delivery: str | None = None,
) -> bytes:
    """The denial notice exactly as claim_deny would issue it now, and nothing kept (issue 11: the letter is read
    before it is issued). The same checks and rows as claim_deny inside a savepoint that is rolled back; the
    letter is rendered, not stored, and nobody is told. Refused exactly when claim_deny would be (ClaimRefused)."""
    try:
        with transaction.atomic():
            decision, rules = _deny_rows(
                claim=claim,
                reasons=reasons,
                provisions=provisions,
                additional_material=additional_material,
                review_procedure=review_procedure,
                now=now,
                actor=actor,
                partial=partial,
                records=records,
                delivery=delivery,
            )
            raise _PreviewRendered(pdf.decision_notice_bytes(decision, rules=rules))
    except _PreviewRendered as rendered:
        return rendered.data


def _deny_rows(
    *,
    claim: Claim,
    reasons: str,
    provisions: Iterable,
    additional_material: str,
    review_procedure: str,
    now: dt.datetime,
    actor: User,
    partial: bool,
    records: Iterable,
    delivery: str | None,
) -> tuple[ClaimDecision, ClaimsRules]:
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = rules.cite("denial")
    _check_decider(claim, actor=actor, level=Level.INITIAL, rules=rules)
    _require_state(claim, State.DENIED, "denied", cite)
    sections = _sections(claim, provisions, cite)
    missing = denial_missing(
        reasons=reasons,
        provisions=sections,
        additional_material=additional_material,
        review_procedure=review_procedure,
        rules=rules,
    )
    if missing:
        raise ClaimRefused(f"a denial notice must contain {'; '.join(missing)} ({cite}; {REGULATION}(g)(1))")
    if delivery is not None and delivery not in Delivery.values:
        raise ClaimRefused(f"unknown delivery {delivery!r}")
    decision = _decide(
        claim,
        rules=rules,
        level=Level.INITIAL,
        outcome=Outcome.DENIED,
        reasons=reasons,
        sections=sections,
        records=_records(claim, records),
        now=now,
        actor=actor,
        additional_material=additional_material,
        review_procedure=review_procedure,
        partial=partial,
        delivery=delivery,
    )
    _move(
        claim,
        to=State.DENIED,
        action="denied",
        actor=actor,
        now=now,
        reason=reasons.strip(),
        data={"late": decision.late, "claimant_receives_on": decision.claimant_receives_on.isoformat()},
    )
    return decision, rules


# --- appeal -------------------------------------------------------------------------------------------
def _abandon(
    claim: Claim, *, now: dt.datetime, actor: Actor, rules: ClaimsRules, late_appeal_on: dt.date | None = None
) -> Claim:
    late = (
        f" A notice of appeal received {late_appeal_on:%B %-d, %Y} came after the window and is refused."
        if late_appeal_on
        else ""
    )
    return _move(
        claim,
        to=State.ABANDONED,
        action="abandoned",
        actor=actor,
        now=now,
        reason=f"No appeal was filed by {claim.appeal_due_on:%B %-d, %Y}, {rules.appeal_days} days after the "
        f"claimant received the denial: the claim is deemed abandoned and may not be reasserted "
        f"({rules.cite('review')}).{late}",
    )


def appeal_file(
    *,
    claim: Claim,
    issues: str,
    now: dt.datetime,
    actor: Actor,
    evidence: str = "",
    files: Sequence = (),
    filed_by: Person | None = None,
    received_on: dt.date | None = None,
) -> ClaimAppeal:
    """A written notice of appeal within 60 days after the claimant receives the denial (EDCP 11.3).

    Late: refused, and the claim is marked abandoned (committed even though the call raises)."""
    with transaction.atomic():
        claim = _locked(claim)
        rules = claim_rules(claim=claim)
        cite = rules.cite("review")
        today = local_date(moment=now, rules=rules)
        received_on = received_on or today
        if received_on > today:
            raise ClaimRefused(f"an appeal cannot be received in the future ({received_on}) ({cite})")
        if filed_by is not None and not claim.may_act_for_claimant(filed_by):
            raise ClaimRefused(
                f"only the claimant or their duly authorized representative may appeal ({cite})"
            )
        if claim.state == State.DENIED and claim.appeal_due_on and received_on > claim.appeal_due_on:
            _abandon(claim, now=now, actor="system", rules=rules, late_appeal_on=received_on)
            late = (
                f"the appeal window closed on {claim.appeal_due_on:%B %-d, %Y} ({rules.appeal_days} days after "
                f"the claimant received the denial on "
                f"{claim.decisions.get(level=Level.INITIAL).claimant_receives_on:%B %-d, %Y}); the claim is "
                f"abandoned and may not be reasserted ({cite})"
            )
        else:
            late = ""
    if late:
        raise ClaimRefused(late)
    with transaction.atomic():
        claim = _locked(claim)
        _require_state(claim, State.APPEAL_RECEIVED, "appealed", cite)
        if not (issues or "").strip():
            raise ClaimRefused(
                f"a notice of appeal must describe the issues and the evidence the claimant deems "
                f"relevant ({cite})"
            )
        uploads = [upload_check(file=f, what="the evidence") for f in files]
        upload_quota_check(claim=claim, uploads=uploads, actor=actor, filed_by=filed_by)
        appeal = ClaimAppeal.objects.create(
            claim=claim,
            received_on=received_on,
            received_at=now,
            filed_by=actor_label(actor),
            issues=issues.strip(),
            evidence=(evidence or "").strip(),
        )
        for upload in uploads:
            _store(upload, claim=claim, kind=ClaimDocument.Kind.EVIDENCE, now=now, actor=actor)
        claim.appeal = appeal
        _move(
            claim,
            to=State.APPEAL_RECEIVED,
            action="appeal_filed",
            actor=actor,
            now=now,
            reason=f"Appeal received {received_on:%B %-d, %Y} ({cite})",
        )
        return appeal


@transaction.atomic
def appeal_start_review(*, claim: Claim, now: dt.datetime, actor: Actor, reason: str = "") -> Claim:
    claim = _locked(claim)
    cite = claim_rules(claim=claim).cite("decision_on_review")
    _require_cap(actor, Cap.DECIDE_APPEALS, "reviewing an appeal", cite)
    _require_state(claim, State.APPEAL_UNDER_REVIEW, "put under review on appeal", cite)
    return _move(
        claim,
        to=State.APPEAL_UNDER_REVIEW,
        action="appeal_review_started",
        actor=actor,
        now=now,
        reason=reason,
    )


@transaction.atomic
def appeal_extend(
    *,
    claim: Claim,
    special_circumstances: str,
    expected_on: dt.date,
    now: dt.datetime,
    actor: Actor,
    requests_information: bool = False,
    information_requested: str = "",
) -> ClaimExtension:
    """One extension of the 60 days to 120, with a notice sent before day 60 ends (EDCP 11.4; (i)(1)).

    `requests_information`: as for claim_extend, the period on review is tolled until the claimant responds
    ((i)(4))."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = rules.cite("decision_on_review")
    _require_cap(actor, Cap.DECIDE_APPEALS, "extending the time for a decision on review", cite)
    _only_once(claim, Level.REVIEW, cite)
    _require_state(claim, State.APPEAL_EXTENDED, "extended on review", cite)
    today = local_date(moment=now, rules=rules)
    received = claim.appeal.received_on
    limit = received + dt.timedelta(days=rules.review_days + rules.review_extension_days)
    _check_extension(
        claim=claim,
        rules=rules,
        level=Level.REVIEW,
        today=today,
        special_circumstances=special_circumstances,
        expected_on=expected_on,
        last_notice_day=review_extension_notice_by(appeal_received_on=received, rules=rules),
        limit=limit,
        cite=cite,
        requests_information=requests_information,
        information_requested=information_requested,
    )
    return _extend(
        claim,
        rules=rules,
        level=Level.REVIEW,
        special_circumstances=special_circumstances,
        expected_on=expected_on,
        today=today,
        now=now,
        actor=actor,
        to=State.APPEAL_EXTENDED,
        cite=cite,
        requests_information=requests_information,
        information_requested=information_requested,
    )


@transaction.atomic
def appeal_decide(
    *,
    claim: Claim,
    outcome: str,
    reasons: str,
    now: dt.datetime,
    actor: User,
    provisions: Iterable = (),
    approved_benefit: str = "",
    records: Iterable = (),
    partial: bool = False,
) -> ClaimDecision:
    """The Committee's decision on review, communicated in writing (EDCP 11.4)."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    cite = rules.cite("decision_on_review")
    _check_decider(claim, actor=actor, level=Level.REVIEW, rules=rules)
    if outcome not in Outcome.values:
        raise ClaimRefused(f"a decision on review approves or denies the appeal, not {outcome!r} ({cite})")
    to = State.APPEAL_APPROVED if outcome == Outcome.APPROVED else State.APPEAL_DENIED
    _require_state(claim, to, "decided on review", cite)
    sections = _sections(claim, provisions, cite)
    missing = []
    if not (reasons or "").strip():
        missing.append("(a) the specific reasons")
    if outcome == Outcome.DENIED and not sections:
        missing.append("(b) the specific plan provisions on which the adverse determination is based")
    if outcome == Outcome.APPROVED and not (approved_benefit or "").strip():
        missing.append("what benefit is granted")
    if missing:
        raise ClaimRefused(f"a decision on review must state {'; '.join(missing)} ({cite}; {REGULATION}(j))")
    decision = _decide(
        claim,
        rules=rules,
        level=Level.REVIEW,
        outcome=outcome,
        reasons=reasons,
        sections=sections,
        records=_records(claim, records),
        now=now,
        actor=actor,
        approved_benefit=approved_benefit,
        partial=partial,
    )
    _move(
        claim,
        to=to,
        action="appeal_decided",
        actor=actor,
        now=now,
        reason=reasons.strip(),
        data={"outcome": outcome, "late": decision.late},
    )
    decision.notice = pdf.decision_notice(decision, rules=rules, now=now, actor=actor)
    decision.save(update_fields=["notice"])
    _notify_claimant(claim, "The Committee's decision on your appeal", now=now)
    return decision


@transaction.atomic
def claim_close(*, claim: Claim, now: dt.datetime, actor: Actor, reason: str) -> Claim:
    claim = _locked(claim)
    cite = claim_rules(claim=claim).cite("filing")
    _require_cap(actor, Cap.DECIDE_CLAIMS, "closing a claim", cite)
    _require_state(claim, State.CLOSED, "closed", cite)
    if not (reason or "").strip():
        raise ClaimRefused(f"closing a claim needs a reason ({cite})")
    return _move(claim, to=State.CLOSED, action="closed", actor=actor, now=now, reason=reason.strip())


# --- claim file ---------------------------------------------------------------------------------------
@transaction.atomic
def claim_file_request(*, claim: Claim, now: dt.datetime, actor: Actor) -> ClaimFileRequest:
    """The claimant asks for every document relevant to the claim, free ((h)(2)(iii), (m)(8); EDCP 11.3)."""
    claim = _locked(claim)
    rules = claim_rules(claim=claim)
    request = ClaimFileRequest.objects.create(
        claim=claim,
        requested_on=local_date(moment=now, rules=rules),
        requested_at=now,
        requested_by=actor_label(actor),
    )
    _log(
        claim,
        action="claim_file_requested",
        to=claim.state,
        actor=actor,
        now=now,
        reason=f"Copies of all documents relevant to the claim, free of charge ({rules.cite('review')})",
    )
    return request


@transaction.atomic
def claim_file_fulfil(*, request: ClaimFileRequest, now: dt.datetime, actor: Actor) -> ClaimFileRequest:
    """Assemble the claim file into one PDF and furnish it; logged with its date."""
    request = ClaimFileRequest.objects.select_for_update().get(pk=request.pk)
    if request.fulfilled_on is not None:
        raise ClaimRefused(
            f"the claim file requested on {request.requested_on} was furnished on {request.fulfilled_on}"
        )
    claim = _locked(request.claim)
    rules = claim_rules(claim=claim)
    request.fulfilled_on, request.fulfilled_at = local_date(moment=now, rules=rules), now
    request.contents_sha256 = pdf.claim_file_contents_key(claim=claim)
    # Issue 12: the same contents are furnished from the bundle already stored, not written again.
    unchanged = (
        claim.file_requests.filter(contents_sha256=request.contents_sha256, document__isnull=False)
        .exclude(pk=request.pk)
        .order_by("-fulfilled_at")
        .first()
    )
    request.document = (
        unchanged.document
        if unchanged is not None
        else pdf.claim_file_bundle(request, claim=claim, rules=rules, now=now, actor=actor)
    )
    request.save()
    _log(
        claim,
        action="claim_file_furnished",
        to=claim.state,
        actor=actor,
        now=now,
        reason=f"Claim file requested {request.requested_on}, furnished {request.fulfilled_on}, free of charge",
    )
    _notify_claimant(claim, "The copy of your claim file", now=now)
    return request


# --- the daily job ------------------------------------------------------------------------------------
def _reviewers(claim: Claim) -> list[User]:
    """The reviewer, else every active user with an email address who decides at this level."""
    if claim.reviewer is not None and claim.reviewer.email:
        return [claim.reviewer]
    cap = Cap.DECIDE_APPEALS if claim.state in AWAITING_REVIEW else Cap.DECIDE_CLAIMS
    users = get_user_model().objects.filter(is_active=True).exclude(email="").prefetch_related("groups")
    by_email = {u.email: u for u in sorted(users, key=lambda u: u.pk) if has_cap(u, cap)}
    return [by_email[e] for e in sorted(by_email)]


def _reviewer_emails(claim: Claim) -> list[str]:
    return [u.email for u in _reviewers(claim)]


def _tell_staff(
    users: Sequence[User], *, claim: Claim, subject: str, body: str, obj: Any, key: str, now: dt.datetime
) -> None:
    """One email per staff user through core.notices (recorded; once per object, key and user)."""
    link = reverse("claims_staff:detail", kwargs={"pk": claim.pk})
    for user in users:
        notice_send(
            kind=NoticeKind.CLAIM_STAFF,
            subject=subject,
            template="email/staff_alert.txt",
            context={"body": body},
            link=link,
            as_of=now,
            actor="claims",
            user=user,
            obj=obj,
            key_extra=key,
        )


def claims_flag_deadlines(*, now: dt.datetime) -> dict:
    """Daily: mark abandoned claims, flag deadlines within WARN_DAYS or past, email the reviewer.

    Idempotent: a flag is one row per claim, kind and due date, so a rerun emails nobody twice and an
    abandoned claim is abandoned once."""
    stats = {"abandoned": 0, "approaching": 0, "overdue": 0, "emails": 0, "failed": 0}
    horizon = (now + dt.timedelta(days=2)).date()
    for pk in Claim.objects.filter(state=State.DENIED, appeal_due_on__lt=horizon).values_list(
        "pk", flat=True
    ):
        try:
            with transaction.atomic():
                claim = _locked(Claim(pk=pk))
                rules = claim_rules(claim=claim)
                due = claim.appeal_due_on
                if (
                    claim.state == State.DENIED
                    and due is not None
                    and local_date(moment=now, rules=rules) > due
                ):
                    _abandon(claim, now=now, actor="system", rules=rules)
                    ClaimFlag.objects.get_or_create(
                        claim=claim,
                        kind=ClaimFlag.Kind.ABANDONED,
                        deadline_kind="appeal",
                        deadline_on=due,
                        defaults={"flagged_on": local_date(moment=now, rules=rules)},
                    )
                    stats["abandoned"] += 1
        except Exception:  # noqa: BLE001 - one bad claim must not stop the run; the next run retries it
            log.exception("claims deadlines: claim %s could not be marked abandoned", pk)
            stats["failed"] += 1
    horizon = (now + dt.timedelta(days=WARN_DAYS + 2)).date()
    # A claim whose period is tolled for the claimant's information has no next deadline ((f)(4), (i)(4)): the
    # filter on the date leaves it out, so it is never flagged while the clock stands still.
    pending = Claim.objects.filter(
        state__in=(*AWAITING_DECISION, *AWAITING_REVIEW), next_deadline_on__lte=horizon
    ).select_related("plan", "reviewer")
    for claim in pending:
        rules = claim_rules(claim=claim)
        today = local_date(moment=now, rules=rules)
        if claim.next_deadline_on is None:  # never: filtered on it above
            continue
        days_left = (claim.next_deadline_on - today).days
        if days_left > WARN_DAYS:
            continue
        kind = ClaimFlag.Kind.OVERDUE if days_left < 0 else ClaimFlag.Kind.APPROACHING
        reviewers = _reviewers(claim)
        recipients = [u.email for u in reviewers]
        flag, created = ClaimFlag.objects.get_or_create(
            claim=claim,
            kind=kind,
            deadline_kind=claim.next_deadline_kind,
            deadline_on=claim.next_deadline_on,
            defaults={"flagged_on": today, "emailed_to": ", ".join(recipients)},
        )
        if not created:
            continue
        stats[kind] += 1
        if recipients:
            when = (
                f"was due on {claim.next_deadline_on:%B %-d, %Y} ({_days(-days_left)} ago)"
                if days_left < 0
                else f"is due on {claim.next_deadline_on:%B %-d, %Y} ({_days(days_left)} left)"
            )
            cite = rules.cite("decision_on_review" if claim.state in AWAITING_REVIEW else "denial")
            _tell_staff(
                reviewers,
                claim=claim,
                subject=f"[{claim.plan.code} claims] {claim.number}: deadline {kind}",
                body=(
                    f"Claim {claim.number} of {claim.claimant_name} ({claim.plan.name}) is "
                    f"{claim.get_state_display().lower()}.\nThe {claim.next_deadline_kind.replace('_', ' ')} "
                    f"deadline {when} ({cite}).\n"
                ),
                obj=flag,
                key="",
                now=now,
            )
            stats["emails"] += 1
    return stats


def _days(n: int) -> str:
    return f"{n} day" if n == 1 else f"{n} days"


def _notify_reviewer(claim: Claim, *, subject: str, body: str, now: dt.datetime) -> None:
    """Tell the reviewer (else everyone who decides at this level), once the change commits."""
    reviewers = _reviewers(claim)
    if reviewers:
        key = f"{claim.state}:{subject}"
        transaction.on_commit(
            lambda: _tell_staff(
                reviewers, claim=claim, subject=subject, body=body, obj=claim, key=key, now=now
            )
        )


def _notify_claimant(claim: Claim, subject: str, *, now: dt.datetime) -> None:
    """Portal delivery: tell the claimant (and representative) a notice is waiting, once the change commits.

    Through core.notices: by email to those who consented to electronic delivery, else on paper (the print
    queue); once per claim, state and notice, so a retried action tells nobody twice."""
    if claim.delivery != Delivery.PORTAL:
        return
    # An unverified representative is sent nothing (29 CFR 2560.503-1(b)(4)).
    people = [
        p for p in (claim.claimant, claim.representative if claim.representative_verified else None) if p
    ]
    if not people:
        return
    link = reverse("claims_portal:detail", kwargs={"pk": claim.pk})
    key = f"{claim.state}:{subject}"

    def send() -> None:
        for person in people:
            notice_send(
                kind=NoticeKind.CLAIM_NOTICE,
                subject=subject,
                template="email/claim_notice.txt",
                context={"claim": claim, "subject": subject},
                link=link,
                as_of=now,
                actor="claims",
                person=person,
                obj=claim,
                key_extra=key,
            )

    transaction.on_commit(send)
