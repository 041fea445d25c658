"""A card's calibration, from the parent's side: the child (strata_core.run.card_tuning)
that measures the prompt GEMM library of the plan's card."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gpu.backends import BACKENDS
from ..plan.plan import Plan
from .child_process import child_answer
from .settings import card_of, runtime_names, settings_of


def tune_on_card(
    plan: Plan,
    path: str,
    cases: tuple[tuple[Any, ...], ...],
    repeats: int,
    min_gain: float,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Calibrate the library of prompt GEMM path ``path`` on the plan's card
    (strata_core.run.card_tuning); the child's answer: the table's text, its architecture and
    version, each case's times."""
    from ..tuning.libraries import library_paths
    from .card_tuning import CardTuneJob

    settings, _ = settings_of(plan)
    job = CardTuneJob(
        card_of(plan, settings),
        path,
        library_paths(path, settings.child_env),
        cases,
        repeats,
        min_gain,
    )
    runtime = BACKENDS[plan.backend].runtime_name
    what = f"the calibration on the card ({runtime} {runtime_names(settings)})"
    with child_answer("strata_core.run.card_tuning", job, settings, what, progress) as (answer, _):
        return answer
