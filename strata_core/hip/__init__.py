"""The HIP backend's own part: the HIP runtime's binding (a GpuRuntime) and what its probe
calls, and the strata-kernels build hook that compiles a plugin's code objects."""
