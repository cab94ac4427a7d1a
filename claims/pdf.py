"""The claims letters (WeasyPrint, templates/claims/pdf/) and the claim file bundle.

Each notice is rendered from its decision or extension and stored by content hash (core.pdf.document_store)
with person = the claimant, so /documents/<pk>/ serves it only to them and to staff. Rendering again from
the same rows gives the same bytes and the same Document.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import logging
from pathlib import Path
from typing import Any

from django.conf import settings
from pypdf import PdfReader, PdfWriter

from claims.models import (
    Claim,
    ClaimDecision,
    ClaimDocument,
    ClaimExtension,
    ClaimFileRequest,
    Level,
    Outcome,
)
from claims.selectors import (
    RECEIPT_ALLOWANCE_DAYS,
    SECTION_ROLES,
    ClaimsRules,
    claim_deadlines,
    claim_notices,
    claims_article,
    decision_due_on,
    quoted_section,
    regulation_paragraph,
    review_due_on,
    review_procedure_text,
)
from core.audit import actor_label
from core.models import Document
from core.pdf import document_bytes, document_store, document_store_bytes, render_pdf
from plans.selectors import committee_contact

log = logging.getLogger(__name__)

REGULATION = "29 CFR 2560.503-1"


def _signer(user) -> str:
    if user is None or isinstance(user, str):
        return ""
    return user.get_full_name() or user.get_username()


def _letter(claim: Claim, rules: ClaimsRules, *, on: dt.date, body: str, signer: str, title: str) -> dict:
    article = claims_article(rules=rules)
    borrowed = sorted({q.note for q in article.values() if q is not None and q.note})
    return {
        "title": title,
        "sponsor": claim.plan.sponsor,  # on the letterhead only: the sponsor's name once (issue 11)
        "plan_name": claim.plan.name,
        "contact": committee_contact(
            plan=claim.plan, as_of=on
        ),  # the Committee's dated setting on the letter's date
        "committee": body[:1].upper() + body[1:],
        "claim": claim,
        "date": on,
        "address_lines": claim.address_lines,
        "rules": rules,
        "article": article,
        "article_notes": borrowed,
        "body": body,
        "signer": signer,
        "regulation": REGULATION,
        "cites": {role: rules.cite(role) for role in SECTION_ROLES},
        "decision_total_days": rules.decision_days + rules.extension_days,
        "review_total_days": rules.review_days + rules.review_extension_days,
        "legal_years": "one year" if rules.legal_action_years == 1 else f"{rules.legal_action_years} years",
        "mail_days": RECEIPT_ALLOWANCE_DAYS["mail"],
        "portal_days": RECEIPT_ALLOWANCE_DAYS["portal"],
    }


def _kind(decision: ClaimDecision) -> str:
    level = "claim" if decision.level == Level.INITIAL else "claim_review"
    return f"{level}_{'denial' if decision.outcome == Outcome.DENIED else 'approval'}"


def _decision_template(decision: ClaimDecision) -> tuple[str, str]:
    if decision.level == Level.INITIAL:
        if decision.outcome == Outcome.DENIED:
            return "claims/pdf/denial.html", "Notice of denial of claim"
        return "claims/pdf/approval.html", "Approval of claim"
    return "claims/pdf/review_decision.html", "Decision on review of claim"


def _decision_context(decision: ClaimDecision, *, rules: ClaimsRules, title: str) -> dict[str, Any]:
    claim = decision.claim
    context = _letter(
        claim,
        rules,
        on=decision.decided_on,
        body=decision.deciding_body,
        signer=_signer(decision.decided_by),
        title=title,
    )
    context.update(
        {
            "decision": decision,
            "provisions": [
                quoted_section(section=s, in_force=rules.version)
                for s in decision.provisions.select_related("version__plan").order_by("sort_key")
            ],
            "records": list(decision.records_relied_on.all()),
            "deadlines": claim_deadlines(claim=claim),
            "default_procedure": review_procedure_text(claim=claim),
        }
    )
    return context


def decision_notice(decision: ClaimDecision, *, rules: ClaimsRules, now: dt.datetime, actor) -> Document:
    """Denial notice (EDCP 11.2 (a)-(d)), approval letter, or decision on review (EDCP 11.4-11.6)."""
    template, title = _decision_template(decision)
    return document_store(
        kind=_kind(decision),
        title=f"{title} {decision.claim.number}",
        template=template,
        context=_decision_context(decision, rules=rules, title=title),
        actor=actor_label(actor),
        person=decision.claim.claimant,
        obj=decision,
        now=now,
    )


def decision_notice_bytes(decision: ClaimDecision, *, rules: ClaimsRules) -> bytes:
    """The same letter rendered and not stored (the preview before a denial is issued)."""
    template, title = _decision_template(decision)
    return render_pdf(template, _decision_context(decision, rules=rules, title=title))


def extension_notice(extension: ClaimExtension, *, rules: ClaimsRules, now: dt.datetime, actor) -> Document:
    """The extension notice ((f)(1), (i)(1)); when the extension is for information the claimant has not submitted,
    it says what is needed and that the period is suspended until the response is received ((f)(4), (i)(4))."""
    claim = extension.claim
    initial = extension.level == Level.INITIAL
    title = (
        "Notice of extension of time to decide your claim"
        if initial
        else "Notice of extension of time to decide your appeal"
    )
    context = _letter(
        claim,
        rules,
        on=extension.issued_on,
        body="the Committee's delegate" if initial else "the Committee",
        signer=_signer(actor),
        title=title,
    )
    # The limits before any tolling: the notice is sent the day the clock stops, so none has been tolled yet.
    if initial:
        start, cite = claim.received_on, rules.cite("denial")
        original = decision_due_on(received_on=start, rules=rules, extended=False)
        limit = decision_due_on(received_on=start, rules=rules, extended=True)
        days, more = rules.decision_days, rules.extension_days
    else:
        start, cite = claim.appeal.received_on, rules.cite("decision_on_review")
        original = review_due_on(appeal_received_on=start, rules=rules, extended=False)
        limit = review_due_on(appeal_received_on=start, rules=rules, extended=True)
        days, more = rules.review_days, rules.review_extension_days
    context.update(
        {
            "extension": extension,
            "initial": initial,
            "original_due": original,
            "limit": limit,
            "start": start,
            "cite": cite,
            "days": days,
            "more": more,
            "tolling_paragraph": regulation_paragraph(level=extension.level),
            "days_remaining": (limit - extension.issued_on).days,
        }
    )
    kind = "claim_extension" if initial else "claim_review_extension"
    return document_store(
        kind=kind,
        title=f"{title} {claim.number}",
        template="claims/pdf/extension.html",
        context=context,
        actor=actor_label(actor),
        person=claim.claimant,
        obj=extension,
        now=now,
    )


# --- the claim file -----------------------------------------------------------------------------------
def _upload_bytes(doc: ClaimDocument) -> bytes:
    data = (Path(settings.MEDIA_ROOT) / doc.path).read_bytes()
    if hashlib.sha256(data).hexdigest() != doc.sha256:
        raise ValueError(f"{doc.original_name} does not match its recorded hash")
    return data


# Steps about the claim file itself: they change the log, not what the claim file holds.
CLAIM_FILE_BOOKKEEPING = ("claim_file_requested", "claim_file_furnished")


def claim_file_contents_key(*, claim: Claim) -> str:
    """A fingerprint of everything the claim file holds except its own requests: equal keys, equal contents."""
    parts = [f"state={claim.state}", f"due={claim.next_deadline_on}"]
    parts += [f"upload={d.sha256}:{d.kind}" for d in claim.documents.order_by("id")]
    parts += [f"notice={d.sha256}" for d in claim_notices(claim=claim, with_claim_files=False)]
    parts += [
        f"step={t.pk}"
        for t in claim.transitions.exclude(action__in=CLAIM_FILE_BOOKKEEPING).order_by("id").only("pk")
    ]
    parts += [f"extension={e.pk}:{e.information_received_on}" for e in claim.extensions.order_by("id")]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def claim_file_bundle(
    request: ClaimFileRequest, *, claim: Claim, rules: ClaimsRules, now: dt.datetime, actor
) -> Document:
    """Every document relevant to the claim ((m)(8)) in one PDF: an index and the claim's record, then as
    exhibits the notices issued and the PDFs submitted; images submitted are shown inside the record."""
    uploads = list(claim.documents.all())
    notices = claim_notices(claim=claim, with_claim_files=False)
    exhibits: list[dict] = []
    letter = iter("ABCDEFGHIJKLMNOPQRSTUVWXYZ")

    def label() -> str:
        try:
            return next(letter)
        except StopIteration:
            return f"Z{len(exhibits)}"

    for notice in notices:
        exhibits.append(
            {
                "label": label(),
                "title": notice.title,
                "what": "Notice issued",
                "sha256": notice.sha256,
                "data": document_bytes(notice),
                "date": notice.created_at,
            }
        )
    images = []
    for doc in uploads:
        data = _upload_bytes(doc)
        entry: dict[str, Any] = {
            "label": label(),
            "title": doc.original_name,
            "what": doc.get_kind_display(),
            "sha256": doc.sha256,
            "date": doc.uploaded_at,
            "data": data if doc.is_pdf else None,
            "image": not doc.is_pdf,
        }
        if not doc.is_pdf:
            entry["src"] = f"data:{doc.content_type};base64,{base64.b64encode(data).decode('ascii')}"
            images.append(entry)
        exhibits.append(entry)
    readable = []
    for entry in exhibits:
        if entry.get("data") is None:
            continue
        try:
            reader = PdfReader(io.BytesIO(entry["data"]))
            if reader.is_encrypted and not reader.decrypt(""):
                raise ValueError("the file is encrypted")
            entry["pages"] = len(reader.pages)
            readable.append((entry, reader))
        except Exception as exc:  # noqa: BLE001 - a damaged upload is listed, never silently dropped
            log.warning("claim file %s: exhibit %s not merged: %s", claim.number, entry["title"], exc)
            entry["problem"] = f"could not be attached ({exc}); a copy is available on request"

    decisions = list(claim.decisions.prefetch_related("provisions__version__plan", "records_relied_on"))
    cited = {}
    for d in decisions:
        for s in d.provisions.all():
            cited[s.pk] = quoted_section(section=s, in_force=rules.version)
    assert request.fulfilled_on is not None  # the bundle answers a request the caller has just fulfilled
    context = _letter(
        claim,
        rules,
        on=request.fulfilled_on,
        body="the Committee",
        signer="",
        title=f"Claim file {claim.number}",
    )
    context.update(
        {
            "request": request,
            "deadlines": claim_deadlines(claim=claim),
            "transitions": list(claim.transitions.all()),
            "decisions": decisions,
            "extensions": list(claim.extensions.all()),
            "appeal": getattr(claim, "appeal", None),
            "uploads": uploads,
            "exhibits": exhibits,
            "images": images,
            "cited": sorted(cited.values(), key=lambda q: q.section.sort_key),
            "file_requests": list(claim.file_requests.all()),
        }
    )
    writer = PdfWriter()
    writer.append(io.BytesIO(render_pdf("claims/pdf/claim_file.html", context)))
    for entry, reader in readable:
        writer.append(
            reader, outline_item=f"Exhibit {entry['label']}: {entry['title']}", import_outline=False
        )
    buffer = io.BytesIO()
    writer.write(buffer)
    return store_bytes(
        data=buffer.getvalue(),
        kind="claim_file",
        title=f"Claim file {claim.number}",
        template="claims/pdf/claim_file.html",
        person=claim.claimant,
        obj=request,
        now=now,
        actor=actor_label(actor),
    )


def store_bytes(
    *, data: bytes, kind: str, title: str, template: str, person, obj, now: dt.datetime, actor: str
) -> Document:
    """Store an assembled PDF exactly as core.pdf stores a rendered one."""
    return document_store_bytes(
        data=data, kind=kind, title=title, template=template, actor=actor, person=person, obj=obj, now=now
    )
