"""Cross-app reactions without import cycles: apps register handlers in AppConfig.ready().

participants records an employment event; books (vesting, forfeiture) and payments (schedules)
react to it, in registration order, inside the same transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

_handlers: dict[str, list[Callable]] = defaultdict(list)


def register(topic: str, handler: Callable) -> None:
    if handler not in _handlers[topic]:
        _handlers[topic].append(handler)


def emit(topic: str, **kwargs) -> None:
    for handler in _handlers[topic]:
        handler(**kwargs)
