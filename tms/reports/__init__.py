"""Reports of runs, plans and milestones (JSON, HTML, PDF, CSV) and the export of a run's results.

handler (api.py / web.py) -> models.py -> service.py -> store.py (SQL); renderers: html.py, pdf.py,
csvfile.py (report CSV) and export.py (JUnit XML, CTRF, CSV of a run). See docs/reports.md.
"""
