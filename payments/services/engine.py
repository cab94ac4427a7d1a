"""The schedule engine: from an account's facts and its plan's `distribution` rules to dated payments.

Pure functions over `AccountFacts` (loaded in bulk by payments.services.facts): no queries here, so
the same code schedules one participant after an event and a hundred thousand in the benchmark.
Every rule is read from the plan version (`distribution`, `change_in_control`, `small_balance`,
`key_employee`); nothing here knows which plan it is dealing with.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from core.dates import (
    add_months,
    add_years,
    day_of_month_after,
    end_of_month,
    end_of_previous_month,
    first_day_of_month_after_anniversary,
)
from payments.services.beneficiaries import Payees

if TYPE_CHECKING:
    from plans.models import PlanVersion


@dataclass(frozen=True)
class Election:
    form: str
    installments: int | None = None
    lump_sum_percent: int | None = None
    delay_months: int = 0


@dataclass(frozen=True)
class Change:
    submitted_on: dt.date
    delay_years: int | None = None
    form: str | None = None
    installments: int | None = None


@dataclass(frozen=True)
class KeyStatus:
    known: bool
    key: bool
    identification_year: int


@dataclass
class AccountFacts:
    account_id: int
    kind: str
    name: str
    label: str
    version: PlanVersion  # provisions cached
    separation: dt.date | None = None
    death: dt.date | None = None
    disability: dt.date | None = None
    key_status: KeyStatus | None = None  # on the separation date
    election: Election | None = None
    changes: list[Change] = field(default_factory=list)
    specified_first_payment: dt.date | None = None  # EDCP 5.2(b), after accepted changes
    specified_changed: bool = False
    changes_of_control: list[dt.date] = field(default_factory=list)
    value_at_separation: Decimal | None = None
    value_known_through: dt.date | None = None
    separation_valuation_date: dt.date | None = None
    death_payees: Payees | None = None  # loaded when there is a death
    # An override a prior administrator determined before a conversion ("small_balance", "change_in_control"),
    # with where it comes from (payments.models.TakenOverOverride).
    taken_over_override: str | None = None
    taken_over_override_source: str = ""


PART_SHARES = ("part", "liquidate_part")
FINAL_SHARES = ("all", "liquidate", *PART_SHARES)


@dataclass
class Planned:
    trigger: str
    benefit: str
    kind: str
    number: int
    of: int
    share: str
    payment_date: dt.date
    valuation_rule: str
    valued_as_of: dt.date | None
    cite: str
    reason: str
    percent: Decimal | None = None
    hold_code: str = ""
    hold_reason: str = ""
    payee_name: str = ""

    @property
    def signature(self) -> tuple:
        return (
            self.trigger,
            self.kind,
            self.number,
            self.of,
            self.payment_date,
            self.share,
            self.payee_name,
            self.percent if self.share in PART_SHARES else None,
        )

    @property
    def final(self) -> bool:
        return self.share in FINAL_SHARES or (self.kind == "installment" and self.number == self.of)


@dataclass
class ScheduleResult:
    trigger: str = ""
    trigger_date: dt.date | None = None
    benefit: str = ""
    form: str = ""
    installments: int | None = None
    cite: str = ""
    summary: str = ""
    payments: list[Planned] = field(default_factory=list)
    provisional_until: dt.date | None = None
    hold_reason: str = ""


# --- date rules ----------------------------------------------------------------------------------


def payment_date_for(*, rule: dict, event: dt.date) -> dt.date:
    kind = rule["rule"]
    if kind == "day_of_month_after_event":
        return day_of_month_after(event, rule.get("day", 15), rule.get("months", 1))
    if kind in ("event_date", "approval_date"):
        return event
    raise ValueError(f"payment date rule {kind!r} needs a scheduled month, not an event")


def key_employee_date(*, rule: dict, separation: dt.date) -> dt.date:
    if rule["rule"] == "first_day_of_nth_month_after_event_month":
        return day_of_month_after(separation, 1, rule["months"])
    if rule["rule"] == "first_day_of_month_after_n_month_anniversary":
        return first_day_of_month_after_anniversary(separation, rule["months"])
    raise ValueError(f"unknown Key Employee delay rule {rule['rule']!r}")


def valuation_date_for(*, rule: str, event: dt.date, payment_date: dt.date) -> dt.date | None:
    """The date a payment is valued as of; None = on its release date (everything is sold that day)."""
    if rule == "end_of_event_month":
        return end_of_month(event)
    if rule == "end_of_month_before_payment":
        return end_of_previous_month(payment_date)
    if rule == "event_date":
        return event
    if rule == "release_date":
        return None
    raise ValueError(f"unknown valuation rule {rule!r}")


_DAY_WORDS = {1: "1st", 15: "15th"}


def _describe(rule: dict, event_word: str) -> str:
    kind = rule["rule"]
    if kind == "day_of_month_after_event":
        months = rule.get("months", 1)
        after = "the month after" if months == 1 else f"the {months}th month after"
        return f"the {_DAY_WORDS.get(rule.get('day', 15), str(rule.get('day')))} of {after} {event_word}"
    if kind == "first_day_of_nth_month_after_event_month":
        return f"the 1st day of the {rule['months']}th month after the month of {event_word} (Key Employee)"
    if kind == "first_day_of_month_after_n_month_anniversary":
        return f"the 1st day of the month after the {rule['months']}-month anniversary of {event_word} (Key Employee)"
    if kind == "event_date":
        return f"the date of {event_word}"
    return event_word


# --- the engine -----------------------------------------------------------------------------------


def _rules(version: PlanVersion, kind: str) -> list[dict]:
    return [r for r in (version.provision("distribution", []) or []) if kind in r["accounts"]]


def _rule(rules: list[dict], trigger: str) -> dict | None:
    return next((r for r in rules if r["trigger"] == trigger), None)


def _key_hold(f: AccountFacts, version: PlanVersion) -> tuple[str, str]:
    ks = f.key_status
    if ks is not None and not ks.known:
        return (
            "key_employee_unknown",
            f"No Key Employee list is recorded for identification year {ks.identification_year} "
            f"({version.cite('key_employee')}): record it so the Payment Date can be fixed.",
        )
    return "", ""


def _lump(
    trigger: str,
    benefit: str,
    share: str,
    date: dt.date,
    valuation_rule: str,
    event: dt.date,
    cite: str,
    reason: str,
    hold: tuple[str, str] = ("", ""),
) -> Planned:
    if valuation_rule == "release_date":
        share = {"all": "liquidate", "part": "liquidate_part"}.get(share, share)
    return Planned(
        trigger=trigger,
        benefit=benefit,
        kind="lump_sum",
        number=1,
        of=1,
        share=share,
        payment_date=date,
        valuation_rule=valuation_rule,
        valued_as_of=valuation_date_for(rule=valuation_rule, event=event, payment_date=date),
        cite=cite,
        reason=reason,
        hold_code=hold[0],
        hold_reason=hold[1],
    )


def _delayed_for_key(
    f: AccountFacts, delay_rule: dict | None, standard: dt.date, separation: dt.date
) -> tuple[dt.date, str | None]:
    """(first Payment Date, the Key Employee rule's cite when it moved the date)."""
    if not delay_rule or f.key_status is None or not f.key_status.key:
        return standard, None
    later = key_employee_date(rule=delay_rule, separation=separation)
    if later > standard:
        return later, delay_rule.get("cite")
    return standard, None


def _override(
    f: AccountFacts, version: PlanVersion, spec: dict, cite: str, trigger: str, benefit: str, why: str
) -> list[Planned]:
    """A lump sum of everything on separation (change in control 5.6, small balance 5.7)."""
    sep = f.separation
    assert sep is not None, "a change in control or small balance lump sum follows a separation"
    standard = day_of_month_after(sep, spec.get("payment_day", 15), spec.get("payment_months", 1))
    date, key_cite = _delayed_for_key(f, spec.get("key_employee_delay"), standard, sep)
    reason = f"{why}: {_describe({'rule': 'day_of_month_after_event', 'day': spec.get('payment_day', 15), 'months': spec.get('payment_months', 1)}, 'separation')}"
    if key_cite:
        reason += f"; Key Employee: {_describe(spec['key_employee_delay'], 'separation')}"
    return [
        _lump(
            trigger,
            benefit,
            "all",
            date,
            spec.get("valuation", "end_of_event_month"),
            sep,
            key_cite or cite,
            reason,
            _key_hold(f, version),
        )
    ]


def _form(f: AccountFacts, rule: dict) -> tuple[str, int | None, int | None]:
    e = f.election
    form = e.form if e else rule.get("default_form", "lump_sum")
    installments = e.installments if e else None
    percent = e.lump_sum_percent if e else None
    for c in f.changes:
        if c.form:
            form = c.form
        if c.installments:
            installments = c.installments
    if form not in rule["forms"]:
        form = rule.get("default_form", "lump_sum")
    return form, installments, percent


def _series(
    f: AccountFacts,
    rule: dict,
    trigger: str,
    event: dt.date,
    first: dt.date,
    standard: dt.date,
    cite: str,
    reason: str,
    hold: tuple[str, str],
) -> tuple[list[Planned], str, int | None]:
    form, n, percent = _form(f, rule)
    valuation = rule["valuation"]
    benefit = rule["name"]
    delayed = first != standard
    out: list[Planned] = []
    if form == "lump_sum" or not n:
        rule_name = (
            valuation.get("delayed_lump_sum", valuation["lump_sum"]) if delayed else valuation["lump_sum"]
        )
        out.append(_lump(trigger, benefit, "all", first, rule_name, event, cite, reason, hold))
        return out, "lump_sum", None
    inst_rule = valuation.get("installment", "end_of_month_before_payment")
    start = 0
    if form == "lump_sum_and_installments":
        rule_name = (
            valuation.get("delayed_lump_sum", valuation["lump_sum"]) if delayed else valuation["lump_sum"]
        )
        lump = _lump(
            trigger,
            benefit,
            "percent",
            first,
            rule_name,
            event,
            cite,
            f"{reason}; {percent}% as a lump sum",
            hold,
        )
        lump.percent = Decimal(percent or 0)
        out.append(lump)
        start = 1
    for k in range(n):
        date = add_years(first, k + start)
        why = (
            reason if k + start == 0 else f"anniversary {k + start} of the first payment ({first:%B %d, %Y})"
        )
        out.append(
            Planned(
                trigger=trigger,
                benefit=benefit,
                kind="installment",
                number=k + 1,
                of=n,
                share="installment",
                payment_date=date,
                valuation_rule=inst_rule,
                valued_as_of=valuation_date_for(rule=inst_rule, event=event, payment_date=date),
                cite=cite,
                reason=why,
                hold_code=hold[0],
                hold_reason=hold[1],
            )
        )
    return out, form, n


def _change_in_control_override(
    f: AccountFacts, version: PlanVersion, events: list[tuple[dt.date, str, dict]], result: ScheduleResult
) -> list[Planned] | None:
    """A separation soon enough after a change in control pays everything as one lump sum; None otherwise."""
    sep = f.separation
    cic = version.provision("change_in_control", None)
    if sep is not None and cic and f.kind in cic.get("accounts", []):
        window = cic["window_months"]
        hit = next((c for c in f.changes_of_control if c <= sep <= add_months(c, window)), None)
        if hit is not None and (not events or events[0][1] == "separation"):
            cite = version.cite("change_in_control")
            result.trigger, result.trigger_date, result.benefit, result.form, result.cite = (
                "change_in_control",
                sep,
                "Change in control",
                "lump_sum",
                cite,
            )
            result.summary = (
                f"Separation on {sep:%B %d, %Y}, within {window} months after the change in control of "
                f"{hit:%B %d, %Y} ({cite}): everything as one lump sum."
            )
            return _override(
                f,
                version,
                cic,
                cite,
                "change_in_control",
                "Change in control",
                f"separation within {window} months after a change in control",
            )
    return None


def _small_balance_override(
    f: AccountFacts, version: PlanVersion, events: list[tuple[dt.date, str, dict]], result: ScheduleResult
) -> list[Planned] | None:
    """A small balance at separation is paid as one lump sum, overriding the election; None otherwise."""
    sep = f.separation
    small = version.provision("small_balance", None)
    if events and events[0][1] == "separation" and small and f.kind in small.get("accounts", []):
        cite = version.cite("small_balance")
        threshold = Decimal(str(small["threshold"]))
        if (
            f.value_known_through is not None
            and f.separation_valuation_date is not None
            and f.value_known_through < f.separation_valuation_date
        ):
            result.provisional_until = f.separation_valuation_date
        if f.value_at_separation is not None and f.value_at_separation <= threshold:
            result.trigger, result.trigger_date, result.benefit, result.form, result.cite = (
                "small_balance",
                sep,
                "Small balance",
                "lump_sum",
                cite,
            )
            result.summary = (
                f"The account was worth {f.value_at_separation:,.2f} at separation on {sep:%B %d, %Y}, "
                f"not more than {threshold:,.2f} ({cite}): one lump sum, overriding the election."
            )
            return _override(f, version, small, cite, "small_balance", "Small balance", "small balance")
    return None


_OVERRIDE_NAMES = {"small_balance": "Small balance", "change_in_control": "Change in control"}


def _taken_over_override(
    f: AccountFacts, version: PlanVersion, events: list[tuple[dt.date, str, dict]], result: ScheduleResult
) -> list[Planned] | None:
    """An override the prior administrator determined (a conversion): the plan's lump sum for it (EDCP 5.6, 5.7),
    without the test these books cannot make (they begin after the separation); None when there is none, or the
    plan version has no such override for the account."""
    name = f.taken_over_override
    sep = f.separation
    if name is None or sep is None or not (not events or events[0][1] == "separation"):
        return None
    spec = version.provision(name, None)
    if not spec or f.kind not in spec.get("accounts", []):
        return None
    cite = version.cite(name)
    label = _OVERRIDE_NAMES[name]
    result.trigger, result.trigger_date, result.benefit, result.form, result.cite = (
        name,
        sep,
        label,
        "lump_sum",
        cite,
    )
    result.summary = (
        f"{label} override determined by the prior administrator before the conversion "
        f"({f.taken_over_override_source}; {cite}): separation on {sep:%B %d, %Y}, everything as one lump sum."
    )
    return _override(
        f, version, spec, cite, name, label, f"{label.lower()} (determined by the prior administrator)"
    )


def _event_series(
    f: AccountFacts, version: PlanVersion, rule: dict, trigger: str, day: dt.date, result: ScheduleResult
) -> list[Planned]:
    """The payments after the first of the participant's events (separation or disability), per the rule."""
    standard = payment_date_for(rule=rule["payment_date"], event=day)
    cite = rule["payment_date"].get("cite", rule["cite"])
    reason = _describe(rule["payment_date"], trigger.replace("_", " "))
    first = standard
    election = f.election
    if election and election.delay_months and rule.get("later_start"):
        first = add_months(first, election.delay_months)
        reason += f", {election.delay_months} months later as elected"
        cite = rule["later_start"].get("cite", cite)
    for change in f.changes:
        if change.delay_years and change.submitted_on <= add_months(first, -12):
            first = add_years(first, change.delay_years)
            sc = version.provision("schedule_change", None) or {}
            cite = sc.get("cites", {}).get("right", cite)
            reason += (
                f", delayed {change.delay_years} years by the change filed {change.submitted_on:%B %d, %Y}"
            )
    hold: tuple[str, str] = ("", "")
    if trigger == "separation" and rule.get("key_employee_delay"):
        hold = _key_hold(f, version)
        first, key_cite = _delayed_for_key(f, rule["key_employee_delay"], first, day)
        if key_cite:
            cite = key_cite
            reason = f"the later of {reason} and {_describe(rule['key_employee_delay'], trigger)}"
    payments, form, n = _series(f, rule, trigger, day, first, standard, cite, reason, hold)
    result.trigger, result.trigger_date, result.benefit, result.form, result.installments = (
        trigger,
        day,
        rule["name"],
        form,
        n,
    )
    result.cite = rule["cite"]
    result.summary = f"{rule['name']} ({rule['cite']}): {trigger.replace('_', ' ')} on {day:%B %d, %Y}; first payment {reason}."
    if hold[0]:
        result.hold_reason = hold[1]
    return payments


def _life_schedule(
    f: AccountFacts, version: PlanVersion, rules: list[dict], result: ScheduleResult
) -> list[Planned]:
    """What the account pays while the participant lives (separation, disability, a Specified Date)."""
    events = []
    for trigger, day in (("separation", f.separation), ("disability", f.disability)):
        r = _rule(rules, trigger)
        if day is not None and r is not None:
            events.append((day, trigger, r))
    events.sort(key=lambda e: e[0])
    overridden = _taken_over_override(f, version, events, result)
    if overridden is None:
        overridden = _change_in_control_override(f, version, events, result)
    if overridden is None:
        overridden = _small_balance_override(f, version, events, result)
    if overridden is not None:
        return overridden
    if events:
        day, trigger, rule = events[0]
        return _event_series(f, version, rule, trigger, day, result)
    sd = _rule(rules, "specified_date")
    if sd is not None and f.specified_first_payment is not None:
        first = f.specified_first_payment
        cite = sd["payment_date"].get("cite", sd["cite"])
        reason = f"the {_DAY_WORDS.get(first.day, first.day)} of the specified month"
        if f.specified_changed:
            sc = version.provision("schedule_change", None) or {}
            cite = sc.get("cites", {}).get("right", cite)
            reason += " as changed"
        payments, form, n = _series(f, sd, "specified_date", first, first, first, cite, reason, ("", ""))
        result.trigger, result.trigger_date, result.benefit, result.form, result.installments = (
            "specified_date",
            first,
            sd["name"],
            form,
            n,
        )
        result.cite = sd["cite"]
        result.summary = f"{sd['name']} ({sd['cite']}): first payment {first:%B %d, %Y}, {reason}."
        return payments
    sep_rule = _rule(rules, "separation")
    if sep_rule is not None:
        result.benefit = sep_rule["name"]
        result.cite = sep_rule["cite"]
        form, n, _ = _form(f, sep_rule)
        result.form, result.installments = form, n
        key_delay = sep_rule.get("key_employee_delay")
        result.summary = (
            f"{sep_rule['name']} ({sep_rule['cite']}): payable after separation, "
            f"{_describe(sep_rule['payment_date'], 'separation')}"
            + (
                # EDCP 5.1(b): a Key Employee on separation waits; the date is the engine's, not the 15th.
                f"; for a Key Employee on separation, the later of that and "
                f"{_describe(key_delay, 'separation').removesuffix(' (Key Employee)')} ({key_delay.get('cite', sep_rule['cite'])})."
                if key_delay
                else "."
            )
        )
    return []


def compute_schedule(*, f: AccountFacts) -> ScheduleResult:
    version = f.version
    rules = _rules(version, f.kind)
    result = ScheduleResult()
    life = _life_schedule(f, version, rules, result)
    death_rule = _rule(rules, "death")
    if f.death is None or death_rule is None:
        result.payments = life
        return result
    # Death before all benefits are paid (EDCP 5.4; RRP 4.01(a)): what fell due before it stands;
    # the rest of the account is one lump sum, which also ends a Key Employee's wait.
    kept = [p for p in life if p.payment_date < f.death]
    if any(p.final for p in kept):
        result.payments = kept
        return result
    death = f.death
    date = payment_date_for(rule=death_rule["payment_date"], event=death)
    cite = death_rule["payment_date"].get("cite", death_rule["cite"])
    reason = _describe(death_rule["payment_date"], "death")
    valuation = death_rule["valuation"]["lump_sum"]
    result.trigger, result.trigger_date, result.benefit, result.form, result.installments = (
        "death",
        death,
        death_rule["name"],
        "lump_sum",
        None,
    )
    result.cite = death_rule["cite"]
    payees = f.death_payees
    to_whom = ""
    if payees is not None:
        to_whom = (
            " to "
            + ", ".join(
                f"{p.name} ({p.percent.normalize():f}%)" if payees.shared else p.name for p in payees.payees
            )
            + f" ({payees.explanation})"
        )
    result.summary = (
        f"{death_rule['name']} ({death_rule['cite']}): death on {death:%B %d, %Y}; what is left is one "
        f"lump sum on {reason}{to_whom}" + (f", after {len(kept)} payment(s) already due." if kept else ".")
    )
    result.hold_reason = ""
    result.provisional_until = None
    result.payments = kept + death_lump_sums(
        trigger="death",
        benefit=death_rule["name"],
        date=date,
        valuation=valuation,
        event=death,
        cite=cite,
        reason=reason,
        payees=payees,
    )
    return result


def death_lump_sums(
    *,
    trigger: str,
    benefit: str,
    date: dt.date,
    valuation: str,
    event: dt.date,
    cite: str,
    reason: str,
    payees: Payees | None,
) -> list[Planned]:
    """The lump sum of everything, one payment per payee (EDCP 5.4 "to the Beneficiary"): each its percentage."""
    if payees is None or not payees.shared:
        lump = _lump(trigger, benefit, "all", date, valuation, event, cite, reason)
        lump.payee_name = payees.payees[0].name if payees is not None else ""
        return [lump]
    out = []
    for payee in payees.payees:
        lump = _lump(
            trigger,
            benefit,
            "part",
            date,
            valuation,
            event,
            cite,
            f"{reason}; {payee.percent.normalize():f}% to {payee.name}, {payee.basis}",
        )
        lump.percent, lump.payee_name = payee.percent, payee.name
        out.append(lump)
    return out
