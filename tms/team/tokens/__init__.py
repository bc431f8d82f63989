"""API tokens."""
