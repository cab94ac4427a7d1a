"""Helpers for the PDF wording tests: the text (pdftotext), and a copy to look at (pdftoppm) when asked."""

from __future__ import annotations

import os
import re
from pathlib import Path

from core.pdf import pdf_text

# Internal catalog notes that must never reach a participant or payee (issue 11).
INTERNAL_NOTES = re.compile(r"not in the catalog|the catalog's text|catalog|internal note", re.I)


def text_of(data: bytes, name: str) -> str:
    """The PDF's text; with STAFFUI_PDF_DIR set, the PDF is also written there to be viewed as a picture."""
    folder = os.environ.get("STAFFUI_PDF_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.pdf").write_bytes(data)
    return pdf_text(data)


def flat(text: str) -> str:
    """One line, without page footers."""
    return " ".join(
        " ".join(line for line in text.splitlines() if not re.search(r"Page \d+ of \d+", line)).split()
    )


def assert_no_internal_note_or_username(text: str, *usernames: str) -> None:
    assert not INTERNAL_NOTES.search(text), INTERNAL_NOTES.search(text)
    for name in usernames:
        assert not re.search(rf"\b{re.escape(name)}\b", text), name
