from core.imports.commands import ImportCommand
from core.models import ImportBatch


class Command(ImportCommand):
    kind = ImportBatch.Kind.PENSION_FIGURES
