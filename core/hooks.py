"""Cross-app reactions and questions without upward imports: apps register them in AppConfig.ready().

Events: participants records an employment event; books (vesting, forfeiture) and payments (schedules)
react to it, in registration order, inside the same transaction.

Questions: a lower app asks about records a higher app keeps (elections asks the books which accounts a
participant holds, and payments whether an account's payments have started); the higher app answers. The
questions are listed here so the dependency stays visible in one place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

_handlers: dict[str, list[Callable]] = defaultdict(list)
_answers: dict[str, Callable[..., Any]] = {}

# question -> the app that answers it (registered in that app's AppConfig.ready)
QUESTIONS = {
    "accounts_held": "books",  # (participation) -> set[(account kind, specified month or None)]
    "account_holds_deferrals": "books",  # (participation, account_kind, specified_month) -> bool
    "payroll_reductions": "books",  # (plan, plan_year, participation) -> queryset of pay lines
    "last_pay_lines": "books",  # (person) -> [(pay date, component, gross)] of the last pay date
    "account_payments_started": "payments",  # (participation, account_kind, specified_month) -> bool
    # (participation, account_kind, specified_month, election, change, separation, as_of) -> dict of dated payments
    "payment_dates_preview": "payments",
    "defined_benefit_value": "payments",  # (participation, as_of) -> books.liability.BenefitLine
    "annuity_form_quote": "pensions",  # (participation, form, defer_years, as_of) -> pensions.selectors.FormQuote
    "defined_benefit_values": "payments",  # (participations, as_of) -> [BenefitLine], one per participation
    "tax_years": "taxes",  # (person) -> [(year, taxes.selectors.PersonYear)], newest first
}


def register(topic: str, handler: Callable) -> None:
    if handler not in _handlers[topic]:
        _handlers[topic].append(handler)


def emit(topic: str, **kwargs) -> None:
    for handler in _handlers[topic]:
        handler(**kwargs)


def answer(question: str, handler: Callable[..., Any]) -> None:
    """`handler` answers `question` (one of QUESTIONS); a second registration replaces the first."""
    if question not in QUESTIONS:
        raise KeyError(f"unknown question {question!r}: add it to core.hooks.QUESTIONS")
    _answers[question] = handler


def ask(question: str, **kwargs) -> Any:
    """The answer of the app that owns the records; a LookupError if that app is not installed."""
    try:
        handler = _answers[question]
    except KeyError:
        raise LookupError(
            f"nobody answers {question!r} (is {QUESTIONS.get(question)!r} installed?)"
        ) from None
    return handler(**kwargs)
