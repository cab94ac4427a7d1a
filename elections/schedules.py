from core.schedules import Schedule

SCHEDULES = [
    Schedule(
        name="Election reminders",
        task="elections.send_reminders",
        crontab="0 8 * * *",
        description="Each morning: tell eligible participants that an enrollment window opened today, and remind "
        "those who have not elected on the window's reminder days before it closes, and on its last day tell each "
        "one what will be in force when it closes (EDCP 3.2, RRP 2.03). "
        "A rerun the same day sends nothing twice.",
    ),
]
