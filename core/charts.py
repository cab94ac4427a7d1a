"""Server-rendered SVG line charts: balance history, fund prices, forecasts. No JavaScript, no CDN.

    svg = line_chart([(date, Decimal), ...], title="Balance")
    svg = line_chart([Series("Projected", points, "line alt"), Series("Actual", points)])

The result is safe HTML for a template ({{ chart }}). Coordinates are computed in Decimal and
written with one decimal place; the styles (svg.chart .line, .area, .axis, .grid) are in app.css.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import cast

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

Point = tuple[dt.date, Decimal]
TENTH = Decimal("0.1")
NICE_STEPS = (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5), Decimal(10))


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[Point]
    css_class: str = "line"


@dataclass(frozen=True)
class Box:
    """The plot area inside the SVG, in pixels: x grows right, y grows down."""

    left: Decimal
    top: Decimal
    right: Decimal
    bottom: Decimal

    @property
    def width(self) -> Decimal:
        return self.right - self.left

    @property
    def height(self) -> Decimal:
        return self.bottom - self.top


def nice_ticks(lo: Decimal, hi: Decimal, count: int = 5) -> list[Decimal]:
    """Round tick values covering [lo, hi]: steps of 1, 2, 2.5 or 5 times a power of ten."""
    lo, hi = Decimal(lo), Decimal(hi)
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        pad = abs(hi) / 10 if hi else Decimal(1)
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / Decimal(max(1, count - 1))
    magnitude = Decimal(10) ** int(raw.log10().to_integral_value(rounding=ROUND_FLOOR))
    step = next(s * magnitude for s in NICE_STEPS if s * magnitude >= raw)
    first = (lo / step).to_integral_value(rounding=ROUND_FLOOR) * step
    last = (hi / step).to_integral_value(rounding=ROUND_CEILING) * step
    ticks = []
    value = first
    while value <= last:
        ticks.append(value.quantize(Decimal(1)) if value == value.to_integral_value() else value.normalize())
        value += step
    return ticks


def project(
    points: Sequence[Point], box: Box, *, x_range: tuple[dt.date, dt.date], y_range: tuple[Decimal, Decimal]
) -> list[tuple[Decimal, Decimal]]:
    """Pixel coordinates of the points: the first date at the left edge, the last at the right,
    y_range[1] at the top and y_range[0] at the bottom. A single date sits in the middle."""
    (d0, d1), (v0, v1) = x_range, y_range
    days = Decimal((d1 - d0).days)
    span = v1 - v0
    out = []
    for day, value in points:
        x = box.left + box.width * Decimal((day - d0).days) / days if days else box.left + box.width / 2
        y = box.bottom - box.height * (Decimal(value) - v0) / span if span else box.top + box.height / 2
        out.append((x.quantize(TENTH, ROUND_HALF_UP), y.quantize(TENTH, ROUND_HALF_UP)))
    return out


def compact_dollars(value: Decimal) -> str:
    """$1.25M, $350k, $900: axis labels that fit."""
    value = Decimal(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    for threshold, suffix in ((Decimal(10) ** 9, "B"), (Decimal(10) ** 6, "M"), (Decimal(10) ** 3, "k")):
        if value >= threshold:
            scaled = (value / threshold).quantize(Decimal("0.01"), ROUND_HALF_UP).normalize()
            return f"{sign}${scaled:f}{suffix}"
    return f"{sign}${value.quantize(Decimal(1), ROUND_HALF_UP):,}"


def plain_number(value: Decimal) -> str:
    return f"{Decimal(value).quantize(Decimal('0.01'), ROUND_HALF_UP):,}"


def dollars(value: Decimal) -> str:
    return f"${Decimal(value).quantize(Decimal('0.01'), ROUND_HALF_UP):,}"


def _date_ticks(d0: dt.date, d1: dt.date, count: int = 6) -> list[dt.date]:
    days = (d1 - d0).days
    if days == 0:
        return [d0]
    steps = min(count - 1, days)
    return sorted({d0 + dt.timedelta(days=round(days * i / steps)) for i in range(steps + 1)})


def _date_label(day: dt.date, span_days: int) -> str:
    return f"{day:%b %Y}" if span_days > 180 else f"{day:%b %d}" if span_days > 14 else day.isoformat()


def _fmt(v: Decimal) -> str:
    return f"{v:f}"


def line_chart(
    data: Sequence[Point] | Sequence[Series],
    *,
    title: str = "",
    width: int = 720,
    height: int = 260,
    y_format: Callable[[Decimal], str] = compact_dollars,
    include_zero: bool = True,
    area: bool = True,
    empty_text: str = "No data yet",
) -> SafeString:
    """An SVG line chart of one or more series of (date, Decimal) points, with axes, grid and labels."""
    series = (
        [s for s in data if isinstance(s, Series)]
        if data and isinstance(data[0], Series)
        # the first item says what the sequence holds: points of one series
        else [Series(title or "Value", list(cast(Sequence[tuple[dt.date, Decimal]], data)))]
    )
    series = [Series(s.label, sorted(s.points), s.css_class) for s in series]
    label = escape(title or "Chart")
    head = (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
        f'aria-label="{label}" xmlns="http://www.w3.org/2000/svg"><title>{label}</title>'
    )
    all_points = [p for s in series for p in s.points]
    if not all_points:
        return mark_safe(
            f'{head}<text class="empty" x="{width // 2}" y="{height // 2}" text-anchor="middle">'
            f"{escape(empty_text)}</text></svg>"
        )

    box = Box(Decimal(72), Decimal(28 if title else 12), Decimal(width - 16), Decimal(height - 30))
    d0, d1 = min(p[0] for p in all_points), max(p[0] for p in all_points)
    lo, hi = min(Decimal(p[1]) for p in all_points), max(Decimal(p[1]) for p in all_points)
    if include_zero:
        lo, hi = min(lo, Decimal(0)), max(hi, Decimal(0))
    ticks = nice_ticks(lo, hi)
    y_range = (ticks[0], ticks[-1])
    parts = [head]
    if title:
        parts.append(f'<text class="title" x="{_fmt(box.left)}" y="16">{escape(title)}</text>')
    for tick in ticks:
        ((_, y),) = project([(d0, tick)], box, x_range=(d0, d1), y_range=y_range)
        parts.append(
            f'<line class="grid" x1="{_fmt(box.left)}" y1="{_fmt(y)}" x2="{_fmt(box.right)}" y2="{_fmt(y)}"/>'
        )
        parts.append(
            f'<text x="{_fmt(box.left - 6)}" y="{_fmt(y + 4)}" text-anchor="end">{escape(y_format(tick))}</text>'
        )
    span_days = (d1 - d0).days
    date_ticks = _date_ticks(d0, d1)
    for i, day in enumerate(date_ticks):
        ((x, _),) = project([(day, ticks[0])], box, x_range=(d0, d1), y_range=y_range)
        anchor = (
            "middle"
            if len(date_ticks) == 1
            else "start"
            if i == 0
            else "end"
            if i == len(date_ticks) - 1
            else "middle"
        )
        parts.append(
            f'<line class="axis" x1="{_fmt(x)}" y1="{_fmt(box.bottom)}" x2="{_fmt(x)}" y2="{_fmt(box.bottom + 4)}"/>'
        )
        parts.append(
            f'<text x="{_fmt(x)}" y="{_fmt(box.bottom + 18)}" text-anchor="{anchor}">{escape(_date_label(day, span_days))}</text>'
        )
    parts.append(
        f'<line class="axis" x1="{_fmt(box.left)}" y1="{_fmt(box.top)}" x2="{_fmt(box.left)}" y2="{_fmt(box.bottom)}"/>'
    )
    parts.append(
        f'<line class="axis" x1="{_fmt(box.left)}" y1="{_fmt(box.bottom)}" x2="{_fmt(box.right)}" y2="{_fmt(box.bottom)}"/>'
    )
    for s in series:
        if not s.points:
            continue
        xy = project(s.points, box, x_range=(d0, d1), y_range=y_range)
        path = " ".join(f"{'M' if i == 0 else 'L'}{_fmt(x)},{_fmt(y)}" for i, (x, y) in enumerate(xy))
        if area and len(series) == 1:
            ((_, base),) = project(
                [(d0, max(y_range[0], min(Decimal(0), y_range[1])))], box, x_range=(d0, d1), y_range=y_range
            )
            parts.append(
                f'<path class="area" d="{path} L{_fmt(xy[-1][0])},{_fmt(base)} L{_fmt(xy[0][0])},{_fmt(base)} Z"/>'
            )
        parts.append(
            f'<path class="{escape(s.css_class)}" d="{path}"><title>{escape(s.label)}</title></path>'
        )
        last_x, last_y = xy[-1]
        parts.append(
            f'<circle class="{escape(s.css_class)} end" cx="{_fmt(last_x)}" cy="{_fmt(last_y)}" r="3"/>'
        )
        label_y = last_y - 8 if last_y - 8 > box.top + 10 else last_y + 16
        parts.append(
            f'<text class="value" x="{_fmt(last_x - 4)}" y="{_fmt(label_y)}" text-anchor="end">'
            f"{escape(y_format(Decimal(s.points[-1][1])))}</text>"
        )
    if len(series) > 1:
        for i, s in enumerate(series):
            x = box.left + 10 + Decimal(140 * i)
            parts.append(
                f'<line class="{escape(s.css_class)}" x1="{_fmt(x)}" y1="{_fmt(box.top + 6)}" '
                f'x2="{_fmt(x + 18)}" y2="{_fmt(box.top + 6)}"/>'
            )
            parts.append(f'<text x="{_fmt(x + 22)}" y="{_fmt(box.top + 10)}">{escape(s.label)}</text>')
    parts.append("</svg>")
    return mark_safe("".join(parts))


def chart_table(
    data: Sequence[Point] | Sequence[Series],
    *,
    title: str = "",
    value_format: Callable[[Decimal], str] = plain_number,
    max_rows: int = 24,
) -> SafeString:
    """The text alternative of a chart (WCAG 1.1.1): its figures as a table in a <details>, the last point of each
    month when there are more than `max_rows`, newest first."""
    series = (
        [s for s in data if isinstance(s, Series)]
        if data and isinstance(data[0], Series)
        else [Series(title or "Value", list(cast(Sequence[tuple[dt.date, Decimal]], data)))]
    )
    days = sorted({p[0] for s in series for p in s.points})
    if not days:
        return mark_safe("")
    if len(days) > max_rows:
        month_ends: dict[tuple[int, int], dt.date] = {}
        for day in days:
            month_ends[(day.year, day.month)] = day
        days = sorted(month_ends.values())[-max_rows:]
    values = [dict(s.points) for s in series]
    head = "".join(f'<th scope="col" class="num">{escape(s.label)}</th>' for s in series)
    rows = "".join(
        f'<tr><th scope="row">{day:%Y-%m-%d}</th>'
        + "".join(
            f'<td class="num">{escape(value_format(Decimal(v[day]))) if day in v else ""}</td>'
            for v in values
        )
        + "</tr>"
        for day in reversed(days)
    )
    return mark_safe(
        f'<details class="chart-table"><summary>{escape(title or "Chart")}: the figures as a table</summary>'
        f'<div class="scroll"><table class="data compact"><thead><tr><th scope="col">Date</th>{head}</tr></thead>'
        f"<tbody>{rows}</tbody></table></div></details>"
    )


def line_chart_with_table(data: Sequence[Point] | Sequence[Series], **kwargs) -> SafeString:
    """line_chart, then its figures as a table (the chart's text alternative, for screen readers and anyone)."""
    table_format = kwargs.pop("table_format", plain_number)
    svg = line_chart(data, **kwargs)
    return mark_safe(
        str(svg) + str(chart_table(data, title=kwargs.get("title", ""), value_format=table_format))
    )
