"""Hatch build hook of the architecture plugins: compiles native/gpu/strata_kernels.hip (one
translation unit, which includes every operation's source beside it) into one code object per
target in the hook's ``targets`` option and writes ``kernels/build.json`` beside the plugin's
module (``src/<package>/``; in the wheel, or in the source tree for an editable install),
naming the compiler and each code object, or why there are none. A missing or unsuitable clang
does not fail the build: the manifest says so, and `strata-core plugins` shows it.

The compiler is STRATA_HIP_CLANG if set, else ROCm's clang, else Debian's clang-21/20/19 or
plain clang; no ROCm install is needed.

In-tree plugins load this file as a custom hook (their ``hip_build.py`` is a link to it, and
their sdists carry a copy); a third-party plugin names it ``strata-kernels``, registered with
hatch by strata_core.hip.hatch_plugin, and puts strata in its build requirements, whose wheel
carries the sources under strata_core/hip/native/.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("native/gpu/strata_kernels.hip")
HEADER = Path("native/include/strata_kernels.h")
#: what a plugin sdist carries to build from: the folder of the unit and of every file it
#: includes, and the kernel ABI header
SDIST_SOURCES = (SOURCE.parent, HEADER)
#: NVIDIA targets (compute capabilities) are built to PTX; every other target is AMD's.
CUDA_PREFIX = "sm_"
CLANG_NAMES = ("clang-21", "clang-20", "clang-19", "clang")
#: the lowest PTX ISA each NVIDIA target allows (NVIDIA's PTX ISA notes: sm_80 came with 7.0,
#: sm_86 with 7.1, sm_89 and sm_90 with 7.8), so that the oldest driver that knows the card
#: loads its module; clang would otherwise write its own newest (8.5 in clang-19: CUDA 12.5)
PTX_ISA = {"sm_80": "ptx70", "sm_86": "ptx71", "sm_89": "ptx78", "sm_90": "ptx78"}


def find_clang() -> str | None:
    if os.environ.get("STRATA_HIP_CLANG"):
        return os.environ["STRATA_HIP_CLANG"]
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root and os.access(Path(root, "llvm/bin/clang"), os.X_OK):
            return str(Path(root, "llvm/bin/clang"))
    return next((path for name in CLANG_NAMES if (path := shutil.which(name))), None)


def clang_version(clang: str) -> tuple[str | None, str | None]:
    """(the first line of ``clang --version``, None), or (None, why it cannot run)."""
    try:
        done = subprocess.run([clang, "--version"], capture_output=True, text=True)
    except OSError as exc:
        return None, f"{clang} cannot run: {exc.strerror or exc}"
    if done.returncode != 0 or not done.stdout:
        return None, f"{clang} --version failed: {done.stderr.strip()[:200]}"
    return done.stdout.splitlines()[0], None


def code_object_name(target: str) -> str:
    return f"strata_kernels-{target}.{'ptx' if target.startswith(CUDA_PREFIX) else 'hsaco'}"


def compile_target(clang: str, native: Path, target: str, output: Path) -> str | None:
    """Compile one code object (a PTX module for an NVIDIA target); None on success, else the
    compiler's first error line."""
    if target.startswith(CUDA_PREFIX):
        isa = [f"--cuda-feature=+{PTX_ISA[target]}"] if target in PTX_ISA else []
        return _run(clang, target, [
            clang, "-x", "cuda", f"--cuda-gpu-arch={target}", "--cuda-device-only", *isa,
            "-nocudainc", "-nocudalib", "-Wno-unknown-cuda-version", "-O3", "-std=c++17",
            f"-I{native / HEADER.parent.relative_to('native')}",
            "-S", str(native / SOURCE.relative_to("native")), "-o", str(output),
        ])  # fmt: skip
    command = [
        clang, "-x", "hip", f"--offload-arch={target}", "--cuda-device-only",
        "--no-gpu-bundle-output", "-nogpulib", "-nogpuinc", "-O3", "-std=c++17",
        f"-I{native / HEADER.parent.relative_to('native')}",
        "-c", str(native / SOURCE.relative_to("native")), "-o", str(output),
    ]  # fmt: skip
    return _run(clang, target, command)


def _run(clang: str, target: str, command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as exc:
        return f"{clang} cannot run: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if "error" in line] or [done.stderr]
    return f"{Path(clang).name} failed for {target}: {lines[0].strip()}"


class HipCodeObjects(BuildHookInterface[BuilderConfig]):
    PLUGIN_NAME = "strata-kernels"

    def _native(self) -> Path:
        """native/ of a plugin sdist, of an installed strata, or of the strata checkout."""
        here = Path(__file__).resolve().parent
        for native in (Path(self.root) / "native", here / "native", here.parents[1] / "native"):
            if (native / SOURCE.relative_to("native")).is_file():
                return native
        raise RuntimeError(f"{SOURCE} is not in {self.root}, nor beside {here}")

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        native = self._native()
        if self.target_name == "sdist":
            for path in SDIST_SOURCES:
                build_data["force_include"][str(native / path.relative_to("native"))] = str(path)
            build_data["force_include"][str(Path(__file__).resolve())] = "hip_build.py"
            return
        package = self.metadata.name.replace("-", "_")
        if version == "editable":
            kernels = Path(self.root, "src", package, "kernels")
            kernels.mkdir(exist_ok=True)
            for stale in [*kernels.glob("*.hsaco"), *kernels.glob("*.ptx")]:
                stale.unlink()
        else:
            self._scratch = tempfile.TemporaryDirectory()
            kernels = Path(self._scratch.name)
        targets = list(self.config.get("targets", ()))
        manifest: dict[str, Any] = {"source": SOURCE.name, "targets": targets, "code_objects": {}}
        clang = find_clang()
        version_line, broken = clang_version(clang) if clang else (None, None)
        if clang is None:
            manifest["problem"] = (
                "built without a HIP compiler (no STRATA_HIP_CLANG, ROCm clang or "
                f"{', '.join(CLANG_NAMES)}): no code objects, nothing runs on the GPU"
            )
        elif broken:
            manifest["problem"] = f"built without a HIP compiler ({broken}): no code objects"
            self.app.display_warning(broken)
        else:
            manifest["compiler"] = version_line
            failures = {}
            for target in targets:
                name = code_object_name(target)
                problem = compile_target(clang, native, target, kernels / name)
                if problem is None:
                    manifest["code_objects"][target] = name
                else:
                    failures[target] = problem
                    self.app.display_warning(problem)
            if failures:
                manifest["failures"] = failures
        manifest_path = kernels / "build.json"
        manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
        if version != "editable":
            for path in kernels.iterdir():
                build_data["force_include"][str(path)] = f"{package}/kernels/{path.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if hasattr(self, "_scratch"):
            self._scratch.cleanup()
