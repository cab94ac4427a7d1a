"""A small typesetter for the statements: Letter pages, Helvetica text, ruled tables, right-aligned money.

WeasyPrint lays out a one-page statement in about 0.7 s on this machine; a quarter's run of 10,000
statements on two workers has about 0.18 s for each (the `bench statements` target). A statement is a
fixed layout (headings, key-value lines, tables of figures), so it is drawn directly with pydyf (the PDF
writer WeasyPrint itself uses), with the PDF base-14 fonts (Helvetica and Helvetica-Bold, WinAnsi
encoding) and their widths read from Liberation Sans, which has Helvetica's metrics. No date, no
random identifier: the same figures give the same bytes.
"""

from __future__ import annotations

import functools
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pydyf

PAGE_W, PAGE_H = 612.0, 792.0  # US Letter, points
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 56.0, 56.0, 58.0, 62.0
BLUE = (0.122, 0.306, 0.475)  # the letterhead colour of templates/pdf/base.html (#1f4e79)
GREY = (0.35, 0.35, 0.35)
FONTS = {"R": "Helvetica", "B": "Helvetica-Bold"}
_METRIC_FILES = {
    "R": "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "B": "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",
}
_FALLBACK_WIDTH = {"R": 0.556, "B": 0.611}  # the widths of Helvetica's digits when the metric font is absent


@functools.cache
def _widths(style: str) -> dict[int, float]:
    """Character -> advance width in ems (Liberation Sans = Helvetica metrics)."""
    path = Path(_METRIC_FILES[style])
    if not path.exists():
        return {}
    from fontTools.ttLib import TTFont  # on use: only the processes that draw statements read the font

    font = TTFont(str(path), lazy=True)
    per_em = font["head"].unitsPerEm
    cmap = font.getBestCmap()
    metrics = font["hmtx"].metrics
    return {code: metrics[glyph][0] / per_em for code, glyph in cmap.items() if code < 0x2200}


@functools.lru_cache(maxsize=65536)
def _em_width(text: str, style: str) -> float:
    widths = _widths(style)
    fallback = _FALLBACK_WIDTH[style]
    return sum(widths.get(ord(ch), fallback) for ch in text)


def text_width(text: str, size: float, style: str = "R") -> float:
    return _em_width(text, style) * size


def _pdf_string(text: str) -> bytes:
    raw = text.encode("cp1252", errors="replace")
    return b"(" + re.sub(rb"([\\()])", rb"\\\1", raw) + b")"


@functools.lru_cache(maxsize=4096)
def wrap(text: str, width: float, size: float, style: str = "R") -> tuple[str, ...]:
    """Lines of at most `width` points, broken at spaces (the same text is wrapped once per process)."""
    space = text_width(" ", size, style)
    lines: list[str] = []
    for paragraph in text.split("\n"):
        words: list[str] = []
        used = 0.0
        for word in paragraph.split(" "):
            w = text_width(word, size, style)
            if words and used + space + w > width:
                lines.append(" ".join(words))
                words, used = [word], w
            else:
                used += (space if words else 0.0) + w
                words.append(word)
        lines.append(" ".join(words))
    return tuple(lines)


@dataclass
class Column:
    title: str
    width: float  # a share of the text width (the shares of a table add up to 1)
    align: str = "L"  # L or R


@dataclass
class _Page:
    ops: list[bytes] = field(default_factory=list)


class Document:
    """Pages drawn top to bottom; `y` is the baseline cursor. Call `bytes()` once at the end."""

    def __init__(self, *, letterhead: str, letterhead_sub: str, footer_left: str, title: str) -> None:
        self.letterhead, self.letterhead_sub, self.footer_left, self.title = (
            letterhead,
            letterhead_sub,
            footer_left,
            title,
        )
        self.pages: list[_Page] = []
        self.width = PAGE_W - MARGIN_L - MARGIN_R
        self.y = 0.0
        self._new_page()

    # --- drawing primitives -----------------------------------------------------------------------

    def _op(self, data: bytes) -> None:
        self.pages[-1].ops.append(data)

    def _text_at(self, x: float, y: float, text: str, size: float, style: str = "R", color=None) -> None:
        r, g, b = color or (0.07, 0.07, 0.07)
        self._op(
            b"BT /F%s %.2f Tf %.3f %.3f %.3f rg 1 0 0 1 %.2f %.2f Tm %s Tj ET"
            % (style.encode(), size, r, g, b, x, y, _pdf_string(text))
        )

    def _line(
        self, x1: float, y1: float, x2: float, y2: float, width: float = 0.5, color=(0.75, 0.75, 0.75)
    ) -> None:
        self._op(b"%.3f %.3f %.3f RG %.2f w %.2f %.2f m %.2f %.2f l S" % (*color, width, x1, y1, x2, y2))

    def _fill(self, x: float, y: float, w: float, h: float, color) -> None:
        self._op(b"%.3f %.3f %.3f rg %.2f %.2f %.2f %.2f re f" % (*color, x, y, w, h))

    def _new_page(self) -> None:
        self.pages.append(_Page())
        top = PAGE_H - MARGIN_T
        self._text_at(MARGIN_L, top, self.letterhead, 14, "B", BLUE)
        self._text_at(MARGIN_L, top - 14, self.letterhead_sub, 8.5, "R", GREY)
        self._line(MARGIN_L, top - 21, PAGE_W - MARGIN_R, top - 21, 1.6, BLUE)
        self.y = top - 42

    def _room(self, height: float) -> None:
        if self.y - height < MARGIN_B:
            self._new_page()

    # --- blocks -------------------------------------------------------------------------------------

    def heading(self, text: str, size: float = 11.5) -> None:
        self._room(size + 40)
        self.y -= 6
        self._text_at(MARGIN_L, self.y, text, size, "B")
        self.y -= size + 4

    def title_block(self, text: str) -> None:
        self._text_at(MARGIN_L, self.y, text, 15, "B")
        self.y -= 20

    def paragraph(
        self, text: str, size: float = 9.5, style: str = "R", color=None, indent: float = 0
    ) -> None:
        for line in wrap(text, self.width - indent, size, style):
            self._room(size + 3)
            self._text_at(MARGIN_L + indent, self.y, line, size, style, color)
            self.y -= size + 3.2
        self.y -= 2

    def pairs(self, rows: Sequence[tuple[str, str]], size: float = 9.5, key_share: float = 0.34) -> None:
        """Label: value lines (a label column in bold, the value wrapped beside it)."""
        key_w = self.width * key_share
        for key, value in rows:
            lines = wrap(value, self.width - key_w, size) or [""]
            self._room((size + 3.2) * len(lines))
            self._text_at(MARGIN_L, self.y, key, size, "B")
            for line in lines:
                self._text_at(MARGIN_L + key_w, self.y, line, size)
                self.y -= size + 3.2
        self.y -= 3

    def table(
        self,
        columns: Sequence[Column],
        rows: Sequence[Sequence[str]],
        *,
        size: float = 8.8,
        bold_last: bool = False,
    ) -> None:
        """A ruled table with a shaded header row; rows repeat the header on a new page."""
        widths = [c.width * self.width for c in columns]
        row_h = size + 6.5

        def header() -> None:
            self._room(row_h * 2)
            self._fill(MARGIN_L, self.y - 4, self.width, row_h, (0.933, 0.949, 0.965))
            self._cells(columns, [c.title for c in columns], widths, size, "B")
            self.y -= row_h

        header()
        for i, row in enumerate(rows):
            if self.y - row_h < MARGIN_B:
                self._new_page()
                header()
            style = "B" if bold_last and i == len(rows) - 1 else "R"
            self._cells(columns, list(row), widths, size, style)
            self._line(MARGIN_L, self.y - 4.2, MARGIN_L + self.width, self.y - 4.2)
            self.y -= row_h
        self.y -= 6

    def _cells(
        self, columns: Sequence[Column], values: list[str], widths: list[float], size: float, style: str
    ) -> None:
        x = MARGIN_L
        for column, value, w in zip(columns, values, widths, strict=True):
            text = value
            while text and text_width(text, size, style) > w - 6:
                text = text[:-2] + "\u2026" if len(text) > 2 else ""
            if column.align == "R":
                self._text_at(x + w - 3 - text_width(text, size, style), self.y, text, size, style)
            else:
                self._text_at(x + 3, self.y, text, size, style)
            x += w

    def signature_lines(self, labels: Sequence[str]) -> None:
        self._room(60 * ((len(labels) + 1) // 2) + 10)
        half = self.width / 2
        for i, label in enumerate(labels):
            x = MARGIN_L + (i % 2) * half
            if i % 2 == 0:
                self.y -= 40
            self._line(x, self.y, x + half - 24, self.y, 0.8, (0.07, 0.07, 0.07))
            self._text_at(x, self.y - 11, label, 8.5, "R", GREY)
            if i % 2 == 1 or i == len(labels) - 1:
                self.y -= 18

    def space(self, points: float) -> None:
        self.y -= points

    # --- output -------------------------------------------------------------------------------------

    def bytes(self) -> bytes:
        pdf = pydyf.PDF()
        fonts = pydyf.Dictionary()
        for key, base in FONTS.items():
            font = pydyf.Dictionary(
                {"Type": "/Font", "Subtype": "/Type1", "BaseFont": f"/{base}", "Encoding": "/WinAnsiEncoding"}
            )
            pdf.add_object(font)
            fonts[f"F{key}"] = font.reference
        resources = pydyf.Dictionary({"Font": fonts})
        pdf.add_object(resources)
        total = len(self.pages)
        for number, page in enumerate(self.pages, start=1):
            footer = _Page()
            saved, self.pages = self.pages, [footer]
            self._text_at(MARGIN_L, 34, self.footer_left, 7.5, "R", GREY)
            label = f"Page {number} of {total}"
            self._text_at(PAGE_W - MARGIN_R - text_width(label, 8), 34, label, 8, "R", GREY)
            self.pages = saved
            stream = pydyf.Stream(page.ops + footer.ops, compress=True)
            pdf.add_object(stream)
            pdf_page = pydyf.Dictionary(
                {
                    "Type": "/Page",
                    "Parent": pdf.pages.reference,
                    "MediaBox": pydyf.Array([0, 0, PAGE_W, PAGE_H]),
                    "Contents": stream.reference,
                    "Resources": resources.reference,
                }
            )
            pdf.add_page(pdf_page)
        pdf.info["Title"] = pydyf.String(self.title)
        pdf.info["Producer"] = pydyf.String("NQDC plan administration")
        out = io.BytesIO()
        pdf.write(out, version=b"1.7", identifier=False, compress=False)
        return out.getvalue()
