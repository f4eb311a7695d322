"""Code locations that run the same PHANTOM definitions on a distributed engine."""
