"""Shared steps: named lists of Gherkin steps a project's cases use (`* shared: <name>`, issue 26)."""
