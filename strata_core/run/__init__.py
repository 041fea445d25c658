"""The run of a plan: its workload on the backend the plan names, every result checked, and a
card's calibration (strata_core.run.runner)."""

from .runner import GpuFacts, HostFacts, KernelReports, RunOutcome, run_workload, tune_on_card

__all__ = ["GpuFacts", "HostFacts", "KernelReports", "RunOutcome", "run_workload", "tune_on_card"]
