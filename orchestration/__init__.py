"""Dagster wiring for PHANTOM: definitions, jobs, schedules, sensors and resources."""
