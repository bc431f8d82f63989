"""Charts as inline SVG, drawn on the server: no chart library, no CDN, readable without JavaScript.

Each chart is an ``<svg role="img">`` with a ``<title>`` and ``<desc>`` for screen readers and a
``<title>`` on every mark, which browsers show as a tooltip. All text is escaped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from markupsafe import Markup, escape

from tms.runs.statuses import COLORS, RESULT_STATUSES, counted, label


def _counts(run: Any) -> dict[str, int]:
    return dict(counted(run.counts))


def _summary(run: Any) -> str:
    counts = _counts(run)
    kind = getattr(run, "kind", None)
    parts = [f"{n} {label(status, kind).lower()}" for status, n in counts.items() if n]
    return f"{run.name}: " + (", ".join(parts) if parts else "no results")


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def _day(run: Any) -> str:
    """"Nov 26" of the run's creation time (ISO text); empty when it has none."""
    created = str(getattr(run, "created_at", "") or "")
    try:
        return f"{_MONTHS[int(created[5:7]) - 1]} {int(created[8:10])}"
    except (ValueError, IndexError):
        return ""


def _svg(chart_id: str, title: str, desc: str, width: int, height: int, body: list[str]) -> Markup:
    head = (
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-labelledby="{chart_id}-t {chart_id}-d" '
        f'xmlns="http://www.w3.org/2000/svg"><title id="{chart_id}-t">{escape(title)}</title>'
        f'<desc id="{chart_id}-d">{escape(desc)}</desc>'
    )
    return Markup(head + "".join(body) + "</svg>")  # noqa: S704 - every text above and in body is escaped


def stacked_runs(runs: Sequence[Any], chart_id: str = "runs-chart") -> Markup:
    """One 100 %-stacked column per run, oldest on the left: the share of each result status."""
    width, height, top, bottom, left = 600, 190, 10, 24, 52
    plot_h = height - top - bottom
    slot = (width - left - 4) / max(len(runs), 1)
    bar_w = max(4.0, min(36.0, slot * 0.7))
    body = [_grid(left, top, plot_h, width)]
    every = max(1, int(40 // slot) + (40 % slot > 0))  # a day label is about 40 units wide
    shown_day, last_tick = "", -every
    for index, run in enumerate(runs):
        counts = _counts(run)
        total = sum(counts.values())
        x = left + index * slot + (slot - bar_w) / 2
        body.append(f'<g><title>{escape(_summary(run))}</title>')
        if not total:
            body.append(f'<rect x="{x:.1f}" y="{top}" width="{bar_w:.1f}" height="{plot_h}" fill="#eaeef2"/>')
        y = float(top)
        for status in RESULT_STATUSES:
            if not counts[status] or not total:
                continue
            h = plot_h * counts[status] / total
            body.append(f'<rect x="{x:.1f}" y="{y:.2f}" width="{bar_w:.1f}" height="{h:.2f}" '
                        f'fill="{COLORS[status]}"/>')
            y += h
        body.append("</g>")
        # under the columns, oldest on the left (issue 24: not a countdown): a day where one begins, as
        # many as fit side by side, and "latest" under the newest run
        day = _day(run)
        tick = "latest" if index == len(runs) - 1 and len(runs) > 1 else (
            day if day != shown_day and index - last_tick >= every
            and (len(runs) == 1 or index + every <= len(runs) - 1) else "")  # room left for "latest"
        if tick:
            if tick == day:
                shown_day, last_tick = day, index
            body.append(f'<text x="{x + bar_w / 2:.1f}" y="{height - 8}" class="tick" text-anchor="middle">'
                        f"{escape(tick)}</text>")
    desc = "Oldest on the left, latest on the right; a day is written under the first run of that day. " + "; ".join(
        _summary(run) for run in runs)
    return _svg(chart_id, "Result mix of the last runs", desc, width, height, body)


def _grid(left: int, top: int, plot_h: int, width: int) -> str:
    lines = []
    for pct in (0, 50, 100):
        y = top + plot_h * (1 - pct / 100)
        lines.append(f'<line x1="{left}" x2="{width - 2}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{left - 4}" y="{y + 4:.1f}" class="tick" text-anchor="end">{pct}%</text>')
    return "".join(lines)


def pass_rate_trend(points: Sequence[tuple[Any, float | None]], chart_id: str = "trend-chart") -> Markup:
    """The pass rate of each run (oldest on the left) as a line; runs without verdicts leave a gap."""
    width, height, top, bottom, left = 600, 190, 10, 24, 52
    plot_h = height - top - bottom
    step = (width - left - 14) / max(len(points) - 1, 1)
    body = [_grid(left, top, plot_h, width)]
    segments: list[list[tuple[float, float]]] = [[]]
    marks = []
    for index, (run, rate) in enumerate(points):
        x = left + 6 + index * step if len(points) > 1 else left + (width - left) / 2
        if rate is None:
            if segments[-1]:
                segments.append([])
            continue
        y = top + plot_h * (1 - rate)
        segments[-1].append((x, y))
        marks.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" class="dot"><title>'
                     f"{escape(run.name)}: {rate * 100:.0f}% passed</title></circle>")
    for segment in segments:
        if len(segment) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in segment)
            body.append(f'<polyline points="{path}" class="line"/>')
    body.extend(marks)
    if points:
        body.append(f'<text x="{left}" y="{height - 6}" class="tick">oldest</text>'
                    f'<text x="{width - 2}" y="{height - 6}" class="tick" text-anchor="end">latest</text>')
    rated = [f"{run.name} {rate * 100:.0f}%" for run, rate in points if rate is not None]
    desc = (f"Pass rate of the last {len(points)} runs, oldest first: " + ", ".join(rated)) if rated else \
        "No run has passed, failed or blocked results yet."
    return _svg(chart_id, "Pass rate trend", desc, width, height, body)
