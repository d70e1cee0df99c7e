#!/usr/bin/env bash
# docs/planner.md's training-step term tables against the terms plans print (issue 47 item 5):
# over plans that between them take every branch (offload modes, optimizers, LoRA, CP, EP, HSDP,
# the LM head's forms, selective AC, both runtimes), the workload memory, traffic and time tables
# ("**GPU memory**", "**Traffic per GPU per step**", "**Time**") name exactly the terms the
# plans print under predicted.breakdown's gpu_workload_gib, traffic_per_gpu_gb (less the
# optimizer step's, section 6) and training_step_s.
set -u
source "$(dirname "$0")/lib.sh"
wl=(--tokens-per-step 262144 --seq-len 4096)
i=0
plan() { i=$((i + 1)); "$bin" plan "$@" --json >"$work/p$i.json" 2>"$work/e$i" || bad "plan $*: $(cat "$work/e$i")"; }
plan --model qwen3-30b-a3b --nodes 2 --offload none "${wl[@]}"
plan --model qwen3-30b-a3b --nodes 2 --offload optimizer --layout fsdp=16,cp=2,ep=8 "${wl[@]}" --lm-head-chunk 0
plan --model qwen3-30b-a3b --nodes 2 --offload full --optimizer adamw "${wl[@]}" --ac-offload
plan --model qwen3-30b-a3b --nodes 2 --offload none --layout fsdp=8 "${wl[@]}" --ac none
plan --model glm-4.5-air --nodes 1 --offload full "${wl[@]}" --runs-on muonplan
# --runtime muonplan: the timeline's terms at its live peak, here in the fused LM head's block.
plan --model qwen3-0.6b --nodes 1 --offload none --tokens-per-step 262144 --seq-len 32768 \
  --runtime muonplan --lm-head-chunk 16384
plan --model qwen3-8b --nodes 1 --offload none "${wl[@]}" --lora-rank 16 --optimizer adamw \
  --ac selective --ac-targets mlp --cp-style ring --layout fsdp=4,cp=2
plan --model qwen3-8b --nodes 1 --offload optimizer --optimizer signsgd "${wl[@]}" --trainer rl \
  --prime-rl-version 2026-01-15 --lm-head-chunk 2048 --ac-freq 2
# The backward temporaries (docs/planner.md section 5c) at the peaks they set: attention's under
# FA3 and FA2 on a wide-attention, narrow-MLP layer; LoRA's; the projections' input gradients of
# a 128K-token MoE layer.
plan --model tests/data/wide-attention.yaml --nodes 1 --offload none --tokens-per-step 262144 \
  --seq-len 32768 --lm-head-chunk 2048
plan --model tests/data/wide-attention.yaml --nodes 1 --offload none --tokens-per-step 262144 \
  --seq-len 32768 --lm-head-chunk 2048 --attention fa2
plan --model qwen3-8b --nodes 1 --offload none "${wl[@]}" --lora-rank 16 --optimizer adamw \
  --lm-head-chunk 2048
plan --model glm-4.5-air --nodes 4 --offload optimizer --tokens-per-step 4194304 --seq-len 131072 \
  --layout fsdp=32,cp=1,ep=4 --lm-head-chunk 2048
if out="$("$py" - "$work" "$i" <<'PY'
import json, re, sys
work, n = sys.argv[1], int(sys.argv[2])
printed = {}
for k in range(1, n + 1):
    b = json.load(open(f"{work}/p{k}.json"))["predicted"]["breakdown"]
    for key, terms in b.items():
        if isinstance(terms, list):
            printed.setdefault(key, set()).update(t["name"] for t in terms)
doc = open("docs/planner.md").read()
def table_after(header):
    part = doc.split(header, 1)[1]
    rows = re.findall(r"^\|([^|\n]*)\|", part.split("\n\n|", 1)[1].split("\n\n", 1)[0], re.M)
    names = set()
    for r in rows:
        names |= set(re.findall(r"`([a-z0-9_]+)`", r))
    return names
problems = []
# The optimizer step's traffic (section 6's all-to-all and offload copies) shares the key.
optimizer_traffic = {"alltoall_sent", "h2d", "d2h"}
for header, key in (("**GPU memory** (`gpu_workload`", "gpu_workload_gib"),
                    ("**Traffic per GPU per step**", "traffic_per_gpu_gb"),
                    ("**Time** (`training_step_s`", "training_step_s")):
    documented = table_after(header)
    if len(documented) < 5:
        problems.append(f"{header}: its table not found")
    shown = printed.get(key, set()) - (optimizer_traffic if key == "traffic_per_gpu_gb" else set())
    for name in sorted(documented - shown):
        problems.append(f"docs/planner.md {header}: {name} is printed by none of the plans")
    for name in sorted(shown - documented):
        problems.append(f"{key}: {name} is printed, not in docs/planner.md's {header} table")
print("\n".join(problems))
sys.exit(1 if problems else 0)
PY
)"; then ok; else bad "docs/planner.md's term tables and the plans disagree: $out"; fi
finish
