"""The base of the import_* management commands: exit 1 on refusal, printing every bad row."""

from __future__ import annotations

import getpass
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from core.imports.runner import batch_messages, import_file, importer_for
from core.models import ImportBatch


class ImportCommand(BaseCommand):
    kind = ""

    def create_parser(self, prog_name, subcommand, **kwargs):
        self.help = (
            f"Import a {ImportBatch.Kind(self.kind).label.lower()} CSV file. {importer_for(self.kind).help}"
        )
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("path", help="the CSV file (UTF-8, a header line naming the columns)")
        parser.add_argument(
            "--actor", default="", help="who is importing (default: manage.py and the OS user)"
        )

    def handle(self, *args, path: str, actor: str, **options):
        file = Path(path)
        try:
            content = file.read_bytes()
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}")
        batch = import_file(
            kind=self.kind,
            file_name=file.name,
            content=content,
            now=timezone.now(),
            actor=actor or f"manage.py {self.kind} import ({getpass.getuser()})",
        )
        if batch.status == ImportBatch.Status.REFUSED:
            for message in batch_messages(batch):
                self.stderr.write(message)
            raise CommandError(
                f"{file.name} was refused ({len(batch.errors)} problem"
                f"{'s' if len(batch.errors) != 1 else ''}); nothing was applied",
                returncode=1,
            )
        if batch.status == ImportBatch.Status.DUPLICATE:
            self.stdout.write(batch_messages(batch)[0])
            return
        self.stdout.write(
            f"{file.name}: {batch.rows_applied} line{'s' if batch.rows_applied != 1 else ''} applied, "
            f"{batch.rows_skipped} already on file (import #{batch.pk})"
        )
