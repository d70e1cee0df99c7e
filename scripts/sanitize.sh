#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (docs/fuzzing-and-
# sanitizers.md): configures build-asan/ with -DMUONPLAN_SANITIZE=ON, builds everything and runs
# ctest there; any sanitizer report (memory error, undefined behaviour, a leak in our code)
# fails the test it happens in. Leaks are checked in every single-process test and in the
# multi-rank runs that cover each multi-rank path once (below).
# Not built or run: the Python module and python.* tests (a module built with ASan would need
# libasan preloaded into /usr/bin/python3) and the CUDA targets and gpu.* tests (the CUDA
# runtime and ASan's shadow memory do not mix); ctest -E keeps them out should they appear.
# MUONPLAN_TEST_QUICK=1: the multi-rank matrix and the slowest single-process tests run a
# representative subset (tests/lib/common.sh, test::quick_run), as ASan is several times slower.
# Usage: scripts/sanitize.sh [extra ctest args]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"
bash "$root/scripts/setup.sh"
build="$root/build-asan"
# -O1 -g1: ASan's recommended optimization, with line tables for its reports; asserts stay on.
# No CUDA (CMAKE_CUDA_COMPILER=OFF skips the check) and no Python module: neither is tested here.
# A unity build (8 sources a translation unit): each file's headers (json, Catch2, the standard
# library) are parsed and instrumented once a batch, not once a file; it halved this build on
# CI's 2 cores (docs/reliability.md, "CI's time"). The Release build stays one file a unit, so
# every file still compiles on its own. Here names at namespace scope (anonymous namespaces
# included) must differ from file to file within a target: a collision fails this build only.
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DMUONPLAN_SANITIZE=ON -DMUONPLAN_WERROR=ON \
    -DCMAKE_CUDA_COMPILER=OFF -DCMAKE_DISABLE_FIND_PACKAGE_Python=ON \
    -DMPIEXEC_PREFLAGS="$(bash "$root/scripts/mpiexec-flags.sh")" >/dev/null
fi
# Only what its ctest runs: the CLI and the test executables (not plan_bench, the Python module or
# the CUDA targets). A test executable missing here fails its tests as "Not Run", not silently.
cmake --build "$build" -j "$jobs" --target muonplan muonplan_unit_tests muonplan_exec_tests \
  muonplan_exec_infra_tests muonplan_step_tests muonplan_comm_test

# OpenMPI, OpenBLAS and libgomp leak on purpose at exit: suppressed by library (lsan.supp).
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1"
export LSAN_OPTIONS="suppressions=$root/scripts/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export MUONPLAN_TEST_QUICK=1
cd "$build"
failed=0
# CLI tests that run `execute` as an MPI singleton load OpenMPI too: they go with the
# multi-rank tests below. Found by what they run (`"$bin" execute`), so a new test is placed
# without a list to keep (eight round-4 tests were missing from the old hand-kept list).
singleton_names="$(grep -l -E '"\$bin" execute' "$root"/tests/cli/*.sh | xargs -n1 basename |
  sed 's/\.sh$//' | paste -sd'|')"
singleton="^cli\.(${singleton_names})\$"
ctest --output-on-failure -j "$jobs" -E "^(python|gpu|mpi|exec_mpi)\.|$singleton" "$@" || failed=1
# The multi-rank tests: OpenMPI unloads its components (dlclose) before the leak check, and
# frame-pointer unwinding stops inside them, so their leaks show as one "<unknown module>" frame
# that no suppression can name. Full unwinding reaches libmpi, but it makes every malloc ~10x
# slower (the whole matrix took 8-10 of CI's 30 minutes). So leaks are checked, with full
# unwinding, on the runs that cover each multi-rank code path once: the communicator (comm_N),
# a whole 2-rank step (traces), a rank's failure (metrics_write) and the offload pipelines
# (predicted_equals_allocated); the rest of the matrix runs with fast unwinding and the leak
# check off (a later ASAN_OPTIONS flag overrides an earlier one), and ASan and UBSan still stop
# it at the first memory error or undefined behaviour.
leakchecked='^(exec_mpi\.comm_[0-9]|mpi\.(traces|metrics_write|predicted_equals_allocated))$'
ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" \
  ctest --output-on-failure -j "$jobs" -R "$leakchecked" "$@" || failed=1
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
  ctest --output-on-failure -j "$jobs" -R "^(mpi|exec_mpi)\.|$singleton" -E "$leakchecked" "$@" ||
  failed=1
exit "$failed"
