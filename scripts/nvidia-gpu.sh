#!/usr/bin/env bash
# strata on an NVIDIA GPU, in two steps:
#   scripts/nvidia-gpu.sh prepare   here (with the package index): every wheel into dist/, and
#                                   the CPython 3.12 wheels a bare machine lacks into .whl/
#   scripts/nvidia-gpu.sh run       on the GPU machine (no index needed): installs strata and
#                                   strata-cuda from dist/, and from .whl/ what the machine's
#                                   Python lacks, beside its own numpy and PyTorch, then runs
#                                   plugins, devices, plan, run, run --json and
#                                   bench/gpu_kernels.py; outputs land in $OUT (default:
#                                   ./nvidia-out)
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
    scripts/build-wheels.sh dist
    mkdir -p .whl
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl cffi pycparser cattrs pyelftools tomli-w tomlkit structlog msgpack
    ;;
run)
    repo=$(pwd)
    out=$(realpath -m "${OUT:-nvidia-out}")
    mkdir -p "$out"
    site=/tmp/strata-site
    python3 -m pip install --quiet --no-index --no-deps --no-compile --target "$site" \
        dist/strata-*.whl dist/strata_cuda-*.whl .whl/*.whl
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} STRATA_CACHE=0 PYTHONUNBUFFERED=1
    strata-core() { python3 -m strata_core "$@"; }
    cd /tmp  # not the checkout, whose strata_core has no built parts
    python3 -c 'import sys, numpy, torch; print(sys.version.split()[0], numpy.__version__, torch.__version__)'
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    strata-core --version
    strata-core plugins 2>&1 | grep -A6 '^cuda' || true
    strata-core devices
    strata-core plan | head -4
    strata-core run
    strata-core run --json > "$out/run.json"
    python3 "$repo/bench/gpu_kernels.py" | tee "$out/bench.txt"
    ;;
*)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac
