from core.schedules import Schedule

SCHEDULES = [
    Schedule(
        name="Claims deadlines",
        task="claims.flag_deadlines",
        crontab="15 6 * * *",
        description="Every morning: mark claims abandoned when no appeal came within 60 days of the denial "
        "(EDCP 11.3, BRP 7.3, RRP 7.03), flag decisions due within 14 days or overdue "
        "(EDCP 11.2, 11.4) and email the assigned reviewer.",
    ),
]
