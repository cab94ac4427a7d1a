from django.core.management.base import BaseCommand

from plans.services import catalog_load


class Command(BaseCommand):
    help = "Load the shipped plan catalog (plans, versions, provisions, section texts, dated figures). Idempotent."

    def handle(self, *args, **opts):
        stats = catalog_load()
        self.stdout.write(
            f"plan catalog: {', '.join(stats['plans'])} ({stats['created']} rows created, "
            f"{stats['changed']} changed)"
        )
