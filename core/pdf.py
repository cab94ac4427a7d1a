"""PDF documents (WeasyPrint): render a template to bytes, store by content hash, record a Document.

Templates live in templates/<app>/pdf/ and extend templates/pdf/base.html (letterhead, page numbers).
Rendering is deterministic: the same context gives the same bytes, so regenerating gives the same hash.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import io
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import IO

from django.conf import settings
from django.db import models
from django.template.loader import render_to_string
from django.utils import timezone

from core.models import Document


def render_pdf(template: str, context: dict) -> bytes:
    from weasyprint import HTML  # on use: WeasyPrint loads Pango, slow; only the processes that render pay

    html = render_to_string(template, context)
    return HTML(string=html, base_url=str(Path(settings.BASE_DIR) / "static")).write_pdf()


def pdf_text(data: bytes) -> str:
    """The text of a PDF (pdftotext), for tests and checks."""
    result = subprocess.run(["pdftotext", "-layout", "-", "-"], input=data, capture_output=True, check=True)
    return result.stdout.decode("utf-8")


def pdf_page_images(data: bytes, *, dpi: int = 72) -> list[str]:
    """Each page of a PDF as a PNG data URI (pdftoppm), to show a letter on a page before it is issued."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "letter.pdf"
        source.write_bytes(data)
        subprocess.run(
            ["pdftoppm", "-png", "-r", str(dpi), str(source), str(Path(folder) / "page")], check=True
        )
        pages = sorted(Path(folder).glob("page*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[-1]))
        return ["data:image/png;base64," + base64.b64encode(p.read_bytes()).decode("ascii") for p in pages]


def document_store(
    *,
    kind: str,
    title: str,
    template: str,
    context: dict,
    actor: str,
    person=None,
    obj: models.Model | None = None,
    now: dt.datetime | None = None,
) -> Document:
    """Render and store; if this object already has a document of this kind with the same bytes, return it."""
    return document_store_bytes(
        data=render_pdf(template, context),
        kind=kind,
        title=title,
        template=template,
        actor=actor,
        person=person,
        obj=obj,
        now=now,
    )


def document_store_bytes(
    *,
    data: bytes,
    kind: str,
    title: str,
    template: str,
    actor: str,
    person=None,
    obj: models.Model | None = None,
    now: dt.datetime | None = None,
    content_type: str = "application/pdf",
    extension: str = "pdf",
) -> Document:
    """Store PDF bytes (rendered here or assembled elsewhere, e.g. a claim file) by content hash; or another
    kind of file (a CSV report: `content_type="text/csv", extension="csv"`), recorded on the Document."""
    return document_store_file(
        file=io.BytesIO(data),
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        kind=kind,
        title=title,
        template=template,
        actor=actor,
        person=person,
        obj=obj,
        now=now,
        content_type=content_type,
        extension=extension,
    )


def document_store_file(
    *,
    file: IO[bytes],
    sha256: str,
    size: int,
    kind: str,
    title: str,
    template: str,
    actor: str,
    person=None,
    obj: models.Model | None = None,
    now: dt.datetime | None = None,
    content_type: str = "application/pdf",
    extension: str = "pdf",
) -> Document:
    """document_store_bytes for a file written elsewhere, its hash and size already known (a report job's CSV,
    spooled to a temporary file as it was written): copied into the store in pieces, never read whole."""
    object_type = obj._meta.label if obj is not None else ""
    object_id = str(obj.pk) if obj is not None else ""
    existing = Document.objects.filter(
        kind=kind, sha256=sha256, object_type=object_type, object_id=object_id
    ).first()
    if existing:
        return existing
    relative = Path("documents") / kind / sha256[:2] / f"{sha256}.{extension}"
    target = Path(settings.MEDIA_ROOT) / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        partial = target.with_name(f"{target.name}.{uuid.uuid4().hex[:8]}.part")
        file.seek(0)
        with partial.open("wb") as out:
            shutil.copyfileobj(file, out)
        partial.replace(target)  # whole or absent: a reader never sees half a file under its hash
    return Document.objects.create(
        content_type=content_type,
        extension=extension,
        kind=kind,
        title=title,
        person=person,
        object_type=object_type,
        object_id=object_id,
        path=str(relative),
        sha256=sha256,
        size=size,
        template=template,
        created_at=now or timezone.now(),
        created_by=actor,
    )


def document_bytes(document: Document) -> bytes:
    data = (Path(settings.MEDIA_ROOT) / document.path).read_bytes()
    if hashlib.sha256(data).hexdigest() != document.sha256:
        raise ValueError(f"document {document.pk} does not match its recorded hash")
    return data


def documents_store_bytes(*, items: list[dict], actor: str, now: dt.datetime | None = None) -> list[Document]:
    """document_store_bytes for many PDFs at once (a batch of statements): one read for those already stored,
    one insert for the rest. Each item: data, kind, title, template, person, obj. Returned in the items' order."""
    now = now or timezone.now()
    keyed = []
    for item in items:
        obj = item.get("obj")
        digest = hashlib.sha256(item["data"]).hexdigest()
        keyed.append(
            (item, digest, obj._meta.label if obj is not None else "", str(obj.pk) if obj is not None else "")
        )
    existing = {
        (d.kind, d.sha256, d.object_type, d.object_id): d
        for d in Document.objects.filter(sha256__in=[k[1] for k in keyed])
    }
    out: list[Document] = []
    new: list[Document] = []
    for item, digest, object_type, object_id in keyed:
        found = existing.get((item["kind"], digest, object_type, object_id))
        if found is not None:
            out.append(found)
            continue
        relative = Path("documents") / item["kind"] / digest[:2] / f"{digest}.pdf"
        target = Path(settings.MEDIA_ROOT) / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.write_bytes(item["data"])
        doc = Document(
            kind=item["kind"],
            title=item["title"],
            person=item.get("person"),
            object_type=object_type,
            object_id=object_id,
            path=str(relative),
            sha256=digest,
            size=len(item["data"]),
            template=item["template"],
            created_at=now,
            created_by=actor,
        )
        new.append(doc)
        out.append(doc)
    Document.objects.bulk_create(new)
    return out
