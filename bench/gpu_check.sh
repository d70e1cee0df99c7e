#!/usr/bin/env bash
# The GPU check, for a session lent one H200 (docs/executor.md, "GPU check"). It builds nothing
# there: bench/gpu_bundle.sh built everything here, into a folder carried along (build-bundle).
#
#   device tool:  run(command="bash bench/gpu_check.sh", carry=["build-bundle"], timeout_s=500)
#   rehearsal:    GPU_CHECK_REHEARSAL=1 GPU_BUNDLE=build-bundle OUT=/tmp/rh bash bench/gpu_check.sh
#
# Stages, each with a time limit, in this order (a stage that no longer fits the budget is
# skipped and says so; the whole check stays under GPU_CHECK_BUDGET_S, 450 s). gpu_check.json
# is rewritten after every stage ("status": "partial" until the end), and the script exits 1
# unless every stage passed (0 with no device at all):
#   bundle     gpu_bundle_check.py: every binary's libraries are in the bundle or the device's
#   device     nvidia-smi (none: writes {"status": "no device"} and exits 0)
#   libs       libcudart, libcublas(Lt), libnccl: the toolkit's lib64 first, then the pip
#              wheels under torch's site-packages; libcuda from the driver; ldd of every binary
#   tests      the gpu.* tests' binaries (ctest's commands, run from the bundle), gpu.execute
#              with 2 and 4 ranks sharing the GPU (host-staged all-to-alls) in every offload mode
#   ns         `muonplan bench ns --backend cuda --variant both --dump`: ours, plain and
#              symmetric, on the five shapes; then symmetric at syrk tiles 128, 256, 512
#   torch      bench/ns_torch.py: PyTorch's bf16 NS (baddbmm, as the reference) on the same
#              inputs, CUDA events, median; ours / torch time ratios; ours and torch's bf16
#              result against torch's fp64 NS of the same input
#   step       `muonplan execute --backend cuda`, 3 steps of a 2-layer Qwen3-30B-A3B slice on
#              one GPU (one rank, no mpirun): offload none and optimizer (Nesterov, wd 0.1),
#              full (wd 0.1)
#   calibrate  `muonplan calibrate` fits topologies/h200-ib.yaml to the step metrics
#   trainer_ops bench/trainer_ops_torch.py: the trainer's operations behind the step-time
#              model's constants (Qwen3-4B's layer GEMMs, MultiLoRALinear, causal SDPA, the
#              RL token loop's sync) with PyTorch; optional: skipped, it fails nothing
# Writes under $OUT (default build-gpu-check), four files, no folders:
#   gpu_check.json            everything: libraries, per-stage status and seconds, NS times
#                             beside published/predicted/torch, ratios, errors, step metrics,
#                             the calibration, the tests' results
#   gpu_check.log             progress lines, then each stage's output
#   h200-ib.calibrated.yaml   the fitted topology
#   calibration.txt           calibrate's predicted-vs-measured table
#
# GPU_CHECK_REHEARSAL=1: the CPU rehearsal on a machine without a GPU (root; unshare -m).
# Every one of the bundle's binaries runs through bench/gpu_hide.sh, which hides this
# machine's copies of the libraries the bundle holds, so the run proves the bundle alone
# suffices. Device stages run the CPU backend on small shapes (a tiny model for the step),
# torch is Debian's python3-torch on the CPU when installed, the test binaries must reach
# their device probe and skip (77); such stages report `rehearsed`.
set -u
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 1
OUT="${OUT:-$root/build-gpu-check}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
rehearsal="${GPU_CHECK_REHEARSAL:-0}"
bundle="$(realpath -m "${GPU_BUNDLE:-$root/build-bundle}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
budget_s="${GPU_CHECK_BUDGET_S:-450}"
elapsed() { echo $(($(date +%s) - started)); }
left() { echo $((budget_s - $(elapsed))); }
log="$OUT/gpu_check.log"
stage_logs="$work/stage_logs"
mkdir -p "$stage_logs"
: >"$log"
say() { echo "gpu_check [$(elapsed) s]: $*" | tee -a "$log" >&2; }
py="$(command -v python3 || true)"
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

if [ "$rehearsal" = 1 ]; then
  shapes="2,64,128;2,128,64;2,96,256;1,128,384;1,192,512"
  reps=2
  # Cores shared with other work: OpenMP's spinning waits would slow the CPU backend 10x.
  export OMP_WAIT_POLICY=passive
else
  shapes="32,768,2048;16,2048,768;16,1408,4096;8,2048,6144;1,6144,16384"
  reps=10
fi
tiles="128 256 512"
schedule=quintic

echo '{}' >"$work/stages.json"
stage() {  # stage NAME STATUS SECONDS [NOTE]
  "$py" - "$work/stages.json" "$@" <<'EOF'
import json, sys
path, name, status, seconds = sys.argv[1:5]
d = json.load(open(path))
d[name] = {"status": status}
if seconds != "": d[name]["seconds"] = float(seconds)
if len(sys.argv) > 5 and sys.argv[5]: d[name]["note"] = sys.argv[5]
json.dump(d, open(path, "w"))
EOF
  say "stage $1: $2${3:+ in $3 s}${4:+ ($4)}"
  # After every stage: a check cut short by its time limit keeps what it measured so far
  # (status "partial", pass false, until the last stage's write says "ran").
  write_json partial "stopped after stage $1" >/dev/null
}
# need NAME SECONDS: true when SECONDS still fit the budget, else records NAME as skipped.
need() {
  if [ "$(left)" -lt "$2" ]; then
    stage "$1" skipped "" "time budget: $(left) s left, the stage needs about $2 s"
    return 1
  fi
}
# cap SECONDS: the stage's time limit, SECONDS or what the budget has left (minus 10 s).
cap() { local l=$(($(left) - 10)); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }
stage_log() { echo "$stage_logs/$(printf '%02d' "$(ls "$stage_logs" | wc -l)")_$1.log"; }
# done_status RC: ok on 0, rehearsed on 0 in a rehearsal, failed otherwise.
done_status() {
  if [ "$1" != 0 ]; then echo failed; elif [ "$rehearsal" = 1 ]; then echo rehearsed; else echo ok; fi
}

write_json() {  # write_json STATUS [REASON]
  for f in "$stage_logs"/*.log; do
    [ -f "$f" ] || continue
    { echo; echo "===== $(basename "$f" .log)"; cat "$f"; } >>"$log"
    rm -f "$f"
  done
  "$py" "$root/bench/gpu_check_report.py" --work "$work" --root "$root" --out "$OUT/gpu_check.json" \
    --status "$1" --reason "${2:-}" --shapes "$shapes" --tiles "$tiles" --schedule "$schedule" \
    --elapsed "$(elapsed)" --budget "$budget_s" --rehearsal "$rehearsal" --bundle "$bundle"
}

if [ -z "$py" ]; then
  printf '{"schema": "muonplan.gpu_check/2", "status": "error", "reason": "no python3"}\n' \
    >"$OUT/gpu_check.json"
  echo "gpu_check: no python3" >&2
  exit 1
fi
say "$([ "$rehearsal" = 1 ] && echo "CPU rehearsal" || echo "GPU check") with the bundle $bundle, budget $budget_s s"

# --- bundle: present, complete, and its own libraries only.
t0=$(date +%s)
if [ ! -x "$bundle/bin/muonplan" ] || [ ! -f "$bundle/env.sh" ]; then
  stage bundle failed 0 "no bundle at $bundle: run bench/gpu_bundle.sh here and carry it"
  write_json "no bundle" "no bundle at $bundle (bench/gpu_bundle.sh)"
  exit 1
fi
"$py" "$root/bench/gpu_bundle_check.py" "$bundle" --json >"$work/bundle_check.json" \
  2>"$(stage_log bundle)"
rc=$?
if [ "$rc" = 0 ]; then stage bundle ok "$(($(date +%s) - t0))"; else
  stage bundle failed "$(($(date +%s) - t0))" "$(head -3 "$(ls "$stage_logs"/*_bundle.log)" | tr '\n' ' ')"
fi
# shellcheck source=/dev/null
source "$bundle/env.sh"

# --- device.
t0=$(date +%s)
if [ "$rehearsal" = 1 ]; then
  echo '{"count": 0, "rehearsal": true}' >"$work/device.json"
  if [ "$(id -u)" != 0 ] || ! unshare -m true 2>/dev/null; then
    stage device failed 0 "the rehearsal needs root and unshare -m"
    write_json "rehearsal impossible" "needs root and unshare -m (bench/gpu_hide.sh)"
    exit 1
  fi
  stage device rehearsed 0 "no device: CPU backend, small shapes"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader \
    >"$work/smi.txt" 2>/dev/null
  "$py" -c "import json,sys; f=[x.strip() for x in open(sys.argv[1]).read().split(',')]
json.dump({'name': f[0], 'memory': f[1], 'driver': f[2], 'max_sm_clock': f[3] if len(f) > 3 else None,
           'count': int(sys.argv[2])}, open(sys.argv[3], 'w'))" "$work/smi.txt" \
    "$(nvidia-smi -L | grep -c '^GPU')" "$work/device.json"
  stage device ok "$(($(date +%s) - t0))" "$(head -1 "$work/smi.txt")"
else
  echo '{"count": 0}' >"$work/device.json"
  stage device skipped 0 "no CUDA device (nvidia-smi finds none)"
  write_json "no device" "nvidia-smi finds no GPU"
  exit 0
fi
gpus="$("$py" -c "import json,sys; print(json.load(open(sys.argv[1])).get('count', 0))" "$work/device.json")"

# --- libs: CUDA's libraries for the bundle's binaries, and whether every binary resolves.
t0=$(date +%s)
torch_py=""
for cand in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
  c="$(command -v "$cand" 2>/dev/null)" || continue
  if "$c" -c "import torch" >/dev/null 2>&1; then torch_py="$c"; break; fi
done
site=""
[ -n "$torch_py" ] && site="$("$torch_py" -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))" 2>/dev/null)"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
"$py" - "$work/libs.json" "$cuda_home" "$site" "$torch_py" <<'EOF'
import glob, json, os, subprocess, sys
out, cuda_home, site, torch_py = sys.argv[1:5]
wanted = ["libcudart.so.13", "libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2"]
# The toolkit first, then the pip wheels torch uses (nvidia/<name>/lib, nvidia/cu13/lib).
toolkit = [os.path.join(cuda_home, d) for d in ("lib64", "lib", "targets/x86_64-linux/lib")]
wheels = sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib"))) if site else []
found, dirs = {}, []
for name in wanted:
    for kind, cands in (("toolkit", toolkit), ("wheel", wheels)):
        hit = next((d for d in cands if os.path.exists(os.path.join(d, name))), None)
        if hit:
            real = os.path.realpath(os.path.join(hit, name))
            found[name] = {"dir": hit, "from": kind, "file": real}
            if hit not in dirs:
                dirs.append(hit)
            break
    else:
        found[name] = None
cuda = None
try:
    cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in cache.splitlines():
        if line.strip().startswith("libcuda.so.1 ") and "=>" in line:
            cuda = line.split("=>")[1].strip()
            break
except OSError:
    pass
for d in ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu"):
    if cuda is None and os.path.exists(os.path.join(d, "libcuda.so.1")):
        cuda = os.path.join(d, "libcuda.so.1")
glibc = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else None
json.dump({"cuda_home": cuda_home, "torch_python": torch_py or None, "torch_site": site or None,
           "glibc": glibc,
           "searched": {"toolkit": toolkit, "wheels": wheels}, "found": found,
           "libcuda": os.path.realpath(cuda) if cuda else None, "ld_library_path": dirs},
          open(out, "w"), indent=1)
EOF
cuda_dirs="$("$py" -c "import json,sys; print(':'.join(json.load(open(sys.argv[1]))['ld_library_path']))" "$work/libs.json")"
# Wrappers for the bundle's binaries, in $work/bin: CUDA's folders on LD_LIBRARY_PATH for them
# alone (python keeps its own: torch brings its libraries), and in a rehearsal gpu_hide.sh
# around each (once: what they start inherits the namespace).
# The data folder as the build tree links it (CMakeLists.txt, MUONPLAN_BUILD_DATA): calibration/
# is the sources' whole data/calibration, so a file the topologies come to read there (fitted.yaml,
# which the step stage's plans read) is never missing from the check.
mkdir -p "$work/bin" "$work/share/muonplan"
for d in models topologies reports; do ln -s "$root/$d" "$work/share/muonplan/$d"; done
ln -s "$root/data/calibration" "$work/share/muonplan/calibration"
for b in "$bundle"/bin/*; do
  name="$(basename "$b")"
  {
    echo '#!/usr/bin/env bash'
    [ -n "$cuda_dirs" ] &&
      echo "export LD_LIBRARY_PATH=\"$cuda_dirs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}\""
    echo "export MUONPLAN_DATA_DIR=\"$work/share/muonplan\" MUONPLAN_SOURCE_DIR=\"$root\""
    if [ "$rehearsal" = 1 ]; then
      echo "[ -n \"\${MUONPLAN_HIDDEN:-}\" ] && exec \"$b\" \"\$@\""
      echo "exec bash \"$root/bench/gpu_hide.sh\" \"$bundle\" \"$b\" \"\$@\""
    else
      echo "exec \"$b\" \"\$@\""
    fi
  } >"$work/bin/$name"
  chmod +x "$work/bin/$name"
done
B="$work/bin"
mpiflags=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpiflags=(--allow-run-as-root --oversubscribe)
[ "$rehearsal" = 1 ] && GPU_HIDE_LIST="$work/hidden.txt" "$B/muonplan_gpu_device_test" >/dev/null 2>&1
# ldd -r of every binary, as its wrapper would load it: a library not found, or a symbol that
# the library found lacks (an older NCCL wheel than the headers built against, say).
libs_log="$(stage_log libs)"
missing=0
for b in "$bundle"/bin/*; do
  [ -L "$b" ] && continue
  if [ "$rehearsal" = 1 ]; then
    LD_LIBRARY_PATH="$cuda_dirs" bash "$root/bench/gpu_hide.sh" "$bundle" ldd -r "$b" >"$work/ldd.txt" 2>&1
  else
    LD_LIBRARY_PATH="$cuda_dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd -r "$b" >"$work/ldd.txt" 2>&1
  fi
  { echo "--- $(basename "$b")"; cat "$work/ldd.txt"; } >>"$libs_log"
  n="$(grep -c -e 'not found' -e 'undefined symbol' "$work/ldd.txt")"
  missing=$((missing + n))
done
"$py" - "$work/libs.json" "$libs_log" "$missing" "$work/hidden.txt" "$bundle/manifest.json" <<'EOF'
import json, os, re, sys
path, log, missing, hidden, manifest = sys.argv[1:6]
d = json.load(open(path))
try:
    d["bundle_needs_at_least"] = json.load(open(manifest)).get("needs_at_least")
except (OSError, ValueError):
    pass
resolved, current = {}, None
for line in open(log):
    if line.startswith("--- "):
        current = line[4:].strip()
        continue
    m = re.match(r"\s*(\S+) => (\S+)", line)
    if m and current == "muonplan":
        resolved[m[1]] = m[2]
    if "not found" in line or "undefined symbol" in line:
        d.setdefault("not_found", []).append(f"{current}: {line.strip()}")
d["muonplan_resolves"] = resolved
if os.path.exists(hidden):
    d["hidden_in_rehearsal"] = [l.split(" ", 1)[1].strip() for l in open(hidden) if " " in l]
json.dump(d, open(path, "w"), indent=1)
EOF
note="$(grep -o '"libcu[a-zA-Z]*.so.[0-9]*": null\|"libnccl.so.2": null' "$work/libs.json" | tr '\n' ' ')"
if [ "$missing" = 0 ] && [ -z "$note" ]; then
  stage libs "$(done_status 0)" "$(($(date +%s) - t0))" "LD_LIBRARY_PATH for the bundle: $cuda_dirs"
else
  stage libs failed "$(($(date +%s) - t0))" "$missing unresolved (see libs.not_found) $note"
fi

# --- tests: ctest's gpu.* commands with the bundle's binaries; 77 = skipped (no device). Right
# after the libraries: correctness first, so a wrong backend is known before any time is spent
# on benchmarks, and a run cut short by its time limit still has it.
if need tests 30; then
  t0=$(date +%s)
  l="$(stage_log tests)"
  echo '{}' >"$work/tests.json"
  run_test() {  # run_test NAME LIMIT CMD...
    local name="$1" limit="$2" s rc
    shift 2
    if [ "$(left)" -lt 20 ]; then
      "$py" "$root/bench/gpu_check_report.py" --add-test "$work/tests.json" "$name" skipped 0 0
      return
    fi
    s=$(date +%s)
    echo "--- $name: $*" >>"$l"
    OMP_WAIT_POLICY=passive timeout "$(cap "$limit")" "$@" >>"$l" 2>&1
    rc=$?
    local result=failed
    if [ "$rc" = 0 ]; then result=passed; elif [ "$rc" = 77 ]; then result=skipped; fi
    [ "$rc" = 124 ] && result=timeout
    "$py" "$root/bench/gpu_check_report.py" --add-test "$work/tests.json" "$name" "$result" \
      "$rc" "$(($(date +%s) - s))"
  }
  run_test gpu.device 30 "$B/muonplan_gpu_device_test"
  for tag in backend ns step; do
    run_test "gpu.$tag" 150 "$B/muonplan_gpu_tests" "[$tag]"
  done
  run_test gpu.nccl_1 60 "$B/mpirun" "${mpiflags[@]}" -n 1 "$B/muonplan_gpu_nccl_test"
  if [ "$gpus" -ge 2 ]; then
    run_test gpu.nccl_2 60 "$B/mpirun" "${mpiflags[@]}" -n 2 "$B/muonplan_gpu_nccl_test"
  fi
  run_test gpu.execute 240 bash tests/gpu/execute_cuda.sh "$B/muonplan" "$root" "$B/mpirun" \
    "${mpiflags[*]}" "$B/muonplan_gpu_device_test"
  st="$("$py" - "$work/tests.json" "$rehearsal" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
res = [v["result"] for v in t.values()]
if sys.argv[2] == "1":  # every binary must load and reach its device probe
    print("rehearsed" if res and all(r == "skipped" for r in res) else "failed")
else:
    print("failed" if any(r in ("failed", "timeout") for r in res)
          else "ok" if any(r == "passed" for r in res) else "skipped")
EOF
)"
  stage tests "$st" "$(($(date +%s) - t0))" "$("$py" -c "import json,sys; t=json.load(open(sys.argv[1]))
print(', '.join(f'{k} {v[\"result\"]}' for k, v in t.items()))" "$work/tests.json")"
fi


# --- ns: ours, plain and symmetric, inputs and outputs kept for the torch stage.
backend=cuda
[ "$rehearsal" = 1 ] && backend=cpu
if need ns 30; then
  t0=$(date +%s)
  l="$(stage_log ns)"
  for s in ${shapes//;/ }; do
    IFS=, read -r b r c <<<"$s"
    "$B/muonplan" cost ns --batch "$b" --rows "$r" --cols "$c" --ns-schedule "$schedule" --json \
      >"$work/cost_${b}_${r}_${c}.json" 2>>"$l"
    "$B/muonplan" cost ns --batch "$b" --rows "$r" --cols "$c" --ns-schedule "$schedule" \
      --symmetric --json >"$work/cost_${b}_${r}_${c}_sym.json" 2>>"$l"
  done
  OMP_WAIT_POLICY=passive timeout "$(cap 150)" "$B/muonplan" bench ns --backend "$backend" --shapes "$shapes" \
    --ns-schedule "$schedule" --variant both --reps "$reps" --dump "$work/ns" --json \
    >"$work/ns_both.json" 2>>"$l"
  rc=$?
  tile_note=""
  if [ "$rc" = 0 ] && [ "$rehearsal" != 1 ]; then
    for t in $tiles; do
      [ "$(left)" -gt 60 ] || { tile_note="tiles skipped from $t on: time budget"; break; }
      MUONPLAN_SYRK_TILE=$t timeout "$(cap 40)" "$B/muonplan" bench ns --backend cuda \
        --shapes "$shapes" --ns-schedule "$schedule" --variant symmetric --reps "$reps" --json \
        >"$work/ns_sym_$t.json" 2>>"$l" || tile_note="tile $t failed"
    done
  elif [ "$rehearsal" = 1 ]; then
    tile_note="syrk tiles: CUDA only"
  fi
  stage ns "$(done_status "$rc")" "$(($(date +%s) - t0))" \
    "$([ "$rc" = 0 ] || echo "bench ns exit $rc; ")$tile_note"
fi

# --- torch: PyTorch's NS on the same inputs, on the same GPU.
if [ ! -f "$work/ns/ns.json" ]; then
  stage torch skipped "" "no inputs: the ns stage did not run or failed"
elif [ -z "$torch_py" ]; then
  stage torch skipped "" "no python3 with torch here$([ "$rehearsal" = 1 ] && echo " (apt-get install python3-torch)")"
elif need torch 30; then
  t0=$(date +%s)
  device=cuda
  targs=()
  [ "$rehearsal" = 1 ] && { device=cpu; targs=(--warmup 1 --reps 3); }
  PYTHONUNBUFFERED=1 timeout "$(cap 120)" "$torch_py" "$root/bench/ns_torch.py" --dump "$work/ns" \
    --device "$device" "${targs[@]}" --out "$work/torch.json" >"$(stage_log torch)" 2>&1
  rc=$?
  stage torch "$(done_status "$rc")" "$(($(date +%s) - t0))" \
    "$("$torch_py" -c "import torch; print('torch', torch.__version__)" 2>/dev/null) on $device"
fi
rm -rf "$work/ns"  # up to 2 GB of matrices

# --- step: the executor on the published step's model slice (a tiny model in a rehearsal).
if need step 40; then
  t0=$(date +%s)
  l="$(stage_log step)"
  model=bench/qwen3-30b-a3b-2layers.yaml
  [ "$rehearsal" = 1 ] && model=models/tiny-moe.yaml
  runs=0
  failed=0
  for mode in none optimizer full; do
    [ "$(left)" -gt 40 ] || { echo "offload $mode: skipped, time budget" >>"$l"; break; }
    flags=(--weight-decay 0.1)
    [ "$mode" = full ] || flags+=(--nesterov)
    "$B/muonplan" plan --model "$model" --topology topologies/h200-ib.yaml --nodes 1 \
      --gpus-per-node 1 --offload "$mode" "${flags[@]}" --out "$work/step_$mode.plan.json" \
      >>"$l" 2>&1 || { failed=$((failed + 1)); continue; }
    echo "--- offload $mode" >>"$l"
    # One rank, no launcher (an MPI singleton that starts no daemon): the measurement does
    # not depend on mpirun working in the device's sandbox; gpu.nccl_1 and gpu.execute use it.
    OMPI_MCA_ess_singleton_isolated=1 timeout "$(cap 90)" "$B/muonplan" execute \
      --plan "$work/step_$mode.plan.json" --backend "$backend" --steps 3 \
      --metrics "$work/step_$mode.metrics.json" >>"$l" 2>&1
    rc=$?
    echo "exit $rc" >>"$l"
    runs=$((runs + 1))
    [ "$rc" = 0 ] || failed=$((failed + 1))
  done
  st="$(done_status "$failed")"
  [ "$runs" = 0 ] && st=failed
  stage step "$st" "$(($(date +%s) - t0))" "$runs run(s), $failed failed; $(basename "$model") on $backend"
fi

# --- calibrate: topologies/h200-ib.yaml fitted to the step's metrics.
metrics=("$work"/step_*.metrics.json)
if [ ! -f "${metrics[0]}" ]; then
  stage calibrate skipped "" "no step metrics"
elif need calibrate 15; then
  t0=$(date +%s)
  l="$(stage_log calibrate)"
  timeout "$(cap 90)" "$B/muonplan" calibrate --topology topologies/h200-ib.yaml \
    --metrics "${metrics[@]}" --out "$OUT/h200-ib.calibrated.yaml" --json >"$work/calibrate.json" \
    2>>"$l"
  rc=$?
  note=""
  if [ "$rc" = 0 ]; then
    note="$("$py" "$root/bench/gpu_check_report.py" --calibration-table "$work/calibrate.json" \
      "$OUT/calibration.txt" 2>>"$l")" || rc=1
  fi
  stage calibrate "$(done_status "$rc")" "$(($(date +%s) - t0))" "$note"
fi

# --- trainer_ops: the trainer's operations behind the step-time model's constants, timed with
# PyTorch (bench/trainer_ops_torch.py): Qwen3-4B's layer GEMMs, MultiLoRALinear, causal SDPA,
# the RL token loop's sync. Last, and optional: the executor's stages come first, and a budget
# that no longer fits it does not fail the check.
if [ -z "$torch_py" ]; then
  stage trainer_ops skipped "" "no python3 with torch here"
elif need trainer_ops 60; then
  t0=$(date +%s)
  l="$(stage_log trainer_ops)"
  topo=topologies/h200-ib.yaml
  grep -q H100 "$work/smi.txt" 2>/dev/null && topo=topologies/h100-ib.yaml
  targs=(--device cuda)
  [ "$rehearsal" = 1 ] && targs=(--device cpu --quick --warmup 1 --reps 2)
  "$B/muonplan" inspect --model models/qwen3-4b.yaml --json >"$work/inspect.json" 2>>"$l" &&
    "$B/muonplan" topology --topology "$topo" --json >"$work/topology.json" 2>>"$l" &&
    read -r peak hbm < <("$py" -c "import json,sys; g=json.load(open(sys.argv[1]))['gpu']
print(g['bf16_tflops'], g['hbm_gbps'])" "$work/topology.json") &&
    PYTHONUNBUFFERED=1 timeout "$(cap 150)" "$torch_py" "$root/bench/trainer_ops_torch.py" \
      --inspect "$work/inspect.json" --peak-tflops "$peak" --hbm-gbps "$hbm" "${targs[@]}" \
      --out "$work/trainer_ops.json" >>"$l" 2>&1
  rc=$?
  # The planner's LoRA terms for the same layer at each row count (one GPU, one micro step of
  # one row, full AC, the benchmark's 4 slots): (adapter_gemm + lora_wrapper) / layers, which
  # the report sets beside the measured lora_layer.
  if [ "$rc" = 0 ]; then
    for t in $("$py" -c "import json,sys
print(*[p['tokens'] for p in json.load(open(sys.argv[1]))['lora_layer']['by_tokens']])" \
      "$work/trainer_ops.json"); do
      "$B/muonplan" plan --model models/qwen3-4b.yaml --topology "$topo" --nodes 1 \
        --gpus-per-node 1 --layout fsdp=1 --optimizer adamw --offload none --seq-len "$t" \
        --tokens-per-step "$t" --ac full --trainer rl --lora-rank 16 --lora-adapters 4 \
        --lora-active-runs 0 --json >"$work/trainer_ops_plan_$t.json" 2>>"$l" || rc=1
    done
  fi
  stage trainer_ops "$(done_status "$rc")" "$(($(date +%s) - t0))" \
    "qwen3-4b's layer; peak and HBM from $(basename "$topo" .yaml)"
fi

write_json ran
say "done: $OUT/gpu_check.json"
# Exit 1 unless the check passed (every stage ok or, in a rehearsal, rehearsed).
"$py" -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1])).get('pass') else 1)" \
  "$OUT/gpu_check.json" || { say "FAILED: see $OUT/gpu_check.json"; exit 1; }
