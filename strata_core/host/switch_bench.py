"""The host backend as the bench of the switch trials (strata_core.tuning.switch_trials):
the variant of an operation the host plugin picks with a switch set or not, and the router's
and top-k's calls on the host kernel library, over inputs drawn once from the workload's
shapes."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from ..api.records import RunContext, Workload
from .library import HostLibrary
from .plugin import host_device, strata_select_kernels


class HostTrialBench:
    """The host kernel library with instruction set ``isa``, and the host plugin's kernel
    choices for ``context`` and ``workload``."""

    def __init__(self, isa: str, context: RunContext, workload: Workload) -> None:
        self.lib = HostLibrary()
        self.lib.set_isa(isa)
        self._base = {"STRATA_HOST_ISA": isa}
        self._context, self._workload = context, workload
        rng = np.random.default_rng(0)
        self._logits = rng.standard_normal(
            (workload.prompt_tokens, workload.experts), dtype=np.float32
        )
        self._scores = rng.standard_normal(workload.context_cells, dtype=np.float32)

    def variant(self, op: str, switches: Mapping[str, str]) -> str:
        """The variant of ``op`` the host plugin picks with ``switches`` set."""
        chosen = strata_select_kernels(
            host_device(), self._context, self._base | dict(switches), self._workload
        )
        return next(c.variant for c in chosen if c.op == op)

    def call(self, op: str) -> Callable[[str], object]:
        """The call that runs ``op`` with a variant."""
        return {"router_topk": self._router, "topk": self._topk, "topk_prompt": self._topk}[op]

    def _router(self, variant: str) -> object:
        return self.lib.router_topk(self._logits, self._workload.experts_per_token, variant)

    def _topk(self, variant: str) -> object:
        return self.lib.topk(self._scores, self._workload.cells_kept, variant)
