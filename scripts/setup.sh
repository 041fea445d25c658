#!/usr/bin/env bash
# Set up strata from this checkout, on a fresh machine too: the system packages it builds and
# tests with (Debian and Ubuntu: a C compiler with OpenMP for the host kernels, clang and lld
# for the GPU kernels, llvm's readers and Debian's HIP runtime for the tests), uv, and the
# project's environment. A GPU plugin built before clang was there is rebuilt by the next
# `uv sync` or `uv run` once it is (the plugins' uv cache keys name the compilers).
set -euo pipefail
cd "$(dirname "$0")/.."
packages=(gcc clang-19 lld-19 llvm-19 libamdhip64-5)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$package")
done
if ((${#missing[@]})); then
    if command -v apt-get >/dev/null; then
        sudo=()
        ((EUID == 0)) || sudo=(sudo)
        export DEBIAN_FRONTEND=noninteractive
        "${sudo[@]}" apt-get update -q
        "${sudo[@]}" apt-get install -y -q "${missing[@]}"
    else
        echo "setup: install ${missing[*]} (or your system's equivalents) first" >&2
    fi
fi
if [[ "$(uv --version 2>/dev/null)" != "uv 0.13.9"* ]]; then
    python3 -m pip install --quiet uv==0.13.9
fi
uv sync --locked --compile-bytecode  # once here, not on every `uv run`
