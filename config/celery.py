import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# DjangoTask adds delay_on_commit()/apply_async_on_commit(): views and services queue work only
# once the transaction that made it necessary has committed.
app = Celery("nqdc", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
