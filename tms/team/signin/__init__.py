"""Sign-in: pages, sessions, throttling."""
