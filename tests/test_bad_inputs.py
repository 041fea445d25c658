"""Every bad input and fault gets one line, and nothing is lost: the cases of
tests/fixtures/bad_inputs.toml, each run as a user runs strata-core."""

import os
import re
import resource
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from strata_core.testing import sysfs

CASES = tomllib.loads((Path(__file__).parent / "fixtures/bad_inputs.toml").read_text())["case"]


def _fill(value, tmp: Path):
    if isinstance(value, str):
        return value.replace("{tmp}", str(tmp))
    if isinstance(value, list):
        return [_fill(v, tmp) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, tmp) for k, v in value.items()}
    return value


def _prepare(case: dict, tmp: Path) -> None:
    if "sysfs" in case:
        sysfs.write_sysfs(tmp / "sys", [getattr(sysfs, card) for card in case["sysfs"]])
    for name, text in case.get("files", {}).items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text, encoding="utf-8")
    for name, text in case.get("append", {}).items():
        with open(tmp / name, "a", encoding="utf-8") as handle:
            handle.write(text)
    for name, how in case.get("repeat", {}).items():
        with open(tmp / name, "a", encoding="utf-8") as handle:
            handle.write(how["text"] * how["times"])
    for name, data in case.get("binary", {}).items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_bytes(bytes.fromhex(data))
    for name in case.get("fifos", []):
        (tmp / name).unlink(missing_ok=True)
        os.mkfifo(tmp / name)
    for name in case.get("folders", []):
        (tmp / name).unlink(missing_ok=True)
        (tmp / name).mkdir(parents=True)
    for name, target in case.get("links", {}).items():
        (tmp / name).symlink_to(target)
    for name, mode in case.get("modes", {}).items():
        (tmp / name).chmod(mode)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_bad_input(case, env, tmp_path):
    _prepare(case, tmp_path)
    want = _fill(case, tmp_path)
    mtimes = {name: (tmp_path / name).stat().st_mtime_ns for name in case.get("unchanged", {})}
    limit, stdout_to = want.get("fsize"), want.get("stdout_to")

    def child_setup() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        if stdout_to == "closed":
            os.close(1)
        elif stdout_to:
            os.dup2(os.open(stdout_to, os.O_WRONLY), 1)

    result = subprocess.run(
        [sys.executable, "-m", "strata_core", *want["args"]],
        env=env | want.get("env", {}),
        capture_output=True,
        text=True,
        input=want.get("stdin", ""),
        timeout=120,
        cwd=tmp_path,
        preexec_fn=child_setup,
    )
    assert "Traceback" not in result.stderr
    assert result.returncode == want["status"], result.stderr
    for stream in ("stdout", "stderr"):
        lines = getattr(result, stream).splitlines()
        for line in want.get(stream, []):
            assert line in lines, getattr(result, stream)
        for pattern in want.get(f"{stream}_regex", []):
            assert any(re.search(pattern, line) for line in lines), getattr(result, stream)
    if want["status"] == 2:  # a command that cannot go on ends with its one error line
        assert result.stderr.splitlines()[-1].startswith("strata-core: error: ")
    for name, text in case.get("unchanged", {}).items():
        assert (tmp_path / name).read_text() == text
        assert (tmp_path / name).stat().st_mtime_ns == mtimes[name]
    for folder, names in case.get("only", {}).items():
        assert sorted(p.name for p in (tmp_path / folder).iterdir()) == names
