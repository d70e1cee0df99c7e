#!/usr/bin/env bash
# Products of user integers are checked (issue 33 items 11 and 12): seq_len 2^30 on 2^30 nodes
# x 16 GPUs wrapped seq_len x workers to 0 and divided by it (SIGFPE, exit 136); a micro-step
# count past 65536 ran one cost walk per micro step (1e9 tokens of seq_len 1: 37 s for one
# candidate). Each is now one line naming the values, exit 2 (checked_mul/checked_add,
# muonplan/base/checked_int.h; kMaxMicroSteps, planner/src/cost/workload_cost.cc).
set -u
source "$(dirname "$0")/lib.sh"
over="overflows a 64-bit integer (at most 9223372036854775807)"
cat >"$work/rl.toml" <<'TOML'
[model]
name = "tiny-moe"

[deployment]
type = "multi_node"
num_train_nodes = 1073741824
gpus_per_node = 16

[trainer.model]
seq_len = 1073741824

[orchestrator]
seq_len = 1073741824
TOML
EXPECT_TIMEOUT=20 expect "seq_len 2^30 x 2^34 ranks" 2 \
  "seq_len: seq_len x workers (world / cp) = 1073741824 x 17179869184 $over" \
  "$bin" plan --trainer-config "$work/rl.toml" --topology topologies/cpu-ci.yaml
# The flags' product: data-parallel groups x --micro-batch-seqs wrapped to 0 (SIGFPE).
EXPECT_TIMEOUT=20 expect "dp x micro-batch-seqs" 2 \
  "--micro-batch-seqs: data-parallel groups x sequences per micro step = 4 x 4611686018427387904 $over" \
  "$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 \
  --tokens-per-step 9223372036854775807 --seq-len 1 --micro-batch-seqs 4611686018427387904
# The micro-step bound: 1.25e8 micro steps are refused at once, naming the count and the flags.
cap="125000000 micro steps per step (1000000000 sequences / (8 data-parallel groups x 1 per micro step)) is more than muonplan plans for (65536): raise --micro-batch-seqs or --seq-len, or lower --tokens-per-step"
one="250000000 micro steps per step (1000000000 sequences / (4 data-parallel groups x 1 per micro step)) is more than muonplan plans for (65536): raise --micro-batch-seqs or --seq-len, or lower --tokens-per-step"
EXPECT_TIMEOUT=10 expect "1e9 micro steps, one node" 2 "--tokens-per-step: $one" \
  "$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 \
  --tokens-per-step 1000000000 --seq-len 1 --offload full
EXPECT_TIMEOUT=10 expect "1e9 micro steps, searched" 2 \
  "--layout: no candidate node count can take this layout ($cap)" \
  "$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml \
  --tokens-per-step 1000000000 --seq-len 1 --offload full
# 65536 micro steps (4 ranks), the bound itself, are planned.
"$bin" plan --model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1 --tokens-per-step 262144 \
  --seq-len 1 --offload none >"$work/out" 2>"$work/err" && ok || bad "65536 micro steps: $(head -c 300 "$work/err")"

# One batch rule (issue 46 item 13): whole rows of seq_len, dealt out whole to every data-
# parallel rank, at least one each, else refused naming the nearest figures that are. 1000
# tokens of 4096-token rows on 8 ranks planned 0 rows, "fits", the activations missing.
q=(--model qwen3-8b --nodes 1 --offload none --seq-len 4096)
expect "part of a row" 2 "--tokens-per-step: 1000 is not a whole number of rows of --seq-len 4096 tokens; the nearest: 4096" \
  "$bin" plan "${q[@]}" --tokens-per-step 1000 --layout fsdp=8 --json
expect "a row and a bit" 2 "--tokens-per-step: 5000 is not a whole number of rows of --seq-len 4096 tokens; the nearest: 4096 or 8192" \
  "$bin" plan "${q[@]}" --tokens-per-step 5000 --layout fsdp=8 --json
expect "fewer rows than ranks" 2 "--tokens-per-step: 1 sequences per step do not split over 8 data-parallel groups (world 8 / cp 1) x 1 sequences per micro step; the nearest that do: 32768 tokens" \
  "$bin" plan "${q[@]}" --tokens-per-step 4096 --layout fsdp=8 --json
expect "rows not whole per rank" 2 "--tokens-per-step: 12 sequences per step do not split over 8 data-parallel groups (world 8 / cp 1) x 1 sequences per micro step; the nearest that do: 32768 or 65536 tokens" \
  "$bin" plan "${q[@]}" --tokens-per-step $((12 * 4096)) --layout fsdp=8 --json
# A trainer config's batch is planned as prime-rl deals it out (rounded up to whole rows for
# the world), with a note naming both figures: the standalone trainer's [data.fake] too (on
# torchrun's 8 processes: alone it is one).
printf '[model]\nname = "Qwen/Qwen3-0.6B"\nseq_len = 4096\n[data.fake]\nbatch_size = 2\n' >"$work/fake.toml"
"$bin" plan --trainer-config "$work/fake.toml" --gpus-per-node 8 --json >"$work/fake.json" \
  2>"$work/fake.err" &&
  json_check fake-rows "$work/fake.json" '
assert d["workload"]["tokens_per_step"] == 32768, d["workload"]' ||
  bad "fake batch: $(cat "$work/fake.err")"
grep -qx "note: 8192 tokens planned as 32768: whole rows of 4096 for the 8 workers of --nodes 1" \
  "$work/fake.err" && ok || bad "fake batch note: $(cat "$work/fake.err")"
finish
