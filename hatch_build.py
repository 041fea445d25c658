"""Build hook: compiles the host kernel library (native/host) with the C compiler and writes
the out-of-line cffi ABI modules of that library (for the host, and for the GPU launcher's
constants: native/include/strata_kernels.h), of the HIP runtime, the CUDA driver, NVML and the
vendor BLAS libraries (native/bindings), each beside the code that loads it, so that wheels and
editable installs carry them. Wheels also carry the GPU kernel sources, for plugins built with
the strata-kernels hook."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

HEADER = Path("native/include/strata_kernels.h")
#: the host library: every C file there, built into one shared library
HOST_SOURCES = Path("native/host")
LIBRARY = Path("strata_core/host/libstrata_host.so")
#: what the strata-kernels build hook of a third-party plugin compiles (strata_core/hip/native)
HIP_SOURCES = (Path("native/gpu"), Path("native/include/strata_kernels.h"))
BINDINGS = Path("native/bindings")
#: out-of-line cffi module: the header it declares
FFI_MODULES = {
    Path("strata_core/host/_host_ffi.py"): HEADER,
    Path("strata_core/gpu/_abi_ffi.py"): HEADER,
    Path("strata_core/hip/_hip_ffi.py"): BINDINGS / "strata_hip_runtime.h",
    Path("strata_core/cuda/_cuda_ffi.py"): BINDINGS / "strata_cuda_driver.h",
    Path("strata_core/cuda/_nvml_ffi.py"): BINDINGS / "strata_nvml.h",
    Path("strata_core/blas/_cublaslt_ffi.py"): BINDINGS / "strata_cublaslt.h",
    Path("strata_core/blas/_hipblaslt_ffi.py"): BINDINGS / "strata_hipblaslt.h",
    Path("strata_core/blas/_rocblas_ffi.py"): BINDINGS / "strata_rocblas.h",
}


def cdef_from_header(header: Path, compiler: list[str]) -> str:
    """The header as cffi reads it (cffi runs no preprocessor): what the C preprocessor makes
    of it, with its integer #defines kept and the compiler's own dropped. Its system headers are
    left out (cffi knows their types), and -nostdinc stops one that a header of ours includes."""
    text = "\n".join(
        line for line in header.read_text().splitlines() if not line.startswith("#include <")
    )
    options = ["-E", "-P", "-dD", "-undef", "-nostdinc", f"-I{header.parent}", "-x", "c", "-"]
    try:
        done = subprocess.run([*compiler, *options], input=text, capture_output=True, text=True)
    except OSError as exc:
        raise RuntimeError(f"preprocessing {header} failed: {exc}") from exc
    if done.returncode != 0:
        raise RuntimeError(f"preprocessing {header} failed: {done.stderr.strip()}")
    kept = []
    for line in done.stdout.splitlines():
        if line.startswith("#"):
            if re.match(r"#define (?!__)\w+ -?\d+\b", line):
                kept.append(" ".join(line.split()[:3]))
            continue
        kept.append(line)
    return "\n".join(kept)


class NativeHostLibrary(BuildHookInterface[BuilderConfig]):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        library = root / LIBRARY
        compiler = shlex.split(os.environ.get("CC", "cc"))
        command = [
            *compiler,
            "-O3",
            "-fPIC",
            "-shared",
            "-fopenmp",
            "-std=c11",
            "-D_GNU_SOURCE",
            f"-I{root / HEADER.parent}",
            *(str(source) for source in sorted((root / HOST_SOURCES).glob("*.c"))),
            "-o",
            str(library),
            "-lm",
        ]
        try:
            subprocess.run(command, check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise RuntimeError(
                f"building the host kernel library failed ({exc}); strata needs "
                "a C compiler with OpenMP (Debian: apt-get install gcc)"
            ) from exc

        import cffi

        for module, header in FFI_MODULES.items():
            ffi = cffi.FFI()
            ffi.cdef(cdef_from_header(root / header, compiler))
            ffi.set_source(".".join(module.with_suffix("").parts), None)
            ffi.emit_python_code(str(root / module))

        build_data["pure_python"] = False
        build_data["tag"] = (
            f"py3-none-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
        )
        if version != "editable":
            build_data["force_include"][str(library)] = str(LIBRARY)
            for module in FFI_MODULES:
                build_data["force_include"][str(root / module)] = str(module)
            for source in HIP_SOURCES:
                build_data["force_include"][str(root / source)] = f"strata_core/hip/{source}"
