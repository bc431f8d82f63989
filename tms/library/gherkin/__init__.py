"""Gherkin: parsing, checklists and their limits, highlighting."""
