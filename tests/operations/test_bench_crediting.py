"""`manage.py bench crediting`: the generated books are sound, the job values every position once."""

from __future__ import annotations

import json

import pytest
from django.core.management import call_command
from django.db import connection

from books.models import DailyValuation, Position
from books.services.verify import books_verify
from books.tasks import credit_valuation_date_task
from operations.bench import crediting as bench

KEYS = {"positions", "seconds", "reference_seconds", "ratio", "peak_memory_mb", "rerun_rows_added"}


def test_the_benchmark_credits_every_position_once_and_a_rerun_adds_nothing(transactional_db):
    built = bench.generate(participants=20, paid=0.5)
    assert built["positions"] == 20 * 3 * 4
    assert books_verify() == []  # the generated opening balances agree with their entries

    result = bench.measure()

    assert KEYS <= result.keys()
    assert result["positions"] == result["positions_valued"] == result["reference_rows"] == 240
    assert result["rerun_rows_added"] == 0 and result["rerun_status"] == "done"
    assert result["stats"]["credits"] == built["pending_credits"] > 0
    assert DailyValuation.objects.filter(valuation_date=bench.DAY).count() == Position.objects.count()
    assert books_verify() == []


def test_the_benchmark_splits_the_jobs_cpu_into_the_credits_the_valuation_and_the_rest(transactional_db):
    bench.generate(participants=5, paid=1)
    by_statement = bench._CpuByStatement()
    with connection.execute_wrapper(by_statement):
        credit_valuation_date_task(bench.DAY.isoformat())

    assert by_statement.statements["credits"] == by_statement.statements["valuation"] == 1
    assert by_statement.statements["other"] >= 2  # the claim and the finish
    figures = by_statement.figures()
    assert figures is None or (
        figures.keys() == {"credits", "valuation", "other"} and min(figures.values()) >= 0
    )


def test_bench_command_prints_the_target_result_as_one_json_object(monkeypatch, capsys):
    seen = {}

    def fake_run(*, participants, json, paid, repeat):
        seen.update(participants=participants, json=json, paid=paid, repeat=repeat)
        return dict.fromkeys(KEYS, 0)

    monkeypatch.setattr(bench, "run", fake_run)
    call_command("bench", "crediting", "--participants", "7", "--paid", "0.25", "--repeat", "3", "--json")
    assert json.loads(capsys.readouterr().out).keys() == KEYS
    assert seen == {"participants": 7, "json": True, "paid": 0.25, "repeat": 3}


def test_repeated_runs_report_medians_of_the_timings_and_the_worst_of_the_memory():
    def one(ratio, reference, memory, credits):
        return {
            "ratio": ratio,
            "cpu_ratio": ratio + 0.1,
            "seconds": ratio * reference,
            "reference_seconds": reference,
            "backend_cpu_seconds": None,
            "reference_backend_cpu_seconds": None,
            "peak_memory_mb": memory,
            "rerun_rows_added": 0,
            "backend_cpu_by_statement": {"credits": credits, "valuation": 1.0, "other": 0.0},
            "positions": 240,
        }

    result = bench.repeated([one(3.0, 1.0, 300, 0.9), one(2.0, 0.5, 450, 0.5), one(2.5, 0.8, 320, 0.7)])
    assert (result["ratio"], result["cpu_ratio"], result["reference_seconds"]) == (2.5, 2.6, 0.8)
    assert result["seconds"] == 2.0  # the median of 3.0, 1.0 and 2.0
    assert result["peak_memory_mb"] == 450 and result["backend_cpu_seconds"] is None
    assert result["backend_cpu_by_statement"] == {"credits": 0.7, "valuation": 1.0, "other": 0.0}
    assert [r["ratio"] for r in result["runs"]] == [3.0, 2.0, 2.5] and result["positions"] == 240


def test_bench_command_refuses_an_unknown_target():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("bench", "nothing", "--participants", "1")
