"""Schedules: which groups a step visits, the E-step on their local blocks, the M-step on the
globals. Batch VMP and SVI are the same two steps with different groups, step and scale."""
