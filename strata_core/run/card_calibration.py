"""A card's calibration, from the parent's side: which prompt GEMM library of the plan's card
takes a table, the cases measured, the library version the table is named for, and the child
(strata_core.run.card_tuning) that measures them on the card."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from ..errors import StrataError
from ..gpu.backends import BACKENDS
from ..plan.plan import Plan
from .child_process import child_answer
from .settings import card_of, runtime_names, settings_of

#: the token buckets of a card's calibration (AMD_HIP.md, "rocBLAS table": T = 256 ... 8192)
CARD_TOKENS = (256, 512, 1024, 2048, 4096, 8192)


@attrs.frozen
class CardCalibration:
    """What a card's calibration measures: the plan's card, the prompt GEMM path whose
    library takes a table (``path``; the library's name is ``library``), the cases, and the
    library's version probed now and the table's file name for it."""

    plan: Plan
    path: str
    library: str
    cases: tuple[tuple[Any, ...], ...]
    version: str
    file_name: str


def calibrated_path(plan: Plan) -> str:
    """The prompt GEMM path of the plan's card whose library takes a tuning table;
    StrataError where none does."""
    from ..tuning.libraries import PATHS
    from ..tuning.libraries import calibrated_path as table_path

    gemm = plan.kernels.get("prompt_gemm")
    if gemm is None or gemm.variant not in PATHS:
        why = gemm.reason if gemm else "its plugin chooses no prompt GEMM"
        raise StrataError(
            f"tune: the prompt GEMMs on {plan.device.name} run no vendor library ({why}); "
            "nothing to calibrate on the card (--host calibrates the host backend)"
        )
    calibrated = table_path(gemm.variant, plan.device.arch)
    if calibrated is None:
        raise StrataError(
            f"tune: {plan.device.name} ({plan.device.gfx}) takes no tuning table for its prompt "
            f"GEMMs ({gemm.reason}); nothing to calibrate on the card (--host calibrates the "
            "host backend)"
        )
    return calibrated


def card_calibration(
    plan: Plan,
    cases: Sequence[tuple[Any, ...]] | None,
    tokens: Sequence[int] | None,
    env: Mapping[str, str],
) -> CardCalibration:
    """The calibration of the plan's card: ``cases``, else the workload's prompt GEMM at
    ``tokens`` (default: CARD_TOKENS), in the operand type the library takes on this path,
    for the library version probed now. StrataError where a case has another operand type or
    the version is unknown."""
    from ..plan.detection import seconds_variable
    from ..tuning import versions
    from ..tuning.libraries import LIBRARIES, PATHS

    calibrated = calibrated_path(plan)
    path = PATHS[calibrated]
    library = LIBRARIES[path.library]
    settings, _ = settings_of(plan)
    w = settings.workload
    if cases is None:
        cases = [(t, "prompt", w.ffn, w.hidden, path.dtype) for t in tokens or CARD_TOKENS]
    wrong = [c for c in cases if c[4] != path.dtype]
    if wrong:
        raise StrataError(
            f"--case {','.join(map(str, wrong[0]))}: {library.kind.library} takes "
            f"{path.dtype} operands on this path ({calibrated})"
        )
    timeout = seconds_variable(env, "STRATA_HIP_PROBE_TIMEOUT", 15.0)
    version = versions.probe(env, timeout)[path.library]
    if version.version is None:
        raise StrataError(f"tune: the {library.kind.library} version is unknown: {version.how}")
    name = library.kind.file_name(plan.device.gfx, version.version)
    return CardCalibration(plan, calibrated, path.library, tuple(cases), version.version, name)


def calibrate_card(
    calibration: CardCalibration,
    repeats: int,
    min_gain: float,
    progress: Callable[[str], None],
) -> str:
    """The calibrated table's text, from the child on the card; StrataError where the card's
    library is not the one probed before."""
    plan = calibration.plan
    answer = tune_on_card(plan, calibration.path, calibration.cases, repeats, min_gain, progress)
    if (answer["arch"], answer["version"]) != (plan.device.gfx, calibration.version):
        raise StrataError(
            f"tune: the card's library is {answer['arch']} {answer['library']} "
            f"{answer['version']}, not the {plan.device.gfx} {calibration.version} probed "
            "before; nothing written"
        )
    table: str = answer["table"]
    return table


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
