"""Celery beat's scheduler: django-celery-beat's database schedule, and a due task never dropped for a broker outage.

Celery beat marks an entry as run before sending it and, when the send fails (Redis down for longer than the
default publish retries, under a second), logs the error and waits for the next time: a daily job due during
an outage would not run that day. Here beat keeps retrying the send until the broker answers, so the task
due during the outage is sent once when it returns; the daily jobs are idempotent and catch up from there.
"""

from __future__ import annotations

from django_celery_beat.schedulers import DatabaseScheduler as _DatabaseScheduler

# Until the broker answers: one attempt a second at first, then every 5 seconds.
PUBLISH_UNTIL_THE_BROKER_ANSWERS = {
    "max_retries": None,
    "interval_start": 1,
    "interval_step": 1,
    "interval_max": 5,
}


class DatabaseScheduler(_DatabaseScheduler):
    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry.options = {**entry.options, "retry": True, "retry_policy": PUBLISH_UNTIL_THE_BROKER_ANSWERS}
        return super().apply_async(entry, producer=producer, advance=advance, **kwargs)
