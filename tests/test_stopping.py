"""A stopped command leaves no probe behind: Ctrl-C or SIGTERM while a detector's probe hangs
(NVML's fork in `devices`, the HIP runtime's `python -m strata_core.detect.hip_probe`) ends
the command with 130 or 143, and the probe, started by a detector's worker thread, is gone
by the time it exits."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from strata_core.testing.sysfs import R9700, write_nvidia_gpu, write_sysfs

STOPS = [("SIGINT", 130), ("SIGTERM", 143)]
#: how long a stopped command and its probe are given to be gone (a probe left behind
#: hangs for good: STAND_IN_FAULT=hang-count and a probe limit of 600 s)
GONE_WITHIN_S = 30


def process_facts(pid: int) -> tuple[int, int] | None:
    """The parent and the start time (/proc/PID/stat) of a process that has not ended (a
    zombie has); None where there is none."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    state, parent, *rest = stat[stat.rindex(")") + 2 :].split()
    return None if state in ("Z", "X") else (int(parent), int(rest[18]))


def started_at(pid: int) -> int | None:
    """When the process ``pid`` started (what tells it from a later one at its pid); None
    where it has ended."""
    facts = process_facts(pid)
    return None if facts is None else facts[1]


def hanging_probe(parent: subprocess.Popen[str], said: Path) -> tuple[int, int]:
    """The command's probe child, once it hangs in the stand-in (which writes its pid to
    ``said``), and when it started."""
    deadline = time.monotonic() + 120
    while not said.exists():
        assert parent.poll() is None, "the command ended before its probe hung"
        assert time.monotonic() < deadline, "no probe hung within 120 s"
        time.sleep(0.05)
    pid = int(said.read_text())
    facts = process_facts(pid)
    assert facts is not None and facts[0] == parent.pid
    return pid, facts[1]


def gone(pid: int, started: int) -> bool:
    """Whether the process ``pid`` that started at ``started`` has ended (a process at that
    pid now is another one, and one left behind is the init process's child), within
    GONE_WITHIN_S."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while started_at(pid) == started:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _interruptible() -> None:
    """Ctrl-C as at a terminal, also where the test runner was started with SIGINT ignored
    (a shell's background job), which the command would otherwise inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_while_probing(
    tree: Path, env: dict[str, str], signal_name: str, *options: str
) -> tuple[int, bool]:
    """Start `strata-core devices OPTIONS` on ``tree`` with a driver that hangs, wait until
    its probe child hangs, send ``signal_name``: the command's exit status and whether its
    probe is gone. Every process started is ended."""
    said = tree.parent / "hanging"
    command = [sys.executable, "-m", "strata_core", "devices", *options, "--sysfs", str(tree)]
    parent = subprocess.Popen(
        command, env=env | {"STAND_IN_FAULT": "hang-count", "STAND_IN_HANGING": str(said)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible,
    )  # fmt: skip
    probe: tuple[int, int] | None = None
    try:
        probe = hanging_probe(parent, said)
        parent.send_signal(getattr(signal, signal_name))
        status = parent.wait(timeout=GONE_WITHIN_S)
        return status, gone(*probe)
    finally:
        if probe is not None and started_at(probe[0]) == probe[1]:
            os.kill(probe[0], signal.SIGKILL)
        parent.kill()
        _, stderr = parent.communicate()
        assert "Traceback" not in stderr


@pytest.mark.parametrize(("signal_name", "status"), STOPS)
def test_a_stopped_devices_ends_the_hanging_nvml_probe(
    tmp_path, env, stand_in, with_driver, signal_name, status
):
    tree = write_nvidia_gpu(write_sysfs(tmp_path / "sys", []))
    driver = with_driver(env, stand_in, STRATA_HIP_PROBE_TIMEOUT="600")
    assert stop_while_probing(tree, driver, signal_name) == (status, True)


@pytest.mark.parametrize(("signal_name", "status"), STOPS)
def test_a_stopped_devices_ends_the_hanging_hip_probe(tmp_path, env, stand_in, signal_name, status):
    tree = write_sysfs(tmp_path / "sys", [R9700])
    driver = env | {"STRATA_HIP_LIBRARY": stand_in, "STRATA_HIP_PROBE_TIMEOUT": "600"}
    assert stop_while_probing(tree, driver, signal_name, "--hip") == (status, True)


def session_processes(session: int) -> list[int]:
    """The processes of the session ``session`` that have not ended."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, _, _, sid = stat[stat.rindex(")") + 2 :].split()[:4]
        if int(sid) == session and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


@pytest.mark.parametrize("fault", ["hang-count", "sync-hang"])
def test_ctrl_c_at_a_terminal_while_the_runtime_hangs_in_a_run_ends_it_with_130(
    tmp_path, env, stand_in, fault
):
    """A terminal's Ctrl-C reaches the foreground group: the command, which ends its children
    (each in a group of its own, a hanging one inside a native call too): the run ends with
    130 and leaves none of its processes, whether the runtime hangs at its first call or
    mid-run."""
    tree = write_sysfs(tmp_path / "sys", [R9700])
    said = tmp_path / "hanging"
    planted = env | {
        "STRATA_HIP_LIBRARY": stand_in,
        "STRATA_ROCBLAS_LIBRARY": stand_in,
        "STRATA_HIP_PROBE_TIMEOUT": "600",
        "STRATA_RUN_TIMEOUT": "600",
        "STAND_IN_FAULT": fault,
        "STAND_IN_HANGING": str(said),
    }  # fmt: skip
    command = [sys.executable, "-m", "strata_core", "run", "--sysfs", str(tree)]
    parent = subprocess.Popen(
        command, env=planted, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True, preexec_fn=_interruptible,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not said.exists():
            assert parent.poll() is None, "the run ended before its runtime hung"
            assert time.monotonic() < deadline, "no runtime hung within 120 s"
            time.sleep(0.05)
        os.killpg(parent.pid, signal.SIGINT)
        status = parent.wait(timeout=GONE_WITHIN_S)
        deadline = time.monotonic() + GONE_WITHIN_S
        while session_processes(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = session_processes(parent.pid)
    finally:
        for pid in session_processes(parent.pid):
            os.kill(pid, signal.SIGKILL)
        parent.kill()
        _, stderr = parent.communicate()
    assert "Traceback" not in stderr
    assert (status, left) == (130, [])
