"""Known issues and their patterns."""
