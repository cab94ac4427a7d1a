"""The server-rendered SVG line chart: scaling, axes, labels, empty data."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

from core.charts import Box, Series, compact_dollars, line_chart, nice_ticks, project

D0, D1 = dt.date(2026, 1, 1), dt.date(2026, 1, 11)
BOX = Box(Decimal(10), Decimal(20), Decimal(110), Decimal(220))


def test_points_scale_from_the_left_bottom_to_the_right_top_of_the_box():
    points = [(D0, Decimal(0)), (dt.date(2026, 1, 6), Decimal(50)), (D1, Decimal(100))]
    assert project(points, BOX, x_range=(D0, D1), y_range=(Decimal(0), Decimal(100))) == [
        (Decimal("10.0"), Decimal("220.0")),
        (Decimal("60.0"), Decimal("120.0")),
        (Decimal("110.0"), Decimal("20.0")),
    ]


def test_a_single_point_sits_in_the_middle_of_the_box():
    assert project([(D0, Decimal(5))], BOX, x_range=(D0, D0), y_range=(Decimal(5), Decimal(5))) == [
        (Decimal("60.0"), Decimal("120.0"))
    ]


def test_ticks_are_round_numbers_covering_the_values():
    assert nice_ticks(Decimal(0), Decimal("1234567")) == [
        Decimal(0),
        Decimal(500000),
        Decimal(1000000),
        Decimal(1500000),
    ]
    assert nice_ticks(Decimal("19.5"), Decimal("22.1")) == [
        Decimal(19),
        Decimal(20),
        Decimal(21),
        Decimal(22),
        Decimal(23),
    ]
    ticks = nice_ticks(Decimal(7), Decimal(7))
    assert ticks[0] < 7 < ticks[-1]


def test_the_chart_has_axes_labels_and_one_path_through_every_point():
    points = [(D0 + dt.timedelta(days=i), Decimal(1000 + 10 * i)) for i in range(11)]
    svg = str(line_chart(points, title="Balance"))
    assert svg.startswith('<svg class="chart"') and svg.endswith("</svg>")
    assert '<text class="title"' in svg and "Balance" in svg
    path = re.search(r'<path class="line" d="([^"]+)"', svg).group(1)
    assert path.count("L") == 10 and path.startswith("M72.0,")
    assert "$1k" in svg and "$0" in svg  # y labels include zero for balances
    assert "2026-01-01" in svg and "2026-01-11" in svg  # x labels at both ends (a short span: full dates)
    assert "$1.1k" in svg  # the last value is labelled


def test_no_data_gives_an_empty_chart_with_a_message():
    svg = str(line_chart([], title="Balance", empty_text="No balance history yet"))
    assert "No balance history yet" in svg and "<path" not in svg


def test_labels_are_escaped():
    svg = str(line_chart([(D0, Decimal(1))], title="<script>x</script>"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg


def test_several_series_share_the_axes_and_get_a_legend():
    actual = Series("Actual", [(D0, Decimal(100)), (D1, Decimal(120))])
    forecast = Series("Forecast", [(D1, Decimal(120)), (dt.date(2026, 2, 1), Decimal(200))], "line alt")
    svg = str(line_chart([actual, forecast], title="Projection"))
    assert svg.count("<path class=") == 2 and '<path class="line alt"' in svg
    assert "Actual" in svg and "Forecast" in svg


def test_compact_dollars():
    assert [compact_dollars(Decimal(v)) for v in ("900", "350000", "1250000", "-2500")] == [
        "$900",
        "$350k",
        "$1.25M",
        "-$2.5k",
    ]
