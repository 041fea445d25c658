"""The CUDA backend's own part: the NVIDIA driver's binding (a GpuRuntime) and NVML, which
detection reads."""
