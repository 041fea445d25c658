"""Built-in plugin ``core``: the switches the engine reads (most of them only its HIP build),
and the rules that hold on every card. Rows follow the engine's HIP backend page (AMD_HIP.md);
``section`` names where."""

from __future__ import annotations

import attrs

from ..api.hookspec import hookimpl
from ..api.records import Device, RunContext
from ..api.switches import INTEGER, NUMBER, PATH, Default, Defaults, Switch

strata_api_version = 2

GIB = 1 << 30
OFF_ON = ("0", "1")
GFX11_12 = ("gfx11", "gfx12")
PLE_RAM_MARGIN = 8 * GIB

SPEED = "Speed switches"
STREAMS = "Switches for shared-expert and draft streams"
RDNA2 = "RDNA2 (gfx1030)"
IGPU = "Integrated GPUs (mini PCs)"
TUNING = "Tuning tables"

# name, values, meaning, changes bits, what the engine does unset, where (the generations or
# targets the page names), os, section
# fmt: off
_ROWS = (
    ("STRATA_HIP_WMMA", ("0", "1", "auto"),
     "QSA prompt attention on the matrix cores; auto only for batches of STRATA_HIP_WMMA_MIN_Q "
     "or more queries", True, "off", GFX11_12, (), SPEED),
    ("STRATA_HIP_WMMA_MIN_Q", (INTEGER,), "smallest query batch that STRATA_HIP_WMMA=auto "
     "sends to the matrix cores", True, "64", GFX11_12, (), SPEED),
    ("STRATA_PF_FUSED", OFF_ON, "prompt experts on int8 matrix-core kernels instead of MMQ",
     True, "off (MMQ)", ("gfx12",), (), SPEED),
    ("STRATA_PF_FUSED_NATIVE", OFF_ON, "=0 keeps MMQ with STRATA_PF_FUSED set", True, "on",
     ("gfx12",), (), SPEED),
    ("STRATA_SCORES_THREAD", OFF_ON, "exact long-prompt QSA scorer (bitwise equal to the warp "
     "scorer)", False, "off", ("gfx12", "gfx1100"), (), SPEED),
    ("STRATA_SELECT_WMMA", OFF_ON, "matrix-core block scorer for the QSA top-k; selects "
     "slightly differently", True, "off", GFX11_12, (), SPEED),
    ("STRATA_HC_Q8", OFF_ON, "8-bit hyper-connection weights; =0 restores the bf16 read",
     True, "off (bf16 read)", ("gfx12", "gfx1151"), (), SPEED),
    ("STRATA_GDN_CHUNKED", ("0", "1", "2"), "prompt gated DeltaNet in 16-token chunks on the "
     "matrix cores (=2 is the same as 1)", True, "off",
     ("gfx1100", "gfx1101", "gfx1102", "gfx1150", "gfx1151"), (), SPEED),
    ("STRATA_PF_GEMM", OFF_ON, "prompt FP16 projections on the 128 x 256 WMMA GEMM", True,
     "off", ("gfx11",), (), SPEED),
    ("STRATA_PF_PAD", OFF_ON, "padded prompt GEMM strides", False, "off", ("gfx11",), (), SPEED),
    ("STRATA_HIP_ROUTER_OLD", OFF_ON, "the portable MoE router kernel instead of the fast one",
     True, "off (fast router)", (), (), SPEED),
    ("STRATA_PREFILL_WARM", OFF_ON, "warm-up BF16 and FP16 products while the expert arena "
     "loads", False, "on", (), (), SPEED),
    ("STRATA_HIP_QUEUE_PRIME", OFF_ON, "ordered opening of two GPU queues at start (avoids "
     "slow starts)", False, "off", ("gfx1200", "gfx1201"), ("linux",), SPEED),
    ("STRATA_PLE_AUTO_RAM", OFF_ON, "keep the n-gram (PLE) table in RAM when --ple-io is not "
     "given", False, "on where the RAM holds the table plus 8 GiB", (), (), SPEED),
    ("STRATA_TOPK_OLD", OFF_ON, "the original top-k kernel", False, "off", (), (), SPEED),
    ("STRATA_TOPK_STREAM", OFF_ON, "=0 runs the register kernel in the 90K-135K band, where a "
     "prompt read runs the wide one from about 90K cells", False, "on", (), (), SPEED),
    ("STRATA_SH_STREAM", OFF_ON, "shared-expert fork on its own stream (output identical)",
     False, "off", (), (), STREAMS),
    ("STRATA_MTP_SIDE_STREAM", OFF_ON, "draft (MTP) side stream; =1 creates it on any HIP card",
     False, "off", (), (), STREAMS),
    ("STRATA_DENSE_MMQ", OFF_ON, "dense GGUF prompt projections through int8 MMQ kernels",
     True, "off (dequantize + hipBLAS)", (), (), STREAMS),
    ("STRATA_HIP_ADAPT_KERNEL_COPY", OFF_ON, "adaptive-tier swaps copied by a kernel instead "
     "of the SDMA engine", False, "off", (), (), STREAMS),
    ("STRATA_HIPBLASLT_TABLE", ("on", "off"), "use the packaged hipBLASLt tuning table when "
     "it matches the architecture and version", True, "off", (), (), TUNING),
    ("STRATA_HIPBLASLT_TUNING", (PATH,), "this hipBLASLt table file, always kept", True,
     "no file", (), (), TUNING),
    ("STRATA_HIPBLASLT_VERBOSE", OFF_ON, "print the tuned solution per shape and a "
     "tuned_launches=... fallbacks=... summary at exit", False, "off", (), (), "Tuning table"),
    ("STRATA_ROCBLAS_VERBOSE", OFF_ON, "print the rocBLAS solution per shape and a "
     "tuned_launches=... fallbacks=... summary at exit", False, "off", (), (), "rocBLAS table"),
    ("STRATA_HIP_PROMPT_F16", OFF_ON, "16-bit prompt GEMMs FP16 in and out", True, "off",
     (), (), RDNA2),
    ("STRATA_F16_RANGE", OFF_ON, "print the largest value that entered or left FP16 per prompt",
     False, "off", (), (), RDNA2),
    ("STRATA_DBG_NAN", OFF_ON, "count non-finite FP16 outputs", False, "off", (), (), RDNA2),
    ("STRATA_RDNA2_SGEMM", ("0", "1", "all"), "widen both GEMM inputs to FP32 and run SGEMM; "
     "=all on any AMD card", True, "off", (), (), RDNA2),
    ("STRATA_ROCBLAS_TUNING", (PATH,), "a rocBLAS solution table (file or directory) for the "
     "FP16 route", True, "no table", (), (), RDNA2),
    ("STRATA_SELECT_SIMT", OFF_ON, "QSA block scores on the FP32 tiled scorer", True, "off",
     (), (), RDNA2),
    ("STRATA_HC_PERSIST", OFF_ON, "the verifier's hyper-connection read as one persistent "
     "kernel (not offered on gfx11 and gfx12)", True, "off", ("gfx10",), (), RDNA2),
    ("STRATA_FILE_CACHE_OLD_RULE", OFF_ON, "the old file-tier cache rule; =1 forces it on any "
     "Linux build, =0 the current one", False, "the current rule", (), ("linux",), RDNA2),
    ("STRATA_PA_FAST", OFF_ON, "prompt attention with single FP16 q and p", True, "off",
     GFX11_12, (), IGPU),
    ("STRATA_HC_UPMIX", OFF_ON, "the hyper-connection up projection with its epilogue", True,
     "off", GFX11_12, (), IGPU),
    ("STRATA_IGPU_PROMPT_SET", OFF_ON, "=1 turns the iGPU prompt set on where it is not the "
     "default, =0 off", True, "on for gfx1103 on Linux", (), (), IGPU),
    ("STRATA_IGPU_DEFAULTS", OFF_ON, "=0 turns the iGPU prompt set off whatever else is set",
     True, "on", (), (), IGPU),
    ("STRATA_WDDM_BUDGET", OFF_ON, "lower the free VRAM figure by what Windows' video memory "
     "budget withholds", False, "on", (), ("windows",), "Windows"),
    ("STRATA_RESIDENT_HEADROOM_GIB", (NUMBER,), "GiB of MemAvailable left free when sizing "
     "the resident expert set", False, "4", (), (), "Long prompts on a big card"),
    ("STRATA_PCIE_FRAC_DEFAULT", ("old",), "=old restores the 0.55 --pcie-frac start on gfx12",
     True, "0.15 on gfx12 native packs", ("gfx12",), (), "RDNA4 (gfx1201)"),
    ("--pcie-frac", (NUMBER,), "share of the missing expert rows fetched over PCIe; the CPU "
     "pool computes the rest", True, "the engine's value for the card", (), (),
     "RDNA4 (gfx1201)"),
    ("--pipeline-windows", (INTEGER,), "verify windows in flight across two cards (0: the "
     "plain loop)", False, "the engine's default", (), (), "gfx906"),
    ("--ple-io", ("direct", "mmap", "ram"), "how the PLE table is read", False,
     "direct reads, or RAM through STRATA_PLE_AUTO_RAM", (), (), "RDNA4 (gfx1201)"),
)
# fmt: on

#: the rows every backend's engine reads (AMD_HIP.md: "all" in the Speed switches' Cards
#: column, the streams that are "Off on HIP" and so on elsewhere, the resident set's headroom,
#: and the engine arguments: "the CUDA and gfx11 parts keep their own measured values");
#: every other row is the HIP build's only, and an NVIDIA plan does not list it
EVERY_BACKEND = frozenset({
    "STRATA_PREFILL_WARM", "STRATA_PLE_AUTO_RAM", "STRATA_SH_STREAM", "STRATA_MTP_SIDE_STREAM",
    "STRATA_RESIDENT_HEADROOM_GIB", "--pcie-frac", "--pipeline-windows", "--ple-io",
})  # fmt: skip

SWITCHES = tuple(
    attrs.evolve(switch, backends=() if switch.name in EVERY_BACKEND else ("hip",))
    for switch in (Switch(*row) for row in _ROWS)
)

#: strata-core's own environment: read by strata, never passed to the engine as switches.
CONTROL_VARIABLES = frozenset(
    {
        "STRATA_SYSFS",
        "STRATA_HIP_PROBE",
        "STRATA_HIP_PROBE_TIMEOUT",
        "STRATA_RUN_TIMEOUT",
        "STRATA_HIP_LIBRARY",
        "STRATA_CUDA_PROBE",
        "STRATA_CUDA_LIBRARY",
        "STRATA_NVML_LIBRARY",
        "STRATA_CUBLASLT_LIBRARY",
        "STRATA_PLUGINS",
        "STRATA_DISABLE_PLUGINS",
        "STRATA_DISABLE_PLUGIN_AUTOLOAD",
        "STRATA_STRICT_PLUGINS",
        "STRATA_ARCH_PLUGIN",
        "STRATA_DEBUG",
        "STRATA_CONFIG",
        "STRATA_SAFE_CONFIG",
        "STRATA_CACHE",
        "STRATA_CACHE_DIR",
        "STRATA_LOG_LEVEL",
        "STRATA_TUNING_DIR",
        "STRATA_HIPBLASLT_LIBRARY",
        "STRATA_ROCBLAS_LIBRARY",
        "STRATA_HIP_CLANG",
        "STRATA_AMDGPU_IDS",
    }
)
#: Who reads a variable of the page that no switch row declares.
ENGINE, GFX906_BUILD, SETUP, CMAKE, SOURCE = "engine", "gfx906", "setup", "cmake", "source"

# Every other STRATA_ name of the reference page (with _ROWS, all of them; the page's tables
# and prose): name, who reads it, the section that names it.
# fmt: off
_PAGE_ROWS = (
    ("STRATA_DECODE_TIMING", ENGINE, STREAMS),
    ("STRATA_SH_FORK_LATE", SOURCE, STREAMS),
    ("STRATA_PREFILL_CPU_SHARE", ENGINE, STREAMS),
    ("STRATA_PIPED_CONCURRENT", ENGINE, STREAMS),
    ("STRATA_PREFILL_STREAM_MIN", ENGINE, STREAMS),
    ("STRATA_IO_THREADS", ENGINE, STREAMS),
    ("STRATA_GDN_REC_HEADS", ENGINE, "Opt-in chunked prompt GDN on gfx11"),
    ("STRATA_SCORES_THREAD_TRACE", ENGINE, "Exact long-prompt QSA scorer"),
    ("STRATA_COLD_TRACE", ENGINE, "RDNA4 (gfx1201)"),
    ("STRATA_ARENA_PIN_GIB", ENGINE, IGPU),
    ("STRATA_PF_SWITCH_MIN_T", ENGINE, "History / older measurements"),
    ("STRATA_GFX906_ATTN_QUERY_SWIZZLE", GFX906_BUILD, "gfx906"),
    ("STRATA_GFX906_ATTN_REDUCE12", GFX906_BUILD, "gfx906"),
    ("STRATA_EXP_MODE", GFX906_BUILD, "gfx906"),
    ("STRATA_MMVQ_WAVE", GFX906_BUILD, "gfx906"),
    ("STRATA_ROUTE_PER_TOKEN", GFX906_BUILD, "gfx906"),
    ("STRATA_GR_FAST", GFX906_BUILD, "gfx906"),
    ("STRATA_GR_SPLIT", GFX906_BUILD, "gfx906"),
    ("STRATA_ROCM_VERSION", SETUP, "Install with setup"),
    ("STRATA_ROCM_INDEX", SETUP, "Install with setup"),
    ("STRATA_EXPERIMENTAL_GFX1103", SETUP, "Tuning table"),
    ("STRATA_HIP_ARCHS", SETUP, "Windows"),
    ("STRATA_ENABLE_HIP", CMAKE, "Build"),
    ("STRATA_ENABLE_CUDA", CMAKE, "Build"),
    ("STRATA_GGML_DIR", CMAKE, "Build"),
    ("STRATA_BUILD_TESTS", CMAKE, "RDNA4 (gfx1201)"),
    ("STRATA_PREFILL_MMQ", CMAKE, "RDNA4 (gfx1201)"),
    ("STRATA_HIP_GFX906", CMAKE, "gfx906"),
)
# fmt: on


def page_variables() -> dict[str, tuple[str, str]]:
    """Every variable the reference page documents: name -> (its section, who reads it)."""
    declared = {s.name: (s.section, ENGINE) for s in SWITCHES if not s.is_arg}
    return declared | {name: (section, reader) for name, reader, section in _PAGE_ROWS}


def undeclared_note(name: str, plugin: str) -> str | None:
    """What to say of a page variable that no switch of ``plugin``'s build declares, or None
    where the engine takes it as set."""
    section, reader = page_variables().get(name, ("", ENGINE))
    where = f"(AMD_HIP.md, {section})"
    if reader == GFX906_BUILD and plugin != "gfx906":
        return f"is read only by the gfx906 build {where}; {plugin} does not read it"
    if reader == CMAKE:
        return f"is a CMake option of the engine's build {where}, not read when it runs"
    if reader == SOURCE:
        return f"is a name in the engine's source {where}, not a variable it reads"
    return None


@hookimpl
def strata_declare_switches() -> tuple[Switch, ...]:
    return SWITCHES


@hookimpl
def strata_switch_defaults(device: Device, context: RunContext) -> Defaults:
    values = []
    ple = _ple_auto_ram(context)
    if ple is not None:
        values.append(ple)
    warnings = []
    if (
        context.given.get("STRATA_SH_STREAM") == "1"
        and context.os == "windows"
        and context.kv_streaming
    ):
        warnings.append(
            "STRATA_SH_STREAM=1 with KV streaming on Windows stopped the engine on its first "
            f"request on one RX 6900 XT ({STREAMS}); it is kept as set"
        )
    return Defaults(tuple(values), warnings=tuple(warnings))


def _ple_auto_ram(context: RunContext) -> Default | None:
    if (
        context.arg_given("--ple-io")
        or context.ram_bytes is None
        or context.ple_table_bytes is None
    ):
        return None
    need = context.ple_table_bytes + PLE_RAM_MARGIN
    fits = context.ram_bytes >= need
    return Default(
        "STRATA_PLE_AUTO_RAM",
        "1" if fits else "0",
        f"RAM {context.ram_bytes / GIB:.1f} GiB {'holds' if fits else 'cannot hold'} the "
        f"{context.ple_table_bytes / GIB:.1f} GiB PLE table plus 8 GiB ({SPEED})",
    )
