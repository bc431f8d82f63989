"""The dashboard of the active project."""
