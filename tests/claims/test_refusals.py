"""Bad input is refused with a clear message naming the section, and nothing changes."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from claims.models import Claim, ClaimDecision, ClaimDocument, ClaimTransition, State
from claims.selectors import review_procedure_text
from claims.services import MAX_UPLOAD_BYTES, ClaimRefused, appeal_decide, appeal_file, claim_approve
from core.models import Document
from tests.claims.factories import at, deny, file_claim, participant, pdf_bytes, png_bytes, section, upload

pytestmark = pytest.mark.django_db


def _nothing_stored():
    media = Path(settings.MEDIA_ROOT)
    return not ClaimDocument.objects.exists() and not (media.exists() and any(media.rglob("*.*")))


@pytest.fixture
def claim(alice):
    return file_claim(alice, now=at(2025, 1, 10))


def _unchanged(claim, transitions: int = 1):
    claim.refresh_from_db()
    assert claim.state == State.RECEIVED
    assert not ClaimDecision.objects.exists() and not Document.objects.exists()
    assert ClaimTransition.objects.filter(claim=claim).count() == transitions


# --- a denial missing any of (a)-(d) cannot be issued ----------------------------------------------------
@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ({"reasons": "  "}, r"\(a\) the specific reasons"),
        ({"provisions": []}, r"\(b\) the specific plan provisions"),
        ({"additional_material": ""}, r"\(c\) any additional material"),
        ({"review_procedure": ""}, r"\(d\) the review procedure and its time limits"),
        (
            {"review_procedure": "Write to the Committee within 60 days."},
            r"\(d\) the right to bring a civil action",
        ),
        (
            {"review_procedure": "Appeal; you may sue under ERISA 502(a)."},
            r"\(d\) the time limit for an appeal",
        ),
    ],
)
def test_a_denial_missing_an_element_is_refused_and_nothing_changes(claim, admin_user, missing, message):
    with pytest.raises(ClaimRefused, match=message) as refused:
        deny(claim, now=at(2025, 3, 3), actor=admin_user, **missing)
    assert "(EDCP 11.2; 29 CFR 2560.503-1(g)(1))" in str(refused.value)
    _unchanged(claim)


def test_a_denial_lists_every_missing_element_at_once(claim, admin_user):
    with pytest.raises(ClaimRefused) as refused:
        deny(
            claim,
            now=at(2025, 3, 3),
            actor=admin_user,
            reasons="",
            provisions=[],
            additional_material="",
            review_procedure="",
        )
    assert all(f"({x})" in str(refused.value) for x in "abcd")


def test_a_provision_of_another_plan_cannot_be_relied_on(claim, admin_user):
    with pytest.raises(ClaimRefused, match="is not a section of the Executive Deferred Compensation Plan"):
        deny(claim, now=at(2025, 3, 3), actor=admin_user, provisions=[section("BRP", "4.1")])
    _unchanged(claim)


def test_an_approval_needs_reasons_and_what_is_granted(claim, admin_user):
    with pytest.raises(ClaimRefused, match="reasons"):
        claim_approve(
            claim=claim, reasons="", approved_benefit="Credit", now=at(2025, 2, 1), actor=admin_user
        )
    with pytest.raises(ClaimRefused, match="what benefit is granted"):
        claim_approve(
            claim=claim, reasons="Because", approved_benefit=" ", now=at(2025, 2, 1), actor=admin_user
        )
    _unchanged(claim)


def test_a_decision_on_review_without_reasons_or_provisions_is_refused(
    claim, alice, admin_user, committee_user
):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor="alice")
    before = (ClaimTransition.objects.count(), Document.objects.count())
    with pytest.raises(
        ClaimRefused, match=r"\(b\) the specific plan provisions.*\(EDCP 11.4; 29 CFR 2560.503-1\(j\)\)"
    ):
        appeal_decide(
            claim=claim,
            outcome="denied",
            reasons="Still no",
            provisions=[],
            now=at(2025, 5, 1),
            actor=committee_user,
        )
    with pytest.raises(ClaimRefused, match=r"\(a\) the specific reasons"):
        appeal_decide(
            claim=claim,
            outcome="denied",
            reasons="",
            provisions=[section("EDCP", "4.1")],
            now=at(2025, 5, 1),
            actor=committee_user,
        )
    claim.refresh_from_db()
    assert claim.state == State.APPEAL_RECEIVED and ClaimDecision.objects.count() == 1
    assert (ClaimTransition.objects.count(), Document.objects.count()) == before


def test_an_appeal_must_describe_the_issues(claim, admin_user):
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    with pytest.raises(ClaimRefused, match=r"describe the issues and the evidence.*\(EDCP 11.3\)"):
        appeal_file(claim=claim, issues=" ", now=at(2025, 4, 1), actor="alice")
    claim.refresh_from_db()
    assert claim.state == State.DENIED


# --- who decides ----------------------------------------------------------------------------------------
def test_only_the_committees_delegate_decides_a_claim_and_only_the_committee_an_appeal(
    claim, alice, admin_user, committee_user, auditor_user
):
    for user in (auditor_user, committee_user):
        with pytest.raises(ClaimRefused, match=r"decide_claims capability \(EDCP 11.1\)"):
            deny(claim, now=at(2025, 3, 3), actor=user)
    with pytest.raises(ClaimRefused, match="decide_claims"):
        deny(claim, now=at(2025, 3, 3), actor=alice.user)
    _unchanged(claim)
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor="alice")
    with pytest.raises(ClaimRefused, match=r"decide_appeals capability \(EDCP 11.4\)"):
        appeal_decide(
            claim=claim,
            outcome="approved",
            reasons="x",
            approved_benefit="y",
            now=at(2025, 4, 2),
            actor=admin_user,
        )


# --- files ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("notes.txt", b"plain text", "is not accepted: send a PDF, PNG or JPEG"),
        ("setup.exe", b"MZ\x90\x00", "is not accepted"),
        ("statement.pdf", b"MZ\x90\x00 not a pdf", "is not a real PDF file"),
        ("photo.png", b"\xff\xd8\xff\xe0 a jpeg named png", "is not a real PNG file"),
        ("empty.pdf", b"", "is empty"),
    ],
)
def test_a_file_of_the_wrong_type_is_refused_and_nothing_is_stored(alice, name, data, message):
    with pytest.raises(ClaimRefused, match=message):
        file_claim(alice, now=at(2025, 1, 10), files=[upload(), upload(name, data)])
    assert not Claim.objects.exists() and _nothing_stored()


def test_a_file_over_10_mb_is_refused_and_nothing_is_stored(alice):
    big = b"%PDF-1.7\n" + b"0" * MAX_UPLOAD_BYTES
    with pytest.raises(ClaimRefused, match="the limit is 10 MB"):
        file_claim(alice, now=at(2025, 1, 10), files=[upload("big.pdf", big)])
    assert not Claim.objects.exists() and _nothing_stored()


def test_pdf_png_and_jpeg_up_to_the_limit_are_stored_with_their_hash(alice):
    import hashlib
    import io

    from PIL import Image

    jpeg = io.BytesIO()
    Image.new("RGB", (8, 8)).save(jpeg, format="JPEG")
    files = [
        upload(),
        upload("photo.PNG", png_bytes(), "image/png"),
        upload("scan.jpeg", jpeg.getvalue(), "image/jpeg"),
    ]
    claim = file_claim(alice, now=at(2025, 1, 10), files=files)
    docs = list(claim.documents.order_by("id"))
    assert [d.content_type for d in docs] == ["application/pdf", "image/png", "image/jpeg"]
    for doc, data in zip(docs, (pdf_bytes(), png_bytes(), jpeg.getvalue()), strict=True):
        stored = (Path(settings.MEDIA_ROOT) / doc.path).read_bytes()
        assert stored == data and doc.sha256 == hashlib.sha256(data).hexdigest() and doc.size == len(data)


# --- representatives ------------------------------------------------------------------------------------
def test_a_claim_on_behalf_of_someone_else_needs_the_representatives_authorisation(alice, bob):
    with pytest.raises(
        ClaimRefused,
        match=r"not the claimant: .*duly authorized representative.*\(EDCP 11.3; "
        r"29 CFR 2560.503-1\(b\)\(4\)\)",
    ):
        file_claim(alice, now=at(2025, 1, 10), filed_by=bob, actor=bob.user)
    with pytest.raises(ClaimRefused, match=r"needs the claimant's written authorisation of Bob Other"):
        file_claim(alice, now=at(2025, 1, 10), filed_by=bob, representative=bob, actor=bob.user)
    assert not Claim.objects.exists() and _nothing_stored()
    claim = file_claim(
        alice,
        now=at(2025, 1, 10),
        filed_by=bob,
        representative=bob,
        actor=bob.user,
        authorisation=upload("authorisation.pdf"),
    )
    assert (claim.claimant, claim.representative) == (alice, bob)
    assert claim.representative_authorisation.kind == "authorisation"
    assert claim.representative_authorisation.claim == claim


def test_only_the_claimant_or_representative_may_appeal(alice, bob, admin_user):
    claim = file_claim(alice, now=at(2025, 1, 10))
    deny(claim, now=at(2025, 3, 3), actor=admin_user)
    with pytest.raises(ClaimRefused, match="only the claimant or their duly authorized representative"):
        appeal_file(claim=claim, issues="Issues", now=at(2025, 4, 1), actor=bob.user, filed_by=bob)
    claim.refresh_from_db()
    assert claim.state == State.DENIED


def test_a_beneficiary_claim_names_the_participant(alice):
    widow = participant("EDCP", username="widow", first_name="Wanda", last_name="Widow")
    with pytest.raises(ClaimRefused, match="must name the participant"):
        file_claim(widow, now=at(2025, 1, 10), capacity="beneficiary")
    claim = file_claim(widow, now=at(2025, 1, 10), capacity="beneficiary", participant=alice)
    assert (claim.claimant, claim.participant) == (widow, alice)


def test_a_claim_needs_a_description_and_cannot_be_received_in_the_future(alice):
    with pytest.raises(ClaimRefused, match=r"say in writing what is claimed \(EDCP 11.1\)"):
        file_claim(alice, now=at(2025, 1, 10), description="  ")
    import datetime as dt

    with pytest.raises(ClaimRefused, match="in the future"):
        file_claim(alice, now=at(2025, 1, 10), received_on=dt.date(2025, 1, 11))
    assert not Claim.objects.exists()


def test_the_default_review_procedure_states_the_limits_and_the_right_to_sue(claim):
    text = review_procedure_text(claim=claim)
    for part in (
        "60 days",
        "120 days",
        "502(a)",
        "one year",
        "EDCP 11.3",
        "EDCP 11.4",
        "EDCP 11.5",
        "EDCP 11.6",
        "Eastern District of Virginia",
        "abandoned",
    ):
        assert part in text
