"""Quarantine."""
