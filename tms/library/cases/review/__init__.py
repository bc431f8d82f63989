"""Case review (issue 26): request, approve, request changes; the "waiting for my review" list."""
