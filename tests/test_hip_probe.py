"""The HIP runtime probe: Debian's libamdhip64-5 (loads, sees no device) and runtimes that
crash or hang, built here as tiny stand-in libraries."""

import ctypes.util
import os
import shutil
import subprocess

import pytest

from strata_core.api.records import DetectionContext, DeviceReport
from strata_core.detect import hip
from strata_core.hip.binding import candidate_paths

needs_debian_hip = pytest.mark.skipif(
    ctypes.util.find_library("amdhip64") is None and not os.environ.get("CI"),
    reason="Debian's libamdhip64-5 is not installed (apt-get install libamdhip64-5)",
)


@pytest.fixture
def stand_in(tmp_path):
    """Compile a library that exports hipGetDeviceCount with the given body."""

    def build(body: str):
        source = tmp_path / "fakehip.c"
        source.write_text(
            "#include <stdlib.h>\n"
            "int hipRuntimeGetVersion(int *v) { *v = 70000000; return 0; }\n"
            'const char *hipGetErrorString(int e) { return "fake"; }\n'
            f"int hipGetDeviceCount(int *c) {{ {body} }}\n"
        )
        library = tmp_path / "libfakehip.so"
        subprocess.run(
            [shutil.which("cc") or "gcc", "-shared", "-fPIC", "-o", str(library), str(source)],
            check=True,
        )
        return str(library)

    return build


@needs_debian_hip
def test_debian_runtime_loads_and_reports_no_device():
    found = hip.run_probe(DetectionContext(hip_timeout_s=60))
    assert found.problems == ()
    assert found.reports == ()
    (note,) = found.notes
    assert note.startswith("HIP runtime libamdhip64.so.5 (version 5.")
    assert note.endswith("sees 0 devices")


def test_a_named_runtime_that_is_missing_or_no_library_is_named(tmp_path):
    missing, junk = tmp_path / "libamdhip64.so.7", tmp_path / "junk.so"
    junk.write_text("not a library")
    for path, why in ((missing, "no such file"), (junk, "not a library this process can load")):
        found = hip.run_probe(
            DetectionContext(env={"STRATA_HIP_LIBRARY": str(path)}, hip_timeout_s=60)
        )
        assert found.problems == (f"no HIP runtime: STRATA_HIP_LIBRARY={path}: {why}",)


def test_a_runtime_that_crashes_is_one_line(stand_in):
    library = stand_in("*(volatile int *)0 = 1; return 0;")
    found = hip.run_probe(DetectionContext(env={"STRATA_HIP_LIBRARY": library}, hip_timeout_s=60))
    (problem,) = found.problems
    assert problem.startswith("HIP runtime probe failed (exit status -11")
    assert problem.endswith("using KFD facts only")


def test_a_runtime_that_hangs_is_abandoned_after_the_timeout(stand_in):
    library = stand_in("for (;;) {} return 0;")
    found = hip.run_probe(DetectionContext(env={"STRATA_HIP_LIBRARY": library}, hip_timeout_s=3))
    assert found.problems == (
        f"HIP runtime probe gave no answer within 3 s, stuck in hipGetDeviceCount of {library}; "
        "using KFD facts only (STRATA_HIP_PROBE_TIMEOUT sets the limit)",
    )


def test_a_runtime_error_is_reported_with_its_text(stand_in):
    library = stand_in("return 3;")
    found = hip.run_probe(DetectionContext(env={"STRATA_HIP_LIBRARY": library}, hip_timeout_s=60))
    assert found.problems == (
        f"HIP runtime {library} (version 7.0.0): hipGetDeviceCount: fake (3)",
    )


def test_candidate_paths_try_each_soname_and_rocm_path():
    paths = candidate_paths({"ROCM_PATH": "/opt/rocm-7.1"})
    assert paths[:3] == [
        "libamdhip64.so.7",
        "/opt/rocm-7.1/lib/libamdhip64.so.7",
        "/opt/rocm/lib/libamdhip64.so.7",
    ]
    assert paths[-3] == "libamdhip64.so.5"


def test_interpret_devices():
    found = hip.interpret(
        {
            "library": "libamdhip64.so.7",
            "runtime_version": 70151234,
            "devices": [
                {
                    "index": 0,
                    "name": "AMD Radeon RX 7900 XTX",
                    "pci": "0000:86:00.0",
                    "total_mem": 25753026560,
                    "integrated": False,
                    "warp_size": 32,
                    "gcn_arch_name": "gfx1100",
                },
                {
                    "index": 1,
                    "name": "AMD Radeon Graphics",
                    "pci": "0000:c6:00.0",
                    "integrated": True,
                    "gcn_arch_name": "gfx1103:xnack-",
                },
            ],
        }
    )
    assert found.notes == ("HIP runtime libamdhip64.so.7 (version 7.1.51234) sees 2 devices",)
    assert found.reports[0] == DeviceReport(
        "hip",
        pci="0000:86:00.0",
        hip_index=0,
        name="AMD Radeon RX 7900 XTX",
        gfx="gfx1100",
        wave_size=32,
        vram_bytes=25753026560,
        integrated=False,
        integrated_evidence="HIP Integrated attribute",
    )
    assert found.reports[1].gfx == "gfx1103"


def test_probe_passes_the_context_visibility_not_the_callers(monkeypatch, stand_in):
    library = stand_in('return getenv("HIP_VISIBLE_DEVICES") ? 3 : 100;')
    monkeypatch.setenv("HIP_VISIBLE_DEVICES", "5")
    found = hip.run_probe(DetectionContext(env={"STRATA_HIP_LIBRARY": library}, hip_timeout_s=60))
    assert found.notes == (f"HIP runtime {library} (version 7.0.0) sees 0 devices",)
