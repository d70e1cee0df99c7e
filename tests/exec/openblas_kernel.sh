#!/usr/bin/env bash
# The GEMM and Newton-Schulz unit tests under one OpenBLAS kernel (docs/reliability.md, "GEMM
# kernels"): OpenBLAS picks its kernel by CPU, and a bound that held for one kernel's summation
# order failed under another's (OPENBLAS_CORETYPE=Haswell broke CI once). Skipped (77) when this
# CPU lacks the kernel's instructions. Usage: openblas_kernel.sh CORE TEST_BINARY SOURCE_DIR
set -u
core="$1" binary="$2" root="$3"
if ! bash "$root/scripts/openblas-core.sh" "$core"; then
  echo "skipped: this CPU lacks the instructions of OpenBLAS's $core kernels"
  exit 77
fi
# MUONPLAN_CPU_GEMM=openblas: the GEMMs run on OpenBLAS (the oracle path), not on oneDNN.
export OPENBLAS_CORETYPE="$core" OMP_WAIT_POLICY=passive MUONPLAN_CPU_GEMM=openblas
# OpenBLAS takes the kernel it is told only if it has one by that name: check that it did.
name="$(python3 -c 'import ctypes; l = ctypes.CDLL("libopenblas.so.0")
l.openblas_get_corename.restype = ctypes.c_char_p; print(l.openblas_get_corename().decode())')"
if [ "${name,,}" != "${core,,}" ]; then
  echo "FAIL: OPENBLAS_CORETYPE=$core, but OpenBLAS runs $name's kernels"
  exit 1
fi
exec "$binary" "[cpu],[ns]"
