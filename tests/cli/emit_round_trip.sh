#!/usr/bin/env bash
# Every bundled prime-rl example, and every alternative its plan offers, through the writer
# (issue 50 item 4, "Done when" 2): the plan (the alternative's as flags: --nodes,
# --gpus-per-node, --layout, --offload) is emitted over the example with --emit prime-rl, the
# emitted file is planned again under the planner's own era checks (--prime-rl-version, which
# refuses a key outside its era) and must give the same plan: world, layout, offload,
# optimizer, workload, LoRA, fit and the memory figures. The emitted text keeps every line of
# the example that no changed key sits on.
# MUONPLAN_TEST_QUICK=1 (the sanitizer run): each file and the first alternative of its plan.
set -u
source "$(dirname "$0")/lib.sh"
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
# The date the key table follows (prime_rl_versions.cc, kNewest): the examples are of it.
newest=2026-08-21
# Files of older eras, each at its own date (done-when 2 at older dates): the rl_slurm launcher
# (top-level world keys, before [deployment] of 2026-02-24), the local launcher's
# trainer_gpu_ids (one node) at and before rl_slurm (2026-02-17), SFT's [deployment] num_nodes
# (until 2026-08-17), an SFT file with no world key before SFT cp (2025-08-31) and a standalone
# trainer file at that date.
d=tests/data/prime-rl
older=("$d/rl-slurm-era.toml 2026-02-20" "$d/eras/rl-2026-02-20.toml 2026-02-20"
       "$d/rl-gpu-ids.toml 2026-02-01" "$d/sft-old-deployment.toml 2026-08-01"
       "$d/eras/sft-2026-08-01.toml 2025-08-20" "examples/prime-rl/qwen3-8b-trainer.toml 2025-08-20")
# Alternatives the list offers that prime-rl of the date cannot run as planned, so no config
# can round-trip them; the `--runs-on prime-rl` rules (branch runson) filter them from the
# list. "EXAMPLE NODESxGPUS LAYOUT OFFLOAD: why"; turn a line off once the filter is merged.
expected_failures=(
)
same_plan='import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
keys = ["nodes", "gpus_per_node", "world_size", "layout", "offload", "optimizer", "workload",
        "lora", "fits"]
diff = [f"{k}: {a.get(k)} -> {b.get(k)}" for k in keys if a.get(k) != b.get(k)]
for k in ("gpu_peak_gib", "gpu_allocated_gib", "gpu_reserved_gib", "host_ram_per_node_gib"):
    x, y = a["predicted"][k], b["predicted"][k]
    if abs(x - y) > 1e-9 * max(1.0, abs(x)): diff.append(f"predicted.{k}: {x} -> {y}")
print("; ".join(diff)); sys.exit(1 if diff else 0)'
# The example's lines are all in the emitted file, in order, but those the changed keys sit on.
kept_lines='import sys
src = open(sys.argv[1], encoding="utf-8").read().splitlines()
out = open(sys.argv[2], encoding="utf-8").read().splitlines()
changed = int(sys.argv[3])
i, missing = 0, 0
for line in src:
    j = i
    while j < len(out) and out[j] != line: j += 1
    if j == len(out): missing += 1
    else: i = j + 1
# A changed key rewrites at most its own line; a header-section one removes its section.
sys.exit(0 if missing <= changed * 3 else f"{missing} lines of the example lost for {changed} keys")'
round_trip() {  # NAME EXAMPLE FLAGS...: emit over EXAMPLE with FLAGS, plan it again, compare
  # One run writes the emitted file and the plan (--out: the figures same_plan compares), unless
  # the plan is there already ($t.want.json: each() plans every file with --json once for its
  # alternatives).
  local name="$1" ex="$2"; shift 2
  local t="$work/$name" want=()
  [ -s "$t.want.json" ] || want=(--out "$t.want.json")
  # --force: a plan that does not fit is written too, and must round-trip as well: a file as
  # written may not fit at its era, or at all (qwen3-8b-trainer.toml on its one GPU: the staged
  # AdamW state and its foreach temporaries).
  if ! "$bin" plan --trainer-config "$ex" "$@" --prime-rl-version "$date" --emit prime-rl --force \
    --emit-out "$t.toml" "${want[@]}" >/dev/null 2>"$t.err"; then
    echo "$name: the plan or its emit failed: $(head -c 300 "$t.err")" >"$t.why"
    return 1
  fi
  local n; n="$(sed -n 's/.*: \([0-9]*\) key(s) changed.*/\1/p' "$t.toml")"
  "$py" -c "$kept_lines" "$ex" "$t.toml" "${n:-0}" >"$t.kept" 2>&1 ||
    { echo "$name: $(cat "$t.kept")" >"$t.why"; return 1; }
  if ! "$bin" plan --trainer-config "$t.toml" --prime-rl-version "$date" --json >"$t.got.json" \
    2>"$t.err"; then
    echo "$name: the emitted file is refused: $(head -c 300 "$t.err")" >"$t.why"
    return 1
  fi
  "$py" -c "$same_plan" "$t.want.json" "$t.got.json" >"$t.diff" ||
    { echo "$name: another plan: $(head -c 400 "$t.diff")" >"$t.why"; return 1; }
  return 0
}
expected() {  # KEY: the reason, when KEY is listed
  local e
  for e in "${expected_failures[@]}"; do [ "${e%%:*}" = "$1" ] && { echo "${e#*: }"; return 0; }; done
  return 1
}
checked=0
each() {  # FILE DATE: the file and every alternative its plan offers, at that date
  local ex="$1" base; base="$(basename "$1" .toml)-$2"
  date="$2"
  "$bin" plan --trainer-config "$ex" --prime-rl-version "$date" --json >"$work/$base.want.json" \
    2>"$work/$base.err" || { bad "$base: the plan failed: $(head -c 300 "$work/$base.err")"; return; }
  round_trip "$base" "$ex" && ok || bad "$(cat "$work/$base.why")"
  while read -r nodes gpn layout offload; do
    key="$base ${nodes}x$gpn $layout $offload"
    name="$base-$nodes-$gpn-${layout//[=,]/_}-$offload"
    checked=$((checked + 1))
    if round_trip "$name" "$ex" --nodes "$nodes" --gpus-per-node "$gpn" --layout "$layout" \
      --offload "$offload"; then
      if why="$(expected "$key")"; then
        bad "$key round-trips now: take it off expected_failures ($why)"
      else
        ok
      fi
    elif why="$(expected "$key")"; then
      echo "expected failure: $key: $why"
      ok
    else
      bad "$(cat "$work/$name.why")"
    fi
  done < <("$py" -c 'import json, sys
for a in json.load(open(sys.argv[1]))["trainer_config"]["alternatives"]:
    print(a["nodes"], a["gpus_per_node"], a["layout"], a["offload"])' "$work/$base.want.json" |
    sort -u | if [ "$quick" = 1 ]; then head -n 1; else cat; fi)
}
for ex in examples/prime-rl/*.toml; do each "$ex" "$newest"; done
for e in "${older[@]}"; do each ${e% *} ${e#* }; done
[ "$checked" -ge 7 ] && ok || bad "only $checked alternatives checked"
finish
