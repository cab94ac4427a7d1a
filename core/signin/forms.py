from __future__ import annotations

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.forms import PasswordResetForm


class TokenForm(forms.Form):
    token = forms.CharField(
        label="Code",
        max_length=16,
        widget=forms.TextInput(
            attrs={"autocomplete": "one-time-code", "inputmode": "numeric", "autofocus": True}
        ),
        help_text="The 6-digit code your authenticator app shows, or one of your recovery codes.",
    )


class ResetByEmailForm(PasswordResetForm):
    """Django's reset form, also reaching a participant whose address is on their Person record only
    (through the user's reverse `person` relation, so core imports nothing from participants)."""

    def get_users(self, email):
        seen = set()
        for user in super().get_users(email):
            seen.add(user.pk)
            yield user
        by_person = get_user_model()._default_manager.filter(
            person__email__iexact=email, is_active=True, email=""
        )
        for user in by_person:
            if user.pk not in seen and user.has_usable_password():
                yield user

    def send_mail(self, subject_template_name, email_template_name, context, from_email, to_email, **kwargs):
        # The account has no address of its own: the link goes to the Person record's (the one asked with).
        person = getattr(context["user"], "person", None)
        to_email = to_email or (person.email if person is not None else "")
        super().send_mail(subject_template_name, email_template_name, context, from_email, to_email, **kwargs)
