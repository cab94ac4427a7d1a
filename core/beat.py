"""Celery beat's scheduler: django-celery-beat's database schedule, and a due task never dropped for a broker outage.

Celery beat marks an entry as run before sending it and, when the send fails (Redis down for longer than the
publish retries; or, as seen with Redis restarted, kombu reviving a channel whose connection is gone), logs the
error and waits for the next time: a daily job due during an outage would not run that day. Here beat keeps
trying that send, on a fresh connection each time, until the broker takes it, so the task due during the outage
is sent once when Redis returns; the daily jobs are idempotent and catch up from there. A send that fails while
the broker answers (a task that cannot be sent at all) is given up after a few tries, as before.
"""

from __future__ import annotations

import contextlib
import logging
import time

from celery.beat import SchedulingError
from django_celery_beat.schedulers import DatabaseScheduler as _DatabaseScheduler

logger = logging.getLogger(__name__)

PUBLISH_RETRY = {"max_retries": 3, "interval_start": 0, "interval_step": 1, "interval_max": 2}
LONGEST_WAIT_SECONDS = 5
TRIES_WHILE_THE_BROKER_ANSWERS = 3


class DatabaseScheduler(_DatabaseScheduler):
    def _reconnect(self) -> bool:
        """Drop the producer and its connection; True if a new connection reaches the broker now."""
        with contextlib.suppress(Exception):
            self.connection.release()
        self.__dict__.pop("producer", None)
        self.__dict__.pop("connection", None)
        try:
            self.connection.ensure_connection(max_retries=1)
        except Exception:
            return False
        return True

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry.options = {**entry.options, "retry": True, "retry_policy": PUBLISH_RETRY}
        wait, tries_with_broker = 1, 0
        while True:
            try:
                return super().apply_async(entry, producer=producer, advance=advance, **kwargs)
            except SchedulingError:
                advance = False  # reserved once: the retries send the same due run
                if self._reconnect():
                    tries_with_broker += 1
                    if tries_with_broker >= TRIES_WHILE_THE_BROKER_ANSWERS:
                        raise
                logger.warning(
                    "beat: could not send %s; trying again in %ss", entry.name, wait, exc_info=True
                )
                time.sleep(wait)
                wait = min(wait * 2, LONGEST_WAIT_SECONDS)
                producer = self.producer
