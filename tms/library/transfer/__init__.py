"""Import and export of cases: CSV and TestRail XML."""
