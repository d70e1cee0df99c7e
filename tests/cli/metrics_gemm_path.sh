#!/usr/bin/env bash
# execute's metrics name the GEMM path that ran (issue 33 item 25): the state digest depends on
# the library (oneDNN's bf16 GEMMs and the OpenBLAS oracle accumulate fp32 in different orders)
# and on OpenBLAS's kernel, so a digest is compared only with one of the same path. The
# metrics must say what the backend ran, not what was asked: without AVX-512 the onednn path
# runs OpenBLAS (cpu_backend.h), so each run is checked against `bench ns` under the same
# environment, which reports the backend's own choice.
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/p.json" || bad "plan micro"
# run NAME BACKEND [env assignments]: execute's metrics in $work/NAME.json, bench ns's in
# $work/NAME.ns.json, under the same environment.
run() {
  local name="$1" backend="$2"; shift 2
  env "$@" timeout 120 "$bin" execute --plan "$work/p.json" --backend "$backend" --steps 1 \
    --metrics "$work/$name.json" >/dev/null 2>"$work/err" || bad "$name: $(head -c 300 "$work/err")"
  env "$@" "$bin" bench ns --backend cpu --shapes 1,16,24 --reps 1 --sgemm-size 16 --json \
    >"$work/$name.ns.json" 2>"$work/err" || bad "$name bench: $(head -c 300 "$work/err")"
}
same_as_bench() {  # NAME: metrics and bench ns agree on the path and the kernel
  json_check "$1: the path the backend ran" "$work/$1.json" "
ns = json.load(open('$work/$1.ns.json'))
m = d['measured']
assert m['gemm_path'] == ns['gemm_path'], (m['gemm_path'], ns['gemm_path'])
assert m['openblas_core'] == ns['openblas_core'], (m['openblas_core'], ns['openblas_core'])"
}
run oracle cpu MUONPLAN_CPU_GEMM=openblas
same_as_bench oracle
json_check "oracle: openblas" "$work/oracle.json" "
assert d['measured']['gemm_path'] == 'openblas', d['measured']"
run default cpu MUONPLAN_CPU_GEMM=onednn
same_as_bench default
json_check "default: onednn or, without AVX-512, openblas" "$work/default.json" "
assert d['measured']['gemm_path'] in ('onednn', 'openblas'), d['measured']"
run async cpu-async MUONPLAN_CPU_GEMM=openblas
same_as_bench async
# A kernel the user sets is the one named (where this CPU has its instructions).
if bash "$root/scripts/openblas-core.sh" Haswell; then
  run haswell cpu MUONPLAN_CPU_GEMM=openblas OPENBLAS_CORETYPE=Haswell
  json_check "OPENBLAS_CORETYPE=Haswell: named" "$work/haswell.json" "
assert d['measured']['openblas_core'].lower() == 'haswell', d['measured']"
fi
finish
