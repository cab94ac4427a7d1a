"""Form and API date fields that refuse dates outside core.dates' range (1900-01-01 to 2199-12-31) with a
message naming the field, so 0001-01-01 or 9999-12-31 is a form error or a 400, never a 500 (issue 12)."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError
from rest_framework import serializers

from core.dates import date_in_range, out_of_range_message


def validate_date_in_range(value) -> None:
    if value is not None and not date_in_range(value):
        raise ValidationError(out_of_range_message("the date", value))


class DateField(forms.DateField):
    default_validators = [validate_date_in_range]


class ApiDateField(serializers.DateField):
    def __init__(self, **kwargs) -> None:
        kwargs["validators"] = [*kwargs.get("validators", ()), validate_date_in_range]
        super().__init__(**kwargs)
