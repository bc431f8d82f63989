"""Comments on cases and results (issue 26): Markdown rendered and sanitised at write, ``@email`` mentions
of the tenant's users (each notified through the inbox), edited or deleted only by their author."""
