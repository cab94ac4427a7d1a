"""The BRP benefit statement a committee signs: the quote, every form side by side, the provisions it rests on.

Everything comes from the quote (computed for a stated date, never the clock), so rendering again on the
same data gives the same bytes.
"""

from __future__ import annotations

from elections.pdf import version_label
from elections.selectors import provision_quotes
from pensions.services.benefit import BenefitQuote

TEMPLATE = "pensions/pdf/quote.html"


def _day(d) -> str:
    return f"{d:%B} {d.day}, {d.year}" if d else ""


def quote_context(quote: BenefitQuote, *, as_of) -> dict:

    participation = quote.participation
    person = participation.person
    version = participation.plan.version_on(quote.separation_date)
    cited = (
        [quote.cites.get(k) for k in ("eligibility", "benefit")]
        + [s[2] for s in quote.steps]
        + [quote.cites.get(k) for k in ("maximum", "commencement", "forms", "change", "key_delay", "basis")]
    )
    sections = []
    for citation in cited:
        base = (citation or "").split("(")[0].split(",")[0].strip()
        if base and base not in sections:
            sections.append(base)
    members = version.provision("committee_min_members", 3)
    return {
        "title": f"Supplemental Benefit estimate, {quote.separation_date:%Y-%m-%d}",
        "plan_name": version.plan.name,
        "sponsor": version.plan.sponsor,
        "version_title": version_label(version),
        "quote": quote,
        "person": person,
        "as_of": _day(as_of),
        "separation": _day(quote.separation_date),
        "commencement": _day(quote.commencement_date),
        "first_payment": _day(quote.first_payment_date),
        "reference": f"brp-{participation.pk}-{quote.separation_date:%Y%m%d}",
        "quotes": provision_quotes(version=version, citations=sections),
        "signatures": range(members),
        "committee_cite": version.cite("committee_min_members"),
    }
