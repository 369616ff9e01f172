"""NumPyro models as plain functions of their data."""
