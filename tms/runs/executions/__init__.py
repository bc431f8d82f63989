"""Manual execution: the execution view, assignments, step results."""
