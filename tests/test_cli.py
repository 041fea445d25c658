"""The strata-core command as a user runs it: a separate process, its output and exit status."""

import json
import subprocess
import sys

import pytest
from cli_runner import strata_core

from strata_core.testing.sysfs import MI50, R9700, RADEON_780M, RX_7900_XTX, write_sysfs

run = strata_core


def test_version(env):
    assert run("--version", env=env).stdout.strip() == "strata-core 0.1.0"


def test_plugins_json_lists_every_in_tree_plugin(env):
    answer = json.loads(run("plugins", "--json", env=env).stdout)
    assert answer["schema_version"] == 1
    plugins = {p["name"]: p for p in answer["plugins"]}
    library = plugins["hip_rdna4"].pop("kernel_library")
    assert plugins["hip_rdna4"] == {
        "name": "hip_rdna4",
        "distribution": "strata-hip-rdna4",
        "version": "0.1.0",
        "api_version": 2,
        "archs": ["gfx1200", "gfx1201"],
        "status": "active",
        "why": "",
        "builtin": False,
    }
    assert plugins["igpu"]["archs"] == ["gfx1103", "gfx1150", "gfx1151", "gfx1152"]
    assert plugins["kfd"]["builtin"] and plugins["hip"]["builtin"]
    assert library["targets"] == ["gfx1200", "gfx1201"]
    assert {t: p.rsplit("/", 1)[1] for t, p in library["code_objects"].items()} == {
        "gfx1200": "strata_kernels-gfx1200.hsaco",
        "gfx1201": "strata_kernels-gfx1201.hsaco",
    }
    assert library["problems"] == [] and "clang" in library["compiler"]
    assert plugins["host"]["kernel_library"] is None


def test_plugins_text_shows_status_and_why(env):
    out = run("plugins", env=env | {"STRATA_DISABLE_PLUGINS": "gfx906"}).stdout.splitlines()
    assert max(len(line) for line in out) <= 100
    rows = {line.split()[0]: line.split() for line in out[: out.index("")] if line[0] != " "}
    assert rows["hip_rdna2"][1:] == ["strata-hip-rdna2", "0.1.0", "2", "gfx1030,gfx1031", "active"]
    # A disabled plugin is not even imported: its API version and targets are unknown.
    assert rows["gfx906"][1:] == [
        "strata-gfx906",
        "0.1.0",
        "-",
        "-",
        "disabled",
    ]
    row = next(n for n, line in enumerate(out) if line.startswith("gfx906 "))
    assert out[row + 1] == "    named in STRATA_DISABLE_PLUGINS"  # why, below its row
    # The libraries below the table are both kinds: the AMD plugins' code objects, cuda's PTX.
    libraries = out[out.index("kernel libraries (HIP code objects and PTX):") + 1 :]
    assert "  hip_rdna2: gfx1030 strata_kernels-gfx1030.hsaco" in libraries
    assert "  cuda: sm_90 strata_kernels-sm_90.ptx" in libraries


def test_devices_json(tmp_path, env):
    root = write_sysfs(tmp_path, [RADEON_780M, RX_7900_XTX])
    answer = json.loads(run("devices", "--json", "--sysfs", str(root), env=env).stdout)
    assert answer["schema_version"] == 1
    assert (answer["backend"], answer["selected"]) == ("hip", [1])
    igpu, card = answer["devices"]
    assert card == {
        "index": 1,
        "vendor": "amd",
        "backend": "hip",
        "name": "Radeon RX 7900 XTX",
        "gfx": "gfx1100",
        "physical_gfx": "gfx1100",
        "family": "RDNA3",
        "matrix_cores": "WMMA",
        "integrated": False,
        "integrated_evidence": "DRM board_info present (amdgpu hides it on APUs)",
        "vram_bytes": 24 << 30,
        "wave_size": 32,
        "pci": "0000:86:00.0",
        "plugin": "hip_rdna3",
        "status": "maintainer-tested",
        "usable": True,
        "reason": "hip_rdna3 carries code for gfx1100",
        "refusals": [],
        "selected": True,
        "role": None,
        "override": None,
        "seen_by": ["kfd"],
    }
    assert igpu["plugin"] == "igpu" and igpu["status"] == "opt-in build"
    assert not igpu["selected"]


def test_devices_text_through_strata_sysfs(tmp_path, env):
    root = write_sysfs(tmp_path, [MI50, R9700])
    result = run("devices", "--gpus", "0,1", env=env | {"STRATA_SYSFS": str(root)})
    out = result.stdout
    header, mi50 = out.splitlines()[0:2]
    assert header.split() == ["#", "card", "target", "family", "kind", "VRAM", "PCI"]
    assert mi50.split()[:2] == ["*", "0"]
    assert [c.strip() for c in mi50.split("  ") if c.strip()][2:5] == [
        "Instinct MI60 / MI50",
        "gfx906",
        "GCN5 (Vega20)",
    ]
    assert (
        "source build, community-tested; no matrix cores; gfx906 carries code for gfx906 [helper]"
    ) in out
    assert "maintainer-tested; WMMA matrix cores; hip_rdna4 carries code for gfx1201 [main]" in out
    assert result.stderr.startswith(
        "strata-core: cards of two families (GCN5 (Vega20), RDNA4) need a system ROCm 7"
    )
    assert out.rstrip().endswith("selected: 0, 1 (--gpus from command line)")


def test_devices_on_a_machine_without_kfd(tmp_path, env):
    out = run("devices", "--sysfs", str(tmp_path), env=env).stdout
    assert out.splitlines()[-1] == "no GPU found"


def test_malformed_tree_warns_in_one_line_each_and_goes_on(tmp_path, env):
    root = write_sysfs(tmp_path, [RX_7900_XTX, R9700])
    (root / "class/kfd/kfd/topology/nodes/1/properties").write_text("gfx_target_version x\n")
    result = run("devices", "--sysfs", str(root), env=env)
    assert result.stderr.splitlines() == [
        f"strata-core: warning: {root}/class/kfd/kfd/topology/nodes/1/properties:1: "
        "expected 'name value', got 'gfx_target_version x'",
        f"strata-core: warning: {root}/class/kfd/kfd/topology/nodes/1/properties: empty; node "
        "skipped",
    ]
    assert "gfx1201" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("devices", "--gpu", "4"),
            "--gpu from command line: no HIP device 4 (visible HIP devices: 0)",
        ),
        (
            ("devices", "--gpu-roles", "0=boss"),
            "--gpu-roles 0=boss: expected N=main or N=helper, got '0=boss'",
        ),
        (("devices", "--sysfs", "/no/such/dir"), "--sysfs /no/such/dir: no such directory"),
    ],
)
def test_user_errors_exit_2_with_one_line(tmp_path, env, args, message):
    root = write_sysfs(tmp_path, [RX_7900_XTX])
    result = run(*args, env=env | {"STRATA_SYSFS": str(root)}, check=False)
    assert result.returncode == 2
    assert result.stderr == f"strata-core: error: {message}\n"


def test_bad_probe_timeout_is_a_user_error(env):
    result = run("devices", env=env | {"STRATA_HIP_PROBE_TIMEOUT": "soon"}, check=False)
    assert (result.returncode, result.stderr) == (
        2,
        "strata-core: error: STRATA_HIP_PROBE_TIMEOUT=soon: expected a positive number of "
        "seconds\n",
    )


@pytest.mark.parametrize("args", [("--help",), ("plugins",), ("plugins", "--json")])
def test_help_and_plugins_import_neither_numpy_nor_cffi(env, args):
    code = (
        "import sys; from strata_core.cli.main import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in ('numpy', 'cffi') if m in sys.modules)\n"
        "print('HEAVY', heavy, file=sys.stderr)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stderr.strip().splitlines()[-1] == "HEAVY []"


def test_devices_keeps_the_run_configs_choice(tmp_path, env):
    root = write_sysfs(tmp_path / "sys", [RADEON_780M, RX_7900_XTX])
    config = tmp_path / "strata.toml"
    config.write_text("gpu = 0\n")
    answer = json.loads(
        run("devices", "--json", "--sysfs", str(root), "--config", str(config), env=env).stdout
    )
    assert answer["selected"] == [0]
    assert answer["selection_reason"] == f"gpu from {config}"  # the run config's key


def test_a_card_no_plugin_runs_is_one_short_line_and_the_long_form_with_v(env, tmp_path):
    from strata_core.testing.sysfs import fake_gpu

    root = write_sysfs(tmp_path, [R9700, fake_gpu("gfx908", pci_bus=0x05)])
    short = run("devices", "--sysfs", str(root), env=env).stdout.splitlines()
    assert (
        "      neither on the page nor described by an installed plugin; no installed plugin runs "
        "gfx908 (gfx9, described by no installed plugin)"
    ) in short
    assert not any("wave64" in line for line in short)
    verbose = run("devices", "-v", "--sysfs", str(root), env=env).stdout.splitlines()
    assert "        hip_rdna4 is a wave32 build for gfx1200, gfx1201; gfx908 is wave64" in verbose
    answer = json.loads(run("devices", "--json", "--sysfs", str(root), env=env).stdout)
    assert "cuda runs NVIDIA GPUs; gfx908 is not one" in answer["devices"][1]["refusals"]


def test_a_plugin_built_without_a_compiler_is_not_shown_active(env, tmp_path):
    from strata_core.testing.distributions import write_distribution

    problem = "built without a HIP compiler (no STRATA_HIP_CLANG, ROCm clang or clang): no " \
        "code objects, nothing runs on the GPU"
    site = write_distribution(
        tmp_path / "site", "strata-nocc", "1.0", {"nocc": "nocc_plugin:plugin"}, {}
    )
    package = site / "nocc_plugin"
    (package / "kernels").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from strata_core.api.arch_plugin import ArchPlugin\n\n"
        "class NoCompiler(ArchPlugin):\n    strata_api_version = 1\n\nplugin = NoCompiler()\n"
    )
    (package / "kernels" / "build.json").write_text(json.dumps(
        {"source": "strata_kernels.hip", "targets": ["gfx1032"], "code_objects": {},
         "problem": problem}
    ))  # fmt: skip
    out = run("plugins", env=env | {"PYTHONPATH": str(site)}).stdout.splitlines()
    (row,) = [n for n, line in enumerate(out) if line.startswith("nocc ")]
    assert out[row].endswith("  plans only") and " active" not in out[row]
    assert out[row + 1] == f"    {problem}"  # why, below its row


def test_devices_json_names_the_backend_that_runs(env, tmp_path):
    """With no GPU, `plan` runs the host backend, and `devices --json` says so."""
    devices = json.loads(run("devices", "--json", "--sysfs", str(tmp_path), env=env).stdout)
    plan = json.loads(run("plan", "--json", "--sysfs", str(tmp_path), env=env).stdout)
    assert devices["backend"] == plan["backend"] == "host"
    assert devices["devices"] == devices["selected"] == []
    env_answer = json.loads(run("env", "--json", "--sysfs", str(tmp_path), env=env).stdout)
    assert env_answer["backend"] == "host"


def test_a_bare_call_is_shown_the_commands(env):
    """As git: usage on a bare or wrong top-level call, -V as --version, help [COMMAND]."""
    bare = run(env=env, check=False)
    assert bare.returncode == 2 and bare.stdout == ""
    assert bare.stderr.startswith("usage: strata-core ") and "plugins" in bare.stderr
    assert "required" not in bare.stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [(("-x",), "strata-core: error: -x is not an option of strata-core"),
     (("--verbos",), "strata-core: error: --verbos is not an option of strata-core; did you "
      "mean --verbose?"),
     (("-v",), "strata-core: error: name a command")],
)  # fmt: skip
def test_a_wrong_top_level_call_says_why_and_shows_the_usage(env, args, line):
    result = run(*args, env=env, check=False)
    assert result.returncode == 2
    said = result.stderr.splitlines()
    assert said[0] == line and said[1].startswith("usage: strata-core ")
    assert said[-1] == "Run 'strata-core help' for the commands."


def test_capital_v_is_the_version_and_help_is_a_command(env):
    version = run("--version", env=env).stdout
    assert run("-V", env=env).stdout == version == "strata-core 0.1.0\n"
    assert run("help", env=env).stdout == run("--help", env=env).stdout
    assert "help                show the help of strata-core" in run("help", env=env).stdout
    assert run("help", "plan", env=env).stdout == run("plan", "--help", env=env).stdout
    assert run("-q", "help", "table", env=env).stdout == run("table", "--help", env=env).stdout
    wrong = run("help", "plna", env=env, check=False)
    assert wrong.returncode == 2 and wrong.stderr.endswith("; did you mean plan?\n")


def test_every_command_record_that_runs_has_its_module_type_checked():
    """strata_core.commands holds the commands; cli/__init__.py's RUNNING, which the type
    checker holds to CommandModule, names the module of each that runs (help runs as
    --help), and nothing else."""
    import ast
    from pathlib import Path

    import strata_core.cli
    from strata_core.commands import COMMANDS

    tree = ast.parse(Path(strata_core.cli.__file__).read_text())
    running = next(
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "RUNNING"
    )
    assert isinstance(running, ast.Tuple)
    assert sorted(name.id for name in running.elts) == sorted(set(COMMANDS) - {"help"})
