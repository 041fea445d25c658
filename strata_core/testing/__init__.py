"""Helpers for testing strata and its plugins without AMD hardware."""
