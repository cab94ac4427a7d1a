"""Imports of CSV files (participants, Key Employee lists, fund prices, payroll): validated whole, applied whole."""

from core.imports.csvfile import Problem, Problems, Row, read_rows
from core.imports.runner import IMPORTERS, Applied, Importer, batch_messages, import_file, importer_for

__all__ = [
    "IMPORTERS",
    "Applied",
    "Importer",
    "Problem",
    "Problems",
    "Row",
    "batch_messages",
    "import_file",
    "importer_for",
    "read_rows",
]
