"""A report as one self-contained HTML file: inline CSS, inline SVG charts, no script, no external
asset (it opens offline and can be attached to a ticket). Rendered by Jinja with autoescape on, so
every title, message and name is escaped; the charts escape their own texts (tms.planning.dashboard.charts).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape

from tms.planning.dashboard.charts import pass_rate_trend, stacked_runs
from tms.reports.models import Counts, Report
from tms.runs.statuses import COLORS, LABELS, RESULT_STATUSES, counted
from tms.runs.statuses import label as status_label

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(status_bar=status_bar, STATUSES=RESULT_STATUSES, COLORS=COLORS, LABELS=LABELS)
    env.filters["status_label"] = status_label
    env.filters["web_url"] = web_url
    return env


def web_url(url: str | None) -> bool:
    """Whether a bug URL may become a link: http(s) only (never javascript: or data:)."""
    return bool(url) and str(url).lower().startswith(("https://", "http://"))


def status_bar(counts: Counts, label: str, width: int = 600, height: int = 18) -> Markup:
    """One 100 % bar of the statuses, with a title and description for screen readers."""
    parts = dict(counted(counts))
    summary = ", ".join(f"{n} {status_label(status).lower()}" for status, n in parts.items() if n) or "no results"
    body = [f'<svg class="bar" viewBox="0 0 {width} {height}" preserveAspectRatio="none" role="img" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{escape(label)}: {escape(summary)}</title>']
    if not counts.total:
        body.append(f'<rect x="0" y="0" width="{width}" height="{height}" fill="#eaeef2"/>')
    x = 0.0
    for status, n in parts.items():
        if n and counts.total:
            w = width * n / counts.total
            body.append(f'<rect x="{x:.2f}" y="0" width="{w:.2f}" height="{height}" fill="{COLORS[status]}">'
                        f"<title>{n} {status_label(status).lower()}</title></rect>")
            x += w
    body.append("</svg>")
    return Markup("".join(body))  # noqa: S704 - every text above is escaped


class _Point:
    def __init__(self, name: str) -> None:
        self.name = name


def charts(report: Report) -> dict[str, Markup]:
    found: dict[str, Markup] = {}
    if report.kind != "run" and len(report.runs) > 1:
        found["runs"] = stacked_runs(list(reversed(report.runs[:30])), chart_id="report-runs")
    if report.trend is not None and len(report.trend.history) > 1:
        points: Sequence[tuple[Any, float | None]] = [
            (_Point(p.name), None if p.pass_rate is None else p.pass_rate / 100) for p in report.trend.history]
        found["trend"] = pass_rate_trend(points, chart_id="report-trend")
    return found


def render_text(report: Report, *, page: dict[str, Any] | None = None) -> str:
    """The document; ``page`` (the web page) adds the download links, which a saved file leaves out."""
    template = _environment().get_template("reports/report.html")
    return template.render(report=report, charts=charts(report), page=page)


def render(report: Report) -> bytes:
    return render_text(report).encode()
