#!/usr/bin/env bash
# The GPU check, for a session lent one H200 (docs/executor.md, "CUDA backend"): in one run,
#   1. configures build-gpu (Release, CMAKE_CUDA_ARCHITECTURES=90) and builds only the CUDA
#      targets' binaries (-j16);
#   2. runs ctest -R '^gpu\.' (CUDA vs CPU primitive by primitive, NS, a one-rank step, NCCL,
#      `execute --backend cuda`);
#   3. times NS for the shapes below, plain and symmetric (tiles 128, 256, 512), with the
#      published figures' 5-step schedule (quintic), beside published.yaml's H200 times and the
#      planner's predictions;
#   4. runs `muonplan execute --backend cuda` for 3 steps of a 2-layer Qwen3-30B-A3B slice
#      (bench/qwen3-30b-a3b-2layers.yaml) on one GPU;
# and writes ONE JSON, $OUT/gpu_check.json, with every figure, the published one beside it and
# pass/fail against the targets: plain NS no slower than published, symmetric NS at least 1.3x
# faster than published (shapes without a published figure are reported, not judged). Logs go
# beside it. Without a device it says so and writes a JSON recording "no device" (exit 0).
#
#   device tool: run(command="bash bench/gpu_check.sh", timeout_s=600)
#                (add carry=["build-deps"] after bench/gpu_deps.sh if the image lacks the
#                libraries: yaml-cpp, Boost.Graph, OpenMPI, OpenBLAS, Catch2, CLI11, nlohmann-json)
#   elsewhere:   OUT=/tmp/gpu bash bench/gpu_check.sh
# Budget: under 8 minutes on an H200 (each stage has a timeout; later stages are skipped, and
# say so, when the budget runs out).
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 1
OUT="${OUT:-$root/build-gpu-check}"
mkdir -p "$OUT"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Testing the script itself on a machine without a GPU: GPU_CHECK_ASSUME_DEVICE=1 runs every
# stage anyway (the CUDA ones then fail or skip), GPU_CHECK_BUILD_DIR reuses a build directory,
# GPU_CHECK_JOBS sets the build's parallelism (16).
build="${GPU_CHECK_BUILD_DIR:-$root/build-gpu}"
jobs="${GPU_CHECK_JOBS:-16}"
started=$(date +%s)
budget_s=470
elapsed() { echo $(($(date +%s) - started)); }
left() { echo $((budget_s - $(elapsed))); }
log() { echo "gpu_check [$(elapsed) s]: $*" | tee -a "$OUT/gpu_check.log"; }
: >"$OUT/gpu_check.log"

shapes="32,768,2048;16,2048,768;16,1408,4096;8,2048,6144;1,6144,16384"
tiles="128 256 512"
schedule=quintic
py="$(command -v python3 || true)"
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

# Stage results, read by the JSON writer at the end.
echo '{}' >"$work/stages.json"
stage() {  # stage NAME STATUS [SECONDS] [NOTE]
  "$py" - "$work/stages.json" "$@" <<'EOF'
import json, sys
path, name, status = sys.argv[1:4]
d = json.load(open(path))
d[name] = {"status": status}
if len(sys.argv) > 4 and sys.argv[4] != "": d[name]["seconds"] = float(sys.argv[4])
if len(sys.argv) > 5: d[name]["note"] = sys.argv[5]
json.dump(d, open(path, "w"))
EOF
}

write_json() {  # write_json STATUS [REASON]
  "$py" - "$OUT/gpu_check.json" "$work" "$root" "$1" "${2:-}" "$shapes" "$tiles" "$schedule" \
    "$(elapsed)" <<'EOF'
import glob, json, os, re, sys
out, work, root, status, reason, shapes, tiles, schedule, elapsed = sys.argv[1:10]
def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return default
# Published H200 NS times (published.yaml: "5-step schedule, bf16 GEMMs with folded adds").
published = {}
text = open(os.path.join(root, "tests/data/calibration/published.yaml")).read()
for m in re.finditer(r"\{batch: *(\d+), *rows: *(\d+), *cols: *(\d+), *ms: *([\d.]+)\}", text):
    published[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
result = {
    "schema": "muonplan.gpu_check/1",
    "status": status,
    "elapsed_s": float(elapsed),
    "device": load(os.path.join(work, "device.json"), {}),
    "stages": load(os.path.join(work, "stages.json"), {}),
    "targets": {"plain_ns": "plain ms <= published ms",
                "symmetric_ns": "published ms / symmetric ms >= 1.3",
                "schedule": schedule + " (the published figures' 5-step schedule; all 5-step "
                            "presets cost the same)"},
}
if reason:
    result["reason"] = reason
ns = []
plain = load(os.path.join(work, "ns_plain.json"), {}) or {}
sym = {t: load(os.path.join(work, f"ns_sym_{t}.json"), {}) or {} for t in tiles.split()}
def ms_of(run, key):
    for row in run.get("shapes", []):
        if (row["batch"], row["rows"], row["cols"]) == key:
            return row["ms"]
    return None
checks = []
for item in shapes.split(";"):
    b, r, c = (int(x) for x in item.split(","))
    key = (b, r, c)
    row = {"batch": b, "rows": r, "cols": c, "published_ms": published.get(key)}
    pred = load(os.path.join(work, f"cost_{b}_{r}_{c}.json"), {}) or {}
    pred_sym = load(os.path.join(work, f"cost_{b}_{r}_{c}_sym.json"), {}) or {}
    row["predicted_plain_ms"] = pred.get("ms")
    row["predicted_symmetric_ms"] = pred_sym.get("ms")
    row["plain_ms"] = ms_of(plain, key)
    by_tile = {t: ms_of(run, key) for t, run in sym.items()}
    row["symmetric_ms_by_tile"] = by_tile
    # The backend's own tile choice (cuda_backend.h: 128 up to m = 1024, 256 up to 4096, 512).
    m = min(r, c)
    default_tile = "128" if m <= 1024 else "256" if m <= 4096 else "512"
    row["symmetric_default_tile"] = int(default_tile)
    row["symmetric_ms"] = by_tile.get(default_tile)
    timed = {t: v for t, v in by_tile.items() if v is not None}
    if timed:
        best = min(timed, key=timed.get)
        row["symmetric_best_tile"], row["symmetric_best_ms"] = int(best), timed[best]
    if row["plain_ms"] and row["symmetric_ms"]:
        row["symmetric_speedup_vs_plain"] = row["plain_ms"] / row["symmetric_ms"]
    p = row["published_ms"]
    if p is not None:
        if row["plain_ms"] is not None:
            row["plain_speedup_vs_published"] = p / row["plain_ms"]
            row["plain_pass"] = row["plain_ms"] <= p
            checks.append(row["plain_pass"])
        else:
            checks.append(False)
        if row["symmetric_ms"] is not None:
            row["symmetric_speedup_vs_published"] = p / row["symmetric_ms"]
            row["symmetric_pass"] = p / row["symmetric_ms"] >= 1.3
            checks.append(row["symmetric_pass"])
        else:
            checks.append(False)
    ns.append(row)
result["ns"] = ns
tests = load(os.path.join(work, "ctest.json"))
if tests is not None:
    result["tests"] = tests
    checks.append(tests.get("failed", 1) == 0 and tests.get("passed", 0) > 0)
execute = load(os.path.join(work, "execute.json"))
if execute is not None:
    result["execute"] = execute
    checks.append(execute.get("rc") == 0)
result["pass"] = bool(checks) and all(checks) and status == "ran"
with open(out, "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print(json.dumps({k: result[k] for k in ("status", "pass", "elapsed_s")}))
EOF
}

if [ -z "$py" ]; then
  # No python: the JSON by hand, status only.
  printf '{"schema": "muonplan.gpu_check/1", "status": "error", "reason": "no python3 on this machine"}\n' \
    >"$OUT/gpu_check.json"
  echo "gpu_check: no python3" >&2
  exit 1
fi

# --- 0. Is there a device? nvidia-smi where it exists, else the CUDA runtime itself.
log "looking for a CUDA device"
device_ok=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  device_ok=1
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader \
    >"$work/smi.txt" 2>/dev/null
  "$py" -c "import json,sys; f=[x.strip() for x in open(sys.argv[1]).read().split(',')]
json.dump({'name': f[0], 'memory': f[1], 'driver': f[2], 'max_sm_clock': f[3] if len(f) > 3 else None,
           'count': int(sys.argv[2])}, open(sys.argv[3], 'w'))" "$work/smi.txt" \
    "$(nvidia-smi -L | grep -c '^GPU')" "$work/device.json"
else
  nvcc="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  cat >"$work/probe.cu" <<'EOF'
#include <cstdio>
#include <cuda_runtime.h>
int main() {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) { std::printf("{\"count\": 0, \"error\": %d, \"message\": \"%s\"}\n", int(e), cudaGetErrorString(e)); return 1; }
  cudaDeviceProp p;
  if (n > 0 && cudaGetDeviceProperties(&p, 0) == cudaSuccess)
    std::printf("{\"count\": %d, \"name\": \"%s\", \"memory_bytes\": %zu, \"sm_count\": %d}\n", n, p.name, p.totalGlobalMem, p.multiProcessorCount);
  else std::printf("{\"count\": %d}\n", n);
  return n > 0 ? 0 : 1;
}
EOF
  if "$nvcc" -o "$work/probe" "$work/probe.cu" >"$work/probe.log" 2>&1; then
    "$work/probe" >"$work/device.json" && device_ok=1
  else
    echo "{\"count\": 0, \"message\": \"nvcc could not build the probe\"}" >"$work/device.json"
  fi
fi
[ "${GPU_CHECK_ASSUME_DEVICE:-0}" = 1 ] && device_ok=1
if [ "$device_ok" != 1 ]; then
  reason="$("$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('message', 'no device'))" "$work/device.json" 2>/dev/null || echo "no device")"
  log "no CUDA device here ($reason): nothing to check; writing $OUT/gpu_check.json"
  stage build skipped "" "no device"
  write_json "no device" "$reason"
  exit 0
fi
log "device: $(cat "$work/device.json")"

# --- 1. Configure and build the binaries the checks run.
configure() {  # configure [extra cmake args...]
  local fresh=()
  # A new build directory: Ninja where there is one, warnings not fatal (another compiler than
  # CI's may warn). An existing one keeps its generator and settings.
  if [ ! -f "$build/CMakeCache.txt" ]; then
    fresh=(-DMUONPLAN_WERROR=OFF)
    command -v ninja >/dev/null 2>&1 && fresh+=(-G Ninja)
  fi
  cmake -S "$root" -B "$build" "${fresh[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90 "$@"
}
# Libraries carried as .deb files (bench/gpu_deps.sh), unpacked into a private prefix.
use_carried_deps() {
  local prefix=/tmp/muonplan-deps arch=x86_64-linux-gnu f
  ls "$root"/build-deps/*.deb >/dev/null 2>&1 || return 1
  mkdir -p "$prefix"
  for f in "$root"/build-deps/*.deb; do dpkg-deb -x "$f" "$prefix" || return 1; done
  local lib="$prefix/usr/lib/$arch"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export CMAKE_INCLUDE_PATH="$prefix/usr/include:$prefix/usr/include/$arch"
  export CMAKE_LIBRARY_PATH="$lib:$lib/openblas-pthread"
  export LD_LIBRARY_PATH="$lib:$lib/openblas-pthread:$lib/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export OPAL_PREFIX="$prefix/usr" PATH="$prefix/usr/bin:$PATH"
  # Debian names these through update-alternatives, which dpkg-deb -x does not run.
  deps_args=(-DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi"
             -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun.openmpi"
             -DMUONPLAN_OPENBLAS_INCLUDE_DIR="$prefix/usr/include/$arch/openblas-pthread")
  return 0
}
deps_args=()
log "configuring $build"
t0=$(date +%s)
if ! configure >"$OUT/build.log" 2>&1; then
  if use_carried_deps; then
    log "configure failed with the system's libraries; retrying with build-deps/"
    rm -rf "$build"
    configure "${deps_args[@]}" >>"$OUT/build.log" 2>&1
  fi
fi
if [ ! -f "$build/build.ninja" ] && [ ! -f "$build/Makefile" ]; then
  missing="$(grep -E "Could NOT find|Could not find|not found" "$OUT/build.log" | head -5 | tr '\n' ' ')"
  stage build failed "$(($(date +%s) - t0))" "configure failed: $missing (bench/gpu_deps.sh, then carry build-deps)"
  log "configure failed: $missing"
  write_json "build failed" "configure failed: $missing"
  exit 1
fi
log "building (-j$jobs)"
if ! timeout "$(left)" cmake --build "$build" -j"$jobs" --target muonplan muonplan_gpu_tests \
  muonplan_gpu_nccl_test muonplan_gpu_device_test >>"$OUT/build.log" 2>&1; then
  stage build failed "$(($(date +%s) - t0))" "$(grep -m3 -E "error|Error" "$OUT/build.log" | tr '\n' ' ')"
  log "build failed (see build.log)"
  write_json "build failed" "build failed: see build.log"
  exit 1
fi
stage build ok "$(($(date +%s) - t0))"
log "built in $(($(date +%s) - t0)) s"
bin="$build/cli/muonplan"

# --- 2. The GPU tests.
if [ "$(left)" -gt 60 ]; then
  log "ctest -R '^gpu\\.'"
  t0=$(date +%s)
  (cd "$build" && timeout "$(($(left) - 40))" ctest -R '^gpu\.' --output-on-failure \
    --timeout 240) >"$OUT/ctest.log" 2>&1
  rc=$?
  "$py" - "$OUT/ctest.log" "$work/ctest.json" "$rc" <<'EOF'
import json, re, sys
text = open(sys.argv[1]).read()
tests = {}
for m in re.finditer(r"Test +#\d+: (\S+) \.+\**\s*(Passed|Failed|\*\*\*Skipped|Not Run|\*\*\*Timeout|Skipped|\*\*\*Failed|Exception\S*)[^\n]*?([\d.]+) sec", text):
    tests[m[1]] = {"result": m[2].strip("*"), "seconds": float(m[3])}
# The figures the tests print (NS differences, step comparisons).
figures = [l for l in text.splitlines() if re.match(r"^(NS cuda|step cuda|world \d|rank \d|device 0)", l)]
passed = sum(1 for t in tests.values() if t["result"] == "Passed")
skipped = sum(1 for t in tests.values() if t["result"] == "Skipped")
json.dump({"rc": int(sys.argv[3]), "passed": passed, "skipped": skipped,
           "failed": len(tests) - passed - skipped, "tests": tests, "figures": figures},
          open(sys.argv[2], "w"), indent=1)
EOF
  summary="$("$py" -c "import json,sys; d=json.load(open(sys.argv[1]))
print('failed' if d['rc'] or d['failed'] else 'ok' if d['passed'] else 'skipped')" "$work/ctest.json")"
  stage tests "$summary" "$(($(date +%s) - t0))"
  log "tests: rc $rc"
else
  stage tests skipped "" "time budget"
fi

# --- 3. NS timings, plain and symmetric per tile, with the planner's predictions.
if [ "$(left)" -gt 40 ]; then
  log "NS timings"
  t0=$(date +%s)
  for s in ${shapes//;/ }; do
    IFS=, read -r b r c <<<"$s"
    "$bin" cost ns --batch "$b" --rows "$r" --cols "$c" --ns-schedule "$schedule" --json \
      >"$work/cost_${b}_${r}_${c}.json" 2>>"$OUT/bench.log"
    "$bin" cost ns --batch "$b" --rows "$r" --cols "$c" --ns-schedule "$schedule" --symmetric \
      --json >"$work/cost_${b}_${r}_${c}_sym.json" 2>>"$OUT/bench.log"
  done
  failures=0
  timeout "$(($(left) - 30))" "$bin" bench ns --backend cuda --shapes "$shapes" \
    --ns-schedule "$schedule" --variant plain --reps 10 --json >"$work/ns_plain.json" \
    2>>"$OUT/bench.log" || failures=$((failures + 1))
  for t in $tiles; do
    [ "$(left)" -gt 35 ] || break
    MUONPLAN_SYRK_TILE=$t timeout "$(($(left) - 30))" "$bin" bench ns --backend cuda \
      --shapes "$shapes" --ns-schedule "$schedule" --variant symmetric --reps 10 --json \
      >"$work/ns_sym_$t.json" 2>>"$OUT/bench.log" || failures=$((failures + 1))
  done
  cat "$work"/ns_*.json >>"$OUT/bench.log" 2>/dev/null
  stage ns "$([ "$failures" = 0 ] && echo ok || echo failed)" "$(($(date +%s) - t0))" \
    "$failures bench run(s) failed (bench.log)"
  log "NS timings: $failures failed run(s)"
else
  stage ns skipped "" "time budget"
fi

# --- 4. One GPU, a 2-layer Qwen3-30B-A3B slice, Nesterov and wd 0.1 as the published step.
if [ "$(left)" -gt 20 ]; then
  log "execute --backend cuda on bench/qwen3-30b-a3b-2layers.yaml"
  t0=$(date +%s)
  "$bin" plan --model bench/qwen3-30b-a3b-2layers.yaml --nodes 1 --gpus-per-node 1 \
    --offload none --nesterov --weight-decay 0.1 --out "$work/plan.json" >"$OUT/execute.log" 2>&1
  mpiexec="$(grep -m1 '^MPIEXEC_EXECUTABLE' "$build/CMakeCache.txt" | cut -d= -f2)"
  launcher=()
  [ -x "$mpiexec" ] && launcher=("$mpiexec" --allow-run-as-root --oversubscribe -n 1)
  timeout "$(($(left) - 5))" "${launcher[@]}" "$bin" execute --plan "$work/plan.json" \
    --backend cuda --steps 3 --metrics "$work/metrics.json" >>"$OUT/execute.log" 2>&1
  rc=$?
  "$py" - "$work/metrics.json" "$work/execute.json" "$rc" <<'EOF'
import json, sys
try:
    m = json.load(open(sys.argv[1]))
except Exception:
    m = {}
json.dump({"rc": int(sys.argv[3]), "model": "qwen3-30b-a3b, 2 of 48 layers",
           "steps": 3, "measured": m.get("measured"), "predicted": m.get("predicted"),
           "published_note": "published.yaml's Qwen3-30B-A3B step (0.215 s) is the whole model "
                             "on 8 GPUs: not comparable; compare with `predicted`"},
          open(sys.argv[2], "w"), indent=1)
EOF
  stage execute "$([ "$rc" = 0 ] && echo ok || echo failed)" "$(($(date +%s) - t0))"
  log "execute: rc $rc"
else
  stage execute skipped "" "time budget"
fi

write_json ran
log "done: $OUT/gpu_check.json"
