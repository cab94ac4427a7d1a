"""The statements' periodic task and the jobs staff may retry from the job pages."""

from core.schedules import JobKind, Schedule

SCHEDULES = [
    Schedule(
        name="Quarterly statements",
        task="statements.due",
        crontab="0 6 * 1,4,7,10 1-5",
        description="Statements of the quarter just ended, once its last Valuation Date is credited",
    )
]
JOBS = [
    JobKind(
        kind="statements", task="statements.quarterly", label="Quarterly statements", key_label="Quarter end"
    ),
    JobKind(
        kind="benefit_statements",
        task="statements.annual_benefit",
        label="BRP annual statements",
        key_label="Year end",
    ),
]
