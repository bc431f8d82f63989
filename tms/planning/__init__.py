"""Planning: milestones, test plans and the dashboard."""
