"""The typed provisions a plan version may carry, each validated when the catalog is loaded.

A provision is data: a value with the section it comes from. Code reads provisions by key through
PlanVersion.provision(key) and never asks which plan it is dealing with.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

ACCOUNT_KINDS = (
    "retirement_termination",
    "specified_date",
    "company_contribution",
    "elective_deferral",
    "matching",
    "retirement_restoration",
)
FUNDED_BY = ("deferral", "company", "matching", "restoration")
TRIGGERS = (
    "separation",
    "death",
    "disability",
    "specified_date",
    "change_in_control",
    "emergency",
    "domestic_relations_order",
)
FORMS = ("lump_sum", "installments", "lump_sum_and_installments")
PAYMENT_DATE_RULES = ("day_of_month_after_event", "event_date", "specified_month_day", "approval_date")
KEY_DELAY_RULES = ("first_day_of_nth_month_after_event_month", "first_day_of_month_after_n_month_anniversary")
VALUATION_RULES = ("end_of_event_month", "end_of_month_before_payment", "event_date", "release_date")


class ProvisionError(ValueError):
    pass


def _need(value: dict, *fields: str) -> None:
    missing = [f for f in fields if f not in value]
    if missing:
        raise ProvisionError(f"missing field(s) {', '.join(missing)}")


def _dec(value: Any, what: str, lo: Decimal | None = None, hi: Decimal | None = None) -> Decimal:
    try:
        d = Decimal(str(value))
    except InvalidOperation:
        raise ProvisionError(f"{what} {value!r} is not a number")
    if isinstance(value, float):
        raise ProvisionError(f"{what} must be written as a string or integer, not a float")
    if lo is not None and d < lo or hi is not None and d > hi:
        raise ProvisionError(f"{what} {value} is outside {lo}..{hi}")
    return d


def _int(value: Any, what: str, lo: int | None = None, hi: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProvisionError(f"{what} {value!r} is not a whole number")
    if lo is not None and value < lo or hi is not None and value > hi:
        raise ProvisionError(f"{what} {value} is outside {lo}..{hi}")
    return value


def _choice(value: Any, what: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ProvisionError(f"{what} {value!r} is not one of {', '.join(choices)}")
    return value


def v_bool(value: Any) -> None:
    if not isinstance(value, bool):
        raise ProvisionError(f"{value!r} is not true/false")


def v_str(value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ProvisionError(f"{value!r} is not a text")


def v_percent(value: Any) -> None:
    _dec(value, "percent", Decimal(0), Decimal(100))


def v_money(value: Any) -> None:
    _dec(value, "amount", Decimal(0))


def v_int(lo: int, hi: int) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        _int(value, "value", lo, hi)

    return check


def v_optional(check: Callable[[Any], None]) -> Callable[[Any], None]:
    def wrapped(value: Any) -> None:
        if value is not None:
            check(value)

    return wrapped


def v_choice(*choices: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        _choice(value, "value", choices)

    return check


def v_date(value: Any) -> None:
    if isinstance(value, dt.date):
        return
    try:
        dt.date.fromisoformat(str(value))
    except ValueError:
        raise ProvisionError(f"{value!r} is not a date")


def v_accounts(value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise ProvisionError("accounts must be a non-empty list")
    for a in value:
        _need(a, "kind", "label", "max_count", "funded_by")
        _choice(a["kind"], "account kind", ACCOUNT_KINDS)
        _int(a["max_count"], "max_count", 1, 10)
        _choice(a["funded_by"], "funded_by", FUNDED_BY)


def v_components(value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise ProvisionError("deferral components must be a non-empty list")
    for c in value:
        _need(c, "code", "label", "max_percent", "performance_based")
        if c["max_percent"] != "announced":
            _dec(c["max_percent"], f"{c['code']} max_percent", Decimal(0), Decimal(100))
        _dec(c.get("min_percent", 0), f"{c['code']} min_percent", Decimal(0), Decimal(100))
        if not isinstance(c["performance_based"], bool):
            raise ProvisionError(f"{c['code']} performance_based must be true/false")


def v_deadline(value: Any) -> None:
    _need(value, "month", "day", "hour", "minute", "years_before_plan_year")
    _int(value["month"], "month", 1, 12)
    _int(value["day"], "day", 1, 31)
    _int(value["hour"], "hour", 0, 23)
    _int(value["minute"], "minute", 0, 59)
    _int(value["years_before_plan_year"], "years_before_plan_year", 0, 2)


def v_key_employee(value: Any) -> None:
    _need(value, "identification_month", "identification_day", "effective_month", "effective_day", "months")
    _int(value["months"], "months", 1, 24)


def v_matching(value: Any) -> None:
    if value is None:
        return
    _need(value, "basis", "rate", "cap_percent", "cap_base")
    _choice(value["basis"], "basis", ("pay_period", "plan_year"))
    _dec(value["rate"], "rate", Decimal(0), Decimal(10))
    _dec(value["cap_percent"], "cap_percent", Decimal(0), Decimal(100))
    _choice(value["cap_base"], "cap_base", ("plan_compensation", "compensation"))


def v_restoration(value: Any) -> None:
    if value is None:
        return
    _need(value, "base", "employed_last_day", "exceptions")
    _choice(value["base"], "base", ("plan_compensation", "compensation"))


def v_vesting(value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise ProvisionError("vesting must be a non-empty list of rules")
    for r in value:
        _need(r, "accounts", "rule", "cite")
        for k in r["accounts"]:
            _choice(k, "account kind", ACCOUNT_KINDS)
        _choice(r["rule"], "rule", ("immediate", "schedule", "cliff"))
        if r["rule"] == "schedule":
            _need(r, "schedule_table")
        if r["rule"] == "cliff":
            _int(r.get("cliff_years"), "cliff_years", 0, 50)
        for f in r.get("full_on", []):
            _choice(f, "full_on", ("death_while_employed", "change_in_control", "retirement", "disability"))
        if r.get("full_if_service_on_or_after"):
            v_date(r["full_if_service_on_or_after"])


def v_distribution(value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise ProvisionError("distribution must be a non-empty list of rules")
    for r in value:
        _need(r, "name", "accounts", "trigger", "payment_date", "forms", "valuation", "cite")
        _choice(r["trigger"], "trigger", TRIGGERS)
        for k in r["accounts"]:
            _choice(k, "account kind", ACCOUNT_KINDS)
        _choice(r["payment_date"]["rule"], "payment_date rule", PAYMENT_DATE_RULES)
        for f in r["forms"]:
            _choice(f, "form", FORMS)
        for form, rule in r["valuation"].items():
            _choice(form, "valuation form", ("lump_sum", "installment", "delayed_lump_sum"))
            _choice(rule, "valuation rule", VALUATION_RULES)
        if r.get("key_employee_delay"):
            _choice(r["key_employee_delay"]["rule"], "key employee delay", KEY_DELAY_RULES)
        if "installments" in r:
            _int(r["installments"]["min"], "installments min", 2, 30)
            _int(r["installments"]["max"], "installments max", 2, 30)


DEFAULT_BENEFICIARIES = ("spouse", "estate")


def v_default_beneficiary(value: Any) -> None:
    """Who takes a death benefit nobody designated (or whose designees all predeceased), in order."""
    if not isinstance(value, list) or not value:
        raise ProvisionError("default_beneficiary must be a non-empty list, e.g. [spouse, estate]")
    for who in value:
        _choice(who, "default beneficiary", DEFAULT_BENEFICIARIES)
    if value[-1] != "estate":
        raise ProvisionError(
            "the last default beneficiary must be the estate (someone always takes the benefit)"
        )


def v_object(*fields: str) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not isinstance(value, dict):
            raise ProvisionError(f"{value!r} is not an object")
        _need(value, *fields)

    return check


@dataclass(frozen=True)
class ProvisionSpec:
    key: str
    label: str
    validate: Callable[[Any], None]
    help: str = ""


SPECS: dict[str, ProvisionSpec] = {}


def spec(key: str, label: str, validate: Callable[[Any], None], help: str = "") -> None:
    SPECS[key] = ProvisionSpec(key, label, validate, help)


# --- common -----------------------------------------------------------------------------------
spec("plan_year", "Plan Year", v_choice("calendar"))
spec("time_zone", "Time zone of the plan's deadlines", v_str)
spec("valuation_calendar", "Valuation Date calendar", v_choice("XNYS"))
spec("committee_min_members", "Minimum Committee members", v_int(1, 20))
spec("key_employee", "Key Employee identification and effective dates", v_key_employee)
spec("frozen_after", "No new participants or accruals after", v_optional(v_date))
# --- accounts and deferrals -------------------------------------------------------------------
spec("accounts", "Accounts and sub-accounts", v_accounts)
spec(
    "default_deferral_account",
    "Where deferrals go without an allocation",
    v_optional(v_choice(*ACCOUNT_KINDS)),
)
spec("deferral_components", "Deferrable pay components and their limits", v_optional(v_components))
spec("whole_percentages", "Deferrals in whole percentages", v_bool)
spec(
    "net_pay_cap_percent",
    "Deferral never exceeds this percent of cash pay left after taxes",
    v_optional(v_percent),
)
spec("election_deadline", "Annual deferral election deadline", v_optional(v_deadline))
spec(
    "first_year_window_days",
    "Days to elect after the notice of initial eligibility",
    v_optional(v_int(1, 365)),
)
spec(
    "performance_election_months_before_end",
    "Performance-Based Compensation: months before the period ends",
    v_optional(v_int(1, 24)),
)
spec("performance_period_min_months", "Performance period of at least (months)", v_optional(v_int(1, 60)))
spec("evergreen", "Elections continue into later plan years until changed", v_bool)
spec(
    "specified_date_min_deferral_years",
    "Minimum deferral period for Specified Date Accounts (years; empty = off)",
    v_optional(v_int(1, 30)),
)
spec(
    "deferral_cancellation",
    "Committee cancellation of deferrals",
    v_optional(v_object("emergency", "hardship_months")),
)
spec("plan_compensation", "Plan Compensation", v_choice("all", "above_401a17"))
spec(
    "participation",
    "Who participates",
    v_choice("committee_selection", "compensation_above_401a17", "frozen"),
)
# --- contributions and vesting ----------------------------------------------------------------
spec("matching", "Matching contribution formula", v_matching)
spec("retirement_restoration", "Retirement restoration contribution", v_restoration)
spec(
    "company_contributions",
    "Company contributions credited by the Committee",
    v_optional(v_object("kinds", "account")),
)
spec("vesting", "Vesting", v_vesting)
spec("forfeit_unvested_at_separation", "Unvested amounts forfeited at separation", v_bool)
spec("retirement_age", "Retirement age (Retire)", v_optional(v_int(50, 75)))
# --- investments ------------------------------------------------------------------------------
spec("investment_increment_percent", "Allocation increments (percent)", v_int(1, 100))
spec("default_fund_rule", "Default fund", v_str)
spec("investment_change_after_separation", "Investment changes allowed after separation", v_bool)
# --- distributions ----------------------------------------------------------------------------
spec("distribution", "Benefits, triggers and Payment Dates", v_optional(v_distribution))
spec("change_in_control", "Change in control", v_optional(v_object("window_months")))
spec("small_balance", "Small balance cash-out", v_optional(v_object("accounts", "threshold")))
spec("emergency", "Unforeseeable emergency withdrawal", v_optional(v_object("order")))
spec("domestic_relations_order", "Domestic relations orders", v_optional(v_object("form")))
spec(
    "default_beneficiary",
    "Beneficiary when none is designated or the designees predeceased",
    v_default_beneficiary,
    "spouse: the Surviving Spouse (married on the date of death); estate: the executor or administrator of the estate",
)
spec(
    "schedule_change",
    "Changing a payment schedule",
    v_optional(v_object("min_months_before", "min_years_later")),
)
spec(
    "claims",
    "Claims procedure time limits",
    v_object(
        "decision_days",
        "extension_days",
        "appeal_days",
        "review_days",
        "review_extension_days",
        "legal_action_years",
    ),
)
# --- defined benefit (BRP) --------------------------------------------------------------------
spec("funding", "Unfunded plan; rabbi trust", v_object("unfunded", "trust"))
spec(
    "committee_contact",
    "Where claims, appeals and paper forms are sent: the Committee's postal address and email",
    v_optional(v_object("name", "address", "email")),
)
spec("db_benefit", "Supplemental Benefit formula", v_optional(v_object("formula")))
spec("db_maximum_benefit", "Maximum Benefit", v_optional(v_object("base_year", "base_amount", "indexed_by")))
spec("db_forms", "Annuity forms", v_optional(v_object("forms", "default_married", "default_single")))
spec("db_commencement", "Benefit Commencement Date", v_optional(v_object("rule")))
spec(
    "db_election_change",
    "Changing the time or form of a benefit",
    v_optional(v_object("min_months_effective", "min_years_later")),
)
spec(
    "db_pre_2005",
    "The Pre-2005 Supplemental Benefit (Appendix A)",
    v_optional(v_object("accrued_and_vested_by")),
)
spec(
    "db_domestic_relations_order",
    "Domestic relations orders against a defined benefit",
    v_optional(v_object("lump_sum")),
)
spec(
    "db_initial_election",
    "The initial election of the form of benefit",
    v_optional(v_object("year", "days_after_participation")),
)
spec("db_eligibility", "Eligibility to a benefit", v_optional(v_object("benefit_service_years")))
spec(
    "db_survivor",
    "Pre-retirement survivor benefit",
    v_optional(v_object("benefit_service_years", "survivor_percent")),
)
spec("actuarial_basis", "Actuarial equivalence basis", v_optional(v_object("mortality_table", "interest")))


def validate_provision(key: str, value: Any) -> None:
    if key not in SPECS:
        raise ProvisionError(f"unknown provision {key!r}")
    try:
        SPECS[key].validate(value)
    except ProvisionError as exc:
        raise ProvisionError(f"provision {key}: {exc}")
