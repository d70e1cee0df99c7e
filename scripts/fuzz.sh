#!/usr/bin/env bash
# Fuzzes the four loaders with libFuzzer (docs/fuzzing-and-sanitizers.md): builds the harnesses
# in build-fuzz/ with clang (ASan + UBSan), then runs each for SECONDS from a temporary copy of
# its seed corpus (tests/fuzz/corpus/<harness>/; nothing is written back into the repository),
# two at a time. Exits 1 on any finding (crash, sanitizer report, uncaught exception, input
# slower than 10 s, more than 2 GiB RSS or a 1 GiB allocation) and prints the input's path;
# the temporary directory is then kept.
# Usage: scripts/fuzz.sh [seconds_per_harness, default 60]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-60}"
harnesses=(model_yaml_fuzz hf_config_fuzz topology_fuzz plan_fuzz)

bash "$root/scripts/setup.sh"
build="$root/build-fuzz"
# Only the planner library and the harnesses are built: no tests, CUDA (CMAKE_CUDA_COMPILER=OFF
# skips the check) or Python module. A unity build, as scripts/sanitize.sh's (why there): 1.9
# min, was 3, on 2 cores.
if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 \
    -DMUONPLAN_FUZZ=ON -DBUILD_TESTING=OFF -DCMAKE_CUDA_COMPILER=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_Python=ON >/dev/null
fi
cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)" --target "${harnesses[@]}"

work="$(mktemp -d "${TMPDIR:-/tmp}/muonplan-fuzz.XXXXXX")"
fuzz_one() {
  local h="$1" dir="$work/$1"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp "$root/tests/fuzz/corpus/$h/"* "$dir/corpus/"
  local rc=0
  "$build/fuzz/$h" "$dir/corpus" -dict="$root/fuzz/${h%_fuzz}.dict" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -artifact_prefix="$dir/artifacts/" -print_final_stats=1 >"$dir/log" 2>&1 || rc=$?
  echo "$rc" >"$dir/rc"
}

# Two at a time: CI machines have two cores.
for ((i = 0; i < ${#harnesses[@]}; i += 2)); do
  for h in "${harnesses[@]:i:2}"; do fuzz_one "$h" & done
  wait
done

findings=0
for h in "${harnesses[@]}"; do
  dir="$work/$h"
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  corpus=$(find "$dir/corpus" -type f | wc -l)
  echo "$h: ${runs:-?} runs, ${rate:-?}/s, corpus $corpus inputs"
  artifacts=("$dir/artifacts/"*)
  if [ "$(cat "$dir/rc")" != 0 ] || [ -e "${artifacts[0]}" ]; then
    findings=$((findings + 1))
    echo "FINDING in $h (exit $(cat "$dir/rc")); log $dir/log:"
    { grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error|terminate called|.*what\(\))' \
        "$dir/log" || true; } | head -n 5 | sed 's/^/  /'
    for a in "${artifacts[@]}"; do
      if [ -e "$a" ]; then echo "  input: $a"; fi
    done
    echo "  reproduce: $build/fuzz/$h INPUT"
  fi
done
if [ "$findings" -gt 0 ]; then
  echo "fuzz: $findings harness(es) found a problem; inputs and logs kept in $work"
  exit 1
fi
rm -rf "$work"
echo "fuzz: no findings (${seconds} s per harness)"
