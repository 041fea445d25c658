"""The run of a plan: its workload on the backend the plan names, every result checked
(runner), what it reports (outcome), and a card's calibration (card_calibration). GPU work
runs in child processes (child_process starts them; gpu_child and card_tuning are the
children)."""

from .card_calibration import CardCalibration, calibrate_card, card_calibration
from .outcome import GpuFacts, HostFacts, KernelReports, RunOutcome, StepReport
from .runner import run_workload

__all__ = [
    "CardCalibration",
    "GpuFacts",
    "HostFacts",
    "KernelReports",
    "RunOutcome",
    "StepReport",
    "calibrate_card",
    "card_calibration",
    "run_workload",
]
