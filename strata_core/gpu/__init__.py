"""What every GPU backend shares: the kernel library's launcher (library), the kernel ABI
(abi; its constants come from strata_kernels.h through _abi_ffi), code objects and PTX, the
GpuRuntime interface (runtime) and the registry of backends (backends)."""
