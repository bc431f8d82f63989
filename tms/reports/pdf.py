"""A report as PDF, drawn inside the service by fpdf2 (pure Python, no system library, no browser).

The PDF core fonts (Helvetica) hold Latin-1 text: a few typographic characters are written as their
ASCII look-alikes and any other character outside Latin-1 as "?" (the HTML and JSON reports keep
every character). Long messages are cut to 300 characters per cell; the lists are the report's own
bounded lists (50 clusters, 200 failures, 500 runs), so a page count never follows the result count.
"""

from __future__ import annotations

import re
from typing import Any

from fpdf import FPDF
from fpdf.fonts import CORE_FONTS_CHARWIDTHS

from tms.reports.models import Counts, Report
from tms.runs.statuses import LABELS, counted, label, rgb

_LOOK_ALIKES = str.maketrans({"\u2026": "...", "\u2014": "-", "\u2013": "-", "\u2192": "->", "\u2018": "'",
                              "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2022": "*", "\u00a0": " ",
                              "\ufffd": "?"})
MAX_CELL = 300
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # tabs and other controls: a space (newlines stay)
COUNT_HEADS = ("Total", *LABELS.values(), "Progress", "Pass rate")


def text(value: Any, limit: int = MAX_CELL) -> str:
    """A value as Latin-1 text the core fonts can draw, cut to ``limit`` characters."""
    if value is None:
        return ""
    out = _CONTROL.sub(" ", str(value).translate(_LOOK_ALIKES))
    if len(out) > limit:
        out = out[: limit - 3] + "..."
    return out.encode("latin-1", "replace").decode("latin-1")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _counts(counts: Counts) -> list[str]:
    return [str(counts.total), *(str(n) for _, n in counted(counts)), pct(counts.progress), pct(counts.pass_rate)]


class _Document(FPDF):
    title_text = ""

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font("Helvetica", size=7)
        self.set_text_color(87, 96, 106)
        self.cell(0, 6, f"{self.title_text}  -  page {self.page_no()}/{{nb}}", align="C")


def render(report: Report) -> bytes:
    pdf = _Document(orientation="landscape", format="A4")
    pdf.title_text = text(f"{report.kind.capitalize()} report: {report.name}", 120)
    pdf.set_title(pdf.title_text)
    pdf.set_creator("TMS")
    pdf.set_auto_page_break(auto=True, margin=15)
    pdf.add_page()
    _header(pdf, report)
    _totals(pdf, report.totals)
    if report.trend is not None:
        _trend(pdf, report)
    if report.environments:
        _heading(pdf, "By environment")
        _table(pdf, ("Environment", "Runs", *COUNT_HEADS),
               [[text(e.environment or "No environment"), str(e.runs), *_counts(e.counts)]
                for e in report.environments], (50, 14))
    if report.kind != "run":
        _heading(pdf, "Runs")
        _table(pdf, ("Run", "Environment", "Status", *COUNT_HEADS),
               [[text(r.name), text(r.environment or "-"), r.status, *_counts(r.counts)] for r in report.runs],
               (60, 30, 24))
        if report.runs_total > len(report.runs):
            _note(pdf, f"The newest {len(report.runs)} of {report.runs_total} runs are listed; "
                       "the totals count them all.")
    _heading(pdf, "By section")
    sections = [[text(s.section), *_counts(s.counts)] for s in report.sections]
    if report.unlinked.total:
        sections.append(["Results naming no case", *_counts(report.unlinked)])
    _table(pdf, ("Section", *COUNT_HEADS), sections, (80,), empty="No results.")
    _heading(pdf, "By assignee")
    _table(pdf, ("Assignee", *COUNT_HEADS), [[text(a.name), *_counts(a.counts)] for a in report.assignees], (80,),
           empty="No results linked to cases.")
    _heading(pdf, "Failure clusters")
    _table(pdf, ("Failures", "Message", "Bugs", "First seen"),
           [[str(c.failures), text(c.error_message or "(no message)") + ("  [new]" if c.new else ""),
             text(", ".join(b.key for b in c.bugs) or "-"), text(c.first_seen_at or "-")] for c in report.clusters],
           (18, 170, 45, 44), empty="No failures.")
    if report.clusters_total > len(report.clusters):
        _note(pdf, f"The largest {len(report.clusters)} of {report.clusters_total} clusters.")
    _heading(pdf, "Failures")
    _table(pdf, ("Test", "Status", "Run", "Message", "Bug"),
           [[text(f"{f.test_case_code} {f.title or ''}" if f.test_case_code else f.title or "(untitled)"),
             label(f.status).lower(), text(f.run_name, 80), text(f.error_message), text(f.bug_ticket_key or "-")]
            for f in report.failures],
           (80, 18, 45, 105, 29), empty="No failed or blocked results.")
    if report.failures_total > len(report.failures):
        _note(pdf, f"The first {len(report.failures)} of {report.failures_total} failed or blocked results are listed.")
    return bytes(pdf.output())


def _header(pdf: FPDF, report: Report) -> None:
    pdf.set_text_color(87, 96, 106)
    pdf.set_font("Helvetica", size=9)
    kind = f"{report.kind.capitalize()} report" + (f" - {report.project_name}" if report.project_name else "")
    pdf.cell(0, 5, text(kind), new_x="LMARGIN", new_y="NEXT")
    pdf.set_text_color(31, 35, 40)
    pdf.set_font("Helvetica", style="B", size=18)
    pdf.multi_cell(0, 9, text(report.name, 200), new_x="LMARGIN", new_y="NEXT")
    facts = [report.status or "", report.environment or ("no environment" if report.kind == "run" else ""),
             f"due {report.due_on}" if report.due_on else "",
             f"{report.runs_total} runs" if report.kind != "run" else "", f"generated {report.generated_at}"]
    pdf.set_font("Helvetica", size=9)
    pdf.set_text_color(87, 96, 106)
    pdf.cell(0, 5, text("  |  ".join(f for f in facts if f)), new_x="LMARGIN", new_y="NEXT")
    pdf.set_draw_color(11, 87, 208)
    pdf.set_line_width(0.8)
    pdf.line(pdf.l_margin, pdf.get_y() + 1, pdf.w - pdf.r_margin, pdf.get_y() + 1)
    pdf.ln(4)


def _heading(pdf: FPDF, title: str) -> None:
    if pdf.get_y() > pdf.h - 40:
        pdf.add_page()
    pdf.ln(3)
    pdf.set_text_color(31, 35, 40)
    pdf.set_font("Helvetica", style="B", size=12)
    pdf.cell(0, 7, title, new_x="LMARGIN", new_y="NEXT")


def _note(pdf: FPDF, message: str) -> None:
    pdf.set_font("Helvetica", size=8)
    pdf.set_text_color(87, 96, 106)
    pdf.cell(0, 5, text(message), new_x="LMARGIN", new_y="NEXT")


def _totals(pdf: FPDF, totals: Counts) -> None:
    _heading(pdf, "Totals")
    pdf.set_font("Helvetica", size=10)
    pdf.set_text_color(31, 35, 40)
    line = (f"{totals.total} results  |  pass rate {pct(totals.pass_rate)}  |  progress {pct(totals.progress)}  |  "
            + ", ".join(f"{n} {LABELS[status].lower()}" for status, n in counted(totals)))
    pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    _bar(pdf, totals, pdf.w - pdf.l_margin - pdf.r_margin, 5)
    _note(pdf, "Pass rate = passed / executed (every result but the untested ones); progress = executed / total.")


def _bar(pdf: FPDF, counts: Counts, width: float, height: float) -> None:
    """The statuses as one stacked bar (vector rectangles)."""
    x, y = pdf.l_margin, pdf.get_y() + 1
    parts = counted(counts)
    if not counts.total:
        pdf.set_fill_color(234, 238, 242)
        pdf.rect(x, y, width, height, style="F")
    for status, n in parts:
        if n and counts.total:
            w = width * n / counts.total
            pdf.set_fill_color(*rgb(status))
            pdf.rect(x, y, w, height, style="F")
            x += w
    pdf.set_y(y + height + 1)


def _trend(pdf: FPDF, report: Report) -> None:
    trend = report.trend
    assert trend is not None
    _heading(pdf, "Trend")
    pdf.set_font("Helvetica", size=10)
    pdf.set_text_color(31, 35, 40)
    if trend.previous is None:
        pdf.cell(0, 6, "No earlier run of this project and environment to compare with.", new_x="LMARGIN",
                 new_y="NEXT")
    else:
        change = "" if trend.pass_rate_change is None else f" ({trend.pass_rate_change:+.1f} points)"
        pdf.multi_cell(0, 6, text(
            f"Against the previous run of this project and environment, {trend.previous_run_name}: pass rate "
            f"{pct(trend.previous.pass_rate)} -> {pct(report.totals.pass_rate)}{change}; {trend.new_failures} new "
            f"failures, {trend.fixed} fixed.", 600), new_x="LMARGIN", new_y="NEXT")
    rates = [(p.name, p.pass_rate) for p in trend.history]
    if len(rates) > 1:
        pdf.set_font("Helvetica", size=8)
        pdf.set_text_color(87, 96, 106)
        pdf.multi_cell(0, 5, text("Pass rate of the last runs, oldest first: " + ", ".join(
            f"{name} {pct(rate)}" for name, rate in rates), 1200), new_x="LMARGIN", new_y="NEXT")


def _table(pdf: FPDF, heads: tuple[str, ...], rows: list[list[str]], first_widths: tuple[float, ...],
           empty: str = "None.", max_lines: int = 3) -> None:
    """A table drawn with ``text()`` calls and lines: fpdf2's own table lays out every cell with its
    full line breaker (about a millisecond a cell, three seconds for this report); here a cell is
    wrapped once with the core font's character widths, at most ``max_lines`` lines, then drawn."""
    if not rows:
        _note(pdf, empty)
        return
    usable = pdf.w - pdf.l_margin - pdf.r_margin
    rest = (usable - sum(first_widths)) / max(len(heads) - len(first_widths), 1)
    widths = (*first_widths, *[rest] * (len(heads) - len(first_widths)))
    pdf.set_draw_color(208, 215, 222)
    pdf.set_line_width(0.2)
    _row(pdf, list(heads), widths, 1)
    for values in rows:
        _row(pdf, values, widths, max_lines, heads=list(heads))


_LINE = 3.6  # mm per line at 8 pt
_PAD = 1.0


def _row(pdf: FPDF, values: list[str], widths: tuple[float, ...], max_lines: int,
         heads: list[str] | None = None) -> None:
    """Draws one row (``heads`` None: the headings row); on a new page the headings come first."""
    bold = heads is None
    cells = [wrap(value, width - 2 * _PAD, 8, max_lines, bold=bold)
             for value, width in zip(values, widths, strict=True)]
    height = max(len(lines) for lines in cells) * _LINE + _PAD
    if pdf.get_y() + height > pdf.h - pdf.b_margin:
        pdf.add_page()
        if heads is not None:
            _row(pdf, heads, widths, 1)
    y, x = pdf.get_y(), pdf.l_margin
    if bold:
        pdf.set_fill_color(246, 248, 250)
        pdf.rect(x, y, sum(widths), height, style="F")
    pdf.set_font("Helvetica", style="B" if bold else "", size=8)
    pdf.set_text_color(31, 35, 40)
    for lines, width in zip(cells, widths, strict=True):
        for number, line in enumerate(lines, start=1):
            pdf.text(x + _PAD, y + number * _LINE - 0.6, line)
        x += width
    pdf.line(pdf.l_margin, y + height, pdf.l_margin + sum(widths), y + height)
    pdf.set_y(y + height)


_CHAR_WIDTHS = CORE_FONTS_CHARWIDTHS["helvetica"]
_BOLD_WIDTHS = CORE_FONTS_CHARWIDTHS["helveticaB"]


def wrap(value: str, width: float, size: float, max_lines: int, *, bold: bool = False) -> list[str]:
    """``value`` broken into lines no wider than ``width`` mm at ``size`` pt (at spaces when a line
    has one, else anywhere); past ``max_lines`` the last line ends with "..."."""
    widths = _BOLD_WIDTHS if bold else _CHAR_WIDTHS
    limit = width * 72 / 25.4 * 1000 / size  # in the font's units (1/1000 of the size)
    lines: list[str] = []
    for paragraph in value.split("\n"):
        line: list[str] = []
        used = 0
        space = -1
        for char in paragraph:
            char_width = widths.get(char, 556)
            if used + char_width > limit and line:
                if space > 0:
                    lines.append("".join(line[:space]))
                    line = line[space + 1:]
                else:
                    lines.append("".join(line))
                    line = []
                used = sum(widths.get(c, 556) for c in line)
                space = -1
                if len(lines) > max_lines:
                    break
            if char == " ":
                space = len(line)
            line.append(char)
            used += char_width
        if len(lines) > max_lines:
            break
        lines.append("".join(line))
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(0, len(lines[-1]) - 3)] + "..."
    return lines or [""]
