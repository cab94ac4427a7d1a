import datetime as dt
from decimal import Decimal

from django.db import migrations

RATES = [
    ("federal_supplemental", "", "25.0000", None, "2005-01-01", "IRS Pub. 15: optional flat rate on supplemental wages"),
    ("federal_mandatory", "", "35.0000", "1000000.00", "2005-01-01", "IRS Pub. 15: supplemental wages over $1 million"),
    ("federal_mandatory", "", "39.6000", "1000000.00", "2013-01-01", "IRS Pub. 15 (2013): supplemental wages over $1 million"),
    ("federal_supplemental", "", "22.0000", None, "2018-01-01", "IRS Pub. 15 (2018, TCJA): flat rate on supplemental wages"),
    ("federal_mandatory", "", "37.0000", "1000000.00", "2018-01-01", "IRS Pub. 15 (2018, TCJA): supplemental wages over $1 million"),
    ("state", "VA", "5.7500", None, "2005-01-01", "Virginia supplemental wage rate (committee default)"),
    ("state", "*", "0.0000", None, "2005-01-01", "Any other state: set by the Committee"),
]


def seed(apps, schema_editor):
    Rate = apps.get_model("payments", "WithholdingRate")
    for kind, place, rate, threshold, since, source in RATES:
        Rate.objects.get_or_create(kind=kind, jurisdiction=place, effective_date=dt.date.fromisoformat(since), defaults={
            "rate": Decimal(rate), "threshold": Decimal(threshold) if threshold else None, "source": source,
            "recorded_by": "shipped default", "recorded_at": dt.datetime(2005, 1, 1, tzinfo=dt.UTC)})


class Migration(migrations.Migration):
    dependencies = [("payments", "0001_initial")]
    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
