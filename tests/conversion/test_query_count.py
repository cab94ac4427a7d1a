"""The conversion's writes are set-based: the queries do not grow with the number of participants."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from conversion import apply as conversion_apply
from conversion.services import conversion_run
from operations.bench.conversion import build_package

NOW = dt.datetime(2026, 12, 1, 17, 0, tzinfo=dt.UTC)


class _Undo(Exception):
    pass


def _queries_to_convert(folder: Path) -> int:
    """The queries of checking and applying the package in `folder`, then undone."""
    with CaptureQueriesContext(connection) as queries:
        try:
            with transaction.atomic():
                outcome = conversion_run(folder=folder, dry_run=False, actor="conversion", now=NOW)
                assert outcome.status == "applied", outcome.result.findings[:3]
                raise _Undo
        except _Undo:
            pass
    return len(queries)


@pytest.mark.django_db
def test_checking_and_writing_all_but_the_payments_in_progress_takes_the_same_queries_for_twice_the_people(
    tmp_path, monkeypatch
):
    # The payments in progress are taken over by conversion.apply_payments through the payments services,
    # one schedule at a time for now: left out here.
    monkeypatch.setattr(conversion_apply, "_apply_payments", lambda **kwargs: None)
    folders = {}
    for participants in (25, 50):
        folders[participants] = tmp_path / str(participants)
        folders[participants].mkdir()
        assert build_package(participants=participants, folder=folders[participants]) == participants
    _queries_to_convert(folders[25])  # what the process reads once (the catalog's figures) is read here
    fewer, more = _queries_to_convert(folders[25]), _queries_to_convert(folders[50])
    # A query per participant, account or election would add 25 or more. The count is seen to differ by one
    # between runs in a longer session (not yet explained), hence the margin of two.
    assert abs(more - fewer) <= 2, (fewer, more)
