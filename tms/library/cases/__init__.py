"""Test cases: their Gherkin, versions, search and bulk actions."""
