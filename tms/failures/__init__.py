"""Failure intelligence: fingerprints, clusters, compare, known issues, flaky, quarantine."""
