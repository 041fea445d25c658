#!/usr/bin/env bash
# strata on an NVIDIA GPU, in two steps:
#   scripts/nvidia-gpu.sh prepare [REV]
#                                   here (with the package index): every wheel into dist/ with
#                                   the commit they are built from (dist/commit.txt), and the
#                                   CPython 3.12 wheels a bare machine lacks into .whl/;
#                                   with REV, that revision's strata and strata-cuda wheels
#                                   into dist-base/ too (built in a temporary worktree), the
#                                   other side of `ab`
#   scripts/nvidia-gpu.sh run       on the GPU machine (no index needed): installs strata and
#                                   strata-cuda from dist/, and from .whl/ what the machine's
#                                   Python lacks, beside its own numpy and PyTorch, then runs
#                                   plugins, devices, plan, bench/plan_speed.py,
#                                   bench/gpu_kernels.py, run with the deep-context,
#                                   deep-context-k2048 and large-moe profiles, the host benches on this CPU (against
#                                   ggml where its source travels in .ggml/ggml-src.tar.gz),
#                                   run, run --json and bench/gpu_gemm.py, then calibrates
#                                   cuBLASLt (strata-core tune), runs with and without the
#                                   table (two runs each) and with a table naming a solution
#                                   cuBLASLt refuses; outputs land in $OUT (default:
#                                   ./nvidia-out), the benches' figures as JSON too (what
#                                   bench/results_page.py draws docs/results.md from).
#                                   cuBLASLt: STRATA_CUBLASLT_LIBRARY, else PyTorch's copy,
#                                   else the loader's.
#   scripts/nvidia-gpu.sh kernels   on the GPU machine: the same install, then only
#                                   bench/gpu_step.py, bench/gpu_kernels.py and strata-core
#                                   run (text and --json) with each shipped profile
#   scripts/nvidia-gpu.sh step      on the GPU machine: the same install, then bench/gpu_step.py
#                                   and strata-core run (--json, then text) with dense-8b and
#                                   large-moe
#   scripts/nvidia-gpu.sh ab [PART ...]
#                                   on the GPU machine: the same install, and dist-base/'s
#                                   beside it, then bench/gpu_kernels.py (--only PART ...) on
#                                   this tree's build and on the base's in turn, twice each, so
#                                   that a change and its base are timed in one call
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
prepare)
    scripts/build-wheels.sh dist
    git describe --always --dirty --abbrev=12 > dist/commit.txt
    mkdir -p .whl
    python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .whl cffi pycparser cattrs pyelftools tomli-w tomlkit structlog msgpack
    if [ -n "${2:-}" ]; then
        rm -rf dist-base
        base=$(mktemp -d)
        trap 'git worktree remove --force "$base"' EXIT
        git worktree add --quiet --detach "$base" "$2"
        for package in strata strata-cuda; do
            (cd "$base" && uv build --quiet --package $package --no-sources --wheel \
                --out-dir "$OLDPWD/dist-base")
        done
    fi
    ;;
run | kernels | step | ab)
    repo=$(pwd)
    out=$(realpath -m "${OUT:-nvidia-out}")
    mkdir -p "$out"
    # into a fresh folder: a warm machine keeps the last call's, whose packages pip would not
    # replace
    install() {
        rm -rf "$1"
        python3 -m pip install --quiet --no-index --no-deps --no-compile --target "$@" \
            "$repo"/.whl/*.whl
    }
    commit=()
    [ -s dist/commit.txt ] && commit=(--commit "$(cat dist/commit.txt)")
    site=/tmp/strata-site
    install "$site" dist/strata-*.whl dist/strata_cuda-*.whl
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} STRATA_CACHE=0 PYTHONUNBUFFERED=1
    strata-core() { python3 -m strata_core "$@"; }
    cd /tmp  # not the checkout, whose strata_core has no built parts
    python3 -c 'import sys, numpy, torch; print(sys.version.split()[0], numpy.__version__, torch.__version__)'
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    strata-core --version
    if [ "$1" = ab ]; then
        base=/tmp/strata-base-site
        install "$base" "$repo"/dist-base/strata-*.whl "$repo"/dist-base/strata_cuda-*.whl
        shift
        only=()
        [ $# -gt 0 ] && only=(--only "$@")
        for round in 1 2; do
            for side in this base; do
                [ $side = this ] && path=$site || path=$base
                echo "== $side, round $round"
                PYTHONPATH=$path${PYTHONPATH#"$site"} python3 "$repo/bench/gpu_kernels.py" \
                    "${only[@]}" | tee "$out/ab-$side-$round.txt"
            done
        done
        exit 0
    fi
    if [ "$1" = step ]; then
        python3 "$repo/bench/gpu_step.py" --json "$out/gpu_step.json" "${commit[@]}" |
            tee "$out/step.txt"
        for profile in dense-8b large-moe; do
            strata-core run --json --profile $profile > "$out/run-$profile.json"
            strata-core run --profile $profile | tee "$out/run-$profile.txt"
        done
        exit 0
    fi
    if [ "$1" = kernels ]; then
        python3 "$repo/bench/gpu_step.py" --json "$out/gpu_step.json" "${commit[@]}" |
            tee "$out/step.txt"
        python3 "$repo/bench/gpu_kernels.py" --json "$out/gpu_kernels.json" "${commit[@]}" |
            tee "$out/bench.txt"
        for profile in small-moe deep-context deep-context-k2048 large-moe dense-8b; do
            strata-core run --profile $profile | tee "$out/run-$profile.txt"
            strata-core run --json --profile $profile > "$out/run-$profile.json"
        done
        exit 0
    fi
    strata-core plugins 2>&1 | grep -A6 '^cuda' || true
    strata-core devices
    strata-core plan | head -4
    python3 "$repo/bench/plan_speed.py" | tee "$out/plan_speed.txt"
    python3 "$repo/bench/gpu_kernels.py" --json "$out/gpu_kernels.json" "${commit[@]}" |
        tee "$out/bench.txt"
    for profile in deep-context deep-context-k2048 large-moe; do
        strata-core run --profile $profile | tee "$out/run-$profile.txt"
    done
    # the host kernels on this machine's CPU, against ggml's CPU backend where its source
    # travels in .ggml/ (a tar of ggml-org/ggml's CMakeLists.txt, ggml.pc.in, cmake/,
    # include/ and src/: CMake configures ggml.pc.in, so a tar without it does not build)
    python3 "$repo/bench/host_topk_bands.py" --threads 2 | tee "$out/host_topk_bands.txt"
    ggml=()
    if [ -f "$repo/.ggml/ggml-src.tar.gz" ]; then
        mkdir -p /tmp/ggml-src
        tar xzf "$repo/.ggml/ggml-src.tar.gz" -C /tmp/ggml-src
        if cmake -S /tmp/ggml-src -B /tmp/ggml-build -DCMAKE_BUILD_TYPE=Release \
            -DGGML_NATIVE=ON -DGGML_LLAMAFILE=ON -DBUILD_SHARED_LIBS=ON \
            -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF >"$out/ggml-build.log" 2>&1 &&
            make -C /tmp/ggml-build -j"$(nproc)" >>"$out/ggml-build.log" 2>&1; then
            ggml=(--ggml /tmp/ggml-build)
        else
            echo "ggml did not build; the host bench runs without it" >&2
        fi
    fi
    python3 "$repo/bench/host_kernels.py" --threads 2 "${ggml[@]}" \
        --json "$out/host_kernels.json" "${commit[@]}" | tee "$out/host_kernels.txt"
    if [ -z "${STRATA_CUBLASLT_LIBRARY:-}" ]; then
        lt=$(python3 -c 'import glob, os, torch
print(next(iter(sorted(glob.glob(os.path.dirname(os.path.dirname(torch.__file__))
      + "/nvidia/cublas/lib/libcublasLt.so.*"))), ""))')
        [ -n "$lt" ] && export STRATA_CUBLASLT_LIBRARY=$lt
    fi
    export XDG_DATA_HOME=$out/data  # where tune writes, and the next plan looks
    strata-core run
    strata-core run --json > "$out/run.json"
    python3 "$repo/bench/gpu_gemm.py" | tee "$out/gemm.txt"
    strata-core tune
    table=$(ls "$XDG_DATA_HOME"/strata/tuning/*-cublaslt-*.txt)
    strata-core table check "$table"
    cat "$table"
    strata-core plan | grep -i cublaslt || true
    for arm in off on off on; do
        STRATA_CUBLASLT_TABLE=$arm strata-core run --json > "$out/run-table-$arm.json"
        python3 -c 'import json, sys; k = json.load(open(sys.argv[1]))["kernels"]["prompt_gemm"]
print(sys.argv[2], k["variant"], k["median_ms"], "ms +-", k["spread_ms"], k["checked"], "checked")' \
            "$out/run-table-$arm.json" "table $arm:"
    done
    refused=$out/refusing/$(basename "$table")
    mkdir -p "$(dirname "$refused")"
    head -2 "$table" > "$refused"
    echo "512 4096 2048 f16 prompt 9999:0:0:1:0:0:0:0:0 100.00 50.00" >> "$refused"
    STRATA_CUBLASLT_TUNING=$refused STRATA_CUBLASLT_VERBOSE=1 strata-core run
    ;;
*)
    echo "usage: $0 prepare [REV]|run|kernels|ab [PART ...]" >&2
    exit 2
    ;;
esac
