"""Participant isolation and least privilege, proved by walking every URL of the project.

The walker iterates the URL resolver (get_resolver().url_patterns, recursively), so a page or API
endpoint added later is covered without touching this file, and requests each one:
  (a) anonymously: it must redirect to a login page or answer 401/403 (PUBLIC pages excepted);
  (b) as participant B, with every object kwarg of the URL filled with participant A's object:
      it must answer 401/403/404/405 or a login redirect, or a page that shows nothing of A
      (A's employee number, names, email and street never appear in B's response);
  (c) as a participant on staff pages (and the admin): 403, or the admin's login redirect.
And for every staff endpoint, each staff role without its capability gets 403 (least privilege).

Convention: how the walker knows which model a URL's `pk`/`id`/`code`... kwarg names, in order
  1. the view declares it: `view.access_model = Model` (function views, after the decorators) or an
     `access_model = Model` class attribute;
  2. DRF generic views: their `queryset.model`;
  3. Django admin views: `model_admin.model`;
  4. URL_MODELS below (URL name -> model), for views this file does not own.
A URL with an object kwarg and no model fails the walk, naming the URL. The fixture population
holds an object of participant A for every model; a model the URLs take that the population lacks
fails the walk too, asking for it to be added to `population` below.
Every page must also declare who may see it: a capability (`capability_required`, DRF HasCapability),
participant-only (`participant_required`, DRF IsParticipant), or be listed in PUBLIC / SIGNED_IN.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import deque
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group, User
from django.db import models
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, include, path
from django.urls.converters import IntConverter
from django.utils import timezone
from django.utils.regex_helper import normalize

from core.decorators import participant_required
from core.models import DeliveryChoice, Document, ImportBatch, JobRun, MarketClosure, Notice
from core.permissions import HasCapability, IsParticipant
from core.roles import ROLE_CAPABILITIES, Cap, Role, has_cap
from participants.models import Person
from tests.signin import sign_in

# On one pytest-xdist process (`make check`): the walks share the module's population, some 5 CPU seconds to
# build, which each process that ran one of them would build again.
pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("tests.test_access")]

# Pages anyone may open (signing in, resetting a password, the load balancer's check).
PUBLIC = {
    "healthz",
    "login",
    "logout",
    "password_reset",
    "password_reset_done",
    "password_reset_confirm",
    "password_reset_complete",
    "admin:login",
    "admin:logout",
}
# Pages for any signed-in user that scope what they show by themselves (checked by the walk all the same).
SIGNED_IN = {
    "home",
    "portal_home",
    "document_download",
    "api_schema",
    "api_docs",
    "password_change",
    "password_change_done",
    # the second factor: each shows or changes only the signed-in user's own authenticator and codes
    "signin_overview",
    "signin_verify",
    "signin_enrol",
    "signin_recovery_codes",
    # claims API: one set of endpoints for staff (HasCapability) or the claimant (IsParticipant),
    # the queryset scoped to the caller
    "claims_api:claims",
    "claims_api:claim",
    "claims_api:claim_file",
    "claims_api:appeal",
    "claims_api:information",
}
URL_MODELS = {"document_download": Document, "core:job_progress": JobRun, "core:job_retry": JobRun}
# Every claims page and endpoint that takes `pk` takes a Claim.
URL_MODELS.update(
    {
        f"claims_{section}:{name}": "claims.Claim"
        for section, names in {
            "staff": (
                "detail",
                "assign",
                "start_review",
                "representative",
                "extend",
                "approve",
                "deny",
                "deny_review",
                "close",
                "add_document",
                "record_appeal",
                "appeal_start_review",
                "appeal_extend",
                "appeal_decide",
                "claim_file",
                "upload",
                "information_received",
            ),
            "portal": ("detail", "appeal", "information", "claim_file", "notice", "upload"),
            "api": ("claim", "appeal", "claim_file", "information"),
        }.items()
        for name in names
    }
)
# Records about many participants at once (a payment run): any one will do.
SHARED_MODELS = {
    "payments.PaymentRun",
    "books.ParallelRun",
    "books.ParallelRunDay",
    "books.ParallelRunDifference",
    "books.ParallelRunTolerance",
    "conversion.ConversionRun",
    "conversion.ConversionException",
}
URL_MODELS.update(
    {
        "payments_staff:run": "payments.PaymentRun",
        "payments_staff:run_approve": "payments.PaymentRun",
        "payments_staff:run_csv": "payments.PaymentRun",
        "payments_staff:run_register": "payments.PaymentRun",
        "payments_staff:participant": Person,
    }
)
# URL kwargs that name an object (filled from A's object); any other kwarg is a value (a year, a date).
OBJECT_KWARGS = {"pk", "id", "object_id", "code", "employee_number", "number", "uuid"}
# Values for the other kwargs, by name; else by converter (int: 2024, anything else: "x").
NON_OBJECT = {
    "url": "no-such-page/",
    "uidb64": "MQ",
    "token": "set-password",
    "year": "2024",
    "plan_year": "2024",
    "month": "2024-05",
    "date": "2024-05-31",
    "day": "2024-05-31",
    "on": "2024-05-31",
    "as_of": "2024-05-31",
    "kind": "deferral",
    "name": "liability",  # core:report_file_prepare: a report prepared as a file
}

A = {
    "employee_number": "ZQA-4471",
    "first_name": "Araminta",
    "last_name": "Quillfeather",
    "email": "araminta.quillfeather@example.org",
    "address_line1": "77 Wisteria Lane",
}
A_TAXPAYER_NUMBER = "987654329"  # A's beneficiary's: never on a participant's page
B = {
    "employee_number": "ZQB-5582",
    "first_name": "Bartholomew",
    "last_name": "Ormsby",
    "email": "b.ormsby@example.org",
    "address_line1": "12 Juniper Court",
}


# --- the walker -----------------------------------------------------------------------------------


@dataclass
class Endpoint:
    name: str  # "namespace:name", or the route when unnamed
    namespaces: list[str]
    callback: object
    fmt: str
    params: list[str]
    regex: str
    int_params: set[str] = field(default_factory=set)

    @property
    def view_class(self):
        return getattr(self.callback, "cls", None) or getattr(self.callback, "view_class", None)

    @property
    def is_admin(self) -> bool:
        return bool(self.namespaces) and self.namespaces[0] == "admin"

    @property
    def drf_permissions(self) -> list:
        cls = self.view_class
        return (
            list(getattr(cls, "permission_classes", []))
            if cls is not None and hasattr(cls, "initial")
            else []
        )

    def capability(self, method: str) -> Cap | None | str:
        """The capability the view requires for `method`; "deny" for a DRF capability view without one."""
        if HasCapability in self.drf_permissions:
            attr = "required_capability" if method == "GET" else "write_capability"
            cap = getattr(self.view_class, attr, None)
            return Cap(cap) if cap else "deny"
        cap = getattr(self.callback, "required_capability", None)
        return Cap(cap) if cap else None

    @property
    def is_staff(self) -> bool:
        return self.capability("GET") is not None or any(
            ns == "core" or ns.endswith("_staff") for ns in self.namespaces
        )

    @property
    def is_portal(self) -> bool:
        return (
            IsParticipant in self.drf_permissions
            or getattr(self.callback, "participant_only", False)
            or any(ns.endswith("_portal") for ns in self.namespaces)
        )

    def model(self) -> type[models.Model] | None:
        declared = getattr(self.callback, "access_model", None) or getattr(
            self.view_class, "access_model", None
        )
        if declared is not None:
            return declared
        queryset = getattr(self.view_class, "queryset", None)
        if queryset is not None:
            return queryset.model
        model_admin = getattr(self.callback, "model_admin", None) or getattr(
            getattr(self.callback, "__wrapped__", None), "__self__", None
        )  # a ModelAdmin's own extra views
        if model_admin is not None and hasattr(model_admin, "model"):
            return model_admin.model
        if self.name == "admin:view_on_site":
            return Person
        found = URL_MODELS.get(self.name)
        if isinstance(found, str):
            from django.apps import apps

            return apps.get_model(found)
        return found

    @property
    def object_params(self) -> list[str]:
        return [p for p in self.params if p in OBJECT_KWARGS or p.endswith(("_id", "_pk"))]


def endpoints(patterns=None, pieces=(), namespaces=()) -> list[Endpoint]:
    """Every URL pattern of the urlconf, with its full route as a format string and its kwargs."""
    out: list[Endpoint] = []
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            ns = namespaces + ((entry.namespace,) if entry.namespace else ())
            out += endpoints(entry.url_patterns, pieces + (entry,), ns)
        elif isinstance(entry, URLPattern):
            fmt, params, regex, ints = "", [], "", set()
            for piece in pieces + (entry,):
                f, p = normalize(piece.pattern.regex.pattern)[0]
                fmt, params, regex = fmt + f, params + list(p), regex + piece.pattern.regex.pattern
                ints |= {
                    k
                    for k, c in getattr(piece.pattern, "converters", {}).items()
                    if isinstance(c, IntConverter)
                }
            name = ":".join(namespaces + (entry.name,)) if entry.name else "/" + fmt
            out.append(Endpoint(name, list(namespaces), entry.callback, "/" + fmt, params, regex, ints))
    return out


def _path_to_owner(model: type[models.Model]) -> str | None:
    """The shortest lookup from `model` to a Person or User (e.g. 'account__participation__person')."""
    if model in (Person, User):
        return ""
    # A path to the Person the record is about wins over one to the User who acted on it
    # (a claim decision belongs to the claimant, not to the delegate who decided it).
    seen, queue = {model}, deque([(model, "")])
    user_path = None
    while queue:
        current, prefix = queue.popleft()
        for f in current._meta.get_fields():
            if not f.is_relation or f.auto_created or not (f.many_to_one or f.one_to_one or f.many_to_many):
                continue
            if f.name.startswith("history_"):
                continue
            target, lookup = f.related_model, prefix + f.name
            if target is Person:
                return lookup
            if target is User:
                # only a person's own login says whose record it is; recorded_by/decided_by name an actor
                if f.name == "user":
                    user_path = user_path or lookup
                continue
            if target not in seen and lookup.count("__") < 4:
                seen.add(target)
                queue.append((target, lookup + "__"))
    return user_path


def _lookup_target(model: type[models.Model], lookup: str) -> type[models.Model]:
    """The model a lookup path like 'claim__claimant' ends on."""
    current = model
    for name in lookup.split("__"):
        current = current._meta.get_field(name).related_model
    return current


@dataclass
class Population:
    a: Person
    b: Person
    strings_a: list[str] = field(default_factory=list)

    def object_of_a(self, model: type[models.Model]):
        lookup = None if model._meta.label in SHARED_MODELS else _path_to_owner(model)
        if lookup == "":
            return self.a if model is Person else self.a.user
        if lookup is None:  # shared data (a plan, a fund, a job run): any one will do
            return model._default_manager.order_by("pk").first()
        owner = self.a.user if _lookup_target(model, lookup) is User else self.a
        return model._default_manager.filter(**{lookup: owner}).order_by("pk").first()

    def leaks(self, response) -> list[str]:
        body = response.content.decode(errors="replace") if hasattr(response, "content") else ""
        return [s for s in self.strings_a if s in body]


class Unfillable(Exception):
    pass


def fill(ep: Endpoint, population: Population) -> str:
    values: dict[str, str] = {}
    model = ep.model()
    if ep.object_params and model is None:
        raise Unfillable(
            f"{ep.name} ({ep.fmt}) takes {', '.join(ep.object_params)} but names no model: give the view "
            f"an access_model attribute (see the top of tests/test_access.py)"
        )
    obj = population.object_of_a(model) if model is not None and ep.object_params else None
    if ep.object_params and obj is None:
        whose = "of participant A's" if _path_to_owner(model) is not None else "at all (it is shared data)"
        raise Unfillable(
            f"{ep.name} takes a {model.__name__} but the population has none {whose}: add one to the "
            f"`population` fixture in tests/test_access.py"
        )
    for param in ep.params:
        if param == "app_label":
            labels = re.search(r"\(\?P<app_label>([^)]*)\)", ep.regex)
            values[param] = (
                labels.group(1).split("|")[0] if labels else (model._meta.app_label if model else "auth")
            )
        elif param == "content_type_id":
            from django.contrib.contenttypes.models import ContentType

            values[param] = str(ContentType.objects.get_for_model(model).pk)
        elif param in ("version_id", "history_id"):
            history = getattr(obj, "history", None)
            if history is None or not history.exists():
                raise Unfillable(f"{ep.name} takes {param} but A's {model.__name__} has no history")
            values[param] = str(history.order_by("-history_id").first().history_id)
        elif param in ("pk", "id", "object_id") or param.endswith(("_id", "_pk")):
            values[param] = str(obj.pk)
        elif obj is not None and hasattr(obj, param):
            values[param] = str(getattr(obj, param))
        elif param in ep.object_params:
            raise Unfillable(f"{ep.name}: {model.__name__} has no {param!r} to fill the URL with")
        else:
            values[param] = NON_OBJECT.get(param, "2024" if param in ep.int_params else "x")
    return ep.fmt % values


def _login_redirect(response) -> bool:
    return response.status_code in (301, 302, 303, 307, 308) and "login" in response.headers.get(
        "Location", ""
    )


def _request(client: Client, method: str, url: str):
    try:
        return getattr(client, method.lower())(url, {}), None
    except Exception as exc:  # a crash is a finding too, not a reason to stop the walk
        return None, f"{method} {url} raised {type(exc).__name__}: {exc}"


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        sign_in(client, user)
    return client


def staff_user(role: Role) -> User:
    user, created = User.objects.get_or_create(username=f"walker-{role.value}")
    if created:
        user.groups.add(Group.objects.get(name=role.value))
    return user


def access_problems(population: Population, *, only: str = "") -> list[str]:
    """Everything the walk finds wrong; empty when every page and endpoint keeps participants apart. With `only`,
    just the endpoints whose name contains it (the walker's self-test walks its broken views alone)."""
    problems: list[str] = []
    anonymous, other = client_for(None), client_for(population.b.user)
    for ep in endpoints():
        if only not in ep.name:
            continue
        try:
            url = fill(ep, population)
        except Unfillable as exc:
            problems.append(str(exc))
            continue
        public = ep.name in PUBLIC
        for method in ("GET", "POST"):
            if not public:
                response, crash = _request(anonymous, method, url)
                if crash:
                    problems.append(f"anonymous: {crash}")
                elif not (_login_redirect(response) or response.status_code in (401, 403, 405)):
                    problems.append(
                        f"anonymous {method} {url} ({ep.name}) answered {response.status_code}, "
                        f"not a login redirect or 401/403"
                    )
            if public and method == "POST":
                continue
            response, crash = _request(other, method, url)
            if crash:
                problems.append(f"participant B: {crash}")
                continue
            leaked = population.leaks(response)
            if leaked:
                problems.append(
                    f"participant B {method} {url} ({ep.name}) sees participant A's data: {leaked}"
                )
            if (ep.is_staff or ep.is_admin) and not public:
                if not (
                    response.status_code in (403, 404, 405) or (ep.is_admin and _login_redirect(response))
                ):
                    problems.append(
                        f"participant B {method} {url} is a staff page ({ep.name}) and answered neither 403 nor 404 but "
                        f"{response.status_code}, not 403"
                    )
            elif (
                ep.object_params
                and response.status_code in (301, 302, 303, 307, 308)
                and not _login_redirect(response)
            ):
                problems.append(
                    f"participant B {method} {url} on participant A's object ({ep.name}) was redirected to "
                    f"{response.headers.get('Location')}: a participant must get 404 for another's object"
                )
    return problems


def privilege_problems(population: Population) -> list[str]:
    """Staff endpoints: every role without the capability gets 403; with it (reads), it gets in.

    That a holder gets in is asked of one holder per page, the one with the fewest capabilities (the auditor for
    a VIEW_STAFF page): the check is the same capability for every holder, and rendering each page once per
    role cost a minute of the fast tier. Every role that lacks the capability is still sent, GET and POST."""
    problems: list[str] = []
    fewest_first = (Role.AUDITOR, Role.COMMITTEE, Role.ADMINISTRATOR)
    assert sorted(fewest_first, key=lambda r: len(ROLE_CAPABILITIES[r])) == list(fewest_first)
    clients = {role: client_for(staff_user(role)) for role in fewest_first}
    for ep in endpoints():
        if ep.is_admin or not ep.is_staff:
            continue
        url = fill(ep, population)
        entered: set[str] = set()
        for role, client in clients.items():
            for method in ("GET", "POST"):
                cap = ep.capability(method)
                allowed = cap is not None and cap != "deny" and cap in ROLE_CAPABILITIES[role]
                if method == "POST" and allowed:
                    continue  # a write by a role allowed to make it is not this walk's business
                if allowed and method in entered:
                    continue  # a holder with fewer capabilities already got in
                if allowed:
                    entered.add(method)
                response, crash = _request(client, method, url)
                if crash:
                    problems.append(f"{role.value}: {crash}")
                elif allowed and response.status_code == 403:
                    problems.append(f"{role.value} holds {cap} but {method} {url} ({ep.name}) answered 403")
                elif not allowed and cap is not None and response.status_code not in (403, 405):
                    problems.append(
                        f"{role.value} lacks {cap} but {method} {url} ({ep.name}) answered "
                        f"{response.status_code}, not 403"
                    )
    return problems


# --- the population ---------------------------------------------------------------------------------


def _participant(data: dict) -> Person:
    from tests.factories import PersonFactory

    user = User.objects.create_user(data["employee_number"].lower())
    user.groups.add(Group.objects.get(name=Role.PARTICIPANT.value))
    return PersonFactory(user=user, **data)


def _beat_schedules() -> None:
    from django_celery_beat import models as beat

    every = beat.IntervalSchedule.objects.create(every=1, period="days")
    beat.CrontabSchedule.objects.create(minute="0", hour="18")
    beat.SolarSchedule.objects.create(event="sunset", latitude=Decimal("37.54"), longitude=Decimal("-77.43"))
    beat.ClockedSchedule.objects.create(clocked_time=timezone.now())
    beat.PeriodicTask.objects.create(name="walker", task="books.credit_due_dates", interval=every)


@pytest.fixture(scope="module")
def population(django_db_setup, django_db_blocker, tmp_path_factory):
    """The population, built once for the module (not once per walk) in a transaction that is rolled back when
    the module ends (`replayed_once`, tests/payments/factories.py): each test runs in a savepoint of it, so what
    one walk writes (the auditor's POSTs, sign-in sessions) is undone before the next. Its documents are written
    to a folder of the module's, MEDIA_ROOT while the module runs."""
    from django.conf import settings

    from tests.payments.factories import replayed_once

    media, saved = tmp_path_factory.mktemp("walker-media"), settings.MEDIA_ROOT
    settings.MEDIA_ROOT = str(media)
    built: list[Population] = []
    try:
        with replayed_once(django_db_blocker, lambda: built.append(_population(media))):
            yield built[0]
    finally:
        settings.MEDIA_ROOT = saved


def _population(tmp_path) -> Population:
    """Participants A and B with an object of every kind a URL may take: accounts credited by the real
    crediting job, payroll through pay_record, elections, beneficiaries, events, a document."""
    from books.models import Account, Forfeiture, PendingTransaction, Source
    from books.services.accounts import credit_create, pending_create
    from books.services.crediting import credit_valuation_date
    from books.services.payroll import pay_record
    from core.imports import import_file
    from elections import models as el
    from participants.models import KeyEmployeeList, Participation, VestingServiceCredit
    from participants.services import beneficiaries_designate, employment_event_record
    from plans.models import Plan
    from tests.factories import FundFactory, price
    from tests.statements.factories import statement_for

    edcp = Plan.objects.get(code="EDCP")
    now = timezone.now()
    a, b = _participant(A), _participant(B)
    sv = FundFactory(plan=edcp, code="WSV", is_default=True)
    eq = FundFactory(plan=edcp, code="WEQ")
    for day, value in ((dt.date(2024, 5, 30), "10.00"), (dt.date(2024, 5, 31), "10.50")):
        price(sv, day, value)
        price(eq, day, value)
    MarketClosure.objects.create(date=dt.date(2024, 7, 5), reason="walker")
    _beat_schedules()
    # Sign-in records: A's authenticator and recovery codes, a lockout and a failure log entry.
    from axes.models import AccessAttempt, AccessFailureLog

    from core.signin.services import recovery_codes_issue
    from tests.signin import authenticator_of

    authenticator_of(a.user)
    recovery_codes_issue(user=a.user, now=now)
    AccessAttempt.objects.create(
        username="walker-intruder",
        ip_address="192.0.2.1",
        user_agent="t",
        failures_since_start=9,
        attempt_time=now,
    )
    AccessFailureLog.objects.create(
        username="walker-intruder", ip_address="192.0.2.1", user_agent="t", locked_out=True, attempt_time=now
    )
    for person in (a, b):
        participation = Participation.objects.create(person=person, plan=edcp, entered_on=dt.date(2011, 1, 1))
        election = el.DeferralElection.objects.create(
            participation=participation,
            plan_year=2024,
            submitted_at=now,
            status=el.Status.ACCEPTED,
            channel=el.Channel.STAFF,
            actor="t",
        )
        el.DeferralElectionLine.objects.create(
            election=election, component="base_salary", percent=Decimal("10")
        )
        el.DeferralAllocation.objects.create(
            election=election, account_kind="retirement_termination", percent=100
        )
        el.DistributionElection.objects.create(
            participation=participation,
            submitted_at=now,
            status=el.Status.ACCEPTED,
            channel=el.Channel.STAFF,
            actor="t",
            account_kind="retirement_termination",
            form="lump_sum",
        )
        el.ScheduleChange.objects.create(
            participation=participation,
            submitted_at=now,
            status=el.Status.REJECTED,
            channel=el.Channel.STAFF,
            actor="t",
            account_kind="retirement_termination",
        )
        investment = el.InvestmentElection.objects.create(
            participation=participation,
            submitted_at=now,
            status=el.Status.ACCEPTED,
            channel=el.Channel.STAFF,
            actor="t",
        )
        el.InvestmentElectionLine.objects.create(election=investment, fund=sv, percent=100)
        el.DeferralCancellation.objects.create(
            participation=participation,
            starts_on=dt.date(2030, 1, 1),
            ends_on=dt.date(2030, 6, 30),
            reason="walker",
            cite="EDCP 3.7",
            decided_by="t",
            decided_at=now,
        )
        pay_record(
            person=person,
            pay_date=dt.date(2024, 5, 30),
            component="base_salary",
            gross=Decimal("5000.00"),
            actor="t",
        )
        credit_create(
            participation=participation,
            account_name="company_contribution",
            source=Source.COMPANY_MATCHING,
            amount=Decimal("100.00"),
            effective_date=dt.date(2024, 5, 30),
            idempotency_key=f"w:{person.pk}",
            actor="t",
        )
        beneficiaries_designate(
            person=person,
            plan=edcp,
            actor="t",
            beneficiaries=[{"tier": "primary", "name": f"Heir of {person.last_name}", "percent": 100}],
        )
        employment_event_record(
            person=person, kind="disability", effective_date=dt.date(2024, 6, 1), actor="t"
        )
        VestingServiceCredit.objects.create(person=person, through_year=2023, years=10)
        statement_for(participation)  # a quarterly statement (statements app): its PDF names the person
        path_ = tmp_path / f"doc-{person.pk}.pdf"
        path_.write_bytes(b"%PDF-1.4 walker")
        Document.objects.create(
            kind="statement",
            title=f"Statement of {person.full_name}",
            person=person,
            path=path_.name,
            sha256="0" * 64,
            size=15,
            template="t",
            created_at=now,
            created_by="t",
        )
        # a notice to each (core.notices; paper: it is in the print queue too), and a delivery choice
        Notice.objects.create(
            kind="statement_available",
            key=f"walker:{person.pk}",
            person=person,
            channel="paper",
            status="queued",
            subject=f"A notice for {person.full_name} at {person.address_line1}",
            queued_on=dt.date(2024, 5, 31),
            created_at=now,
            actor="t",
        )
        DeliveryChoice.objects.create(person=person, delivery="paper", chosen_at=now, actor="t")
    credit_valuation_date(valuation_date=dt.date(2024, 5, 30))
    credit_valuation_date(valuation_date=dt.date(2024, 5, 31))
    for person in (a, b):
        account = Account.objects.filter(participation__person=person).order_by("pk").first()
        pending, _ = pending_create(
            account=account,
            kind="forfeiture",
            source=Source.FORFEITURE,
            amount=Decimal("-1.00"),
            effective_date=dt.date(2030, 1, 2),
            idempotency_key=f"wf:{person.pk}",
            actor="t",
        )
        Forfeiture.objects.create(
            account=account,
            on=dt.date(2030, 1, 2),
            percent_vested=Decimal("0"),
            amount=Decimal("1.00"),
            pending=pending,
            cite="EDCP 4.2",
        )
    KeyEmployeeList.objects.create(identification_year=2023, recorded_at=now, recorded_by="t").members.set(
        [a]
    )
    _claims_of(a, b)
    from books.models import ContributionDeclaration, DefinedBenefitRecord
    from participants.services import change_in_control_record

    change_in_control_record(effective_date=dt.date(2030, 1, 2), actor="t", now=now)
    from elections.models import AnnuityElection
    from elections.services import eligibility_notice_send
    from payments.models import DomesticRelationsOrder, EmergencyWithdrawal, PaymentRun, ScheduledPayment
    from tests.claims.factories import user_in as _user_in

    PaymentRun.objects.create(
        period_end=dt.date(2024, 7, 31),
        prepared_by=_user_in("administrator", "walker-preparer"),
        prepared_at=now,
    )
    from books.models import ParallelRun, ParallelRunDay, ParallelRunDifference, ParallelRunTolerance

    parallel = ParallelRun.objects.create(  # a kept comparison of the parallel run (staff data, shared)
        file_name="walker.csv",
        sha256="0" * 64,
        rows=1,
        first_date=dt.date(2024, 7, 1),
        last_date=dt.date(2024, 7, 1),
        tolerance=Decimal("0.01"),
        run_by="walker",
        run_at=now,
    )
    ParallelRunDay.objects.create(run=parallel, valuation_date=dt.date(2024, 7, 1), credited_here=False)
    ParallelRunDifference.objects.create(
        run=parallel,
        valuation_date=dt.date(2024, 7, 1),
        kind="missing_here",
        employee_number="WALKER-PR",
        plan_code="EDCP",
        account="retirement_termination",
        fund_code="WSV",
    )
    ParallelRunTolerance.objects.create(amount=Decimal("0.01"), set_by="walker", set_at=now)
    from conversion.models import ConversionException, ConversionRun

    conversion = ConversionRun.objects.create(  # a dry run of a package (staff data, shared)
        package_id="WALKER-PKG",
        folder=str(tmp_path / "no-package"),
        dry_run=True,
        status=ConversionRun.Status.REFUSED,
        exception_count=1,
        actor="walker",
        started_at=now,
        finished_at=now,
    )
    ConversionException.objects.create(
        run=conversion, file="package.csv", line=2, code="value_invalid", message="walker"
    )
    from plans.models import Plan, PlanSetting

    PlanSetting.objects.create(  # a dated committee contact, for its admin pages
        plan=Plan.objects.get(code="EDCP"),
        key="committee_contact",
        effective_date=dt.date(2024, 1, 1),
        value={"name": "Walker Committee", "address": ["1 Walk St"], "email": "walk@example.com"},
        recorded_by="walker",
        recorded_at=now,
    )
    from pensions.services.benefit import pension_figures_record
    from plans.models import Plan

    for person in (
        a,
        b,
    ):  # a BRP benefit of each: the separation below fixes it and schedules its monthly payments
        brp = Participation.objects.create(
            person=person, plan=Plan.objects.get(code="BRP"), entered_on=dt.date(2002, 1, 1)
        )
        pension_figures_record(
            participation=brp,
            as_of=dt.date(2024, 1, 1),
            actor="t",
            now=now,
            unlimited_annual_benefit=Decimal("90000.00"),
            payable_annual_benefit=Decimal("60000.00"),
            benefit_service_years=Decimal("20"),
            early_retirement_date=dt.date(2020, 1, 1),
            normal_retirement_date=dt.date(2030, 1, 1),
        )
        from pensions.services.orders import benefit_order_record

        benefit_order_record(  # BRP 6.7: an order against each benefit
            participation=brp,
            alternate_payee=f"Ex of {person.last_name}",
            received_on=dt.date(2024, 2, 1),
            percent=Decimal("10"),
            actor="t",
            now=now,
        )
    for person in (a, b):
        part = Participation.objects.get(person=person, plan=edcp)
        employment_event_record(
            person=person,
            kind="separation",
            effective_date=dt.date(2024, 6, 3),
            reason="resignation",
            actor="t",
        )
        assert ScheduledPayment.objects.filter(participation=part).exists()
        EmergencyWithdrawal.objects.create(
            participation=part,
            requested_amount=Decimal("10.00"),
            requested_on=dt.date(2024, 5, 31),
            recorded_by="t",
            recorded_at=now,
        )
        DomesticRelationsOrder.objects.create(
            participation=part,
            alternate_payee=f"Ex of {person.last_name}",
            order_date=dt.date(2024, 5, 31),
            percent=10,
            total=Decimal("1.00"),
            cite="EDCP 5.9",
            recorded_by="t",
            recorded_at=now,
        )
        eligibility_notice_send(participation=part, notice_on=dt.date(2024, 5, 1), actor="t", now=now)
        AnnuityElection.objects.create(
            participation=part,
            submitted_at=now,
            status="accepted",
            channel="staff",
            actor="t",
            form="single_life",
        )
    ContributionDeclaration.objects.create(
        plan=edcp, plan_year=2023, percent=Decimal("1"), declared_on=dt.date(2024, 1, 31), declared_by="t"
    )
    for person in (a, b):
        DefinedBenefitRecord.objects.create(
            participation=Participation.objects.get(person=person, plan=edcp),
            as_of=dt.date(2024, 1, 1),
            unlimited_annual_benefit=Decimal("1000"),
            payable_annual_benefit=Decimal("500"),
            benefit_service_years=Decimal("20"),
            normal_retirement_date=dt.date(2030, 1, 1),
        )
    import_file(
        kind=ImportBatch.Kind.PRICES,
        file_name="walker.csv",
        content=b"fund,date,price\nWSV,2024-06-03,11\n",
        actor="t",
        now=now,
    )
    from payments.models import Annuity

    assert Annuity.objects.filter(participation__person=a, status=Annuity.Status.IN_PAY).exists()
    # FICA wages of both (the portal's Tax section) and A's beneficiary's taxpayer number (the 1099-MISC file only)
    from participants.models import Beneficiary
    from participants.services import beneficiary_tax_info_record
    from taxes.services.fica import fica_wages_record

    fica_wages_record(through=dt.date(2024, 12, 31), now=now)
    beneficiary_tax_info_record(
        beneficiary=Beneficiary.objects.filter(designation__person=a).first(),
        taxpayer_number=A_TAXPAYER_NUMBER,
        address_line1="9 Heron Row",
        city="Richmond",
        state="VA",
        postal_code="23219",
        actor="t",
        now=now,
    )
    assert PendingTransaction.objects.filter(account__participation__person=a).exists()
    return Population(a=a, b=b, strings_a=[*A.values(), A_TAXPAYER_NUMBER])


def _claims_of(*people: Person) -> None:
    """A claim of each participant with every kind of claim object: upload, extension, denial, appeal, file request."""
    from claims.services import appeal_file, claim_extend, claim_file_request
    from tests.claims.factories import at, deny, file_claim, upload, user_in

    delegate = user_in("administrator", "walker-delegate")
    for person in people:
        claim = file_claim(person, now=at(2025, 1, 10), files=[upload()])
        claim_extend(
            claim=claim,
            special_circumstances="Records from the recordkeeper are needed.",
            expected_on=dt.date(2025, 6, 1),
            now=at(2025, 3, 1),
            actor=delegate,
        )
        deny(claim, now=at(2025, 4, 1), actor=delegate)
        appeal_file(
            claim=claim, issues="The contribution is missing.", now=at(2025, 4, 15), actor=person.user
        )
        claim_file_request(claim=claim, now=at(2025, 4, 16), actor=person.user)


# --- the tests ------------------------------------------------------------------------------------


def test_no_page_or_endpoint_shows_one_participant_anything_of_another(population):
    problems = access_problems(population)
    assert problems == [], "\n".join(problems)


def test_staff_roles_get_only_what_their_capabilities_allow(population):
    problems = privilege_problems(population)
    assert problems == [], "\n".join(problems)


def test_every_page_declares_who_may_see_it(db):
    undeclared = [
        f"{ep.name} ({ep.fmt})"
        for ep in endpoints()
        if not (ep.is_admin or ep.is_staff or ep.is_portal or ep.name in PUBLIC | SIGNED_IN)
    ]
    assert undeclared == [], (
        "these views declare neither a capability nor participant-only access: " + ", ".join(undeclared)
    )


def test_the_walker_covers_the_api_and_the_staff_pages(db):
    names = {ep.name for ep in endpoints()}
    for expected in (
        "books_api:my_account",
        "books_api:account_entries",
        "plans_api:prices_imports",
        "participants_api:person",
        "core:imports",
        "core:import_detail",
        "conversion_staff:run_exceptions",
        "api_docs",
    ):
        assert expected in names


def test_the_walker_sees_what_the_owner_and_staff_see(population):
    """A control: the strings the walk looks for do appear where A, or staff, may read them."""
    from books.models import Account

    account = Account.objects.filter(participation__person=population.a).first()
    own = client_for(population.a.user).get(f"/api/books/me/accounts/{account.pk}/")
    assert own.status_code == 200 and population.leaks(own) == [A["employee_number"]]
    staff = client_for(staff_user(Role.AUDITOR)).get(f"/api/participants/people/{population.a.pk}/")
    assert set(population.leaks(staff)) == set(A.values())
    other = client_for(population.b.user).get(f"/api/books/me/accounts/{account.pk}/")
    assert other.status_code == 404


def test_an_auditor_cannot_import_and_an_administrator_cannot_approve_payments(population):
    assert not has_cap(staff_user(Role.AUDITOR), Cap.IMPORT_DATA)
    assert not has_cap(staff_user(Role.ADMINISTRATOR), Cap.APPROVE_PAYMENTS)
    assert not has_cap(staff_user(Role.COMMITTEE), Cap.PREPARE_PAYMENTS)
    auditor = client_for(staff_user(Role.AUDITOR))
    for ep in endpoints():
        if ep.capability("POST") == Cap.IMPORT_DATA:
            assert auditor.post(fill(ep, population), {}).status_code == 403, ep.name
    administrator = client_for(staff_user(Role.ADMINISTRATOR))
    approvals = [
        ep for ep in endpoints() if Cap.APPROVE_PAYMENTS in (ep.capability("GET"), ep.capability("POST"))
    ]
    for ep in approvals:
        assert administrator.post(fill(ep, population), {}).status_code == 403, ep.name


def test_the_auditor_can_only_read(population):
    """Issue 12, finding 10: an auditor POSTing to every page and endpoint stores no document and leaves no
    audit event (the BRP statement and the run register were created before)."""
    from core.models import AuditEvent

    auditor_user = staff_user(Role.AUDITOR)
    auditor = client_for(auditor_user)
    writers = []
    for ep in endpoints():
        # document_download only reads (the population's documents carry a placeholder hash it refuses to serve)
        if ep.is_admin or ep.name in PUBLIC or ep.name == "document_download":
            continue
        if ep.name.startswith(
            ("signin_", "password_")
        ):  # their own sign-in (recovery codes...): not plan records
            continue
        try:
            url = fill(ep, population)
        except Unfillable:
            continue
        before = (Document.objects.count(), AuditEvent.objects.count())
        response, crash = _request(auditor, "POST", url)
        assert crash is None, crash
        if (Document.objects.count(), AuditEvent.objects.count()) != before:
            writers.append(f"{ep.name} answered {response.status_code}")
    assert writers == []
    for name in ("payments_staff:run_register", "pensions_staff:brp_statement"):
        ep = next(e for e in endpoints() if e.name == name)
        assert auditor.post(fill(ep, population), {}).status_code == 403, name
    assert not has_cap(auditor_user, Cap.ISSUE_DOCUMENTS)


# --- the walker's own test: it must catch a leaky view ---------------------------------------------


@participant_required
def _leaky_person_page(request, pk: int):
    """A portal page that forgets to scope its query to request.user.person."""
    person = Person.objects.get(pk=pk)
    return HttpResponse(f"{person.full_name} {person.employee_number}")


_leaky_person_page.access_model = Person


def _unprotected_staff_page(request):
    """A staff page with no capability_required."""
    return HttpResponse(", ".join(Person.objects.values_list("last_name", flat=True)))


@participant_required
def _leaky_year_page(request, year: int):
    """A portal page by year that lists everyone's names instead of the participant's own."""
    return HttpResponse(f"{year}: " + ", ".join(Person.objects.values_list("first_name", flat=True)))


class LeakyUrls:
    """The project's URLs plus two deliberately broken views (used only by the self-test)."""

    @property
    def urlpatterns(self):
        from config.urls import urlpatterns

        return urlpatterns + [
            path(
                "portal/leaky/",
                include(
                    (
                        [
                            path("<int:pk>/", _leaky_person_page, name="person"),
                            path("year/<int:year>/", _leaky_year_page, name="year"),
                        ],
                        "leaky_portal",
                    )
                ),
            ),
            path(
                "staff/leaky/", include(([path("", _unprotected_staff_page, name="people")], "leaky_staff"))
            ),
            path("api/leaky/", include(([path("", _unprotected_staff_page, name="people")], "leaky_api"))),
        ]


def test_the_walker_catches_a_leaky_portal_page_and_an_unprotected_staff_page(population, settings):
    settings.ROOT_URLCONF = LeakyUrls()
    # Only the broken views: that the project's own pages find nothing is test_no_page_or_endpoint_shows_one_
    # participant_anything_of_another, the same walk (walking them here again took a minute of the fast tier).
    problems = access_problems(population, only="leaky")
    pk = population.a.pk
    assert any(
        p.startswith(f"participant B GET /portal/leaky/{pk}/ (leaky_portal:person) sees participant A's data")
        for p in problems
    ), problems
    assert any(
        p.startswith(
            "participant B GET /portal/leaky/year/2024/ (leaky_portal:year) sees participant A's data"
        )
        for p in problems
    ), problems
    # /api/ is outside the sign-in middleware, so there the anonymous check is the one that must catch it.
    assert any(p.startswith("anonymous GET /api/leaky/ (leaky_api:people) answered 200") for p in problems), (
        problems
    )
    assert any(
        p.startswith(
            "participant B GET /staff/leaky/ is a staff page (leaky_staff:people) and answered neither 403 nor 404 but 200"
        )
        for p in problems
    )
    assert [
        ep.name for ep in endpoints() if "leaky" in ep.name and not (ep.is_portal or ep.capability("GET"))
    ] == ["leaky_staff:people", "leaky_api:people"]  # neither declares who may see it
    assert all("/leaky/" in p for p in problems), problems
