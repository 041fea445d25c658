"""NVIDIA cards: seen on the PCI bus of a sysfs tree, described by NVML (here the stand-in of
tests/fixtures/nvml_stand_in.c), CUDA_VISIBLE_DEVICES applied as the driver applies it, run by
the cuda plugin through the CUDA driver (the stand-in of tests/fixtures/hip_stand_in.c, which is
also a libcuda); the backend choice of the reference page ("Setup picks --backend hip by itself on a PC with no
NVIDIA card Strata can use. ... mixed AMD/NVIDIA runs are not supported")."""

import json
from functools import partial
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.detect import nvidia
from strata_core.gpu import abi
from strata_core.gpu.step_graph import STEP_REPEATS
from strata_core.testing.sysfs import R9700, write_nvidia_gpu, write_sysfs

TINY = Path(__file__).parent / "fixtures" / "profiles" / "tiny.toml"
PCI = "0000:41:00.0"

run = partial(strata_core, check=False)


@pytest.fixture
def nvidia_tree(tmp_path):
    """A sysfs tree with an R9700 (HIP 0) and an NVIDIA card on the PCI bus."""
    return write_nvidia_gpu(write_sysfs(tmp_path / "sys", [R9700]), PCI)


def devices_json(root, env) -> dict:
    result = run("devices", "--json", "--sysfs", str(root), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_a_driver_the_card_is_known_by_pci_and_the_hip_backend_runs(nvidia_tree, env):
    answer = devices_json(nvidia_tree, env)
    amd, nvidia = answer["devices"]
    assert (nvidia["pci"], nvidia["gfx"], nvidia["plugin"]) == (PCI, "sm_unknown", None)
    assert nvidia["reason"].startswith("no installed plugin runs sm_unknown (NVIDIA")
    assert any("cuda needs the compute capability" in r for r in nvidia["refusals"])
    assert amd["selected"] and not nvidia["selected"]


def test_the_driver_describes_the_card_and_the_cuda_backend_runs_it(nvidia_tree, env, stand_in, with_driver):
    answer = devices_json(nvidia_tree, with_driver(env, stand_in))
    amd, nvidia = answer["devices"]
    # both are number 0 of their own runtime: the vendor and backend say whose
    assert (amd["index"], amd["vendor"], amd["backend"]) == (0, "amd", "hip")
    assert (nvidia["index"], nvidia["vendor"], nvidia["backend"]) == (0, "nvidia", "cuda")
    assert (answer["backend"], answer["selected"]) == ("cuda", [0])
    assert (nvidia["name"], nvidia["gfx"], nvidia["index"]) == ("NVIDIA H200", "sm_90", 0)
    assert nvidia["family"] == "NVIDIA compute capability 9.0"
    assert nvidia["plugin"] == "cuda" and nvidia["selected"] and not amd["selected"]
    assert nvidia["seen_by"] == ["pci", "nvidia"]
    assert (
        "Radeon AI PRO R9700 (gfx1201) is not used: the CUDA backend "
        "runs, and mixed AMD/NVIDIA runs are not supported"
    ) in answer["notes"]
    plan = json.loads(
        run("plan", "--json", "--sysfs", str(nvidia_tree), env=with_driver(env, stand_in)).stdout
    )
    assert (plan["plugin"], plan["device"]["gfx"], plan["package"]) == ("cuda", "sm_90", None)
    # the hipBLASLt and rocBLAS tables are the HIP backend's; cuBLASLt's is taken when asked
    assert list(plan["tuning"]) == ["cublaslt"] and not plan["tuning"]["cublaslt"]["used"]
    assert plan["kernels"]["matvec_q8_0"]["variant"] == "dp4a"


def test_a_pc_with_only_an_nvidia_card_hears_nothing_of_kfd(tmp_path, env, stand_in, with_driver):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    quiet = run("devices", "--sysfs", str(root), env=with_driver(env, stand_in))
    assert quiet.returncode == 0 and "KFD" not in quiet.stderr
    assert not [n for n in devices_json(root, with_driver(env, stand_in))["notes"] if "KFD" in n]
    said = run("devices", "-v", "--sysfs", str(root), env=with_driver(env, stand_in)).stderr
    assert (
        f"strata-core: debug: no KFD topology at {root}/class/kfd/kfd/topology/nodes; no AMD "
        "PCI display function either"
    ) in said.splitlines()


def test_cuda_visible_devices_hides_the_card_as_the_driver_does(nvidia_tree, env, stand_in, with_driver):
    answer = devices_json(nvidia_tree, with_driver(env, stand_in, CUDA_VISIBLE_DEVICES="-1"))
    amd, nvidia = answer["devices"]
    assert nvidia["reason"].startswith("hidden by CUDA_VISIBLE_DEVICES=-1")
    # the ROCm runtime reads CUDA_VISIBLE_DEVICES as HIP_VISIBLE_DEVICES: the R9700 goes too
    assert amd["reason"].startswith("hidden by CUDA_VISIBLE_DEVICES")
    assert answer["selected"] == []


def test_a_newer_card_runs_the_newest_ptx_below_it(tmp_path, env, stand_in, with_driver):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    answer = devices_json(root, with_driver(env, stand_in, STAND_IN_ARCH="sm_120"))
    (card,) = answer["devices"]
    assert card["reason"] == "cuda runs its sm_90 PTX on sm_120 (the driver compiles it)"


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        ("segv-on-load", "NVML probe failed (exit status -11: no message)"),
        ("hang-count",
         "NVML probe gave no answer within 2 s, stuck in nvmlDeviceGetCount_v2 of {nvml}"),
    ],
)  # fmt: skip
def test_a_driver_that_crashes_or_hangs_is_one_line(
    nvidia_tree, env, stand_in, with_driver, nvml_stand_in, fault, problem
):
    """Said with the native call the probe was in, where it was in one."""
    result = run(
        "devices", "--json", "--sysfs", str(nvidia_tree),
        env=with_driver(env, stand_in, STAND_IN_FAULT=fault, STRATA_HIP_PROBE_TIMEOUT="2"),
    )  # fmt: skip
    assert result.returncode == 0
    assert json.loads(result.stdout)["warnings"] == [
        f"{problem.format(nvml=nvml_stand_in)}; NVIDIA cards are known by PCI only"
        + (" (STRATA_HIP_PROBE_TIMEOUT sets the limit)" if fault == "hang-count" else "")
    ]
    assert result.stderr == ""


def test_what_the_driver_prints_stays_out_of_the_answer(nvidia_tree, env, stand_in, with_driver):
    result = run(
        "plan", "--json", "--sysfs", str(nvidia_tree),
        env=with_driver(env, stand_in, STAND_IN_FAULT="print"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["device"]["gfx"] == "sm_90"
    assert "hello" not in result.stdout + result.stderr


@pytest.mark.parametrize("cuda_version", ["13000", "12020"])  # 12020: the 535 branch
def test_run_on_an_nvidia_card_runs_every_kernel_through_the_driver(
    tmp_path, env, emulating_stand_in, with_driver, cuda_version
):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    launches = tmp_path / "launches"
    driver = with_driver(
        env,
        emulating_stand_in,
        STAND_IN_LAUNCHES=str(launches),
        STAND_IN_CUDA_VERSION=cuda_version,
    )
    result = run("run", "--json", "--profile", str(TINY), "--sysfs", str(root), env=driver)
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert (answer["backend"], answer["plugin"], answer["target"]) == ("cuda", "cuda", "sm_90")
    assert answer["code_object"].endswith("strata_kernels-sm_90.ptx")
    kernels = answer["kernels"]
    assert all(k["checked"] == k["calls"] > 0 for k in kernels.values())
    # the stand-in's events say 0.25 ms for every launch, the read kernel's included
    assert answer["read_bandwidth_gbs"] == round(1048576 / 0.25e-3 / 1e9, 2)
    assert kernels["matvec_q8_0"]["bandwidth_of_read"] is not None
    assert {name: k["variant"] for name, k in kernels.items()} == {
        "matvec_q8_0": "dp4a", "router_topk": "fast", "router_topk_prompt": "fast",
        "topk": "register", "topk_prompt": "register", "prompt_gemm": "cublaslt",
        "expert_matvec_q8_0": "dp4a", "expert_matvec_q8_0_batch": "dp4a",
        "router_topk_batch": "fast",
    }  # fmt: skip
    assert answer["gemm_library"] == {
        "library": "cuBLASLt", "path": emulating_stand_in, "version": "120804"
    }  # fmt: skip
    launched = {line.split()[0] for line in launches.read_text().splitlines()}
    assert launched == {"strata_" + op for op in abi.OPERATIONS} - {"strata_prompt_gemm"}


def test_run_times_each_call_on_the_gpu_behind_a_hold_and_from_the_host(
    tmp_path, env, emulating_stand_in, with_driver
):
    """Each call of the workload follows the read kernel over the profile's gpu_read_bytes (the
    queue held, as
    bench/gpu_kernels.py times); the report's median is the events' time (the stand-in's
    0.25 ms a launch, top-k's three stages 0.25 ms between the events of its call) and the
    host's call time stands beside it, in the JSON and under its own header."""
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    launches = tmp_path / "launches"
    carried = with_driver(env, emulating_stand_in, STAND_IN_LAUNCHES=str(launches))
    answer = json.loads(run("run", "--json", "--profile", str(TINY), "--sysfs", str(root),
                            env=carried).stdout)  # fmt: skip
    for name, kernel in answer["kernels"].items():
        assert kernel["median_ms"] == 0.25, name
        assert kernel["call_ms"] > 0, name
    lines = [line.split() for line in launches.read_text().splitlines()]
    # the decode step replayed after the calls (test_step_graph.py): its five launches
    # recorded, then held and queued, held and replayed (twice: handing over or not), each
    # graph replayed once more for the check
    lines = lines[: -(5 + 3 * STEP_REPEATS * (1 + 5) + 2 * 5)]
    assert lines[-2][0] == lines[-1][0] == "strata_topk"  # the last call: the prompt's top-k
    hold_words = (1048576 // 16).to_bytes(8, "little").hex()  # tiny.toml's gpu_read_bytes
    held = [line[0] == "strata_read_bytes" and line[3][16:32] == hold_words for line in lines]
    for before, line in zip(held, lines[1:], strict=False):
        if line[0] in ("strata_matvec_q8_0", "strata_router_topk"):
            assert before
    text = run("run", "--profile", str(TINY), "--sysfs", str(root), env=carried).stdout
    header = next(line for line in text.splitlines() if line.lstrip().startswith("checked"))
    assert header.split()[1:3] == ["GPU", "median"] and header.endswith("host call")


def test_a_driver_older_than_the_ptx_is_refused_before_any_launch(
    tmp_path, env, stand_in, with_driver
):
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    launches = tmp_path / "launches"
    driver = with_driver(
        env, stand_in, STAND_IN_LAUNCHES=str(launches), STAND_IN_CUDA_VERSION="11070"
    )
    result = run("run", "--profile", str(TINY), "--sysfs", str(root), env=driver)
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        f"strata-core: error: the CUDA driver {stand_in} is CUDA 11.7; strata_kernels-sm_90.ptx "
        "is PTX ISA 7.8, which needs CUDA 11.8 (driver 520 or newer): update the NVIDIA driver"
    )
    assert not launches.exists()


def test_gpus_names_cuda_devices_when_the_cuda_backend_runs(nvidia_tree, env, stand_in, with_driver):
    result = run(
        "plan", "--gpus", "0,1", "--sysfs", str(nvidia_tree), env=with_driver(env, stand_in)
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "strata-core: error: --gpus from command line: no CUDA device 1 (visible CUDA devices: "
        "0)"
    )


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        (
            "handle-fails",
            "device 0: its handle refused (Unknown Error (999)); taken to be the NVIDIA card at "
            f"{PCI}",
        ),
        (
            "device-calls-fail",
            "device 0: name, UUID, PCI address, memory size and compute capability refused "
            f"(Unknown Error (999)); taken to be the NVIDIA card at {PCI}",
        ),
        ("huge-memory", "device 0: 18446744073709551615 bytes of memory; expected up to 1 PiB"),
    ],
)
def test_a_driver_that_misbehaves_is_one_line_and_one_card(
    nvidia_tree, env, stand_in, with_driver, fault, said
):
    """A card NVML cannot open, or whose every fact it refuses, is said once, by its index,
    and is the one card at its PCI address, never a card "at None"; a memory size past 1 PiB
    (the KFD reader's cap) is no size and never the most VRAM."""
    result = run("devices", "--json", "--sysfs", str(nvidia_tree),
                 env=with_driver(env, stand_in, STAND_IN_FAULT=fault))  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    nvidia = [d for d in answer["devices"] if d["vendor"] == "nvidia"]
    assert len(nvidia) == 1 and nvidia[0]["pci"] == PCI and nvidia[0]["index"] == 0
    assert "None" not in json.dumps(nvidia)
    problems = [w for w in answer["warnings"] if "NVML" in w]
    assert problems == [f"NVML {with_driver(env, stand_in)['STRATA_NVML_LIBRARY']} (driver "
                        f"580.159.04, CUDA 13.0): {said}"]  # fmt: skip
    if fault == "huge-memory":
        assert nvidia[0]["vram_bytes"] is None
    else:
        assert nvidia[0]["gfx"] == "sm_unknown" and nvidia[0]["seen_by"] == ["pci", "nvidia"]


def test_cards_whose_facts_are_refused_are_placed_at_the_free_pci_functions_in_order(
    tmp_path, env, stand_in, with_driver
):
    root = write_nvidia_gpu(write_nvidia_gpu(tmp_path / "sys", PCI), "0000:c1:00.0")
    more = {"STAND_IN_NVML_CARDS": TWO_CARDS, "STAND_IN_FAULT": "device-calls-fail"}
    result = run("devices", "--sysfs", str(root), env=with_driver(env, stand_in, **more))
    assert result.returncode == 0, result.stderr
    refused = [line for line in result.stderr.splitlines() if "refused" in line]
    assert [line.split(": device ")[1].split(";")[1] for line in refused] == [
        f" taken to be the NVIDIA card at {PCI}",
        " taken to be the NVIDIA card at 0000:c1:00.0",
    ]
    table = [line.split() for line in result.stdout.splitlines() if "NVIDIA GPU at" in line]
    assert [(row[0], row[4]) for row in table] == [("0", PCI), ("1", "0000:c1:00.0")]
    assert "None" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("card", "said"),
    [
        (
            {"pci": "41:00", "name": "", "capability": [100, 0], "uuid": 7},
            "device 0: name '' is no text; UUID 7 is no text; PCI address '41:00' is not "
            "domain:bus:device.function; compute capability [100, 0] is no MAJOR.MINOR of a "
            "card; known by its index only (1 card without a PCI address, 0 NVIDIA PCI "
            "functions without a card)",
        ),
        (
            {"pci": PCI, "total_mem": -1, "refused": {"name": "Not Supported (3)"}},
            "device 0: name refused (Not Supported (3)); -1 bytes of memory; expected up to 1 PiB",
        ),
        ("a card", "device 0: not described; known by its index only (1 card without a PCI "
                   "address, 0 NVIDIA PCI functions without a card)"),  # fmt: skip
    ],
)
def test_each_fact_nvml_gives_is_checked_and_a_card_is_one_line(card, said):
    found = nvidia.interpret({"library": "libnvidia-ml.so.1", "devices": [card]}, {})
    assert found.problems == (f"NVML libnvidia-ml.so.1: {said}",)
    (report,) = found.reports
    # named by its index where its PCI address is unknown too (else "NVIDIA GPU at PCI")
    assert report.name == (None if report.pci else "NVML device 0")
    assert report.vram_bytes is None and report.gfx is None


def test_ten_thousand_nvml_devices_are_ten_thousand_cards(nvidia_tree, env, stand_in, with_driver):
    """Each at its own PCI address, in NVML order (grouping the reports is linear: it was
    quadratic, and 10,000 cards took 32 s)."""
    answer = devices_json(
        nvidia_tree, with_driver(env, stand_in, STAND_IN_NVML_COUNT="10000")
    )
    described = [d for d in answer["devices"] if "nvidia" in d["seen_by"]]
    assert [d["index"] for d in described] == list(range(10_000))
    assert len({d["pci"] for d in described}) == 10_000
    assert described[-1]["pci"] == "0101:38:0f.0" and described[-1]["name"] == "NVIDIA H200"


A100_MIGS = "MIG-a100aaaa-0001:10+MIG-a100aaaa-0002:20"
TWO_CARDS = (
    "NVIDIA H200,00000000:41:00.0,9.0,141,GPU-aaaa1111-0000-0000;"
    f"NVIDIA A100-SXM4-80GB,00000000:c1:00.0,8.0,80,GPU-bbbb2222-0000-0000,{A100_MIGS}"
)


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        # (name, CUDA ordinal, GiB) of the H200 at 41:00.0 and the A100 at c1:00.0
        (None, [("NVIDIA H200", 0, 141), ("NVIDIA A100-SXM4-80GB", 1, 80)]),
        ("1,0", [("NVIDIA H200", 1, 141), ("NVIDIA A100-SXM4-80GB", 0, 80)]),
        ("GPU-bbbb", [("NVIDIA H200", None, 141), ("NVIDIA A100-SXM4-80GB", 0, 80)]),
        ("0,7,1", [("NVIDIA H200", 0, 141), ("NVIDIA A100-SXM4-80GB", None, 80)]),
        (
            "MIG-a100aaaa-0002",
            [("NVIDIA H200", None, 141), ("NVIDIA A100-SXM4-80GB MIG MIG-a100aaaa-0002", 0, 20)],
        ),
    ],
)
def test_nvml_lists_every_card_and_strata_applies_cuda_visible_devices(
    tmp_path, env, stand_in, with_driver, visible, expected
):
    root = write_nvidia_gpu(write_nvidia_gpu(tmp_path / "sys", PCI), "0000:c1:00.0")
    more = {"STAND_IN_NVML_CARDS": TWO_CARDS}
    if visible is not None:
        more["CUDA_VISIBLE_DEVICES"] = visible
    answer = devices_json(root, with_driver(env, stand_in, **more))
    cards = [(d["name"], d["index"], d["vram_bytes"] >> 30) for d in answer["devices"]]
    assert cards == expected
    for device, (_, index, _) in zip(answer["devices"], expected, strict=True):
        hidden = device["reason"] == f"hidden by CUDA_VISIBLE_DEVICES={visible}"
        assert hidden == (index is None)
    seen = len([i for _, i, _ in expected if i is not None])
    assert (
        f"NVML {with_driver(env, stand_in)['STRATA_NVML_LIBRARY']} (driver 580.159.04, "
        f"CUDA 13.0) sees {'' if seen == 2 else f'{seen} of '}2 devices"
    ) in answer["notes"]


def test_no_nvml_without_an_nvidia_card(tmp_path, env, stand_in, with_driver):
    root = write_sysfs(tmp_path / "sys", [R9700])
    result = run(
        "devices", "-v", "--sysfs", str(root),
        env=with_driver(env, stand_in, STAND_IN_FAULT="segv-on-load"),
    )  # fmt: skip
    assert result.returncode == 0
    assert "warning" not in result.stderr
    assert (
        f"strata-core: debug: NVML not asked: no NVIDIA PCI display function under {root}"
        in result.stderr.splitlines()
    )


def _amd_display_function(root, pci="0000:03:00.0"):
    function = root / "bus/pci/devices" / pci
    function.mkdir(parents=True)
    (function / "vendor").write_text("0x1002\n")
    (function / "class").write_text("0x030000\n")
    return root


@pytest.mark.parametrize(
    ("tree", "asked"),
    [
        (lambda root: write_nvidia_gpu(root, PCI), False),
        (lambda root: write_sysfs(root, [R9700]), True),  # a KFD GPU node
        (_amd_display_function, True),  # an AMD PCI display function, no KFD
    ],
)
def test_the_hip_runtime_is_asked_only_where_sysfs_shows_an_amd_gpu(
    tmp_path, env, stand_in, tree, asked
):
    root = tree(tmp_path / "sys")
    result = run(
        "devices", "-v", "--hip", "--sysfs", str(root),
        env=env | {"STRATA_HIP_LIBRARY": stand_in, "STAND_IN_FAULT": "segv-on-load"},
    )  # fmt: skip
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    crashed = any("HIP runtime probe failed (exit status -11" in line for line in lines)
    assert crashed == asked
    asking = "strata-core: debug: asking the HIP runtime: "
    assert any(line.startswith(asking) for line in lines) == asked
    assert (
        f"strata-core: debug: HIP runtime not asked: no KFD GPU node and no AMD PCI display "
        f"function "
        f"under {root}" in lines
    ) == (not asked)


def test_without_the_nvidia_driver_nvml_is_a_note_and_the_cards_are_known_by_pci():
    found = nvidia.interpret({"library": None, "tried": ["libnvidia-ml.so.1"]}, {})
    assert found.notes == ("no NVIDIA driver found (tried libnvidia-ml.so.1)",)
    assert found.complete_for == ()


def test_an_nvidia_plan_lists_no_amd_switch(env):
    text = run("plan", "-v", "--device", "sm_90", env=env).stdout
    answer = json.loads(run("plan", "--json", "--device", "sm_90", env=env).stdout)
    for amd_only in ("STRATA_HIP_WMMA", "STRATA_ROCBLAS_TUNING", "STRATA_RDNA2_SGEMM"):
        assert amd_only not in answer["switches"] and f"  {amd_only} " not in text
    assert "STRATA_HIP" not in text
    assert {"STRATA_CUBLASLT_TABLE", "STRATA_PREFILL_WARM"} <= set(answer["switches"])
    amd = json.loads(run("plan", "--json", "--device", "gfx1201", env=env).stdout)
    assert "STRATA_CUBLASLT_TABLE" not in amd["switches"] and "STRATA_HIP_WMMA" in amd["switches"]


def test_an_nvidia_card_no_plugin_runs_is_named_as_one(tmp_path, env, stand_in, with_driver):
    """Only an NVIDIA card: `plan` says no GPU runs (not "no AMD GPU") and names the card as
    NVIDIA, without a driver (compute capability unknown) and with the cuda plugin off."""
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    for carried, said in (
        (env, "CUDA 0 (sm_unknown) passed over: no installed plugin runs sm_unknown (NVIDIA, "
              "compute capability unknown)"),
        (with_driver(env, stand_in, STRATA_DISABLE_PLUGINS="cuda"),
         "CUDA 0 (sm_90) passed over: no installed plugin runs sm_90 (NVIDIA compute capability "
         "9.0): cuda is disabled: named in STRATA_DISABLE_PLUGINS"),
    ):  # fmt: skip
        result = run("plan", "--sysfs", str(root), env=carried)
        assert result.returncode == 0 and "AMD" not in result.stderr
        lines = result.stderr.splitlines()
        assert lines[0] == (
            "strata-core: no GPU to run on (no visible GPU that an installed plugin runs); the "
            "host backend runs"
        )
        assert f"strata-core: {said}" in lines


def test_the_devices_table_names_an_nvidia_card_briefly(tmp_path, env, stand_in, with_driver):
    """The family column says NVIDIA; the compute capability (or why it is unknown) is the
    status on the line below; no wave size is claimed of it; every line fits in 100 columns."""
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    unknown = run("devices", "-v", "--sysfs", str(root), env=env | {"COLUMNS": "100"})
    unknown = unknown.stdout.splitlines()
    assert max(len(line) for line in unknown) <= 100
    assert unknown[1].split() == [
        "0", "NVIDIA", "GPU", "at", PCI, "sm_unknown", "NVIDIA", "discrete", "?", PCI[5:]
    ]  # fmt: skip
    assert unknown[2].startswith(
        "      NVIDIA, compute capability unknown (the NVIDIA driver did not describe it); "
    )
    assert not any("wave" in line for line in unknown)
    assert "        hip_rdna4 carries code for AMD GPUs; sm_unknown is an NVIDIA target" in unknown
    known = run("devices", "--sysfs", str(root), env=with_driver(env, stand_in)).stdout
    assert known.splitlines()[1].split()[:6] == ["*", "0", "NVIDIA", "H200", "sm_90", "NVIDIA"]
    assert "      NVIDIA, compute capability 9.0; cuda carries PTX for sm_90" in known.splitlines()
    assert "architecture database" not in known
    answer = devices_json(root, with_driver(env, stand_in))
    assert answer["devices"][0]["status"] == "NVIDIA, compute capability 9.0"


def test_a_drivers_control_characters_are_shown_escaped(tmp_path, env, stand_in, with_driver):
    """An NVML name with an escape sequence and a line break cannot colour the screen or forge
    a `strata-core:` line; JSON keeps the name as the driver gave it."""
    root = write_nvidia_gpu(tmp_path / "sys", PCI)
    name = "Evil\x1b[31mRED\nstrata-core: error: forged"
    carried = with_driver(env, stand_in, STAND_IN_NAME=name)
    for args in (("devices",), ("devices", "-v"), ("plan", "-v"), ("env",)):
        result = run(*args, "--sysfs", str(root), env=carried)
        said = result.stdout + result.stderr
        assert "\x1b" not in said and "forged" in said, args
        assert not any(line.startswith("strata-core: error:") for line in said.splitlines())
        assert "Evil\\x1b[31mRED\\nstrata-core: error: forged" in said.replace("\n    ", " ")
    assert devices_json(root, carried)["devices"][0]["name"] == name
