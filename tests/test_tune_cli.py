"""`strata-core tune`, `strata-core table check` and the tuning part of `plan`."""

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest
from cli_runner import strata_core

from strata_core.cli import main as cli
from strata_core.cli.tune import run as run_tune
from strata_core.cli.tune_table import write_table
from strata_core.errors import StrataError
from strata_core.files import write_atomic
from strata_core.plan import config as run_config
from strata_core.plan.config import with_env
from strata_core.tuning.switch_trials import TRIALS, Measured, alternate, verdict

FIXTURES = Path(__file__).parent / "fixtures/tables"


run = strata_core


def test_table_check(env, tmp_path):
    good = run("table", "check", str(FIXTURES / "gfx1030-rocblas-5.6.0.8d1ae90e.txt"), env=env)
    assert good.stdout == (
        f"{FIXTURES}/gfx1030-rocblas-5.6.0.8d1ae90e.txt: ok: rocBLAS table "
        "for gfx1030, version 5.6.0.8d1ae90e, 4 rows (2 tuned)\n"
    )
    bad = tmp_path / "bad.txt"
    bad.write_text((FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text() + "1 2\n")
    result = run("table", "check", str(bad), env=env, check=False)
    assert result.returncode == 1
    assert result.stdout == (
        f"{bad}:6: expected 8 columns (T N K dtype op solution default_us best_us), got 2\n"
    )


def test_tune_writes_a_table_into_strata_tuning_dir(env, tmp_path):
    env = env | {"STRATA_TUNING_DIR": str(tmp_path)}
    result = run(
        "tune",
        "--case",
        "32,qkv,96,64,f32",
        "--case",
        "48,down,64,96,f16",
        "--repeats",
        "3",
        env=env,
    )
    (written,) = tmp_path.glob("*-host-*.txt")
    assert "tune: wrote 2 rows" in result.stderr and str(written) in result.stderr
    assert "tune: [1/2] T=32 qkv 96x64 f32: " in result.stderr
    assert run("table", "check", str(written), env=env).stdout.startswith(f"{written}: ok: host")


def test_tune_rejects_bad_cases(env):
    result = run("tune", "--case", "32,qkv,96", env=env, check=False)
    assert (result.returncode, result.stderr) == (
        2,
        "strata-core: error: --case 32,qkv,96: expected T,op,N,K,dtype with dtype f32 or "
        "f16, such as 512,gate_up,8192,2048,f32\n",
    )


def test_plan_takes_the_strix_halo_table(env, tmp_path):
    shutil.copy(FIXTURES / "gfx1151-hipblaslt-100401.txt", tmp_path)
    answer = json.loads(
        run(
            "plan",
            "--json",
            "--device",
            "gfx1151",
            "--hipblaslt",
            "1.4.1",
            env=env | {"STRATA_TUNING_DIR": str(tmp_path)},
        ).stdout
    )
    table = str(tmp_path / "gfx1151-hipblaslt-100401.txt")
    assert answer["tuning"]["hipblaslt"] == {
        "table": table,
        "used": True,
        "rows": 3,
        "reason": "gfx1151-hipblaslt-100401.txt matches gfx1151 and hipBLASLt 100401",
    }
    assert (
        "prefill gemm: hipBLASLt tuning enabled (3 rows, gfx1151, version 100401)" in answer["log"]
    )
    # the engine is told where the table is: "point STRATA_HIPBLASLT_TUNING at it"
    assert answer["engine_env"]["STRATA_HIPBLASLT_TUNING"] == table


def test_the_run_config_turns_the_table_on(env, tmp_path):
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text().replace("gfx1151", "gfx1100")
    (tmp_path / "gfx1100-hipblaslt-100401.txt").write_text(text)
    config = tmp_path / "strata.toml"
    config.write_text(f'[tuning]\nhipblaslt_table = true\ndirs = ["{tmp_path}"]\n')
    answer = json.loads(
        run(
            "plan",
            "--json",
            "--device",
            "gfx1100",
            "--hipblaslt",
            "100401",
            "--config",
            str(config),
            env=env,
        ).stdout
    )
    assert answer["switches"]["STRATA_HIPBLASLT_TABLE"]["source"] == "config"
    assert answer["tuning"]["hipblaslt"]["used"] is True
    off = json.loads(
        run(
            "plan",
            "--json",
            "--device",
            "gfx1100",
            "--hipblaslt",
            "100401",
            "--config",
            str(config),
            env=env | {"STRATA_HIPBLASLT_TABLE": "off"},
        ).stdout
    )
    assert off["tuning"]["hipblaslt"]["used"] is False


def test_plan_for_rdna2_takes_the_rocblas_table(env, tmp_path):
    shutil.copy(FIXTURES / "gfx1030-rocblas-5.6.0.8d1ae90e.txt", tmp_path)
    answer = json.loads(
        run(
            "plan",
            "--json",
            "--device",
            "gfx1030",
            "--rocblas",
            "5.6.0.8d1ae90e",
            env=env | {"STRATA_TUNING_DIR": str(tmp_path)},
        ).stdout
    )
    assert answer["tuning"]["rocblas"]["used"] is True
    assert "rocBLAS tuning enabled (4 rows, gfx1030, version 5.6.0.8d1ae90e)" in answer["log"]
    # "setup points the engine at the directory when a table for the architecture exists"
    assert answer["engine_env"]["STRATA_ROCBLAS_TUNING"] == str(tmp_path)


def test_a_table_the_user_names_is_not_named_again(env, tmp_path):
    """engine_env holds what strata adds, never the user's own variable."""
    shutil.copy(FIXTURES / "gfx1030-rocblas-5.6.0.8d1ae90e.txt", tmp_path)
    for forced in (tmp_path, tmp_path / "gfx1030-rocblas-5.6.0.8d1ae90e.txt"):
        answer = json.loads(
            run("plan", "--json", "--device", "gfx1030", "--rocblas", "5.6.0.8d1ae90e",
                env=env | {"STRATA_ROCBLAS_TUNING": str(forced)}).stdout
        )  # fmt: skip
        assert answer["tuning"]["rocblas"]["used"] is True
        assert "STRATA_ROCBLAS_TUNING" not in answer["engine_env"]


def test_switch_trials_write_only_winners_into_the_run_config(env, tmp_path, host_isa):
    """Which switch wins is a measurement (bench/, not here); what is written must be exactly
    the switches said to win, and the rest of the user's file must stay. The default
    workload's prompt read (131,072 cells) is in the band that STRATA_TOPK_STREAM=0 changes."""
    config = tmp_path / "strata.toml"
    config.write_text('exe = "build-hip/strata"\n\n[env]\nSTRATA_HC_Q8 = "0"\n')
    result = run(
        "tune",
        "--switches",
        "--repeats",
        "3",
        "--config",
        str(config),
        env=env | {"STRATA_HOST_ISA": host_isa},
    )
    lines = [line.removeprefix("strata-core: tune: ") for line in result.stderr.splitlines()]
    assert lines[0].startswith(f"measuring on the host backend (libstrata_host.so, {host_isa})")
    said = {
        trial.switch: next(line for line in lines if line.startswith(trial.switch))
        for trial in TRIALS
    }
    measured = {"STRATA_HIP_ROUTER_OLD", "STRATA_TOPK_OLD", "STRATA_TOPK_STREAM"}
    if host_isa == "baseline":
        # the fast router is vector code, and the portable top-k's own band keeps the heap
        # kernel at k 256, as STRATA_TOPK_STREAM=0 would
        measured = {"STRATA_TOPK_OLD"}
        assert said["STRATA_HIP_ROUTER_OLD"] == (
            "STRATA_HIP_ROUTER_OLD=1: the host backend runs router_topk the same way "
            "(portable) at this workload"
        )
        assert said["STRATA_TOPK_STREAM"] == (
            "STRATA_TOPK_STREAM=0: the host backend runs topk_prompt the same way (register) at "
            "this workload"
        )
    time = r"\d+(\.\d+)? (s|ms|us)"
    shape = rf": {time} -> {time}, [+-]\d+\.\d% ± \d+\.\d% \(medians of \d+ pairs in {time}"
    assert all(re.search(f"{shape}.*; again {shape[2:]}", said[s]) for s in measured)
    assert said["STRATA_SH_STREAM"] == (
        "STRATA_SH_STREAM: only the engine on a GPU can measure it; the host backend has no "
        "such path"
    )
    won = {s for s, line in said.items() if line.endswith(": kept")}
    written = run_config.load(config)
    assert dict(written.env) == {"STRATA_HC_Q8": "0"} | {
        s: next(t.value for t in TRIALS if t.switch == s) for s in won
    }
    assert written.exe == "build-hip/strata"


def fake_measure(ratio, spread):
    return Measured(1e-3, 1e-3 / ratio, ratio, spread, 12, 1.0, True)


@pytest.mark.parametrize(
    ("ratio", "spread", "min_gain", "keep", "on"),
    [(1.5, 0.01, 1.03, True, "667 us"), (1.05, 0.03, 1.03, False, "952 us"),
     (1.05, 0.01, 1.03, True, "952 us"), (1.05, 0.01, 1.10, False, "952 us"),
     (0.8, 0.01, 1.03, False, "1.25 ms")],
)  # fmt: skip
def test_a_switch_is_kept_only_past_the_min_gain_by_more_than_its_spread(
    ratio, spread, min_gain, keep, on
):
    """The times in the unit a person reads (1 ms off, ``on`` on)."""
    trial = next(t for t in TRIALS if t.switch == "STRATA_TOPK_STREAM")
    result = verdict(trial, [fake_measure(ratio, spread)] * 2, min_gain)
    assert result.keep == keep
    said = (
        f"1.00 ms -> {on}, {(ratio - 1) * 100:+.1f}% ± {spread * 100:.1f}% "
        "(medians of 12 pairs in 1.00 s)"
    )
    assert result.reason.startswith(f"STRATA_TOPK_STREAM=0: {said}; again {said}; ")
    assert result.reason.endswith(": kept" if keep else ": left unset")


def test_a_switch_is_kept_only_when_its_measurements_agree():
    """The answer once flipped between runs: "+58.0% ± 63.8%" left unset where four other
    runs kept the switch. One winning measurement is not enough."""
    trial = next(t for t in TRIALS if t.switch == "STRATA_TOPK_STREAM")
    result = verdict(trial, [fake_measure(1.5, 0.01), fake_measure(1.58, 0.638)], 1.03)
    assert not result.keep
    assert result.reason.endswith(
        "; again 1.00 ms -> 633 us, +58.0% ± 63.8% (medians of 12 pairs in 1.00 s); the "
        "measurements disagree: left unset"
    )


def test_pairs_go_on_until_the_gain_is_clear():
    slow, fast = (lambda: time.sleep(0.002)), (lambda: time.sleep(0.001))
    measured = alternate(slow, fast, min_pairs=5, min_gain=1.03, budget_s=20)
    assert measured.settled and measured.pairs >= 5
    assert 1.5 < measured.ratio < 2.5


def test_the_time_budget_ends_an_unclear_measurement(monkeypatch):
    """Samples whose off/on ratio swings widely never settle; the budget (on a fake clock)
    ends the pairs and says so."""
    clock = [0.0]
    monkeypatch.setattr("strata_core.tuning.switch_trials.time.perf_counter", lambda: clock[0])

    def taking(durations):
        durations = iter(durations * 1000)

        def run():
            clock[0] += next(durations)

        return run

    off, on = taking([1.0, 1.3, 0.7, 1.2]), taking([1.0, 0.7, 1.3, 0.8])
    measured = alternate(off, on, min_pairs=3, min_gain=1.03, budget_s=20)
    assert not measured.settled and 20 < measured.seconds <= 30
    assert measured.describe().endswith("the time budget ran out first)")


def test_a_config_edit_keeps_comments_order_and_mode(tmp_path):
    config = tmp_path / "strata.toml"
    text = '# mine\nexe = "build-hip/strata"  # the engine\n\n[env]\n# keep\nSTRATA_HC_Q8 = "0"\n'
    config.write_text(text)
    config.chmod(0o640)
    old, new = with_env(config, {"STRATA_TOPK_STREAM": "0"})
    assert old == text
    assert new == text + 'STRATA_TOPK_STREAM = "0"\n'
    write_atomic(config, new)
    assert config.read_text() == new and config.stat().st_mode & 0o777 == 0o640


def test_dry_run_shows_a_diff_and_writes_nothing(env, tmp_path, monkeypatch, capsys, host_isa):
    """Every measured switch wins here; the portable code runs the router and the prompt
    read's top-k the same way with them, so those are not measured there."""
    env = env | {"STRATA_HOST_ISA": host_isa}
    config = tmp_path / "strata.toml"
    config.write_text('[env]\nSTRATA_HC_Q8 = "0"\n')
    monkeypatch.setattr(
        "strata_core.tuning.switch_trials.alternate", lambda *_: fake_measure(1.5, 0.01)
    )
    args = cli._parser().parse_args(
        ["tune", "--switches", "--dry-run", "--repeats", "3", "--config", str(config)]
    )
    assert run_tune(args, env) == 0
    assert config.read_text() == '[env]\nSTRATA_HC_Q8 = "0"\n'
    said = capsys.readouterr()
    note = "# strata-core tune --switches: measured on the host backend (CPU), not on a GPU"
    kept = [t for t in TRIALS if t.op is not None]
    if host_isa == "baseline":
        kept = [t for t in kept if t.switch == "STRATA_TOPK_OLD"]
    assert [t for t in TRIALS if re.search(f"tune: {t.switch}={t.value}: .*: kept$", said.err, re.M)] == kept
    assert said.out.splitlines() == [
        f"--- {config}",
        f"+++ {config}",
        f"@@ -1,2 +1,{2 + len(kept)} @@",
        " [env]",
        ' STRATA_HC_Q8 = "0"',
        *(f'+{t.switch} = "{t.value}" {note}' for t in kept),
    ]
    assert "written" not in said.err.replace("nothing was written", "")
    assert said.err.splitlines()[-1] == (
        f"strata-core: tune: --dry-run: the change to {config} is on stdout; nothing was written"
    )


def test_sh_stream_is_never_measured_on_windows_with_kv_streaming(env, tmp_path):
    result = run(
        "tune",
        "--switches",
        "--repeats",
        "3",
        "--os",
        "windows",
        "--kv-streaming",
        "--config",
        str(tmp_path / "strata.toml"),
        env=env,
    )
    assert (
        "strata-core: tune: STRATA_SH_STREAM: never measured on Windows with KV streaming: the "
        "fork stopped the engine there (AMD_HIP.md)"
    ) in result.stderr.splitlines()


def test_a_new_file_gets_the_umasks_mode(tmp_path):
    umask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.toml", "x = 1\n")
    finally:
        os.umask(umask)
    assert (tmp_path / "new.toml").stat().st_mode & 0o777 == 0o640


def test_table_check_takes_any_name_and_says_the_lookups(env, tmp_path):
    """AMD_HIP.md: "--tuning-out table.txt ... Save it as tools/hip/<arch>-hipblaslt-<version>.txt
    for setup, or point STRATA_HIPBLASLT_TUNING at it": a table under any name is good."""
    renamed = tmp_path / "table.txt"
    shutil.copy(FIXTURES / "gfx1151-hipblaslt-100401.txt", renamed)
    result = run("table", "check", str(renamed), env=env)
    assert result.stdout == (
        f"{renamed}: ok: hipBLASLt table for gfx1151, version 100401, 3 rows (2 tuned); the "
        "folder lookup takes it only as gfx1151-hipblaslt-100401.txt, STRATA_HIPBLASLT_TUNING "
        "under any name\n"
    )


def test_table_check_of_a_folder_checks_every_table_in_it(env, tmp_path):
    for table in FIXTURES.iterdir():
        shutil.copy(table, tmp_path)
    (tmp_path / "README").write_text("not a table\n")
    (tmp_path / "zz-broken.txt").write_text("# strata-tuning\n")
    result = run("table", "check", str(tmp_path), env=env, check=False)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{tmp_path}/gfx1030-rocblas-5.6.0.8d1ae90e.txt: ok: rocBLAS table for gfx1030, "
        "version 5.6.0.8d1ae90e, 4 rows (2 tuned)",
        f"{tmp_path}/gfx1151-hipblaslt-100401.txt: ok: hipBLASLt table for gfx1151, "
        "version 100401, 3 rows (2 tuned)",
        f"{tmp_path}/zz-broken.txt:1: a table needs a comment line and an identity line "
        "before its rows",
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run("table", "check", str(empty), env=env, check=False)
    assert (none.returncode, none.stdout) == (1, f"{empty}: no tables (*.txt) in this folder\n")


def test_table_check_json(env, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xa5\n")
    good = FIXTURES / "gfx1151-hipblaslt-100401.txt"
    result = run("table", "check", "--json", str(good), str(bad), env=env, check=False)
    assert result.returncode == 1
    assert json.loads(result.stdout) == {
        "schema_version": 1,
        "ok": False,
        "tables": [
            {
                "path": str(good),
                "ok": True,
                "library": "hipBLASLt",
                "arch": "gfx1151",
                "version": "100401",
                "rows": 3,
                "tuned": 2,
                "lookup_name": "gfx1151-hipblaslt-100401.txt",
                "forced_by": "STRATA_HIPBLASLT_TUNING",
                "problems": [],
            },
            {
                "path": str(bad),
                "ok": False,
                "library": None,
                "arch": None,
                "version": None,
                "rows": None,
                "tuned": None,
                "lookup_name": None,
                "forced_by": None,
                "problems": [f"{bad}:1: not UTF-8 text (byte 0); not a table"],
            },
        ],
    }


def test_tune_output_writes_any_file_name_and_says_how_it_is_taken(env, tmp_path):
    case = ("tune", "--case", "32,qkv,96,64,f32", "--repeats", "3")
    mine = tmp_path / "mine.txt"
    result = run(*case, "--output", str(mine), env=env)
    (written,) = [p for p in tmp_path.iterdir() if p != Path(env["STRATA_CACHE_DIR"])]
    assert written == mine
    name = re.search(r"the folder lookup takes it only as (\S+\.txt)", result.stderr)
    assert name and "-host-" in name[1], result.stderr
    checked = run("table", "check", str(mine), env=env).stdout
    assert checked.startswith(f"{mine}: ok: host") and name[1] in checked


def test_tune_output_with_a_trailing_slash_is_a_folder(env, tmp_path):
    folder = tmp_path / "new" / "tables"
    run("tune", "--case", "32,qkv,96,64,f32", "--repeats", "3", "--output", f"{folder}/", env=env)
    (written,) = folder.iterdir()
    assert "-host-" in written.name
    assert run("table", "check", str(folder), env=env).stdout.startswith(f"{written}: ok: host")


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--case", "32,qkv,96,64,f32", "--case", "32,qkv,96,64,f32"),
         "--case 32,qkv,96,64,f32 is given twice; a table has one row a shape"),
        (("--tokens", "64,64"), "--tokens 64,64: 64 is given twice; a table has one row a shape"),
        (("--tokens", "\uff16\uff14"),
         "--tokens \uff16\uff14: expected token counts such as 256,512"),
        (("--case", "32,QKV,96,64,f32"),
         "--case 32,QKV,96,64,f32: op must be a lower-case name such as gate_up, got 'QKV'"),
        (("--case", "32,,96,64,f32"),
         "--case 32,,96,64,f32: op must be a lower-case name such as gate_up, got ''"),
        (("--min-gain", "nan"), "--min-gain nan: a number of at least 1"),
        (("--switches", "--min-gain", "nan"), "--min-gain nan: above 1 (1.03 is 3%)"),
    ],
)  # fmt: skip
def test_tune_refuses_what_table_check_would_refuse(env, tmp_path, args, line):
    env = env | {"STRATA_TUNING_DIR": str(tmp_path)}
    result = run("tune", "--repeats", "3", *args, env=env, check=False, cwd=tmp_path)
    assert (result.returncode, result.stderr) == (2, f"strata-core: error: {line}\n")
    assert not list(tmp_path.iterdir())


def test_a_measured_table_that_table_check_refuses_is_not_written(tmp_path, capsys):
    text = (FIXTURES / "gfx1151-hipblaslt-100401.txt").read_text()
    target = tmp_path / "t.txt"
    with pytest.raises(StrataError, match=r"the same shape as line 3\); it is on stdout"):
        write_table(target, text + text.splitlines()[2] + "\n", "")
    assert not target.exists() and capsys.readouterr().out.startswith("# strata-tuning")


def test_switch_trials_need_no_card_the_run_config_chooses(env, tmp_path):
    """`gpu = [1, 0]` in ./strata.toml on a PC with no GPU: the host measurement needs neither
    card, so tune --switches measures; a plan, which would use them, names the key `gpu`."""
    (tmp_path / "strata.toml").write_text("gpu = [1, 0]\n")
    pc = env | {"STRATA_SYSFS": str(tmp_path)}
    tuned = run("tune", "--switches", "--dry-run", "--repeats", "3", "--budget", "0.2",
                env=pc, cwd=tmp_path, check=False)  # fmt: skip
    assert tuned.returncode == 0, tuned.stderr
    assert "no HIP device" not in tuned.stderr
    assert tuned.stderr.startswith("strata-core: tune: measuring on the host backend")
    planned = run("plan", env=pc, cwd=tmp_path, check=False)
    assert (planned.returncode, planned.stderr) == (
        2, "strata-core: error: gpu from strata.toml: no HIP device 1 (visible HIP devices: "
        "none)\n",
    )  # fmt: skip


def test_a_run_config_at_a_loop_of_links_is_refused_before_measuring(env, tmp_path):
    """`tune --switches --config LOOP` cannot ever write its winners: one line, exit 2, and
    nothing measured, as for any run config plan would refuse."""
    (tmp_path / "a.toml").symlink_to(tmp_path / "b.toml")
    (tmp_path / "b.toml").symlink_to(tmp_path / "a.toml")
    result = run(
        "tune", "--switches", "--repeats", "3", "--config", str(tmp_path / "a.toml"),
        env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "measuring" not in result.stderr
    assert result.stderr.splitlines() == [
        f"strata-core: error: {tmp_path / 'a.toml'}: cannot write (a loop of symbolic links at "
        f"{tmp_path / 'a.toml'}); nothing was measured"
    ]
