"""Every command of `strata-core`, one record each: its name (its module is
strata_core/cli/NAME.py), its one-line help, its description and examples (`strata-core
COMMAND --help`), and whether its answer is kept in the answer cache. The parser, the help and
the launcher's cache read this table; it imports nothing, so that the launcher's path stays
light."""

from __future__ import annotations


class Command:
    """One command: ``cached``: its answer (stdout, stderr) is kept in the answer cache and
    given again while what it read is unchanged (a read-only command that writes no file)."""

    __slots__ = ("name", "summary", "description", "examples", "cached")

    def __init__(
        self, name: str, summary: str, description: str, examples: str, cached: bool = False
    ) -> None:
        self.name, self.summary, self.description = name, summary, description
        self.examples, self.cached = examples, cached


def _by_name(*commands: Command) -> dict[str, Command]:
    return {command.name: command for command in commands}


COMMANDS = _by_name(
    Command(
        "plugins",
        "list the architecture plugins",
        "Each architecture plugin: its distribution, version, API version, targets and status\n"
        "(and why), then each GPU plugin's code objects and the compiler that built them.",
        "strata-core plugins\n  strata-core plugins --check --json",
    ),
    Command(
        "devices",
        "list the GPUs (AMD and NVIDIA) and who runs each",
        "The GPUs of this PC: AMD cards by HIP number, NVIDIA cards by CUDA ordinal, each with\n"
        "its target, family, VRAM, support status and the plugin that runs it; * marks the\n"
        "cards a run uses.",
        "strata-core devices\n  strata-core devices --gpus 1,0 --json",
        cached=True,
    ),
    Command(
        "env",
        "what a report of a run needs: versions, drivers, devices, variables",
        "Everything a bug report needs in one command: strata and its plugins, Python, the OS,\n"
        "the CPU, numpy and its BLAS, ROCm, the GPU drivers and runtimes, the BLAS libraries,\n"
        "the devices, the variables that change a plan and the run config.",
        "strata-core env > report.txt",
    ),
    Command(
        "plan",
        "show what would run and why; changes nothing",
        "What would run on the main card (or a card named with --device) and why: the switches\n"
        "strata sets, with their reasons (-v: every switch, the engine's built-ins too), the\n"
        "engine arguments, kernels, tuning tables, package and start lines. With -- ENGINE ARGS:\n"
        "the plan `run -- ENGINE ARGS` follows (the engine's --kv, --kv-resident, --gpu and\n"
        "--backend are facts of the run).",
        "strata-core plan\n  strata-core plan --device gfx1201 --kv int8 --pack IQ3_S\n"
        "  strata-core plan --json -- build-hip/strata --serve --kv int8 --gpu 1\n"
        "  strata-core plan --explain STRATA_HIP_WMMA\n"
        "  strata-core plan --toml --output strata.toml",
        cached=True,
    ),
    Command(
        "run",
        "run the workload on this PC's backend, or start the engine: run -- ENGINE ARGS",
        "Without --: plan, then run a workload of decode and prompt steps on the plan's\n"
        "backend and check every result. With -- ENGINE ARGS...: become the engine, with the\n"
        "plan's environment and arguments (the backend and the chosen cards among them); with\n"
        "nothing after --, the run config's exe starts.",
        "strata-core run\n  strata-core run --gpus 1,0 -- build-hip/strata --serve",
    ),
    Command(
        "tune",
        "calibrate the card's prompt GEMM library (the host backend's where no card runs) "
        "and write a table",
        "Calibrate the prompt GEMM library of the card (or the host backend) and write a\n"
        "tuning table; with --switches, measure the calibratable switches instead.",
        "strata-core tune\n  strata-core tune --host --tokens 256,512\n"
        "  strata-core tune --switches --dry-run",
    ),
    Command(
        "table",
        "tuning tables",
        "Tuning tables: `table check` validates them by the lookup's rules.",
        "strata-core table check ~/.local/share/strata/tuning/*.txt",
    ),
    Command(
        "help",
        "show the help of strata-core, or of one command (its --help)",
        "The help of strata-core, or of COMMAND (the same as strata-core COMMAND --help).",
        "strata-core help\n  strata-core help plan",
    ),
)
