"""Test plans."""
