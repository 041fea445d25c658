"""Tuning tables: formats, lookup, run-time dispatch with refusal counting, calibration."""
