from books.services.crediting import JOB_KIND
from core.schedules import JobKind, Schedule

SCHEDULES = [
    Schedule(
        name="Credit Valuation Dates",
        task="books.credit_due_dates",
        crontab="30 18 * * 1-5",
        description="After the day's prices arrive: credit every Valuation Date not yet credited, in order "
        "(EDCP 7.2, RRP 3.05(c)). Runs again each weekday evening; a refused date resumes when its price arrives.",
    ),
]

JOBS = [
    JobKind(
        kind=JOB_KIND,
        task="books.credit_valuation_date",
        label="Valuation Date crediting",
        key_label="Valuation Date",
    ),
]
