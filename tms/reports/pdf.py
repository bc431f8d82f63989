"""A report as PDF, drawn inside the service by fpdf2 (pure Python, no system library, no browser).

The PDF core fonts (Helvetica) hold Latin-1 text: a few typographic characters are written as their
ASCII look-alikes and any other character outside Latin-1 as "?" (the HTML and JSON reports keep
every character). Long messages are cut to 300 characters per cell; the lists are the report's own
bounded lists (50 clusters, 200 failures, 500 runs), so a page count never follows the result count.
"""

from __future__ import annotations

from typing import Any

from fpdf import FPDF
from fpdf.fonts import FontFace

from tms.reports.models import Counts, Report

COLORS = {"PASSED": (26, 127, 55), "FAILED": (207, 34, 46), "BROKEN": (188, 76, 0), "SKIPPED": (140, 149, 159),
          "UNKNOWN": (208, 215, 222)}
_LOOK_ALIKES = str.maketrans({"\u2026": "...", "\u2014": "-", "\u2013": "-", "\u2192": "->", "\u2018": "'",
                              "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2022": "*", "\u00a0": " ",
                              "\ufffd": "?"})
MAX_CELL = 300
COUNT_HEADS = ("Total", "Passed", "Failed", "Broken", "Skipped", "Not run", "Progress", "Pass rate")


def text(value: Any, limit: int = MAX_CELL) -> str:
    """A value as Latin-1 text the core fonts can draw, cut to ``limit`` characters."""
    if value is None:
        return ""
    out = str(value).translate(_LOOK_ALIKES)
    if len(out) > limit:
        out = out[: limit - 3] + "..."
    return out.encode("latin-1", "replace").decode("latin-1")


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _counts(counts: Counts) -> list[str]:
    return [str(counts.total), str(counts.passed), str(counts.failed), str(counts.broken), str(counts.skipped),
            str(counts.unknown), pct(counts.progress), pct(counts.pass_rate)]


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
             f.status.lower(), text(f.run_name, 80), text(f.error_message), text(f.bug_ticket_key or "-")]
            for f in report.failures],
           (80, 18, 45, 105, 29), empty="No failed or broken results.")
    if report.failures_total > len(report.failures):
        _note(pdf, f"The first {len(report.failures)} of {report.failures_total} failed or broken results are listed.")
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
            f"{totals.passed} passed, {totals.failed} failed, {totals.broken} broken, {totals.skipped} skipped, "
            f"{totals.unknown} not run")
    pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    _bar(pdf, totals, pdf.w - pdf.l_margin - pdf.r_margin, 5)
    _note(pdf, "Pass rate = passed / executed (every result but the ones not run yet); progress = executed / total.")


def _bar(pdf: FPDF, counts: Counts, width: float, height: float) -> None:
    """The statuses as one stacked bar (vector rectangles)."""
    x, y = pdf.l_margin, pdf.get_y() + 1
    parts = (("PASSED", counts.passed), ("FAILED", counts.failed), ("BROKEN", counts.broken),
             ("SKIPPED", counts.skipped), ("UNKNOWN", counts.unknown))
    if not counts.total:
        pdf.set_fill_color(234, 238, 242)
        pdf.rect(x, y, width, height, style="F")
    for status, n in parts:
        if n and counts.total:
            w = width * n / counts.total
            pdf.set_fill_color(*COLORS[status])
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
           empty: str = "None.") -> None:
    if not rows:
        _note(pdf, empty)
        return
    usable = pdf.w - pdf.l_margin - pdf.r_margin
    rest = (usable - sum(first_widths)) / max(len(heads) - len(first_widths), 1)
    widths = (*first_widths, *[rest] * (len(heads) - len(first_widths)))
    pdf.set_font("Helvetica", size=8)
    pdf.set_text_color(31, 35, 40)
    pdf.set_draw_color(208, 215, 222)
    pdf.set_line_width(0.2)
    heading = FontFace(emphasis="BOLD", fill_color=(246, 248, 250))
    with pdf.table(col_widths=widths, width=usable, headings_style=heading, line_height=4.2,
                   text_align="LEFT", first_row_as_headings=True) as table:
        table.row(list(heads))
        for values in rows:
            table.row(values)
