"""The conversion package's files and columns, as ../shared/conversion/FORMAT.md (format_version 1.0) defines them.

The format is a contract with the prior recordkeeper: its file names, columns, value kinds and
vocabularies are fixed here once. Plan rules that the system keeps as data (plan kinds, fund menus,
IRS figures, vesting tables) are read from the plan catalog, not from this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# value kinds (FORMAT.md section 1, "Values")
TEXT, DATE, MONTH, YEAR, MONEY, DEC6, PERCENT, INT, CODE, DEC2, YEARS = (
    "text",
    "date",
    "month",
    "year",
    "money",
    "dec6",
    "percent",
    "int",
    "code",
    "dec2",
    "years",
)


@dataclass(frozen=True)
class Column:
    name: str
    kind: str = TEXT
    required: bool = False
    choices: tuple[str, ...] = ()
    max_length: int = 0


@dataclass(frozen=True)
class FileSpec:
    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    money_measures: tuple[str, ...] = field(default=())

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def _c(
    name: str, kind: str = TEXT, req: bool = False, choices: tuple[str, ...] = (), max_length: int = 0
) -> Column:
    return Column(name=name, kind=kind, required=req, choices=choices, max_length=max_length)


EMP = _c("employee_number", TEXT, True, max_length=20)
PLAN = _c("plan", TEXT, True)
ACCOUNT = _c("account", TEXT, True)

FORMS = ("lump_sum", "installments", "lump_sum_and_installments")
DB_FORMS = (
    "qjsa",
    "single_life",
    "period_certain_60",
    "period_certain_120",
    "period_certain_180",
    "js_100",
    "js_75",
    "js_50",
    "lump_sum",
)
RELATIONSHIPS = (
    "spouse",
    "child",
    "grandchild",
    "parent",
    "sibling",
    "other_relative",
    "friend",
    "trust",
    "estate",
    "charity",
    "other",
)

FILES: tuple[FileSpec, ...] = (
    FileSpec(
        "package.csv",
        (
            _c("package_id", TEXT, True),
            _c("sponsor", TEXT, True),
            _c("prior_recordkeeper", TEXT, True),
            _c("conversion_date", DATE, True),
            _c("created_on", DATE, True),
            _c("format_version", TEXT, True),
            _c("key_employee_years_from", YEAR, True),
            _c("key_employee_years_to", YEAR, True),
        ),
        (),
    ),
    FileSpec(
        "plans.csv",
        (
            _c("plan", TEXT, True),
            _c("plan_name", TEXT, True),
            _c("plan_kind", CODE, True, ("account_balance", "defined_benefit")),
            _c("prior_plan_number"),
        ),
        ("plan",),
    ),
    FileSpec(
        "funds.csv",
        (
            PLAN,
            _c("fund", TEXT, True, max_length=20),
            _c("fund_name", TEXT, True),
            _c("asset_class"),
            _c("default_fund", CODE, True, ("yes", "no")),
        ),
        ("plan", "fund"),
    ),
    FileSpec(
        "fund_prices.csv",
        (PLAN, _c("fund", TEXT, True), _c("date", DATE, True), _c("price", DEC6, True)),
        ("plan", "fund", "date"),
    ),
    FileSpec(
        "participants.csv",
        (
            EMP,
            _c("first_name", TEXT, True, max_length=100),
            _c("last_name", TEXT, True, max_length=100),
            _c("birth_date", DATE, True),
            _c("hire_date", DATE, True),
            _c("rehire_date", DATE),
            _c("termination_date", DATE),
            _c("termination_reason", CODE, False, ("resignation", "retirement", "involuntary")),
            _c("death_date", DATE),
            _c("disability_date", DATE),
            _c("marital_status", CODE, True, ("single", "married", "divorced", "widowed")),
            _c("address_line1", max_length=200),
            _c("address_line2", max_length=200),
            _c("city", max_length=100),
            _c("state"),
            _c("postal_code"),
            _c("email"),
            _c("key_employee_years", YEARS),
            _c("vesting_service_years", INT, True),
            _c("vesting_service_through", YEAR, True),
        ),
        ("employee_number",),
    ),
    FileSpec(
        "participations.csv",
        (
            EMP,
            PLAN,
            _c("eligible_on", DATE),
            _c("entry_date", DATE, True),
            _c("status", CODE, True, ("active", "inactive", "separated", "deceased")),
        ),
        ("employee_number", "plan"),
    ),
    FileSpec(
        "accounts.csv",
        (
            EMP,
            PLAN,
            ACCOUNT,
            _c("opened_on", DATE, True),
            _c("value", MONEY, True),
            _c("vested_percent", PERCENT, True),
            _c("vested_value", MONEY, True),
        ),
        ("employee_number", "plan", "account"),
    ),
    FileSpec(
        "positions.csv",
        (
            EMP,
            PLAN,
            ACCOUNT,
            _c("fund", TEXT, True),
            _c("units", DEC6, True),
            _c("price", DEC6, True),
            _c("market_value", MONEY, True),
        ),
        ("employee_number", "plan", "account", "fund"),
    ),
    FileSpec(
        "contributions.csv",
        (
            EMP,
            PLAN,
            _c("plan_year", YEAR, True),
            ACCOUNT,
            _c(
                "source",
                CODE,
                True,
                ("deferral", "company_matching", "company_retirement", "matching", "retirement_restoration"),
            ),
            _c("amount", MONEY, True),
            _c("fica_wages", MONEY, True),
        ),
        ("employee_number", "plan", "plan_year", "account", "source"),
    ),
    FileSpec(
        "compensation.csv",
        (
            EMP,
            _c("plan_year", YEAR, True),
            _c("compensation", MONEY, True),
            _c("excess_compensation", MONEY),
            _c("rsp_elective_deferrals", MONEY, True),
        ),
        ("employee_number", "plan_year"),
    ),
    FileSpec(
        "deferral_elections.csv",
        (
            EMP,
            PLAN,
            _c("plan_year", YEAR, True),
            _c("election_type", CODE, True, ("annual", "first_year", "performance")),
            _c("component", TEXT, True),
            _c("percent", PERCENT, True),
            _c("filed_on", DATE, True),
            _c("performance_period_start", DATE),
            _c("performance_period_end", DATE),
        ),
        ("employee_number", "plan", "plan_year", "component"),
    ),
    FileSpec(
        "deferral_allocations.csv",
        (EMP, PLAN, _c("plan_year", YEAR, True), ACCOUNT, _c("percent", PERCENT, True)),
        ("employee_number", "plan", "plan_year", "account"),
    ),
    FileSpec(
        "distribution_elections.csv",
        (
            EMP,
            PLAN,
            ACCOUNT,
            _c("form", CODE, True, FORMS),
            _c("installments", INT),
            _c("lump_sum_percent", PERCENT),
            _c("delay_months", INT),
            _c("filed_on", DATE, True),
        ),
        ("employee_number", "plan", "account"),
    ),
    FileSpec(
        "schedule_changes.csv",
        (
            EMP,
            PLAN,
            ACCOUNT,
            _c("filed_on", DATE, True),
            _c("delay_years", INT),
            _c("new_payment_month", MONTH),
            _c("form", CODE, False, FORMS),
            _c("installments", INT),
            _c("lump_sum_percent", PERCENT),
        ),
        ("employee_number", "plan", "account", "filed_on"),
    ),
    FileSpec(
        "investment_elections.csv",
        (EMP, PLAN, _c("fund", TEXT, True), _c("percent", PERCENT, True), _c("effective_on", DATE, True)),
        ("employee_number", "plan", "fund"),
    ),
    FileSpec(
        "beneficiaries.csv",
        (
            EMP,
            PLAN,
            _c("tier", CODE, True, ("primary", "contingent")),
            _c("percent", PERCENT, True),
            _c("name", TEXT, True),
            _c("relationship", CODE, True, RELATIONSHIPS),
            _c("birth_date", DATE),
            _c("designation_date", DATE, True),
        ),
        ("employee_number", "plan", "tier", "name"),
    ),
    FileSpec(
        "payment_schedules.csv",
        (
            EMP,
            PLAN,
            ACCOUNT,
            _c("trigger", CODE, True, ("separation", "death", "disability", "specified_date")),
            _c("trigger_date", DATE, True),
            _c("override", CODE, False, ("small_balance", "change_in_control")),
            _c("form", CODE, True, FORMS),
            _c("installments", INT),
            _c("payments_total", INT, True),
            _c("payments_made", INT, True),
            _c("first_payment_date", DATE, True),
            _c("last_payment_date", DATE),
            _c("last_payment_amount", MONEY),
            _c("next_payment_date", DATE, True),
            _c(
                "amount_basis",
                CODE,
                True,
                ("whole_balance", "lump_sum_percent", "balance_divided_by_remaining"),
            ),
            _c("payee", CODE, True, ("participant", "beneficiaries")),
        ),
        ("employee_number", "plan", "account", "trigger"),
    ),
    FileSpec(
        "pension_figures.csv",
        (
            EMP,
            PLAN,
            _c("as_of", DATE, True),
            _c("unlimited_annual_benefit", MONEY, True),
            _c("imputed_annual_benefit", MONEY),
            _c("payable_annual_benefit", MONEY, True),
            _c("pre_2005_annual_benefit", MONEY),
            _c("benefit_service_years", DEC2, True),
            _c("early_retirement_date", DATE),
            _c("normal_retirement_date", DATE, True),
            _c("early_adjustment_factor", DEC6),
            _c("spouse_name"),
            _c("spouse_birth_date", DATE),
        ),
        ("employee_number", "plan", "as_of"),
    ),
    FileSpec(
        "db_benefits.csv",
        (
            EMP,
            PLAN,
            _c("status", CODE, True, ("not_commenced", "in_pay", "survivor_in_pay", "beneficiary_in_pay")),
            _c("form", TEXT, True),
            _c("elected_on", DATE),
            _c("defer_years", INT),
            _c("benefit_commencement_date", DATE),
            _c("monthly_amount", MONEY),
            _c("payments_made", INT, True),
            _c("next_payment_date", DATE),
            _c("survivor_name"),
            _c("survivor_birth_date", DATE),
            _c("survivor_percent", PERCENT),
            _c("survivor_monthly_amount", MONEY),
            _c("certain_months_remaining", INT),
        ),
        ("employee_number", "plan"),
    ),
    FileSpec(
        "control.csv",
        (
            _c("file", TEXT, True),
            _c("measure", TEXT, True),
            _c("plan"),
            _c("account"),
            _c("fund"),
            _c("plan_year"),
            _c("source"),
            _c("total", TEXT, True),
        ),
        ("file", "measure", "plan", "account", "fund", "plan_year", "source"),
    ),
)

BY_NAME: dict[str, FileSpec] = {f.name: f for f in FILES}

# FORMAT.md section 1, "Account names", and section 2 contributions.csv: the sources of each account.
ACCOUNT_SOURCES: dict[tuple[str, str], tuple[str, ...]] = {
    ("EDCP", "retirement_termination"): ("deferral",),
    ("EDCP", "specified_date"): ("deferral",),
    ("EDCP", "company_contribution"): ("company_matching", "company_retirement"),
    ("RRP", "elective_deferral"): ("deferral",),
    ("RRP", "matching"): ("matching",),
    ("RRP", "retirement_restoration"): ("retirement_restoration",),
}
SPECIFIED_DATE = "specified_date"
MAX_SPECIFIED_DATE_ACCOUNTS = 5  # EDCP 1.32

# control.csv measures (FORMAT.md section 3)
MEASURES: dict[str, tuple[str, ...]] = {
    "positions.csv": ("rows", "units", "market_value"),
    "accounts.csv": ("rows", "value", "vested_value"),
    "contributions.csv": ("rows", "amount", "fica_wages"),
    "db_benefits.csv": ("rows", "monthly_in_pay"),
}
