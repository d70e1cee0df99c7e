#!/usr/bin/env bash
# Builds here, with nvcc for sm_90, everything bench/gpu_check.sh runs on a device machine, and
# puts it in one folder to carry there (docs/executor.md, "GPU check"):
#
#   DIR/bin    muonplan, the gpu.* test binaries (muonplan_gpu_tests, muonplan_gpu_nccl_test,
#              muonplan_gpu_device_test), bench/plan_bench; OpenMPI's mpirun (orterun), orted
#              and ompi_info. Executables carry DT_RPATH $ORIGIN/../lib, which the loader also
#              uses for the libraries those libraries load.
#   DIR/lib    every shared library they need that a device image lacks: OpenMPI, PMIx, hwloc,
#              libevent, yaml-cpp, libgomp, ..., and libopenblas.so.0 relinked from Debian's own
#              static archive with only the entry points the binaries call and three kernel sets
#              (see below); lib/openmpi and lib/pmix hold the plugins OpenMPI and PMIx load at
#              run time, minus those for fabrics (UCX, OFI, PSM, verbs), OpenSHMEM and MPI-IO.
#   DIR/share  OpenMPI's and PMIx's help texts; DIR/etc/openmpi-mca-params.conf the MCA defaults.
#   DIR/env.sh sourced before running anything from DIR: OPAL_* and PMIx's component path point
#              OpenMPI at DIR (relocation), wherever DIR is.
#   DIR/manifest.json  what was bundled, from which file, and the libraries left to the device.
#
# Left out, found at run time on the device (gpu_check.sh: the toolkit's lib64 first, then the
# pip wheels under torch's site-packages): libcuda (driver), libcudart, libcublas(Lt), libnccl;
# and the C runtime every image has (glibc, libstdc++, libgcc_s; torch needs the latter two).
#
# OpenBLAS: Debian's libopenblas.so.0 is 36 MiB, kernels for 24 x86 cores. The bundle's copy is
# linked from Debian's libopenblas.a (the same objects) with the kernel tables of other cores
# bound to the nearest kept one: Haswell (AVX2; Zen takes it), SkylakeX (AVX-512; Cooperlake
# takes it), Prescott (SSE3, every other core). On a core of those three the results are the
# bits of Debian's library (checked with OPENBLAS_CORETYPE); the CPU backend only needs them
# to be reproducible. About 6 MiB.
#
# Usage: bench/gpu_bundle.sh [--build-dir B] [--no-build] [DIR]   (DIR: build-bundle)
#   --build-dir B  the CMake build tree (default build-sm90; configured here if new)
#   --no-build     assemble from B's existing binaries (tests/bundle/bundle_test.sh does this
#                  with the ctest build tree)
# Env: GPU_BUNDLE_JOBS (build parallelism, nproc), GPU_BUNDLE_MAX_MIB (40).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-sm90"
do_build=1
dest=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$(realpath -m "$2")"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "gpu_bundle: unknown option $1" >&2; exit 2 ;;
    *) dest="$1"; shift ;;
  esac
done
dest="$(realpath -m "${dest:-$root/build-bundle}")"
max_mib="${GPU_BUNDLE_MAX_MIB:-40}"
arch=x86_64-linux-gnu
syslib=/usr/lib/$arch
say() { echo "gpu_bundle: $*" >&2; }
die() { say "$*"; exit 1; }

# The libraries a device image provides: the C runtime and, found at run time, CUDA's.
# (bench/gpu_bundle_check.py holds the same list.)
allowed_re='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libpthread\.so\.0|libdl\.so\.2|librt\.so\.1|libutil\.so\.1|libresolv\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libcuda\.so\.1|libcudart\.so\.13|libcublas\.so\.13|libcublasLt\.so\.13|libnccl\.so\.2|linux-vdso\.so\.1)$'
binaries=(cli/muonplan tests/muonplan_gpu_tests tests/muonplan_gpu_nccl_test
          tests/muonplan_gpu_device_test bench/plan_bench)

command -v patchelf >/dev/null || die "patchelf is missing (apt-get install patchelf; scripts/setup.sh installs it)"

# --- 1. Build (Release, sm_90, only the binaries the check runs).
if [ "$do_build" = 1 ]; then
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  [ -x "$nvcc" ] || die "no nvcc (PATH or /usr/local/cuda/bin): the bundle needs the CUDA targets"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    args=(-DCMAKE_BUILD_TYPE=Release -DMUONPLAN_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90
          -DCMAKE_CUDA_COMPILER="$nvcc"
          -DMPIEXEC_PREFLAGS="$(bash "$root/scripts/mpiexec-flags.sh")")
    command -v ninja >/dev/null && args+=(-G Ninja)
    command -v ccache >/dev/null &&
      args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    cmake -S "$root" -B "$build" "${args[@]}" >/dev/null
  fi
  say "building in $build"
  cmake --build "$build" -j "${GPU_BUNDLE_JOBS:-$(nproc)}" --target muonplan muonplan_gpu_tests \
    muonplan_gpu_nccl_test muonplan_gpu_device_test plan_bench
fi
for b in "${binaries[@]}"; do
  [ -x "$build/$b" ] || die "$build/$b is missing (a build with nvcc and NCCL found builds it)"
done
# sm_90: executor/CMakeLists.txt's default, unless the cache says otherwise.
cuda_arch="$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$build/CMakeCache.txt")"
[ -z "$cuda_arch" ] || [ "$cuda_arch" = 90 ] ||
  say "warning: $build builds for CUDA architectures $cuda_arch, not 90 (the H200's)"

# --- 2. Lay out the folder.
rm -rf "$dest"
mkdir -p "$dest"/{bin,lib/openmpi,lib/pmix,share/openmpi,share/pmix,etc}
origins="$dest/.origins"  # bundled path <TAB> the file it came from
: >"$origins"
for b in "${binaries[@]}"; do
  cp "$build/$b" "$dest/bin/"
  printf 'bin/%s\t%s\n' "$(basename "$b")" "$build/$b" >>"$origins"
done
# OpenMPI's launcher and its daemon (a singleton MPI_Init starts orted), ompi_info to look.
for pair in orterun:mpirun orted:orted ompi_info:ompi_info; do
  src="/usr/bin/${pair%%:*}"
  [ -x "$src" ] || die "$src is missing (openmpi-bin)"
  cp "$(readlink -f "$src")" "$dest/bin/${pair##*:}"
  printf 'bin/%s\t%s\n' "${pair##*:}" "$(readlink -f "$src")" >>"$origins"
done
ln -s mpirun "$dest/bin/mpiexec"

# Plugins: every OpenMPI component but those for fabrics the device run does not use (and
# whose libraries would triple the bundle), OpenSHMEM and MPI-IO; PMIx's few.
ompi_plugins="$syslib/openmpi/lib/openmpi3"
[ -d "$ompi_plugins" ] || die "$ompi_plugins is missing (libopenmpi3)"
skip_re='^mca_(mtl_|btl_(openib|ofi|uct|usnic)|pml_(ucx|cm)|osc_ucx|spml_|atomic_|memheap_|scoll_|sshmem_|io_|fcoll_|fbtl_|sharedfp_|reachable_netlink|coll_(hcoll|fca|ucc))'
for f in "$ompi_plugins"/mca_*.so; do
  name="$(basename "$f")"
  [[ "$name" =~ $skip_re ]] && continue
  cp "$f" "$dest/lib/openmpi/"
  printf 'lib/openmpi/%s\t%s\n' "$name" "$f" >>"$origins"
done
for f in "$syslib"/pmix2/lib/pmix/*.so; do
  cp "$f" "$dest/lib/pmix/"
  printf 'lib/pmix/%s\t%s\n' "$(basename "$f")" "$f" >>"$origins"
done
cp -r /usr/share/openmpi/. "$dest/share/openmpi/"
printf 'share/openmpi\t%s\n' /usr/share/openmpi >>"$origins"
if [ -d "$syslib/pmix2/share/pmix" ]; then
  cp -r "$syslib/pmix2/share/pmix/." "$dest/share/pmix/"
  printf 'share/pmix\t%s\n' "$syslib/pmix2/share/pmix" >>"$origins"
fi
# MCA defaults: Debian's (/etc/openmpi) plus one node's transports, stated rather than probed.
cat >"$dest/etc/openmpi-mca-params.conf" <<'EOF'
# The bundle's OpenMPI defaults (bench/gpu_bundle.sh): one node, shared memory and TCP.
btl_base_warn_component_unused = 0
pml = ob1
btl = self,vader,tcp
osc = ^ucx,pt2pt
# No cross-memory attach between ranks: sandboxed runtimes (gVisor) may lack process_vm_readv;
# the bulk data moves over NCCL anyway.
btl_vader_single_copy_mechanism = none
# No binding: a container's view of the cores may not let hwloc bind; one rank per GPU here.
hwloc_base_binding_policy = none
EOF
: >"$dest/etc/openmpi-default-hostfile"

# --- 3. Shared libraries: the closure of what the binaries and plugins load, less the allowed.
# libopenblas.so.0 is made below, not copied.
copy_deps() {  # copy_deps ELF...: each library it needs (NEEDED) not allowed, not yet here
  local f name path
  for f in "$@"; do
    for name in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ "$name" =~ $allowed_re ]] && continue
      [ "$name" = libopenblas.so.0 ] && continue
      [ -e "$dest/lib/$name" ] && continue
      path="$(ldd "$f" | sed -n "s|^[[:space:]]*$name => \(/[^ ]*\) .*|\1|p")"
      [ -n "$path" ] || die "$(basename "$f") needs $name, which is not found here"
      cp "$(readlink -f "$path")" "$dest/lib/$name"
      printf 'lib/%s\t%s\n' "$name" "$(readlink -f "$path")" >>"$origins"
      copy_deps "$dest/lib/$name"
    done
  done
}
copy_deps "$dest"/bin/* "$dest"/lib/openmpi/*.so "$dest"/lib/pmix/*.so

# libopenblas.so.0: the entry points the binaries import, from Debian's static archive.
blas_a="$(readlink -f "$syslib/libopenblas.a")"
[ -f "$blas_a" ] || die "$syslib/libopenblas.a is missing (libopenblas-pthread-dev)"
blas_syms="$(for f in "$dest"/bin/*; do nm -D --undefined-only "$f" 2>/dev/null; done |
  awk '{print $NF}' | sed 's/@.*//' | sort -u |
  grep -xF -f <(nm -D --defined-only "$syslib/libopenblas.so.0" | awk '{print $NF}' |
                sed 's/@.*//' | sort -u) || true)"
[ -n "$blas_syms" ] || die "no binary imports a BLAS symbol: the BLAS check is broken"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
{ echo "{ global:"; for s in $blas_syms; do echo "  $s;"; done; echo "local: *; };"; } \
  >"$work/blas.map"
blas_args=()
for s in $blas_syms; do blas_args+=("-Wl,-u,$s"); done
# Kernel tables bound to a kept one (the five old 32-bit cores' tables are a few kB: kept, so
# openblas_get_corename still names Prescott).
for core in ATOM BARCELONA BOBCAT BULLDOZER CORE2 DUNNINGTON EXCAVATOR NANO NEHALEM OPTERON \
  PENRYN PILEDRIVER SANDYBRIDGE STEAMROLLER; do
  blas_args+=("-Wl,--defsym,gotoblas_$core=gotoblas_PRESCOTT")
done
blas_args+=("-Wl,--defsym,gotoblas_ZEN=gotoblas_HASWELL"
            "-Wl,--defsym,gotoblas_COOPERLAKE=gotoblas_SKYLAKEX")
gcc -shared -o "$dest/lib/libopenblas.so.0" -Wl,-soname,libopenblas.so.0 \
  -Wl,--version-script="$work/blas.map" -Wl,--gc-sections -Wl,--no-undefined "${blas_args[@]}" \
  "$blas_a" -lpthread -lm
printf 'lib/libopenblas.so.0\t%s\n' "$blas_a" >>"$origins"
copy_deps "$dest/lib/libopenblas.so.0"

# --- 4. Strip, and point every ELF at the bundle's lib/ (DT_RPATH: also used for what the
# libraries and plugins load; none of them carries a RUNPATH that would stop it).
for f in "$dest"/bin/* "$dest"/lib/*.so* "$dest"/lib/openmpi/*.so "$dest"/lib/pmix/*.so; do
  [ -L "$f" ] && continue
  strip --strip-unneeded "$f" 2>/dev/null || true
  case "$f" in
    "$dest"/bin/*) patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$f" ;;
    "$dest"/lib/openmpi/* | "$dest"/lib/pmix/*) patchelf --force-rpath --set-rpath '$ORIGIN/..' "$f" ;;
    *) patchelf --force-rpath --set-rpath '$ORIGIN' "$f" ;;
  esac
done

# --- 4b. A library too large to travel whole (oneDNN, 40 MB: the CPU backend's bf16 GEMMs)
# goes as xz -1 (about 8 MB, 1.5 s); env.sh unpacks it beside itself on first use. The bundle
# must fit the device's 64 MiB working tree with the repository.
for f in "$dest"/lib/*.so*; do
  { [ -L "$f" ] || [ "$(stat -c %s "$f")" -le $((16 << 20)) ]; } && continue
  xz -1 -T1 "$f"
  name="$(basename "$f")"
  sed -i "s|^lib/$name\t|lib/$name.xz\t|" "$origins"
done

# --- 5. env.sh: OpenMPI relocated to the bundle (OPAL_PREFIX and the directories it derives
# from Debian's absolute configure paths), PMIx's plugins, nothing from /etc/openmpi.
cat >"$dest/env.sh" <<'EOF'
# Sourced before running the bundle's binaries (bench/gpu_bundle.sh): OpenMPI and PMIx find
# their plugins, help texts and defaults in the bundle. Sets no LD_LIBRARY_PATH: the binaries
# carry DT_RPATH $ORIGIN/../lib.
MUONPLAN_BUNDLE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export MUONPLAN_BUNDLE
# Libraries that travel compressed (gpu_bundle.sh, step 4b): unpacked once, beside the .xz.
for z in "$MUONPLAN_BUNDLE"/lib/*.xz; do
  [ -e "$z" ] && [ ! -e "${z%.xz}" ] || continue
  if command -v xz >/dev/null; then xz -dc "$z"; else
    python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$z"
  fi >"${z%.xz}.part.$$" && mv "${z%.xz}.part.$$" "${z%.xz}"
done
export OPAL_PREFIX="$MUONPLAN_BUNDLE" OPAL_EXEC_PREFIX="$MUONPLAN_BUNDLE"
export OPAL_BINDIR="$MUONPLAN_BUNDLE/bin" OPAL_SBINDIR="$MUONPLAN_BUNDLE/bin"
export OPAL_LIBEXECDIR="$MUONPLAN_BUNDLE/bin" OPAL_LIBDIR="$MUONPLAN_BUNDLE/lib"
export OPAL_PKGLIBDIR="$MUONPLAN_BUNDLE/lib/openmpi"
export OPAL_DATAROOTDIR="$MUONPLAN_BUNDLE/share" OPAL_DATADIR="$MUONPLAN_BUNDLE/share"
export OPAL_PKGDATADIR="$MUONPLAN_BUNDLE/share/openmpi"
export OPAL_SYSCONFDIR="$MUONPLAN_BUNDLE/etc"
export PMIX_MCA_mca_base_component_path="$MUONPLAN_BUNDLE/lib/pmix"
export PMIX_PREFIX="$MUONPLAN_BUNDLE"
EOF

# --- 6. Check and describe it.
python3 "$root/bench/gpu_bundle_check.py" --manifest "$dest" "$origins" --max-mib "$max_mib"
rm -f "$origins"
say "$(du -sh "$dest" | cut -f1) in $dest"
