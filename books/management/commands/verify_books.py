import sys

from django.core.management.base import BaseCommand

from books.models import Account
from books.services.verify import books_verify


class Command(BaseCommand):
    help = (
        "Recompute every balance from its ledger entries and prices; exit 1 naming any account that differs."
    )

    def handle(self, *args, **opts):
        problems = books_verify()
        if not problems:
            positions = Account.objects.count()
            self.stdout.write(
                f"books verified: {positions} accounts, every position equals its entries and prices"
            )
            return
        accounts = {
            a.id: a
            for a in Account.objects.filter(id__in={p.account_id for p in problems}).select_related(
                "participation__person", "participation__plan"
            )
        }
        for p in problems:
            self.stdout.write(f"DIFFERS {accounts[p.account_id]} (position {p.position_id}) {p.message}")
        self.stdout.write(f"{len({p.account_id for p in problems})} account(s) differ")
        sys.exit(1)
