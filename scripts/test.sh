#!/usr/bin/env bash
# The whole test suite (docs/reliability.md): installs what is missing, builds, runs every test
# through ctest (Catch2 unit tests, command-line tests, multi-rank MPI tests, Python tests),
# then the C++ tests again under ASan + UBSan (scripts/sanitize.sh), then each libFuzzer
# harness, built with ASan + UBSan, for 30 s (scripts/fuzz.sh; a smoke run:
# fuzz longer by hand, `scripts/fuzz.sh 600`). Stages run in that order; the first failure
# fails the run.
# MUONPLAN_TEST_STAGES picks stages: "ctest sanitize fuzz" (the default, what CI runs): the C++
# tests again under ASan + UBSan (scripts/sanitize.sh) between the two. CI's limit is 90
# minutes and the whole run must stay under 50 on the 2-core VM (docs/reliability.md, "CI's
# time", has the last fresh-clone figures). FUZZ_SECONDS: the time per harness.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
stages="${MUONPLAN_TEST_STAGES:-ctest sanitize fuzz}"
# OpenBLAS's fastest kernel for this CPU's instructions, unless the machine names one: Debian's
# OpenBLAS runs SSE3 GEMMs on CPUs it does not know by model (scripts/openblas-core.sh), which
# doubled the executor tests' time on this project's 2-core VMs. Every test holds under any
# kernel (exec.openblas_*). (Set only when found: OpenBLAS reads an empty value as a choice.)
if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
  core="$(bash "$root/scripts/openblas-core.sh")"
  [ -z "$core" ] || export OPENBLAS_CORETYPE="$core"
fi
echo "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-} (OpenBLAS's own choice when empty)"
stamp() { echo "== $1 ($(date -u +%H:%M:%S))"; }
for stage in $stages; do
  case "$stage" in
    ctest)
      stamp "build and ctest"
      bash "$root/scripts/build.sh"
      (cd "$root/build" && ctest --output-on-failure -j "$(nproc 2>/dev/null || echo 2)")
      ;;
    sanitize) stamp "ASan + UBSan"; bash "$root/scripts/sanitize.sh" ;;
    fuzz) stamp "fuzzers"; bash "$root/scripts/fuzz.sh" "${FUZZ_SECONDS:-30}" ;;
    *) echo "scripts/test.sh: unknown stage '$stage' (ctest, sanitize, fuzz)" >&2; exit 2 ;;
  esac
done
stamp "all stages passed"
