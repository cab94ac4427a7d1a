from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.crypto import UnreadableValue
from core.encrypted import field_keys_rotate


class Command(BaseCommand):
    help = (
        "Write every value stored encrypted again under the first key of FIELD_ENCRYPTION_KEYS (core/crypto.py), "
        "so that the older keys can then be removed. One transaction: a value no key opens changes nothing."
    )

    def handle(self, *args, **opts):
        try:
            counts = field_keys_rotate(actor="rotate_field_keys", now=timezone.now())
        except UnreadableValue as exc:
            raise CommandError(f"nothing rotated: {exc}") from None
        for field, count in counts.items():
            self.stdout.write(f"{field}: {count} rewritten under the first key")
