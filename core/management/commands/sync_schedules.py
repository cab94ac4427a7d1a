from django.core.management.base import BaseCommand

from core.schedules import schedules_sync


class Command(BaseCommand):
    help = "Create or update the periodic tasks (django-celery-beat) each app declares in <app>/schedules.py."

    def handle(self, *args, **opts):
        names = schedules_sync()
        self.stdout.write(f"schedules: {', '.join(names) or 'none'}")
