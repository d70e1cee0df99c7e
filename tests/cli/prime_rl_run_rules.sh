#!/usr/bin/env bash
# prime-rl's rules of a whole run (planner/src/prime_rl/runs_on.cc, issue 50 item 1) refuse by name
# on the flag path under --runs-on prime-rl, and the key eras of [deployment] and SFT cp refuse an
# older file: each refusal names the rule and the prime-rl change that lifts it; the allowed
# neighbour plans.
set -u
source "$(dirname "$0")/lib.sh"
e=tests/data/prime-rl/eras
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
# refuses NAME CODE SUFFIX COMMAND...: exit CODE and the last stderr line ends in SUFFIX (the line
# before it is --runs-on's note on prime-rl's allocator default).
refuses() { EXPECT_MATCH=last expect "$@"; }
flags=(plan --model qwen3-0.6b --topology h100-ib --nodes 1 --tokens-per-step 131072 --seq-len 16384
       --runs-on prime-rl)
refuses sdpa-cp 2 'prime-rl runs CP only with flash attention (ModelConfig.cp_only_with_flash_attn, since ring-flash-attn, #1305; it would run once a ring kernel for SDPA returns); plan with --attention fa2 or fa3, or a layout of cp=1)' \
  "$bin" "${flags[@]}" --attention sdpa --layout fsdp=4,cp=2
refuses fa3-cp 0 'prime-rl'"'"'s default' "$bin" "${flags[@]}" --attention fa3 --layout fsdp=4,cp=2
refuses sft-cp-micro-batch 2 "prime-rl's SFT takes CP only with one row per micro batch (validate_cp_micro_batch_size, sft.py); plan with --micro-batch-seqs 1, or a layout of cp=1)" \
  "$bin" "${flags[@]}" --trainer sft --micro-batch-seqs 2 --layout fsdp=4,cp=2
refuses muon-before 2 'prime-rl of 2025-08-01 has no optim.type = "muon" (it came with #690 (add muon, reviewed 2025-08-12): --prime-rl-version 2025-08-12 or later runs it); plan with --optimizer adamw' \
  "$bin" "${flags[@]}" --optimizer muon --prime-rl-version 2025-08-01
refuses muon-after 0 'prime-rl'"'"'s default' "$bin" "${flags[@]}" --optimizer muon --prime-rl-version 2025-08-12
# [deployment] came on 2026-02-24 (#1859): a file of today's form is refused at an older date.
EXPECT_MATCH=suffix expect deployment-before 2 'deployment.type: prime-rl of 2025-08-01 has no [deployment] table (it forbids extra keys): its era is from 2026-02-24, #1859' \
  "$bin" plan --trainer-config $e/sft-2026-08-18.toml --prime-rl-version 2025-08-01
# Multi-node RL: the rl launcher ran one node until rl_slurm (#1774, 2026-02-17); SFT ran on
# more under torchrun. A --nodes the date cannot run is a --nodes error, beside its neighbour.
nodes_rule="2 nodes: prime-rl of 2026-02-10's rl launcher runs the trainer on one node (trainer_gpu_ids); an RL config runs on more with rl_slurm (#1774, 2026-02-17: --prime-rl-version 2026-02-17 or later runs it; from #1859, a multi_node [deployment] under [slurm]); plan with --nodes 1"
refuses rl-nodes-before 2 "--nodes: $nodes_rule" \
  "$bin" plan --trainer-config $e/rl-2026-02-20.toml --prime-rl-version 2026-02-10 --nodes 2
refuses rl-nodes-after 0 "trainer_gpu_ids = an array)" \
  "$bin" plan --trainer-config $e/rl-2026-02-20.toml --prime-rl-version 2026-02-17 --nodes 2
refuses flags-nodes-before 2 "--nodes: $nodes_rule" \
  "$bin" "${flags[@]/--nodes/--max-nodes}" --nodes 2 --prime-rl-version 2026-02-10
# The search at that date: one node only, and says so where one node cannot take the model.
refuses search-before 2 "over the 79.18 GiB limit; and more nodes: $nodes_rule)" \
  "$bin" plan --model glm-4.5-air --topology h100-ib --max-nodes 4 --tokens-per-step 131072 \
  --seq-len 16384 --optimizer adamw --runs-on prime-rl --prime-rl-version 2026-02-10
# A multi_node [deployment] without [slurm]: prime-rl refuses it (validate_deployment, #1859).
sed '/^\[slurm\]$/,$d' examples/prime-rl/qwen3-8b-sft.toml >"$work/no-slurm.toml"
EXPECT_MATCH=suffix expect no-slurm 2 'deployment.type: multi_node runs only under SLURM: prime-rl refuses it without a [slurm] table (validate_deployment, #1859, 2026-02-23); add [slurm] (each field has a default, job_name = "prime-rl")' \
  "$bin" plan --trainer-config "$work/no-slurm.toml" --prime-rl-version 2026-08-21
expect no-slurm-undated 0 "warning: $work/no-slurm.toml:14:1: deployment.type: multi_node runs only under SLURM: prime-rl refuses it without a [slurm] table (validate_deployment, #1859, 2026-02-23); add [slurm] (each field has a default, job_name = \"prime-rl\")" \
  "$bin" plan --trainer-config "$work/no-slurm.toml" --quiet
expect slurm 0 "" "$bin" plan --trainer-config examples/prime-rl/qwen3-8b-sft.toml \
  --prime-rl-version 2026-08-21 --quiet
# --help tells --runs-on (the runtime a plan is for) from --runtime (the memory model).
"$bin" plan --help 2>&1 | tr -s ' \n' ' ' | grep -q -- "--runs-on TEXT The runtime the plan is for: prime-rl .* Not --runtime, which picks the memory model" &&
  ok || bad "help: --runs-on does not say it is not --runtime"
# Settings prime-rl has no key for go in the emitted header comment, not in a key.
"$bin" plan --trainer-config examples/prime-rl/qwen3-4b-lora-rl.toml --lora-active-runs 1 \
  --emit prime-rl >"$work/lora.toml" 2>/dev/null || bad "lora-emit: exit $?"
grep -qx "# planned with --lora-active-runs 1 of the 4 adapter slots: prime-rl has no key for it (a run's AdamW is made when its orchestrator's run directory appears); give the flag again to re-plan it" \
  "$work/lora.toml" && ok || bad "lora-emit: no active-runs header line"
grep -q "active_runs" <(grep -v '^#' "$work/lora.toml") && bad "lora-emit: active_runs written as a key" || ok
finish
