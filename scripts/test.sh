#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs every test through ctest
# (Catch2 unit tests, command-line tests, multi-rank MPI tests, Python tests).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh"
cd "$root/build"
ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)"
