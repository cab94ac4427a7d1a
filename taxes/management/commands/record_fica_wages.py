"""Bring the FICA rows up to date with the books (taxes.services.fica), and say how long it took."""

from __future__ import annotations

import datetime as dt
import json
import time

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.jobs import JobBusy, job_lock
from participants.models import Participation
from taxes.services.fica import fica_wages_record


class Command(BaseCommand):
    help = "Record FICA wages from the books through a date (default today); idempotent. --json prints the figures."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--through", help="YYYY-MM-DD (default today)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options) -> None:
        try:
            through = (
                dt.date.fromisoformat(options["through"]) if options["through"] else timezone.localdate()
            )
        except ValueError:
            raise CommandError("--through must be YYYY-MM-DD")
        start = time.perf_counter()
        try:
            with job_lock("taxes.record_fica_wages"):
                result = fica_wages_record(through=through, now=timezone.now())
        except JobBusy as exc:
            raise CommandError(str(exc))
        seconds = time.perf_counter() - start
        figures = {
            "through": through.isoformat(),
            "participations": Participation.objects.count(),
            "written": result.written,
            "corrections": result.corrections,
            "unchanged": result.unchanged,
            "seconds": round(seconds, 3),
        }
        self.stdout.write(
            json.dumps(figures) if options["json"] else " ".join(f"{k}={v}" for k, v in figures.items())
        )
