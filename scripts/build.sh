#!/usr/bin/env bash
# Installs what is missing (scripts/setup.sh), then configures and builds into build/, saying on
# stderr what it is doing and how long each stage took (a first build takes minutes: issue 36
# item 10). The compiler's own output goes to build/build.log; on failure its tail is printed.
# Usage: scripts/build.sh [extra cmake args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/progress.sh
. "$root/scripts/progress.sh"
bash "$root/scripts/setup.sh"
jobs="$(nproc 2>/dev/null || echo 2)"
if [ ! -f "$root/build/CMakeCache.txt" ]; then
  stage_start "build: configuring (cmake)"
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release -DMUONPLAN_WERROR=ON \
    -DMPIEXEC_PREFLAGS="$(bash "$root/scripts/mpiexec-flags.sh")" "$@" >/dev/null
  stage_done
fi
stage_start "build: compiling with $jobs jobs (log: build/build.log)"
if ! cmake --build "$root/build" -j "$jobs" 2>&1 | build_progress >"$root/build/build.log"; then
  echo >&2
  tail -n 40 "$root/build/build.log" >&2
  echo "build: failed (the whole log: build/build.log)" >&2
  exit 1
fi
stage_done
