"""strata: decides which AMD GPU backend of the Strata engine runs on this PC, and how."""

__version__ = "0.1.0"
