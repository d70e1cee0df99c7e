#!/usr/bin/env bash
# OpenBLAS's GEMM kernels by the instructions they need (docs/reliability.md, "GEMM kernels").
#   scripts/openblas-core.sh        prints the fastest of SkylakeX, Haswell, Prescott this CPU
#                                   runs (OPENBLAS_CORETYPE's spelling)
#   scripts/openblas-core.sh CORE   exits 0 if this CPU runs CORE's kernels, 1 if not
# Why: Debian's OpenBLAS 0.3.21 picks its kernels by CPU model, and names a virtual CPU that it
# does not know ("Intel(R) Xeon(R) Processor", as on CI) Prescott, whose SSE3 GEMM took 2.0 s of
# a tiny-moe step where SkylakeX's took 0.9 s on the same AVX-512 core. scripts/test.sh picks
# by instruction set instead; every test is bounded to hold under any kernel, and
# exec.openblas_* runs the GEMM and NS unit tests under each kernel the CPU has.
set -euo pipefail
flags=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2 || true) "
has() { for f in "$@"; do [[ "$flags" == *" $f "* ]] || return 1; done; }
runs() {
  case "$1" in
    SkylakeX) has avx512f avx512cd avx512bw avx512dq avx512vl fma avx2 ;;
    Haswell) has avx2 fma ;;
    Prescott) has sse3 || has pni ;;
    *) echo "scripts/openblas-core.sh: unknown core '$1' (SkylakeX, Haswell, Prescott)" >&2; exit 2 ;;
  esac
}
if [ $# -ge 1 ]; then runs "$1"; exit; fi
for core in SkylakeX Haswell Prescott; do
  if runs "$core"; then echo "$core"; exit 0; fi
done
