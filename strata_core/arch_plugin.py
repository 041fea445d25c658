"""A base for architecture plugins whose claims follow from a target list and a wave size."""

from __future__ import annotations

import fnmatch
from typing import ClassVar

from .hookspec import hookimpl
from .records import Claim, Device

EXACT_MATCH = 100
PATTERN_MATCH = 50


class ArchPlugin:
    """Subclass it, set ``targets`` and ``wave_size``, and declare ``strata_api_version``.

    The API version is not inherited on purpose: each plugin states the version it was
    written against, and the manager checks it.
    """

    targets: ClassVar[tuple[str, ...]] = ()
    wave_size: ClassVar[int] = 32

    @hookimpl
    def strata_arch_targets(self) -> tuple[str, ...]:
        return self.targets

    @hookimpl
    def strata_claim_device(self, device: Device) -> Claim:
        if device.wave_size is not None and device.wave_size != self.wave_size:
            return Claim.refuse(
                f"is a wave{self.wave_size} build; {device.gfx} is wave{device.wave_size}"
            )
        if device.gfx in self.targets:
            return Claim(EXACT_MATCH, f"carries code for {device.gfx}")
        for pattern in self.targets:
            if fnmatch.fnmatchcase(device.gfx, pattern):
                return Claim(PATTERN_MATCH, f"carries code for {pattern}")
        return Claim.refuse(f"carries code for {', '.join(self.targets)}, not {device.gfx}")
