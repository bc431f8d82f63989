"""Domain rules. Handlers call these; these call the store modules inside one transaction."""
