import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# RecordedTask is Celery's DjangoTask (delay_on_commit()/apply_async_on_commit(): views and services
# queue work only once the transaction that made it necessary has committed) that also leaves a failed
# JobRun when a task raises (core.jobs).
app = Celery("nqdc", task_cls="core.jobs:RecordedTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
