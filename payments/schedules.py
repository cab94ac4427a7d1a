from core.schedules import JobKind, Schedule
from payments.services.processing import JOB_KIND

SCHEDULES = [
    Schedule(
        name="Process payments",
        task="payments.process_day",
        crontab="0 7 * * *",
        description="Every day: keep payment schedules current, value what is due as of its valuation date, "
        "hold what cannot be paid, and mark paid what the crediting released (EDCP 5.1-5.9, RRP 4.01). "
        "Runs before the evening crediting, so approved runs are liquidated on their release date.",
    ),
]

JOBS = [
    JobKind(kind=JOB_KIND, task="payments.process_day", label="Payment day", key_label="Payment day"),
]
