"""Refreshes the sample output in README.md: each ```console block whose first line is
`$ COMMAND` gets COMMAND's output (stdout and stderr together, 100 columns, no answer cache),
run by the shell in an empty folder, so that no ./strata.toml takes part, with none of the
variables that change a plan set, and `uv run` finding this checkout.

    uv run python scripts/readme_tour.py [README]

The run block's times are this machine's; the rest depend only on the code and the example
trees.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from strata_core.answer_cache import ENV_PREFIXES
from strata_core.files import write_atomic

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"^```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)^```$", re.M | re.S)


def output(command: str, folder: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIXES)}
    env |= {"COLUMNS": "100", "STRATA_CACHE": "0", "UV_PROJECT": str(ROOT), "UV_NO_SYNC": "1"}
    done = subprocess.run(
        command, shell=True, cwd=folder, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"readme_tour: `{command}` exited {done.returncode}:\n{done.stdout}")
    return done.stdout if done.stdout.endswith("\n") else done.stdout + "\n"


def refresh(text: str, folder: str) -> str:
    def block(match: re.Match[str]) -> str:
        command = match["command"]
        print(f"$ {command}", file=sys.stderr)
        return f"```console\n$ {command}\n{output(command, folder)}```"

    return BLOCK.sub(block, text)


def main() -> int:
    readme = Path(sys.argv[1]) if len(sys.argv) > 1 else README
    with tempfile.TemporaryDirectory() as folder:
        write_atomic(readme, refresh(readme.read_text(), folder))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
