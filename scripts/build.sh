#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds into build/.
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/setup.sh"
jobs="$(nproc 2>/dev/null || echo 2)"
if [ ! -f "$root/build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DMUONPLAN_WERROR=ON \
    -DMPIEXEC_PREFLAGS="$(bash "$root/scripts/mpiexec-flags.sh")" "$@" >/dev/null
fi
cmake --build "$root/build" -j "$jobs"
