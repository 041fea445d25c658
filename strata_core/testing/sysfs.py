"""Fake sysfs trees for any card, for tests (strata_core.detect.sample_sysfs writes them)."""

from ..detect.sample_sysfs import (
    GIB,
    MI50,
    MIB,
    R9700,
    RADEON_780M,
    RX_7900_XTX,
    RX_9070_XT,
    STRIX_HALO,
    FakeGPU,
    cpu_properties,
    fake_gpu,
    gfx_target_version,
    gpu_properties,
    write_nvidia_gpu,
    write_sysfs,
)

__all__ = [
    "GIB",
    "MI50",
    "MIB",
    "R9700",
    "RADEON_780M",
    "RX_7900_XTX",
    "RX_9070_XT",
    "STRIX_HALO",
    "FakeGPU",
    "cpu_properties",
    "fake_gpu",
    "gfx_target_version",
    "gpu_properties",
    "write_nvidia_gpu",
    "write_sysfs",
]
