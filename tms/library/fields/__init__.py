"""Custom fields: typed fields a project defines for its cases and results (issue 26)."""
