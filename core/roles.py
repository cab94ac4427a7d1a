"""Roles and what each may do. Deny by default: a capability not listed here is refused.

Least privilege: administrators prepare payment runs, committee members approve them, so the
person who prepares a run is never the one who releases it; auditors only read.
"""

from __future__ import annotations

from enum import StrEnum

from django.contrib.auth.models import Group


class Role(StrEnum):
    COMMITTEE = "committee"
    ADMINISTRATOR = "administrator"
    AUDITOR = "auditor"
    PARTICIPANT = "participant"


class Cap(StrEnum):
    VIEW_STAFF = "view_staff"  # staff pages and reads of every participant's records
    IMPORT_DATA = "import_data"  # participants, prices, payroll
    RUN_JOBS = "run_jobs"  # start crediting, payment jobs
    MANAGE_PLANS = "manage_plans"  # catalog, funds, windows
    MAINTAIN_TABLES = "maintain_tables"  # dated figures, rates, key employee lists, closures
    DECLARE_CONTRIBUTIONS = "declare_contributions"  # RRP 3.02, EDCP 4.1
    RECORD_EVENTS = "record_events"  # separations, deaths, elections on paper
    PREPARE_PAYMENTS = "prepare_payments"
    APPROVE_PAYMENTS = "approve_payments"
    APPROVE_EMERGENCY = "approve_emergency"
    DECIDE_CLAIMS = "decide_claims"  # the Committee's delegate: initial decisions
    DECIDE_APPEALS = "decide_appeals"  # the Committee: decisions on review
    UNLOCK_ACCOUNTS = "unlock_accounts"  # lift a sign-in lockout (django-axes)
    ISSUE_DOCUMENTS = "issue_documents"  # store a document (BRP statement, run register): never the auditor
    DIRECT_DISTRIBUTIONS = "direct_distributions"  # the Company's discretionary cash-out (BRP App. A 4)
    PRINT_NOTICES = "print_notices"  # the paper notices' print queue: download the day's PDF, mark it printed
    TAX_FILES = "tax_files"  # take the FICA feed and the year-end files for payroll
    VIEW_TAX_IDS = "view_tax_ids"  # beneficiaries' taxpayer numbers and addresses (the 1099-MISC file only)


ROLE_CAPABILITIES: dict[Role, frozenset[Cap]] = {
    Role.COMMITTEE: frozenset(
        {
            Cap.VIEW_STAFF,
            Cap.MANAGE_PLANS,
            Cap.MAINTAIN_TABLES,
            Cap.DECLARE_CONTRIBUTIONS,
            Cap.APPROVE_PAYMENTS,
            Cap.APPROVE_EMERGENCY,
            Cap.DECIDE_APPEALS,
            Cap.UNLOCK_ACCOUNTS,
            Cap.ISSUE_DOCUMENTS,
            Cap.DIRECT_DISTRIBUTIONS,
        }
    ),
    Role.ADMINISTRATOR: frozenset(
        {
            Cap.VIEW_STAFF,
            Cap.IMPORT_DATA,
            Cap.RUN_JOBS,
            Cap.RECORD_EVENTS,
            Cap.PREPARE_PAYMENTS,
            Cap.DECIDE_CLAIMS,
            Cap.MAINTAIN_TABLES,
            Cap.UNLOCK_ACCOUNTS,
            Cap.ISSUE_DOCUMENTS,
            Cap.PRINT_NOTICES,
            Cap.TAX_FILES,
            Cap.VIEW_TAX_IDS,
        }
    ),
    Role.AUDITOR: frozenset({Cap.VIEW_STAFF}),
    Role.PARTICIPANT: frozenset(),
}


def roles_of(user) -> set[Role]:
    if user is None or not user.is_authenticated or not user.is_active:
        return set()
    cached = getattr(user, "_nqdc_roles", None)
    if cached is None:
        names = set(user.groups.values_list("name", flat=True))
        cached = {r for r in Role if r.value in names}
        user._nqdc_roles = cached
    return cached


def capabilities_of(user) -> frozenset[Cap]:
    caps: set[Cap] = set()
    for role in roles_of(user):
        caps |= ROLE_CAPABILITIES[role]
    return frozenset(caps)


def has_cap(user, cap: Cap) -> bool:
    return cap in capabilities_of(user)


def is_staff_user(user) -> bool:
    return has_cap(user, Cap.VIEW_STAFF)


def is_participant_user(user) -> bool:
    return Role.PARTICIPANT in roles_of(user) and getattr(user, "person", None) is not None


def role_groups_ensure() -> None:
    """The auth groups that carry the roles (also created by core's migration 0003)."""
    for role in Role:
        Group.objects.get_or_create(name=role.value)
