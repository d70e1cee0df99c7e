#!/usr/bin/env bash
# With OPENBLAS_CORETYPE unset, muonplan runs the OpenBLAS kernel of this CPU's instruction set
# (openblas_core.h: set from CPUID before OpenBLAS loads), never Prescott's SSE3 kernels on an
# AVX2 or AVX-512 CPU; a set OPENBLAS_CORETYPE is the user's and is kept; the GEMM path is
# reported. Skipped (77) on a CPU without AVX2, where OpenBLAS's own choice stands.
set -u
source "$(dirname "$0")/lib.sh"
want="$(bash "$root/scripts/openblas-core.sh")"
if [ "$want" != SkylakeX ] && [ "$want" != Haswell ]; then
  echo "skipped: this CPU has neither AVX-512 nor AVX2 ($want)"
  exit 77
fi
run_ns() {  # OUT [env assignments]
  local out="$1"; shift
  env -u OPENBLAS_CORETYPE "$@" "$bin" bench ns --backend cpu --shapes 1,16,24 --reps 1 \
    --sgemm-size 16 --json >"$out"
}
run_ns "$work/unset.json" && ok || bad "bench ns with OPENBLAS_CORETYPE unset"
json_check "unset: the instruction set's kernel, chosen by muonplan" "$work/unset.json" "
assert d['openblas_core'].lower() == '$want'.lower(), d['openblas_core']
assert d['openblas_core'].lower() != 'prescott', d['openblas_core']
assert d['openblas_core_origin'] == 'muonplan', d['openblas_core_origin']
assert d['gemm_path'] in ('onednn', 'openblas'), d['gemm_path']"
# The choice is made before OpenBLAS loads: a forced choice (the test hook) is the one it runs,
# though OpenBLAS would pick another kernel here by itself.
run_ns "$work/forced.json" MUONPLAN_OPENBLAS_CORE=Haswell && ok || bad "bench ns, forced Haswell"
json_check "forced: chosen before OpenBLAS loads" "$work/forced.json" "
assert d['openblas_core'].lower() == 'haswell', d['openblas_core']
assert d['openblas_core_origin'] == 'muonplan', d['openblas_core_origin']"
run_ns "$work/set.json" OPENBLAS_CORETYPE=Haswell && ok || bad "bench ns with OPENBLAS_CORETYPE set"
json_check "set: the user's kernel" "$work/set.json" "
assert d['openblas_core'].lower() == 'haswell', d['openblas_core']
assert d['openblas_core_origin'] == 'environment', d['openblas_core_origin']"
run_ns "$work/oracle.json" MUONPLAN_CPU_GEMM=openblas && ok || bad "bench ns on the oracle path"
json_check "MUONPLAN_CPU_GEMM=openblas: the oracle path" "$work/oracle.json" "
assert d['gemm_path'] == 'openblas', d['gemm_path']"
expect "--gemm bad" 2 "--gemm: expected onednn or openblas, got 'x'" \
  "$bin" bench ns --backend cpu --gemm x --shapes 1,16,16
finish
