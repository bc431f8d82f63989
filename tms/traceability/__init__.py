"""Traceability: requirements (the ticket keys cases name) against their cases and latest results."""
