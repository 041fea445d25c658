#!/usr/bin/env bash
# Builds the wheel of every distribution in the workspace into DIR (default: dist/), together
# with the wheels they depend on, so that this works with no index at all:
#   pip install --no-index --find-links DIR 'strata[rdna4]'
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-dist}")
mkdir -p "$out"
uv build --all-packages --no-sources --wheel --out-dir "$out"
uv export --locked --no-dev --all-extras --no-emit-workspace --no-hashes \
    --format requirements-txt --output-file "$out/requirements.txt" >/dev/null
uvx --python "$(uv python find)" pip download --quiet --only-binary=:all: --no-deps \
    --requirement "$out/requirements.txt" --dest "$out"
