"""A password may not contain the person's own names: the user name, the account's first and last name,
and the first and last name of the Person record the account belongs to ("bettyfoster" for betty.foster)."""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

MIN_PART = 3  # shorter name parts ("Al", "Li") match too much ordinary text to refuse on


def _letters(text: str) -> str:
    return re.sub(r"[\W_]+", "", text or "").casefold()


def name_parts(user) -> set[str]:
    texts = [getattr(user, "username", ""), getattr(user, "first_name", ""), getattr(user, "last_name", "")]
    person = getattr(user, "person", None) if getattr(user, "pk", None) else None
    if person is not None:
        texts += [person.first_name, person.last_name]
    parts: set[str] = set()
    for text in texts:
        words = [_letters(w) for w in re.split(r"[\W_]+", text or "")]
        parts.update(w for w in words if len(w) >= MIN_PART)
        whole = _letters(text)
        if len(whole) >= MIN_PART:
            parts.add(whole)
    return parts


class NotYourNameValidator:
    def validate(self, password: str, user=None) -> None:
        if user is None:
            return
        plain = _letters(password)
        if any(part in plain for part in name_parts(user)):
            raise ValidationError(
                "The password contains your user name or your name; choose one that does not.",
                code="password_contains_name",
            )

    def get_help_text(self) -> str:
        return "Your password cannot contain your user name or your first or last name."
