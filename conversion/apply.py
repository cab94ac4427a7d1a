"""Apply a checked package (FORMAT.md section 5, "What an applied package records")."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from conversion.validate import Finding, Result


class ApplyFailure(Exception):
    def __init__(self, file: str, line: int, message: str) -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.message = message


def conflicts(*, result: Result, folder: Path) -> list[Finding]:
    return []


def apply_package(*, result: Result, folder: Path, actor: str, now: dt.datetime) -> None:
    raise ApplyFailure("package.csv", 2, "not yet")
