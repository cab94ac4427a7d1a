"""Prove the books: recompute every position from its entries and prices and compare.

For each position, at its last valuation row:
  units  = the sum of the units of its ledger entries up to that date
  value  = round(units x that day's fund price, 2), and the price on the row is the loaded price
  value  = the sum over its valuation rows of (flow + earnings)   (earnings are the only other movement)
  flows  = the sum of the amounts of its ledger entries
Any difference names the account.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db import connection

from books.models import DailyValuation, LedgerEntry
from plans.models import FundPrice

_SQL = """
WITH last AS (
    SELECT DISTINCT ON (position_id) position_id, account_id, fund_id, valuation_date, units, price, value
    FROM books_dailyvaluation ORDER BY position_id, valuation_date DESC
),
rows_total AS (
    SELECT position_id, SUM(flow) AS flows, SUM(flow + earnings) AS built FROM books_dailyvaluation GROUP BY position_id
),
entries AS (
    SELECT e.position_id, SUM(e.units) AS units, SUM(e.amount) AS amount
    FROM books_ledgerentry e JOIN last l ON l.position_id = e.position_id AND e.valuation_date <= l.valuation_date
    GROUP BY e.position_id
)
SELECT l.account_id, l.position_id, l.valuation_date, l.units, COALESCE(en.units, 0), l.value,
       ROUND(COALESCE(en.units, 0) * pr.price, 2), l.price, pr.price, rt.built, rt.flows, COALESCE(en.amount, 0)
FROM last l
JOIN rows_total rt ON rt.position_id = l.position_id
LEFT JOIN entries en ON en.position_id = l.position_id
LEFT JOIN plans_fundprice pr ON pr.fund_id = l.fund_id AND pr.date = l.valuation_date
WHERE l.units <> COALESCE(en.units, 0)
   OR pr.price IS NULL OR l.price <> pr.price
   OR l.value <> ROUND(COALESCE(en.units, 0) * pr.price, 2)
   OR l.value <> rt.built
   OR rt.flows <> COALESCE(en.amount, 0)
ORDER BY l.account_id, l.position_id
"""

_UNVALUED_SQL = """
SELECT e.account_id, e.position_id, MIN(e.valuation_date)
FROM books_ledgerentry e
WHERE NOT EXISTS (SELECT 1 FROM books_dailyvaluation v WHERE v.position_id = e.position_id
                  AND v.valuation_date = e.valuation_date)
GROUP BY e.account_id, e.position_id
"""


@dataclass(frozen=True)
class Discrepancy:
    account_id: int
    position_id: int
    message: str


def _rows_python() -> list[tuple]:
    """The same comparison as _SQL, summed with Decimal in Python (SQLite sums decimals as floats)."""
    last: dict[int, DailyValuation] = {}
    built: dict[int, Decimal] = defaultdict(Decimal)
    flows: dict[int, Decimal] = defaultdict(Decimal)
    for row in DailyValuation.objects.order_by("position_id", "valuation_date").iterator(chunk_size=5000):
        last[row.position_id] = row
        built[row.position_id] += row.flow + row.earnings
        flows[row.position_id] += row.flow
    units: dict[int, Decimal] = defaultdict(Decimal)
    amounts: dict[int, Decimal] = defaultdict(Decimal)
    for pos, day, u, a in LedgerEntry.objects.values_list(
        "position_id", "valuation_date", "units", "amount"
    ).iterator(chunk_size=5000):
        if pos in last and day <= last[pos].valuation_date:
            units[pos] += u
            amounts[pos] += a
    prices = {
        (f, d): p
        for f, d, p in FundPrice.objects.filter(
            date__in={r.valuation_date for r in last.values()}
        ).values_list("fund_id", "date", "price")
    }
    out = []
    for pos, r in sorted(last.items(), key=lambda kv: (kv[1].account_id, kv[0])):
        price = prices.get((r.fund_id, r.valuation_date))
        recomputed = (units[pos] * price).quantize(Decimal("0.01")) if price is not None else None
        if (
            r.units != units[pos]
            or price is None
            or r.price != price
            or r.value != recomputed
            or r.value != built[pos]
            or flows[pos] != amounts[pos]
        ):
            out.append(
                (
                    r.account_id,
                    pos,
                    r.valuation_date,
                    r.units,
                    units[pos],
                    r.value,
                    recomputed,
                    r.price,
                    price,
                    built[pos],
                    flows[pos],
                    amounts[pos],
                )
            )
    return out


def books_verify() -> list[Discrepancy]:
    out: list[Discrepancy] = []
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_SQL)
            rows = cursor.fetchall()
        else:
            rows = _rows_python()
        for (
            acc,
            pos,
            day,
            units,
            entry_units,
            value,
            recomputed,
            row_price,
            price,
            built,
            flows,
            entry_amount,
        ) in rows:
            problems = []
            if Decimal(units) != Decimal(entry_units):
                problems.append(f"units {units} but its entries add to {entry_units}")
            if price is None:
                problems.append(f"no {day} price is loaded for its fund")
            elif Decimal(row_price) != Decimal(price):
                problems.append(f"valued at {row_price} but the loaded price is {price}")
            elif Decimal(value) != Decimal(recomputed):
                problems.append(f"value {value} but units x price is {recomputed}")
            if Decimal(value) != Decimal(built):
                problems.append(f"value {value} but its flows and earnings add to {built}")
            if Decimal(flows) != Decimal(entry_amount):
                problems.append(f"flows {flows} but its entries add to {entry_amount}")
            out.append(Discrepancy(acc, pos, f"on {day}: " + "; ".join(problems)))
        cursor.execute(_UNVALUED_SQL)
        for acc, pos, day in cursor.fetchall():
            out.append(Discrepancy(acc, pos, f"entries of {day} were never valued"))
    return out
