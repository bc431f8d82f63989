"""Retest flags set by people and by the tracker loop."""
