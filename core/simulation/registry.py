"""What each app contributes to the simulator: event handlers and daily jobs (registered in <app>/simulation.py)."""

from __future__ import annotations

from collections.abc import Callable

EVENT_HANDLERS: dict[str, Callable] = {}
DAILY_JOBS: list[
    tuple[str, int, Callable]
] = []  # (stage, order, fn(ctx, day)), run each day in order after its events; one stage: "day"
SETUP_HOOKS: list[Callable] = []
YEAR_END_HOOKS: list[Callable] = []
REPORTERS: list[Callable] = []  # fn(ctx) -> dict merged into the result


def handles(event_type: str):
    def decorator(fn: Callable) -> Callable:
        EVENT_HANDLERS[event_type] = fn
        return fn

    return decorator


def daily(stage: str, order: int = 50):
    def decorator(fn: Callable) -> Callable:
        DAILY_JOBS.append((stage, order, fn))
        DAILY_JOBS.sort(key=lambda item: (item[0], item[1]))
        return fn

    return decorator


class Rejected(Exception):
    """An event the plan forbids: it runs, and its status says rejected with the rule (FORMAT.md)."""

    def __init__(self, rule: str, message: str):
        super().__init__(message)
        self.rule = rule
        self.message = message
