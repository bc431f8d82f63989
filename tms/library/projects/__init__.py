"""Projects."""
