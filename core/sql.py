"""Raw SQL that must run on PostgreSQL and on the embedded SQLite default."""

from __future__ import annotations

import re

from django.db import connection

_CAST_DATE = re.compile(r"CAST\(([^()]*?) AS date\)")


def portable(sql: str) -> str:
    """SQLite keeps dates as ISO text, where CAST(... AS date) would turn '2026-11-27' into the number 2026:
    there the cast goes and the text compares correctly as it is."""
    if connection.vendor == "postgresql":
        return sql
    return _CAST_DATE.sub(r"\1", sql)
