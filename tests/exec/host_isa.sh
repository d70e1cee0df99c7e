#!/usr/bin/env bash
# The host kernels under one vector form chosen as a user would (MUONPLAN_HOST_ISA; host_kernels.h's
# Isa): the form is taken and small cases equal the scalar loops. Skipped (77) where this CPU
# lacks the form's instructions. (The full-size comparison of every form the CPU has runs in
# the plain host-kernel test.) Usage: host_isa.sh ISA TEST_BINARY
set -u
isa="$1" binary="$2"
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2 || true) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
case "$isa" in
  avx2) need=(avx2 fma) ;;
  avx512) need=(avx512f avx512bw avx512vl avx512dq) ;;
  avx512_bf16) need=(avx512f avx512bw avx512vl avx512dq avx512_bf16) ;;
  *) echo "host_isa.sh: unknown form '$isa'"; exit 2 ;;
esac
if ! has "${need[@]}"; then
  echo "skipped: this CPU lacks ${need[*]}"
  exit 77
fi
export MUONPLAN_HOST_ISA="$isa" OMP_WAIT_POLICY=passive
exec "$binary" "[isa]"
