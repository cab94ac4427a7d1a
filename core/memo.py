"""A memo for one run of a report: answers that do not change within the run, computed once.

A report over many participants (the liability report's defined benefit lines) asks the same questions again and
again: the same dated IRS figure, the same Key Employee list, the same actuarial factor for the same age and
basis. Inside `run_memo()` those answers are kept for the rest of the run; outside it every call computes afresh,
as it always did, so a page that reads one participant is unchanged. A batch may also `seed` answers it has read
for many participants at once (one query for all instead of one each).

The memo lives in a context variable: it ends with the `with` block and is never shared between requests.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Hashable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_memo: contextvars.ContextVar[dict | None] = contextvars.ContextVar("run_memo", default=None)


@contextlib.contextmanager
def run_memo() -> Iterator[dict]:
    """Keep answers for the length of the block (a block inside another one shares the outer memo)."""
    current = _memo.get()
    if current is not None:
        yield current
        return
    memo: dict = {}
    token = _memo.set(memo)
    try:
        yield memo
    finally:
        _memo.reset(token)


def active() -> bool:
    return _memo.get() is not None


def remember(key: Hashable, compute: Callable[[], T]) -> T:
    """`compute()`, once per run for `key` (every time when no run is active). An exception is not kept."""
    memo = _memo.get()
    if memo is None:
        return compute()
    try:
        return memo[key]
    except KeyError:
        value = memo[key] = compute()
        return value


def recall(key: Hashable) -> Any:
    """The answer kept for `key` in the active run, or None (none kept, or no run active): nothing is computed."""
    memo = _memo.get()
    return None if memo is None else memo.get(key)


def seed(key: Hashable, value: Any) -> None:
    """Record an answer read in bulk; nothing happens when no run is active."""
    memo = _memo.get()
    if memo is not None:
        memo[key] = value
