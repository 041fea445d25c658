"""strata_core.gpu"""
