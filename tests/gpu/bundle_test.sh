#!/usr/bin/env bash
# The GPU bundle (bench/gpu_bundle.sh), assembled from this build's binaries without a GPU:
# every binary's NEEDED libraries are in the bundle or among the device's (gpu_bundle_check.py),
# and the checker notices a missing one; the bundle fits 40 MiB and leaves CUDA's libraries out;
# its OpenBLAS exports just what the binaries call; and, as root, two ranks of
# `muonplan execute` under the bundle's mpirun, with this machine's copies of the bundled
# libraries hidden (bench/gpu_hide.sh), reach the state digest of the build tree's binary.
# Arguments: muonplan binary, repo root, build directory. Skips (77) without patchelf.
source "$(dirname "$0")/../lib/common.sh"
build="$3"
command -v patchelf >/dev/null || { echo "skipped: no patchelf (scripts/setup.sh installs it)"; exit 77; }
bundle="$work/bundle"
if ! bash bench/gpu_bundle.sh --build-dir "$build" --no-build "$bundle" >"$work/make.log" 2>&1; then
  bad "gpu_bundle.sh failed: $(tail -3 "$work/make.log")"
  finish
  exit 1
fi
ok

# The NEEDED lists: nothing missing, nothing of the device's bundled, within 40 MiB.
"$py" bench/gpu_bundle_check.py "$bundle" --json >"$work/check.json" 2>"$work/check.err" && ok ||
  bad "gpu_bundle_check: $(cat "$work/check.err")"
"$py" - "$work/check.json" "$bundle" <<'EOF' && ok || bad "bundle contents"
import json, os, sys
c = json.load(open(sys.argv[1]))
bundle = sys.argv[2]
errors = []
if c["problems"]:
    errors.append(f"problems: {c['problems']}")
if not 0 < c["bytes"] <= 40 * 2**20:
    errors.append(f"{c['bytes']} bytes, not within 40 MiB")
# What the device must provide: CUDA's three linked ones and the C runtime, nothing else.
need = set(c["device_needed"])
for n in ("libcudart.so.13", "libnccl.so.2", "libc.so.6", "libstdc++.so.6"):
    if n not in need:
        errors.append(f"{n} not among the device libraries the binaries need: {sorted(need)}")
allowed_extra = {"ld-linux-x86-64.so.2", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0",
                 "libdl.so.2", "librt.so.1", "libutil.so.1", "libcuda.so.1"}
if need - allowed_extra - {"libcudart.so.13", "libnccl.so.2", "libc.so.6", "libstdc++.so.6"}:
    errors.append(f"unexpected device libraries: {sorted(need)}")
# cuBLAS is loaded by name at the first CUDA backend (executor/cuda/cublas_loader.h), not
# linked: no binary needs it, and muonplan names it for dlopen.
for rel, f in c["files"].items():
    if any(n.startswith("libcublas") for n in f["needed"]):
        errors.append(f"{rel} links cuBLAS (every process would run its initializers)")
if b"libcublas.so.13" not in open(os.path.join(bundle, "bin", "muonplan"), "rb").read():
    errors.append("bin/muonplan does not name libcublas.so.13 for dlopen")
libs = set(os.listdir(os.path.join(bundle, "lib")))
for n in ("libmpi.so.40", "libmpi_cxx.so.40", "libopen-pal.so.40", "libpmix.so.2",
          "libopenblas.so.0", "libyaml-cpp.so.0.7", "libgomp.so.1"):
    if n not in libs:
        errors.append(f"lib/{n} missing")
for n in ("libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2",
          "libcuda.so.1", "libc.so.6", "libstdc++.so.6"):
    if n in libs:
        errors.append(f"lib/{n} bundled, but the device provides it")
plugins = set(os.listdir(os.path.join(bundle, "lib", "openmpi")))
for n in ("mca_pml_ob1.so", "mca_btl_vader.so", "mca_btl_self.so", "mca_pmix_ext3x.so",
          "mca_ess_hnp.so", "mca_plm_rsh.so", "mca_coll_tuned.so"):
    if n not in plugins:
        errors.append(f"lib/openmpi/{n} missing")
for n in plugins:
    if n.startswith(("mca_mtl_", "mca_pml_ucx", "mca_btl_openib")):
        errors.append(f"lib/openmpi/{n}: a fabric plugin bundled")
for b in ("muonplan", "muonplan_gpu_tests", "muonplan_gpu_nccl_test",
          "muonplan_gpu_device_test", "plan_bench", "mpirun", "orted"):
    if not os.access(os.path.join(bundle, "bin", b), os.X_OK):
        errors.append(f"bin/{b} missing")
manifest = json.load(open(os.path.join(bundle, "manifest.json")))
froms = {e["path"]: e for e in manifest["files"]}
if not froms.get("lib/libmpi.so.40", {}).get("package", "").startswith("libopenmpi3"):
    errors.append(f"manifest: lib/libmpi.so.40 {froms.get('lib/libmpi.so.40')}")
print("\n".join(errors))
sys.exit(1 if errors else 0)
EOF

# OpenBLAS: the entry points the binaries import, and no more; a fraction of Debian's 36 MiB.
imports="$(for f in "$bundle"/bin/*; do nm -D --undefined-only "$f" 2>/dev/null; done |
  awk '{print $NF}' | sed 's/@.*//' | grep -E '^(cblas_|openblas_|s?gemm_)' | sort -u | tr '\n' ' ')"
exports="$(nm -D --defined-only "$bundle/lib/libopenblas.so.0" | awk '{print $NF}' |
  sed 's/@.*//' | grep -v '^_' | sort -u | tr '\n' ' ')"
[ -n "$imports" ] && [ "$imports" = "$exports" ] && ok ||
  bad "libopenblas.so.0 exports '$exports', the binaries import '$imports'"
blas_bytes="$(stat -c %s "$bundle/lib/libopenblas.so.0")"
[ "$blas_bytes" -lt $((10 << 20)) ] && ok || bad "libopenblas.so.0 is $blas_bytes bytes"

# The checker notices a library the bundle lacks.
cp -r "$bundle" "$work/broken"
rm "$work/broken/lib/libyaml-cpp.so.0.7"
if "$py" bench/gpu_bundle_check.py "$work/broken" >/dev/null 2>"$work/broken.err"; then
  bad "gpu_bundle_check passed a bundle without libyaml-cpp"
else
  grep -q "bin/muonplan: needs libyaml-cpp.so.0.7, neither in lib/ nor provided by the device" \
    "$work/broken.err" && ok || bad "gpu_bundle_check said: $(cat "$work/broken.err")"
fi
rm -rf "$work/broken"

# A library env.sh has unpacked beside its NAME.xz (after a rehearsal, or a first run) is not
# carried: the checker's size stays the same (it read 71.9 MiB, over the limit, before).
cp -r "$bundle" "$work/used"
unpacked=0
for z in "$work"/used/lib/*.xz; do
  [ -e "$z" ] || continue
  xz -dc "$z" >"${z%.xz}" && unpacked=$((unpacked + 1))
done
"$py" bench/gpu_bundle_check.py "$work/used" --json >"$work/used.json" 2>/dev/null
"$py" - "$work/check.json" "$work/used.json" "$unpacked" <<'EOF2' && ok || bad "an unpacked library counted"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert int(sys.argv[3]) > 0, "no NAME.xz in the bundle to unpack"
assert b["bytes"] == a["bytes"] and not b["problems"], (a["bytes"], b["bytes"], b["problems"])
EOF2
rm -rf "$work/used"

# With this machine's copies hidden: the bundle runs two ranks, the build tree's binary cannot
# start, and the digest is the build tree's.
if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
  echo "not root or no unshare -m: the hidden-library run is skipped"
  finish
  exit
fi
"$bin" plan --model models/tiny-moe.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node 2 --offload none --out "$work/p.json" >/dev/null || bad "plan"
mpiexec="$(sed -n 's/^MPIEXEC_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt")"
want="$("${mpiexec:-mpiexec}" --allow-run-as-root --oversubscribe -n 2 "$bin" execute \
  --plan "$work/p.json" --steps 1 --json 2>"$work/err" | "$py" -c \
  "import json,sys; print(json.load(sys.stdin)['measured']['state_digest'])")"
[ -n "$want" ] || bad "build tree's execute: $(cat "$work/err")"
data="$work/share/muonplan"
mkdir -p "$data/calibration"
for d in models topologies reports; do ln -s "$root/$d" "$data/$d"; done
cat >"$work/inside.sh" <<EOF
source "$bundle/env.sh"
export MUONPLAN_DATA_DIR="$data"
echo "libmpi bytes: \$(wc -c </usr/lib/x86_64-linux-gnu/libmpi.so.40)"
echo "openmpi plugins: \$(ls /usr/lib/x86_64-linux-gnu/openmpi | wc -l)"
"$bin" --help >/dev/null 2>&1; echo "build tree binary: exit \$?"
"$bundle/bin/mpirun" --allow-run-as-root --oversubscribe -n 2 "$bundle/bin/muonplan" execute \
  --plan "$work/p.json" --steps 1 --json >"$work/hidden.json" 2>"$work/hidden.err"
echo "bundle execute: exit \$?"
EOF
bash bench/gpu_hide.sh "$bundle" bash "$work/inside.sh" >"$work/inside.out" 2>&1
grep -qx "libmpi bytes: 0" "$work/inside.out" && ok || bad "libmpi not hidden: $(cat "$work/inside.out")"
grep -qx "openmpi plugins: 0" "$work/inside.out" && ok || bad "plugins not hidden: $(cat "$work/inside.out")"
grep -qx "build tree binary: exit 127" "$work/inside.out" && ok ||
  bad "the build tree's binary started with the libraries hidden: $(cat "$work/inside.out")"
grep -qx "bundle execute: exit 0" "$work/inside.out" && ok ||
  bad "bundle execute: $(cat "$work/inside.out" "$work/hidden.err")"
got="$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['measured']['state_digest'])" \
  "$work/hidden.json" 2>/dev/null)"
[ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "digest $got with the bundle, $want without"
echo "state digest $got (bundle, libraries hidden) = $want (build tree)"
finish
