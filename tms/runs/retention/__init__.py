"""Retention: the sweep of unlinked results and of old runs."""
