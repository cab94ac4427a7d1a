"""One kind of refusal (STYLE 12; HackSoft's `ApplicationError`).

A service raises an `ApplicationError` (or one of its subclasses, one per app: `ElectionError`,
`WithdrawalError`, ...) when the plan, the regulation or the books refuse what a person asked; its
message says why and cites the section. Views show the message (`core.middleware.ApplicationErrorMiddleware`
for one that escapes a page, `core.api.exception_handler` for the API: 400 with the message). Any other
exception is a bug: Django logs it with its traceback and answers with the 500 page.
"""

from __future__ import annotations

from typing import Any


class ApplicationError(Exception):
    """A refusal a user may read: `message` says why (with the plan section where a rule is behind it)."""

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class InvalidInput(ApplicationError, ValueError):
    """A value a person typed that cannot be read (a date, a month, an amount); the message names the field.

    Also a ValueError, so the parsers in core (dates, money) keep their contract for non-view callers.
    """
