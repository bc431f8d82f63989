"""Milestones."""
