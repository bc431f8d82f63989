"""Results of a run: the API, their rows and their store."""
