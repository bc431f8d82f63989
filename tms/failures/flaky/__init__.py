"""Flaky detection."""
