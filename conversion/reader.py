"""Streaming reads of a package's CSV files (FORMAT.md section 1): one row at a time, with its line number."""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


def normalise_header(name: str) -> str:
    """Header names are compared in lower case, spaces and hyphens read as underscores (FORMAT.md 1)."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


@dataclass(slots=True)
class RawRow:
    line: int
    values: list[str] | None  # None: the row is malformed (not UTF-8, not CSV)
    problem: str = ""


def file_sha256(*, path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_rows(*, path: Path) -> Iterator[RawRow]:
    """Yield the header (line 1) and then each data row with the line it starts on. Blank lines are skipped.

    Bytes that are not UTF-8 are kept as surrogates so that the row they are on, and only that row, is
    reported malformed.
    """
    with path.open("rb") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="surrogateescape", newline="")
        reader = csv.reader(text, strict=True)
        previous_end = 0
        while True:
            start = previous_end + 1
            try:
                values = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                previous_end = reader.line_num
                yield RawRow(line=start, values=None, problem=f"is not valid CSV ({exc})")
                continue
            previous_end = reader.line_num
            if not values or values == [""]:
                continue
            joined = "".join(values)
            # one encoding per row: a lone surrogate is one code point (an ASCII row, nearly every one, has none)
            if not joined.isascii() and _has_surrogate(joined):
                yield RawRow(line=start, values=None, problem="is not valid UTF-8")
                continue
            yield RawRow(line=start, values=values)


def _has_surrogate(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
