"""What the election documents say: the context of each confirmation and of the blank paper forms.

Everything here is derived from stored data (never the clock), so rendering again gives the same
bytes: times are written in Eastern time as text, provisions are quoted from the plan catalog.
"""

from __future__ import annotations

import datetime as dt

from core.dates import EASTERN
from elections import validators as V
from elections.models import (
    AnnuityElection,
    DeferralElection,
    DistributionElection,
    EnrollmentWindow,
    InvestmentElection,
    ScheduleChange,
)
from elections.selectors import provision_quotes
from plans.models import Plan, PlanVersion
from plans.selectors import MissingFigure, announced_percent, committee_contact


def when(moment: dt.datetime | None) -> str:
    if moment is None:
        return ""
    local = moment.astimezone(EASTERN)
    hour = local.strftime("%I").lstrip("0")
    return f"{local:%B} {local.day}, {local.year}, {hour}:{local:%M} {'a.m.' if local.hour < 12 else 'p.m.'} Eastern Time"


def day(d: dt.date | None) -> str:
    return f"{d:%B} {d.day}, {d.year}" if d else ""


def _account_label(version: PlanVersion, kind: str, month: dt.date | None) -> str:
    spec = version.account_spec(kind)
    base = spec["label"] if spec else kind.replace("_", " ").title()
    return f"{base} ({month:%B %Y})" if month else base


def version_label(version: PlanVersion) -> str:
    """The plan document without the plan's name, which the letterhead already gives (the name once, issue 11):
    'Executive Deferred Compensation Plan, as amended and restated effective January 1, 2011' -> 'as amended and
    restated effective January 1, 2011'."""
    name = version.plan.name
    title = version.title
    if title.startswith(name):
        title = title[len(name) :].lstrip(" ,:")
    return title[:1].upper() + title[1:] if title else ""


def _replaced(election) -> str:
    """Which election this one replaces: the latest earlier one of the same kind and slot that was in force
    (accepted, or since superseded), told by its date and reference; '' when it replaces none."""
    model = type(election)
    same = {"participation_id": election.participation_id}
    if isinstance(election, DeferralElection):
        same.update(plan_year=election.plan_year, kind=election.kind)
        same["performance_period_end"] = election.performance_period_end
    elif isinstance(election, DistributionElection):
        same.update(account_kind=election.account_kind, specified_month=election.specified_month)
    elif isinstance(election, InvestmentElection):
        same.update(applies_to=election.applies_to)
    elif not isinstance(election, AnnuityElection):
        return ""
    earlier = (
        model.objects.filter(**same, submitted_at__lt=election.submitted_at)
        .filter(status__in=["accepted", "superseded"])
        .exclude(pk=election.pk)
        .order_by("-submitted_at", "-pk")
        .first()
    )
    if earlier is None and isinstance(election, DeferralElection) and election.kind == "annual":
        # an evergreen election of an earlier plan year carried into this one
        earlier = (
            DeferralElection.objects.filter(
                participation_id=election.participation_id,
                kind="annual",
                plan_year__lt=election.plan_year,
                status="accepted",
                submitted_at__lt=election.submitted_at,
            )
            .order_by("-plan_year", "-submitted_at")
            .first()
        )
    if earlier is None:
        return ""
    return f"Your election received {when(earlier.submitted_at)} (reference {earlier._meta.model_name}-{earlier.pk})"


def _common(election, version: PlanVersion, title: str, template: str) -> dict:
    person = election.participation.person
    return {
        "title": title,
        "template": template,
        "plan_name": version.plan.name,
        "sponsor": version.plan.sponsor,
        "version_title": version_label(version),
        "replaces": _replaced(election),
        "participant_name": person.full_name,
        "employee_number": person.employee_number,
        "reference": f"{election._meta.model_name}-{election.pk}",
        "submitted": when(election.submitted_at),
        "channel": election.get_channel_display(),
    }


def confirmation_context(election) -> dict:
    submitted_on = election.submitted_at.astimezone(EASTERN).date()
    version = election.participation.plan.version_on(submitted_on)
    if isinstance(election, DeferralElection):
        return _deferral(election, version)
    if isinstance(election, DistributionElection):
        return _distribution(election, version)
    if isinstance(election, ScheduleChange):
        return _schedule_change(election, version)
    if isinstance(election, InvestmentElection):
        return _investment(election, version)
    if isinstance(election, AnnuityElection):
        return _annuity(election, version)
    raise TypeError(f"no confirmation for {type(election).__name__}")


def _deferral(e: DeferralElection, v: PlanVersion) -> dict:
    components = {c["code"]: c for c in v.provision("deferral_components", []) or []}
    lines = [
        {
            "label": components.get(line.component, {}).get("label", line.component),
            "percent": f"{line.percent:.0f}%",
        }
        for line in e.lines.all()
    ]
    allocations = [
        {"label": _account_label(v, a.account_kind, a.specified_month), "percent": f"{a.percent}%"}
        for a in e.allocations.all()
        if a.percent
    ]
    if not allocations:
        default = v.provision("default_deferral_account", None)
        if default:
            allocations = [
                {
                    "label": _account_label(v, default, None) + " (no allocation made: the default)",
                    "percent": "100%",
                }
            ]
    cites = [
        components[c]["cite"]
        for c in components
        if c in {line.component for line in e.lines.all()} and components[c].get("cite")
    ]
    cites += [
        v.cite("whole_percentages"),
        v.cite(V.KIND_PROVISION[e.kind]),
        v.cite("evergreen"),
        v.cite("default_deferral_account"),
    ]
    if any(a.account_kind == "specified_date" for a in e.allocations.all()):
        spec = v.account_spec("specified_date") or {}
        cites.append(spec.get("cite", v.cite("accounts")))
        if v.provision("specified_date_min_deferral_years", None):
            cites.append(v.cite("specified_date_min_deferral_years"))
    if v.provision("net_pay_cap_percent", None):
        cites.append(v.cite("net_pay_cap_percent"))
    if v.provision("deferral_cancellation", None):
        cites.append(v.cite("deferral_cancellation"))
    context = _common(
        e, v, f"Confirmation of your deferral election for {e.plan_year}", "elections/pdf/deferral.html"
    )
    context.update(
        {
            "plan_year": e.plan_year,
            "kind": e.get_kind_display(),
            "lines": lines,
            "allocations": allocations,
            "irrevocable": when(e.irrevocable_at),
            "covers_pay_from": day(e.covers_pay_from),
            "performance_period": f"{day(e.performance_period_start)} to {day(e.performance_period_end)}"
            if e.performance_period_end
            else "",
            "window": f"{when(e.window.opens_at)} to {when(e.window.closes_at)}"
            if e.window is not None
            else "",
            "evergreen": bool(v.provision("evergreen", False)),
            "quotes": provision_quotes(version=v, citations=cites),
        }
    )
    return context


def _distribution(e: DistributionElection, v: PlanVersion) -> dict:
    rule = V.distribution_rule_for(version=v, kind=e.account_kind) or {}
    form = V.FORM_LABELS.get(e.form, e.form)
    if e.form == "installments":
        form = f"{e.installments} annual installments"
    elif e.form == "lump_sum_and_installments":
        form = f"{e.lump_sum_percent}% as a lump sum, the rest in {e.installments} annual installments"
    cites = [rule.get("cite"), rule.get("payment_date", {}).get("cite")]
    if "installments" in rule:
        cites.append(rule["installments"].get("cite"))
    if e.delay_months and rule.get("later_start"):
        cites.append(rule["later_start"].get("cite"))
    if v.has("schedule_change"):
        cites.append(v.provision("schedule_change")["cites"]["right"])
    context = _common(
        e,
        v,
        f"Confirmation of your payment election: {_account_label(v, e.account_kind, e.specified_month)}",
        "elections/pdf/distribution.html",
    )
    context.update(
        {
            "account": _account_label(v, e.account_kind, e.specified_month),
            "form": form,
            "benefit": rule.get("name", ""),
            "delay": (
                f"{e.delay_months // 12} years" if e.delay_months % 12 == 0 else f"{e.delay_months} months"
            )
            if e.delay_months
            else "",
            "irrevocable": when(e.irrevocable_at),
            "quotes": provision_quotes(version=v, citations=[c for c in cites if c]),
        }
    )
    return context


def _schedule_change(e: ScheduleChange, v: PlanVersion) -> dict:
    cites = list((v.provision("schedule_change", {}) or {}).get("cites", {}).values())
    change = []
    if e.new_month:
        change.append(f"payment month moved to {e.new_month:%B %Y}")
    if e.delay_years:
        change.append(f"first payment delayed {e.delay_years} years")
    if e.form:
        change.append(
            f"form changed to {V.FORM_LABELS.get(e.form, e.form)}"
            + (f" ({e.installments} installments)" if e.installments else "")
        )
    context = _common(
        e,
        v,
        f"Confirmation of your change of payment schedule: {_account_label(v, e.account_kind, e.specified_month)}",
        "elections/pdf/schedule_change.html",
    )
    context.update(
        {
            "account": _account_label(v, e.account_kind, e.specified_month),
            "change": "; ".join(change),
            "previous_first_payment": day(e.previous_first_payment),
            "new_first_payment": day(e.new_first_payment),
            "takes_effect_on": day(e.takes_effect_on),
            "irrevocable": when(e.irrevocable_at),
            "quotes": provision_quotes(version=v, citations=cites),
        }
    )
    return context


def _investment(e: InvestmentElection, v: PlanVersion) -> dict:
    cites = [v.cite("investment_increment_percent"), v.cite("default_fund_rule")]
    if v.provision("investment_change_after_separation", False):
        cites.append(v.cite("investment_change_after_separation"))
    context = _common(e, v, "Confirmation of your investment election", "elections/pdf/investment.html")
    context.update(
        {
            "lines": [
                {"fund": f"{line.fund.code} {line.fund.name}", "percent": f"{line.percent}%"}
                for line in e.lines.all()
            ],
            "applies_to": e.get_applies_to_display(),
            "effective_on": day(e.effective_on),
            "quotes": provision_quotes(version=v, citations=cites),
        }
    )
    return context


def _annuity(e: AnnuityElection, v: PlanVersion) -> dict:
    cites = [v.cite("db_forms"), v.cite("db_commencement"), v.cite("db_election_change")]
    context = _common(
        e, v, "Confirmation of your election of the form of your benefit", "elections/pdf/annuity.html"
    )
    context.update(
        {
            "form": V.FORM_LABELS.get(e.form, e.form),
            "previous_form": V.FORM_LABELS.get(e.previous_form, e.previous_form),
            "defer_years": e.defer_years,
            "previous_defer_years": e.previous_defer_years,
            "is_change": e.is_change,
            "takes_effect_on": day(e.takes_effect_on),
            "irrevocable": when(e.irrevocable_at),
            "quotes": provision_quotes(version=v, citations=cites),
        }
    )
    return context


def blank_form_context(plan: Plan, plan_year: int) -> dict:
    """The paper Compensation Deferral Agreement for a plan year: limits, accounts, payment forms, deadlines."""
    v = plan.version_on(dt.date(plan_year - 1, 12, 31))
    components = []
    for comp in v.provision("deferral_components", []) or []:
        top = comp["max_percent"]
        if top == "announced":
            try:
                top = f"{announced_percent(plan=plan, code='announced_max_deferral_percent', year=plan_year):.0f}"
            except MissingFigure:
                top = "as the Committee announces"
        components.append(
            {
                "label": comp["label"],
                "max": f"{top}%" if str(top)[0].isdigit() else top,
                "cite": comp.get("cite", v.cite("deferral_components")),
            }
        )
    deferral_accounts = [a for a in v.account_kinds() if a["funded_by"] == "deferral"]
    schedules = []
    for a in deferral_accounts:
        rule = V.distribution_rule_for(version=v, kind=a["kind"])
        if rule:
            schedules.append(
                {
                    "account": a["label"],
                    "max_count": a["max_count"],
                    "forms": [V.FORM_LABELS.get(f, f) for f in rule["forms"]],
                    "installments": f"{rule['installments']['min']} to {rule['installments']['max']}"
                    if "installments" in rule
                    else "",
                    "default": V.FORM_LABELS.get(rule.get("default_form", ""), ""),
                    "later_start": rule.get("later_start", {}).get("max_years"),
                    "cite": rule["cite"],
                }
            )
    windows = [
        f"{when(w.opens_at)} to {when(w.closes_at)}"
        for w in EnrollmentWindow.objects.filter(
            plan=plan, plan_year=plan_year, kind=EnrollmentWindow.Kind.ANNUAL
        ).order_by("opens_at")
    ]
    deadline = when(V.annual_deadline(version=v, plan_year=plan_year)) if v.has("election_deadline") else ""
    cites = [
        v.cite("deferral_components"),
        v.cite("whole_percentages"),
        v.cite("election_deadline"),
        v.cite("first_year_window_days"),
        v.cite("performance_election_months_before_end"),
        v.cite("evergreen"),
        v.cite("default_deferral_account"),
    ] + [s["cite"] for s in schedules]
    return {
        "title": f"{plan.code} Compensation Deferral Agreement for {plan_year}",
        "plan_name": plan.name,
        "sponsor": plan.sponsor,
        "version_title": version_label(v),
        # the Committee's dated setting in force at the election deadline (where the form is returned)
        "contact": committee_contact(plan=plan, as_of=dt.date(plan_year - 1, 12, 31)),
        "plan_year": plan_year,
        "components": components,
        "deferral_accounts": deferral_accounts,
        "specified_rows": range(
            next((a["max_count"] for a in deferral_accounts if a["kind"] == "specified_date"), 0)
        ),
        "schedules": schedules,
        "deadline": deadline,
        "windows": windows,
        "first_year_days": v.provision("first_year_window_days", None),
        "quotes": provision_quotes(version=v, citations=[c for c in cites if c and c != plan.code]),
    }
