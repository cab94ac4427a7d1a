"""Valuation-date crediting: prices, credits, idempotency, the append-only ledger, verify_books."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from books.models import Account, DailyValuation, LedgerEntry, PendingTransaction, Source
from books.selectors import account_value
from books.services.accounts import credit_create
from books.services.crediting import credit_valuation_date
from books.services.verify import books_verify
from core.models import JobRun
from tests.factories import FundFactory, ParticipationFactory, price

pytestmark = pytest.mark.django_db

JAN15, JAN16 = dt.date(2026, 1, 15), dt.date(2026, 1, 16)


@pytest.fixture
def setup(edcp):
    fund = FundFactory(plan=edcp, code="SV", is_default=True)
    for day, p in ((JAN15, "20.00"), (JAN16, "22.00"), (dt.date(2026, 1, 20), "19.00")):
        price(fund, day, p)
    participation = ParticipationFactory(plan=edcp)
    credit_create(
        participation=participation,
        account_name="retirement_termination",
        source=Source.DEFERRAL,
        amount=Decimal("1000.00"),
        effective_date=JAN15,
        idempotency_key="t:1",
        actor="test",
    )
    return participation, fund


def test_a_credit_buys_units_at_the_price_of_its_valuation_date(setup):
    participation, fund = setup
    run = credit_valuation_date(valuation_date=JAN15)
    assert run.status == "done"
    entry = LedgerEntry.objects.get()
    assert (entry.units, entry.price, entry.amount) == (
        Decimal("50.000000"),
        Decimal("20.000000"),
        Decimal("1000.00"),
    )
    account = Account.objects.get(participation=participation)
    assert account_value(account=account, on=JAN15) == Decimal("1000.00")


def test_earnings_follow_the_price_and_are_recorded_each_day(setup):
    participation, _ = setup
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    row = DailyValuation.objects.get(valuation_date=JAN16)
    assert (row.value, row.earnings, row.flow) == (Decimal("1100.00"), Decimal("100.00"), Decimal("0.00"))
    credit_valuation_date(valuation_date=dt.date(2026, 1, 20))
    account = Account.objects.get(participation=participation)
    assert account_value(account=account, on=dt.date(2026, 1, 20)) == Decimal("950.00")


def test_crediting_a_date_twice_credits_once(setup):
    credit_valuation_date(valuation_date=JAN15)
    again = credit_valuation_date(valuation_date=JAN15)
    assert again.status == "done"
    assert LedgerEntry.objects.count() == 1
    assert DailyValuation.objects.count() == 1
    assert JobRun.objects.get(kind="crediting", key="2026-01-15").attempts == 1


def test_a_date_with_a_missing_price_is_refused_naming_fund_and_date(setup, edcp):
    FundFactory(plan=edcp, code="BND", name="Bond Index")
    from books.models import Position

    Position.objects.create(account=Account.objects.get(), fund=edcp.funds.get(code="BND"))
    run = credit_valuation_date(valuation_date=JAN15)
    assert run.status == "refused"
    assert "BND (Bond Index)" in run.message and "2026-01-15" in run.message
    assert LedgerEntry.objects.count() == 0


def test_dates_are_credited_in_order(setup):
    run = credit_valuation_date(valuation_date=JAN15)
    assert run.status == "done"
    later = credit_valuation_date(valuation_date=dt.date(2026, 1, 20))
    assert later.status == "refused" and "2026-01-16 must be credited before 2026-01-20" in later.message


def _work_mem() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SHOW work_mem")
        return cursor.fetchone()[0]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="work_mem is PostgreSQL's")
def test_a_payday_is_valued_with_room_for_its_hashes_and_the_setting_is_put_back(setup, monkeypatch):
    from books.services import crediting

    before, seen = _work_mem(), []
    valuations = crediting._valuations_sql

    def valuing(day, **kwargs):
        seen.append(_work_mem())
        return valuations(day, **kwargs)

    monkeypatch.setattr(crediting, "_valuations_sql", valuing)
    credit_valuation_date(valuation_date=JAN15)  # the credit of the setup: a payday
    credit_valuation_date(valuation_date=JAN16)  # nothing due: an ordinary day
    assert seen == [crediting._PAYDAY_WORK_MEM, before] and _work_mem() == before

    def failing(day, **kwargs):
        raise RuntimeError("the valuation stopped")

    monkeypatch.setattr(crediting, "_valuations_sql", failing)
    credit_create(
        participation=setup[0],
        account_name="retirement_termination",
        source=Source.DEFERRAL,
        amount=Decimal("10.00"),
        effective_date=dt.date(2026, 1, 20),
        idempotency_key="t:2",
        actor="test",
    )
    with pytest.raises(RuntimeError):
        credit_valuation_date(valuation_date=dt.date(2026, 1, 20))
    assert _work_mem() == before


def test_set_based_and_portable_crediting_agree(edcp):
    fund_a = FundFactory(plan=edcp, code="A", is_default=True)
    fund_b = FundFactory(plan=edcp, code="B")
    for day, pa, pb in ((JAN15, "13.37", "7.77"), (JAN16, "13.91", "7.13")):
        price(fund_a, day, pa)
        price(fund_b, day, pb)
    from elections.models import InvestmentElection, InvestmentElectionLine

    results = []
    for set_based in (True, False):
        sid = transaction.savepoint()
        participation = ParticipationFactory(plan=edcp)
        election = InvestmentElection.objects.create(
            participation=participation,
            submitted_at="2026-01-01T12:00Z",
            status="accepted",
            channel="api",
            actor="t",
            applies_to="future",
            effective_on=dt.date(2026, 1, 2),
        )
        InvestmentElectionLine.objects.create(election=election, fund=fund_a, percent=33)
        InvestmentElectionLine.objects.create(election=election, fund=fund_b, percent=67)
        for i, amount in enumerate(("1000.01", "333.33", "0.05")):
            credit_create(
                participation=participation,
                account_name="retirement_termination",
                source=Source.DEFERRAL,
                amount=Decimal(amount),
                effective_date=JAN15,
                idempotency_key=f"x:{set_based}:{i}",
                actor="t",
            )
        credit_valuation_date(valuation_date=JAN15, set_based=set_based)
        credit_valuation_date(valuation_date=JAN16, set_based=set_based)
        results.append(
            sorted(
                (r.fund_id, r.valuation_date, r.units, r.value, r.earnings, r.flow)
                for r in DailyValuation.objects.all()
            )
        )
        transaction.savepoint_rollback(sid)
    assert results[0] == results[1]
    assert results[0]


def test_posted_entries_cannot_be_updated_or_deleted_through_raw_sql(setup):
    credit_valuation_date(valuation_date=JAN15)
    entry = LedgerEntry.objects.get()
    for sql in (
        f"UPDATE books_ledgerentry SET amount = 1 WHERE id = {entry.id}",
        f"DELETE FROM books_ledgerentry WHERE id = {entry.id}",
        "UPDATE books_dailyvaluation SET value = 0",
        "DELETE FROM books_dailyvaluation",
        "UPDATE books_pendingtransaction SET amount = 5",
    ):
        with (
            pytest.raises(IntegrityError, match="append-only|posted"),
            transaction.atomic(),
            connection.cursor() as c,
        ):
            c.execute(sql)
    assert LedgerEntry.objects.get().amount == Decimal("1000.00")


def test_the_database_refuses_an_entry_whose_account_is_not_its_positions(setup, edcp):
    credit_valuation_date(valuation_date=JAN15)
    entry = LedgerEntry.objects.get()
    other, _ = Account.objects.get_or_create(
        participation=ParticipationFactory(plan=edcp),
        kind="retirement_termination",
        specified_month=None,
        defaults={"opened_on": JAN15},
    )
    for position_id, account_id in (
        (entry.position_id, other.id),
        (entry.position_id + 10_000, entry.account_id),
    ):
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as c:
            c.execute(
                "INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, "
                "valuation_date, units, price, amount, idempotency_key, actor, posted_at, memo) "
                "SELECT %s, %s, kind, source, effective_date, valuation_date, units, price, amount, "
                "idempotency_key || ':x', actor, posted_at, memo FROM books_ledgerentry WHERE id = %s",
                [position_id, account_id, entry.id],
            )
            c.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert LedgerEntry.objects.count() == 1


def test_the_database_refuses_an_entry_for_a_pending_transaction_that_does_not_exist(setup):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite checks this foreign key only at the final commit, which a test never reaches")
    credit_valuation_date(valuation_date=JAN15)
    entry = LedgerEntry.objects.get()
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as c:
        # two rows in one statement, one of them good: the whole statement is refused
        c.execute(
            "INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, "
            "valuation_date, units, price, amount, pending_id, idempotency_key, actor, posted_at, memo) "
            "SELECT position_id, account_id, kind, source, effective_date, valuation_date, units, price, amount, "
            "p.pending_id, idempotency_key || ':' || p.n, actor, posted_at, memo FROM books_ledgerentry "
            "CROSS JOIN (VALUES (1, %s), (2, %s)) p(n, pending_id) WHERE id = %s",
            [entry.pending_id, entry.pending_id + 10_000, entry.id],
        )
        c.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert LedgerEntry.objects.count() == 1


def test_the_database_refuses_a_reversal_of_an_entry_that_does_not_exist(setup):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite checks this foreign key only at the final commit, which a test never reaches")
    credit_valuation_date(valuation_date=JAN15)
    entry = LedgerEntry.objects.get()
    insert = (
        "INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, valuation_date, "
        "units, price, amount, reverses_id, idempotency_key, actor, posted_at, memo) "
        "SELECT position_id, account_id, 'reversal', source, effective_date, valuation_date, -units, price, "
        "-amount, %s, idempotency_key || ':reversed', actor, posted_at, memo FROM books_ledgerentry WHERE id = %s"
    )
    with (
        pytest.raises(IntegrityError, match="no ledger entry"),
        transaction.atomic(),
        connection.cursor() as c,
    ):
        c.execute(insert, [entry.id + 10_000, entry.id])  # books/migrations/0011: checked per statement
        c.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert LedgerEntry.objects.count() == 1
    with connection.cursor() as c:
        c.execute(insert, [entry.id, entry.id])
    assert LedgerEntry.objects.get(reverses=entry).amount == -entry.amount


def test_the_database_refuses_to_delete_or_rekey_what_an_entry_references(setup):
    credit_valuation_date(valuation_date=JAN15)
    entry = LedgerEntry.objects.get()
    statements = [
        f"DELETE FROM books_position WHERE id = {entry.position_id}",
        f"UPDATE books_position SET id = id + 10000 WHERE id = {entry.position_id}",
    ]
    if connection.vendor == "postgresql":  # SQLite checks the pending foreign key only at the final commit
        # a pending row an entry references, not applied (the applied ones are frozen by their own trigger)
        with connection.cursor() as c:
            c.execute(
                "INSERT INTO books_pendingtransaction (account_id, kind, source, amount, liquidate_all, "
                "effective_date, status, idempotency_key, actor, created_at, memo, cite) SELECT account_id, kind, "
                "source, amount, liquidate_all, effective_date, 'pending', 'rekey', actor, created_at, memo, cite "
                "FROM books_pendingtransaction WHERE id = %s RETURNING id",
                [entry.pending_id],
            )
            pending_id = c.fetchone()[0]
            c.execute(
                "INSERT INTO books_ledgerentry (position_id, account_id, kind, source, effective_date, "
                "valuation_date, units, price, amount, pending_id, idempotency_key, actor, posted_at, memo) "
                "SELECT position_id, account_id, kind, source, effective_date, valuation_date, units, price, "
                "amount, %s, 'rekey', actor, posted_at, memo FROM books_ledgerentry WHERE id = %s",
                [pending_id, entry.id],
            )
        statements += [
            f"DELETE FROM books_pendingtransaction WHERE id = {pending_id}",
            f"UPDATE books_pendingtransaction SET id = id + 10000 WHERE id = {pending_id}",
        ]
    for sql in statements:
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as c:
            c.execute(sql)
            c.execute("SET CONSTRAINTS ALL IMMEDIATE")
    assert LedgerEntry.objects.filter(position_id=entry.position_id).count() == LedgerEntry.objects.count()


def test_pending_money_is_in_the_balance_before_its_valuation_date(setup):
    participation, _ = setup
    account = Account.objects.get(participation=participation)
    assert account_value(account=account, on=JAN15) == Decimal("1000.00")
    assert PendingTransaction.objects.get().status == "pending"


def test_verify_books_passes_clean_books_and_finds_a_planted_discrepancy(setup, capsys):
    credit_valuation_date(valuation_date=JAN15)
    credit_valuation_date(valuation_date=JAN16)
    assert books_verify() == []
    call_command("verify_books")
    # Plant a discrepancy the way a bad actor with table rights would: bypass the trigger.
    with connection.cursor() as c:
        c.execute("ALTER TABLE books_dailyvaluation DISABLE TRIGGER books_dailyvaluation_append_only")
        c.execute("UPDATE books_dailyvaluation SET value = value + 0.01 WHERE valuation_date = '2026-01-16'")
        c.execute("ALTER TABLE books_dailyvaluation ENABLE TRIGGER books_dailyvaluation_append_only")
    problems = books_verify()
    assert len(problems) == 1 and "value 1100.01 but units x price is 1100.00" in problems[0].message
    with pytest.raises(SystemExit) as exit_:
        call_command("verify_books")
    assert exit_.value.code == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_a_value_asked_for_before_its_day_is_credited_uses_the_last_credited_day(setup):
    participation, _ = setup
    credit_valuation_date(valuation_date=JAN15)
    account = Account.objects.get(participation=participation)
    # January 16 is a Valuation Date not credited yet: the books still show January 15's 1,000.00
    assert account_value(account=account, on=JAN16) == Decimal("1000.00")
    credit_valuation_date(valuation_date=JAN16)
    assert account_value(account=account, on=JAN16) == Decimal("1100.00")
