"""The public /api/v1: thin controllers, one module per resource."""
