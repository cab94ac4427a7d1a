"""Reads of claims: the deadlines (from the plan's `claims` provision), the plan sections to quote, the
staff queue and the reports.

How days are counted (RULES.md "Claims"; 29 CFR 2560.503-1(f)(1), (h)(2)(i), (i)(1)):

* Every deadline is a calendar date in the plan's time zone (provision `time_zone`,
  America/New_York). A moment becomes a date by converting it to that zone: 9 pm Eastern on
  April 10 is April 10 although it is already April 11 in UTC.
* The day of the event (receipt of the claim, of the appeal, the claimant's receipt of the denial)
  is day 0. "Within N days after" the event means on or before day N (event + N days); day N + 1 is
  late.
* An extension notice must go out "before the period ends": a period ends when its last day ends,
  so the notice may go out on day 90 (initial) or day 60 (review), never on day 91 / 61. The
  extended period counts from the same event: 90 + 90 = 180 days, 60 + 60 = 120 days.
* When the claimant receives the denial (the start of the 60-day appeal window): the plan documents
  do not say, so the reading adopted is RECEIPT_ALLOWANCE_DAYS below, by how the notice is
  delivered: a notice posted to the portal (the claimant filed there and is emailed when it is
  posted) is received the day it is posted; a mailed notice is received MAIL days after its date.
* Legal action: within one year of the final determination, i.e. on or before the same calendar
  date one year later (a February 29 decision runs to February 28).
* Tolling ((f)(4) initial, (i)(4) on review): when an extension is needed because the claimant has
  not submitted information necessary to decide, the period stands still from the date the extension
  notice is sent until the date the claimant responds; the decision is then due that many days later
  (notice on day 80, response on day 100: due on day 180 + 20 = 200). While the response is awaited
  the period has no due date (the deadline is suspended); a decision made then is on time, the period
  being tolled up to the day of the decision.
"""

from __future__ import annotations

import datetime as dt
import re
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db.models import Avg, Count, F, Q, QuerySet

from claims.models import (
    AWAITING_DECISION,
    AWAITING_REVIEW,
    OPEN_STATES,
    Claim,
    ClaimDecision,
    ClaimExtension,
    Delivery,
    Level,
    RepresentativeStatus,
    State,
)
from core.dates import EASTERN_NAME, add_years
from core.models import Document
from plans.models import Plan, PlanSection, PlanVersion

if TYPE_CHECKING:
    from core.models import Document
    from participants.models import Person

# The reading of "receives the denial": days after the notice date, by delivery. A mailed notice is
# treated as received five calendar days after its date (a common mailing presumption, generous to the
# claimant); a notice posted to the portal the day it is posted.
RECEIPT_ALLOWANCE_DAYS: dict[str, int] = {Delivery.PORTAL: 0, Delivery.MAIL: 5}

# The staff queue colours a deadline, and the daily job emails the reviewer, this many days before it.
WARN_DAYS = 14

# The roles of the sections of a plan's claims article, in the order all three plans share:
# Right to File Claim, Denial of Claim, Claims Review Procedure, Decision on Review, Legal Action,
# Exclusive Forum (EDCP 11.1-11.6, BRP 7.1-7.6, RRP 7.01-7.06). The `claims` provision cites the denial
# section; the others follow from it unless the provision names them under `sections`.
SECTION_ROLES = ("filing", "denial", "review", "decision_on_review", "legal_action", "forum")


@dataclass(frozen=True)
class ClaimsRules:
    """The claims provision of the version in force when the claim was received, with its citations."""

    version: PlanVersion
    decision_days: int
    extension_days: int
    appeal_days: int
    review_days: int
    review_extension_days: int
    legal_action_years: int
    forum: str
    time_zone: zoneinfo.ZoneInfo
    sections: dict[str, str]  # role -> section number, e.g. {"denial": "11.2", ...}

    def cite(self, role: str) -> str:
        return f"{self.version.plan.code} {self.sections[role]}"

    @property
    def provision_cite(self) -> str:
        return self.version.cite("claims")


def _sibling_sections(citation: str) -> dict[str, str]:
    """'EDCP 11.2' -> {'filing': '11.1', 'denial': '11.2', ..., 'forum': '11.6'}; 'RRP 7.02' -> 7.01..7.06."""
    match = re.search(r"(\d+)\.(\d+)\s*$", citation)
    if not match:
        raise ValueError(f"the claims provision cites {citation!r}: expected a section like '11.2'")
    article, minor = match.group(1), match.group(2)
    width, denial = len(minor), int(minor)
    start = denial - SECTION_ROLES.index("denial")
    return {role: f"{article}.{str(start + i).zfill(width)}" for i, role in enumerate(SECTION_ROLES)}


def rules_for(*, plan: Plan, on: dt.date) -> ClaimsRules:
    version = plan.version_on(on)
    value: dict[str, Any] = version.provision("claims")
    sections = value.get("sections") or _sibling_sections(version.cite("claims"))
    return ClaimsRules(
        version=version,
        decision_days=int(value["decision_days"]),
        extension_days=int(value["extension_days"]),
        appeal_days=int(value["appeal_days"]),
        review_days=int(value["review_days"]),
        review_extension_days=int(value["review_extension_days"]),
        legal_action_years=int(value["legal_action_years"]),
        forum=value.get("forum", ""),
        time_zone=zoneinfo.ZoneInfo(version.provision("time_zone", EASTERN_NAME)),
        sections=dict(sections),
    )


def claim_rules(*, claim: Claim) -> ClaimsRules:
    cached = getattr(claim, "_rules", None)
    if cached is None or cached.version.plan_id != claim.plan_id:
        cached = rules_for(plan=claim.plan, on=claim.received_on)
        claim._rules = cached
    return cached


def local_date(*, moment: dt.datetime, rules: ClaimsRules) -> dt.date:
    """The calendar date of `moment` in the plan's time zone (never the server's or UTC's)."""
    if moment.tzinfo is None:
        raise ValueError("a moment without a time zone cannot be placed on the plan's calendar")
    return moment.astimezone(rules.time_zone).date()


def day_number(*, start: dt.date, day: dt.date) -> int:
    """Day 0 is the day of the event."""
    return (day - start).days


# --- the deadlines, one function each -----------------------------------------------------------------
def decision_due_on(*, received_on: dt.date, rules: ClaimsRules, extended: bool) -> dt.date:
    """EDCP 11.2: 90 days after receipt; 180 when extended."""
    days = rules.decision_days + (rules.extension_days if extended else 0)
    return received_on + dt.timedelta(days=days)


def extension_notice_by(*, received_on: dt.date, rules: ClaimsRules) -> dt.date:
    """The last day an initial extension notice may go out: the last day of the initial period."""
    return received_on + dt.timedelta(days=rules.decision_days)


def claimant_receives_on(*, notice_on: dt.date, delivery: str) -> dt.date:
    return notice_on + dt.timedelta(days=RECEIPT_ALLOWANCE_DAYS[delivery])


def appeal_due_on(*, received_denial_on: dt.date, rules: ClaimsRules) -> dt.date:
    """EDCP 11.3: an appeal within 60 days after the claimant receives the denial."""
    return received_denial_on + dt.timedelta(days=rules.appeal_days)


def review_due_on(*, appeal_received_on: dt.date, rules: ClaimsRules, extended: bool) -> dt.date:
    """EDCP 11.4: 60 days after the appeal is received; 120 when extended."""
    days = rules.review_days + (rules.review_extension_days if extended else 0)
    return appeal_received_on + dt.timedelta(days=days)


def review_extension_notice_by(*, appeal_received_on: dt.date, rules: ClaimsRules) -> dt.date:
    return appeal_received_on + dt.timedelta(days=rules.review_days)


def legal_action_until(*, final_determination_on: dt.date, rules: ClaimsRules) -> dt.date:
    """EDCP 11.5: legal action within one year of the final determination."""
    return add_years(final_determination_on, rules.legal_action_years)


def tolled_due_on(*, due_on: dt.date, notice_on: dt.date, response_on: dt.date) -> dt.date:
    """29 CFR 2560.503-1(f)(4), (i)(4): the period is tolled from the date the extension notice is sent until
    the claimant responds, so the decision falls due that many days later."""
    return due_on + dt.timedelta(days=max(0, (response_on - notice_on).days))


def regulation_paragraph(*, level: str) -> str:
    """The paragraph of 29 CFR 2560.503-1 that tolls the period of `level`."""
    return "(f)(4)" if level == Level.INITIAL else "(i)(4)"


@dataclass(frozen=True)
class Deadline:
    kind: str
    label: str
    due_on: dt.date | None  # None only while suspended (tolled, awaiting the claimant's information)
    cite: str
    done_on: dt.date | None = None
    suspended_since: dt.date | None = (
        None  # the extension notice date, while the claimant's response is awaited
    )
    days_remaining: int | None = None  # while suspended: days of the period left once the response arrives
    days_tolled: int = 0  # days the period stood still (added to its due date)

    @property
    def suspended(self) -> bool:
        return self.suspended_since is not None

    def days_left(self, today: dt.date) -> int | None:
        return None if self.due_on is None else (self.due_on - today).days


@dataclass(frozen=True)
class ClaimDeadlines:
    decision: Deadline
    extension_notice: Deadline
    appeal: Deadline | None
    review: Deadline | None
    review_extension_notice: Deadline | None
    legal_action: Deadline | None
    next: Deadline | None

    def all(self) -> list[Deadline]:
        found = [
            self.decision,
            self.extension_notice,
            self.appeal,
            self.review_extension_notice,
            self.review,
            self.legal_action,
        ]
        return [d for d in found if d is not None]


def _period(
    kind: str,
    label: str,
    due_on: dt.date,
    cite: str,
    *,
    extension: ClaimExtension | None,
    decided_on: dt.date | None,
    deciding_on: dt.date | None,
) -> Deadline:
    """A decision period, tolled ((f)(4), (i)(4)) when its extension asked the claimant for information: up to the
    response, or else up to the decision (made, or about to be made on `deciding_on`) without it; suspended while
    none of these has come."""
    if extension is None or not extension.requests_information:
        return Deadline(kind, label, due_on, cite, decided_on)
    response_on = extension.information_received_on or decided_on or deciding_on
    if response_on is None:
        return Deadline(
            kind,
            label,
            None,
            cite,
            suspended_since=extension.issued_on,
            days_remaining=max(0, (due_on - extension.issued_on).days),
        )
    tolled = tolled_due_on(due_on=due_on, notice_on=extension.issued_on, response_on=response_on)
    return Deadline(kind, label, tolled, cite, decided_on, days_tolled=(tolled - due_on).days)


def claim_deadlines(*, claim: Claim, deciding_on: dt.date | None = None) -> ClaimDeadlines:
    """Every deadline of a claim, from its dates and the plan's claims provision.

    `deciding_on`: the date of a decision about to be recorded on the level awaiting one; a period still
    tolled counts as tolled up to that day (the due date the decision is measured against)."""
    rules = claim_rules(claim=claim)
    extensions = {e.level: e for e in claim.extensions.all()} if claim.pk else {}
    decisions = {d.level: d for d in claim.decisions.all()} if claim.pk else {}
    appeal = getattr(claim, "appeal", None) if claim.pk else None
    initial, review = decisions.get(Level.INITIAL), decisions.get(Level.REVIEW)
    ext_ext, rev_ext = extensions.get(Level.INITIAL), extensions.get(Level.REVIEW)

    decision = _period(
        "decision",
        "Initial decision due",
        decision_due_on(received_on=claim.received_on, rules=rules, extended=ext_ext is not None),
        rules.cite("denial"),
        extension=ext_ext,
        decided_on=initial.decided_on if initial else None,
        deciding_on=deciding_on if claim.state in AWAITING_DECISION else None,
    )
    extension_notice = Deadline(
        "extension_notice",
        "Last day for an extension notice",
        extension_notice_by(received_on=claim.received_on, rules=rules),
        rules.cite("denial"),
        ext_ext.issued_on if ext_ext else (initial.decided_on if initial else None),
    )
    appeal_dl = review_dl = review_ext_dl = legal = None
    if initial is not None and initial.outcome == "denied":
        appeal_dl = Deadline(
            "appeal",
            "Appeal must be filed by",
            appeal_due_on(received_denial_on=initial.claimant_receives_on, rules=rules),
            rules.cite("review"),
            appeal.received_on if appeal else None,
        )
    if appeal is not None:
        review_dl = _period(
            "review",
            "Decision on review due",
            review_due_on(appeal_received_on=appeal.received_on, rules=rules, extended=rev_ext is not None),
            rules.cite("decision_on_review"),
            extension=rev_ext,
            decided_on=review.decided_on if review else None,
            deciding_on=deciding_on if claim.state in AWAITING_REVIEW else None,
        )
        review_ext_dl = Deadline(
            "review_extension_notice",
            "Last day for a review extension notice",
            review_extension_notice_by(appeal_received_on=appeal.received_on, rules=rules),
            rules.cite("decision_on_review"),
            rev_ext.issued_on if rev_ext else (review.decided_on if review else None),
        )
    if review is not None:
        legal = Deadline(
            "legal_action",
            "Legal action may be brought until",
            legal_action_until(final_determination_on=review.decided_on, rules=rules),
            rules.cite("legal_action"),
        )

    nxt: Deadline | None = None
    if claim.state in AWAITING_DECISION:
        nxt = decision
    elif claim.state == State.DENIED:
        nxt = appeal_dl
    elif claim.state in AWAITING_REVIEW:
        nxt = review_dl
    return ClaimDeadlines(decision, extension_notice, appeal_dl, review_dl, review_ext_dl, legal, nxt)


def information_request_pending(*, claim: Claim) -> ClaimExtension | None:
    """The extension of the level now awaiting a decision that asked the claimant for information not yet
    received ((f)(4), (i)(4)); None when there is nothing for the claimant to answer."""
    if claim.state in AWAITING_DECISION:
        level = Level.INITIAL
    elif claim.state in AWAITING_REVIEW:
        level = Level.REVIEW
    else:
        return None
    found = next((e for e in claim.extensions.all() if e.level == level), None)
    return found if found is not None and found.awaiting_information else None


# --- plan sections to quote ---------------------------------------------------------------------------
@dataclass(frozen=True)
class QuotedSection:
    section: PlanSection
    in_force: PlanVersion
    note: str  # set when the text comes from another version than the one in force

    @property
    def citation(self) -> str:
        return self.section.citation


def quoted_section(*, section: PlanSection, in_force: PlanVersion) -> QuotedSection:
    note = ""
    if section.version_id != in_force.pk:
        # Said as the reader needs it (which document the words come from), not how the catalog is kept (issue 11).
        note = f"The text quoted is that of the {section.version.title}."
    return QuotedSection(section, in_force, note)


def section_text(*, plan: Plan, number: str, in_force: PlanVersion) -> QuotedSection | None:
    """The text of a section: from the version in force, else from the latest version of the plan that has it."""
    rows = list(
        PlanSection.objects.filter(version__plan=plan, section=number)
        .select_related("version__plan")
        .order_by("-version__effective_date")
    )
    if not rows:
        return None
    chosen = next((r for r in rows if r.version_id == in_force.pk), rows[0])
    return quoted_section(section=chosen, in_force=in_force)


def claims_article(*, rules: ClaimsRules) -> dict[str, QuotedSection | None]:
    """The plan's own claims sections (filing, denial, review, ...), for quoting in the notices."""
    plan = rules.version.plan
    return {
        role: section_text(plan=plan, number=rules.sections[role], in_force=rules.version)
        for role in SECTION_ROLES
    }


def sections_for_claim(*, claim: Claim) -> list[QuotedSection]:
    """The sections staff may cite as relied on: each section number once, the version in force first."""
    rules = claim_rules(claim=claim)
    rows = (
        PlanSection.objects.filter(version__plan=claim.plan)
        .select_related("version__plan")
        .order_by("sort_key", "-version__effective_date")
    )
    chosen: dict[str, PlanSection] = {}
    for row in rows:
        current = chosen.get(row.section)
        if current is None or (row.version_id == rules.version.pk and current.version_id != rules.version.pk):
            chosen[row.section] = row
    return [quoted_section(section=s, in_force=rules.version) for s in chosen.values()]


def review_procedure_text(*, claim: Claim) -> str:
    """The default (d) of a denial notice: the review procedure and its time limits, from the provision."""
    rules = claim_rules(claim=claim)
    return (
        f"You, or your duly authorized representative, may request a full and fair review of this denial by "
        f"filing a written notice of appeal with the Committee within {rules.appeal_days} days after you receive "
        f"this notice ({rules.cite('review')}). Your appeal must describe the issues and the evidence you deem "
        f"relevant, and you may submit written comments, documents, records and other information; the Committee "
        f"will take into account everything you submit, whether or not it was submitted or considered in the "
        f"initial decision. On request and free of charge you may have reasonable access to, and copies of, all "
        f"documents, records and other information relevant to your claim. If you do not appeal within "
        f"{rules.appeal_days} days, the claim will be deemed abandoned and you may not reassert it. The Committee "
        f"will decide your appeal within {rules.review_days} days after it receives it, or within "
        f"{rules.review_days + rules.review_extension_days} days if special circumstances require an extension "
        f"of which you will be notified in writing before the first {rules.review_days} days end "
        f"({rules.cite('decision_on_review')}). If your claim is denied on review, you have the right to bring a "
        f"civil action under section 502(a) of ERISA; any legal action must be commenced within "
        f"{_years(rules.legal_action_years)} of the final determination ({rules.cite('legal_action')}) and only in "
        f"the {rules.forum} ({rules.cite('forum')})."
    )


def _years(n: int) -> str:
    return "one year" if n == 1 else f"{n} years"


def claim_notices(*, claim: Claim, with_claim_files: bool = True) -> list[Document]:
    """The notices issued on a claim (decisions, extensions) and, by default, the claim files furnished."""
    ids = [d.notice_id for d in claim.decisions.all() if d.notice_id]
    ids += [e.notice_id for e in claim.extensions.all() if e.notice_id]
    if with_claim_files:
        ids += [r.document_id for r in claim.file_requests.all() if r.document_id]
    return list(Document.objects.filter(pk__in=ids).order_by("created_at", "id"))


# --- who sees a claim ---------------------------------------------------------------------------------
def claims_visible_to(*, person: Person) -> QuerySet[Claim]:
    """A portal user's claims: those they made as claimant and those they act in as a representative whose
    authorisation staff verified (29 CFR 2560.503-1(b)(4)); until then the representative sees nothing."""
    return Claim.objects.filter(
        Q(claimant=person) | Q(representative=person, representative_status=RepresentativeStatus.VERIFIED)
    ).select_related("plan")


def representative_filings_awaiting_verification(*, person: Person) -> QuerySet[Claim]:
    """Claims filed by `person` as representative that staff have not verified: only their number and date
    may be shown to them, nothing about the claimant."""
    return Claim.objects.filter(representative=person).exclude(
        representative_status=RepresentativeStatus.VERIFIED
    )


# --- staff queue and reports --------------------------------------------------------------------------
@dataclass(frozen=True)
class QueueRow:
    claim: Claim
    deadline: Deadline | None
    days_left: int | None

    @property
    def awaiting_claimant_since(self) -> dt.date | None:
        return self.deadline.suspended_since if self.deadline is not None else None

    @property
    def urgency(self) -> str:
        if self.days_left is None:
            return ""
        if self.days_left < 0:
            return "overdue"
        if self.days_left <= WARN_DAYS:
            return "close"
        return ""


def open_claims(*, plan: Plan | None = None) -> QuerySet[Claim]:
    """Every open claim, sorted by its next deadline (the earliest first); claims whose period is tolled while
    the claimant's information is awaited have no running deadline and come last."""
    claims = (
        Claim.objects.filter(state__in=OPEN_STATES)
        .select_related("plan", "reviewer", "appeal")
        .prefetch_related("extensions", "decisions")
        .order_by(F("next_deadline_on").asc(nulls_last=True), "received_on", "id")
    )
    return claims.filter(plan=plan) if plan is not None else claims


def queue_rows(*, claims: Iterable[Claim], today: dt.date) -> list[QueueRow]:
    """The queue's rows of these claims (one page of them on the staff page): each with its next deadline. The
    claims of one plan share its Plan and each plan version's rules, so the rows cost the same few queries
    however many claims there are (issue 15)."""
    plans: dict[int, Plan] = {}
    rules: dict[tuple[int, int], ClaimsRules] = {}
    rows = []
    for claim in claims:
        claim.plan = plans.setdefault(claim.plan_id, claim.plan)
        key = (claim.plan_id, claim.plan.version_on(claim.received_on).pk)
        if key not in rules:
            rules[key] = rules_for(plan=claim.plan, on=claim.received_on)
        claim._rules = rules[key]
        nxt = claim_deadlines(claim=claim).next if claim.is_open else None
        rows.append(QueueRow(claim, nxt, nxt.days_left(today) if nxt else None))
    return rows


def claims_queue(*, today: dt.date, plan: Plan | None = None) -> list[QueueRow]:
    """The whole queue of open claims (open_claims), each with its next deadline."""
    return queue_rows(claims=open_claims(plan=plan), today=today)


def claims_of_person(*, employee_number: str, today: dt.date) -> list[QueueRow]:
    """Every claim about or by one person (open or not), newest first: the staff participant page links here."""
    claims = (
        Claim.objects.filter(
            Q(participant__employee_number=employee_number) | Q(claimant__employee_number=employee_number)
        )
        .select_related("plan", "reviewer", "appeal")
        .prefetch_related("extensions", "decisions")
        .order_by("-received_on", "-id")
    )
    rows = []
    for claim in claims:
        nxt = claim_deadlines(claim=claim).next if claim.is_open else None
        rows.append(QueueRow(claim, nxt, nxt.days_left(today) if nxt else None))
    return rows


def claims_by_status_and_plan() -> dict[str, Any]:
    counts = Claim.objects.values("plan__code", "state").annotate(n=Count("id"))
    plans = sorted({c["plan__code"] for c in counts})
    table = {state: {code: 0 for code in plans} for state in State.values}
    for c in counts:
        table[c["state"]][c["plan__code"]] = c["n"]
    rows = [
        (State(state).label, [table[state][code] for code in plans], sum(table[state].values()))
        for state in State.values
        if sum(table[state].values())
    ]
    return {"plans": plans, "rows": rows}


def late_decisions() -> QuerySet[ClaimDecision]:
    return (
        ClaimDecision.objects.filter(late=True)
        .select_related("claim__plan", "decided_by")
        .order_by("-decided_on", "-id")
    )


def average_days_to_decision() -> list[dict[str, object]]:
    return [
        dict(row)
        for row in ClaimDecision.objects.values("claim__plan__code", "level")
        .annotate(n=Count("id"), average=Avg("days_taken"), late=Count("id", filter=Q(late=True)))
        .order_by("claim__plan__code", "level")
    ]
