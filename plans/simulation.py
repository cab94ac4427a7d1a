"""Simulator: the Committee records a new dated version of a committee-maintained table (a project extension of
scenarios/FORMAT.md, "Extensions of this project": the `plan_table` event), through the service staff use."""

from __future__ import annotations

import datetime as dt

from core.simulation.registry import Rejected, handles
from plans.selectors import MissingFigure, plan_table
from plans.services import TableError, parse_table_rows, table_set


@handles("plan_table")
def plan_table_record(ctx, event) -> dict:
    d = event.data
    effective = dt.date.fromisoformat(d["effective_date"])
    try:
        current = plan_table(plan=ctx.plan, code=d["table"], on=effective)
    except MissingFigure as exc:
        raise Rejected("plans", str(exc))
    try:
        # the rows as staff type them on the table page ("key, value" lines), read by the same parser
        rows = parse_table_rows(text="\n".join(f"{key}, {value}" for key, value in d["rows"]))
        table = table_set(
            plan=ctx.plan,
            code=d["table"],
            effective_date=effective,
            rows=rows,
            citation=d.get("citation") or current.citation,
            description=d.get("description") or current.description,
            reason=d.get("reason") or "scenario",
            actor=ctx.actor,
            now=ctx.moment(event.on),
        )
    except TableError as exc:
        raise Rejected(current.citation, str(exc))
    return {"table": str(table)}
