#!/usr/bin/env bash
# muonplan plan --emit toml: valid TOML (Python's tomllib) whose every value is the plan's, as
# `muonplan plan --json` prints it for the same inputs; bad --emit values exit 2.
set -u
source "$(dirname "$0")/lib.sh"
compare() {  # name, plan flags...: the TOML against the JSON of the same plan
  local name="$1"; shift
  if "$bin" plan "$@" --emit toml >"$work/$name.toml" && "$bin" plan "$@" --json >"$work/$name.json" &&
     "$py" - "$work/$name.toml" "$work/$name.json" <<'EOF'
import json, sys, tomllib
toml = tomllib.load(open(sys.argv[1], "rb"))
plan = json.load(open(sys.argv[2]))
opt, lay = plan["optimizer_config"], plan["layout"]
want = {
    ("deployment", "num_nodes"): plan["nodes"],
    ("deployment", "gpus_per_node"): plan["gpus_per_node"],
    ("deployment", "world_size"): plan["world_size"],
    ("model", "offload"): plan["offload"],
    ("model", "fsdp_cpu_offload"): plan["offload"] == "full",
    ("model", "optim_cpu_offload"): plan["offload"] == "optimizer",
    ("model", "dp_replicate"): plan["world_size"] // lay["fsdp"],
    ("model", "dp_shard"): lay["fsdp"] // lay["cp"],
    ("model", "cp"): lay["cp"],
    ("model", "ep"): lay["ep"],
    ("optim", "type"): plan["optimizer"],
}
if plan["optimizer"] == "muon":
    want.update({
        ("optim", "lr"): opt["lr"], ("optim", "weight_decay"): opt["weight_decay"],
        ("optim", "mu"): opt["momentum"], ("optim", "nesterov"): opt["nesterov"],
        ("optim", "bf16_momentum"): opt["bf16_momentum"],
        ("optim", "update_rms"): opt["update_rms"], ("optim", "ns_schedule"): opt["ns_schedule"],
        ("optim", "newton_schulz_coefficients"): opt["newton_schulz_coefficients"],
        ("optim", "betas1"): opt["adamw"]["beta1"], ("optim", "betas2"): opt["adamw"]["beta2"],
    })
elif plan["optimizer"] == "adamw":
    want.update({("optim", "lr"): opt["adamw"]["lr"], ("optim", "eps"): opt["adamw"]["eps"]})
    if "bf16_momentum" in toml["optim"]:
        sys.exit("adamw: bf16_momentum listed")
bad = [f"{t}.{k} = {toml.get(t, {}).get(k)!r}, plan {v!r}" for (t, k), v in want.items()
       if toml.get(t, {}).get(k) != v]
if plan["decision"]["reason"] not in open(sys.argv[1]).read():
    bad.append("the decision is not in the header comment")
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF
  then ok; else bad "$name"; fi
}
compare auto --model models/glm-4.5-air.yaml
compare hsdp-ep --model models/qwen3-30b-a3b.yaml --nodes 2 --layout fsdp=8,ep=8 \
  --offload optimizer --bf16-momentum --ns-schedule polar-express --lr 0.01 --weight-decay 0.1
compare adamw --model models/qwen3-8b.yaml --nodes 1 --offload none --optimizer adamw
compare cp --model models/llama-3.1-8b.yaml --nodes 2 --layout fsdp=8,cp=2 --offload none --nesterov

expect bad-emit 2 "--emit: expected toml, got 'yaml'" "$bin" plan --model models/qwen3-8b.yaml --emit yaml
expect emit-and-json 2 "--emit: prints instead of --json; give one of them" \
  "$bin" plan --model models/qwen3-8b.yaml --emit toml --json

# --trainer-config: the TOML plans the same again. Explicit --nodes and --offload keep the
# decision alike too (the file pins both, so a searched plan keeps one candidate).
same_json='import json, sys; a, b = (json.load(open(f)) for f in sys.argv[1:]); sys.exit(a != b)'
round_trip() {  # name, model, topology, plan flags...
  local name="$1" model="$2" topo="$3"; shift 3
  local t="$work/$name.rt"
  if "$bin" plan --model "$model" --topology "$topo" "$@" --emit toml >"$t.toml" &&
     "$bin" plan --model "$model" --topology "$topo" "$@" --json >"$t.want.json" &&
     "$bin" plan --model "$model" --topology "$topo" --trainer-config "$t.toml" --json \
       >"$t.got.json" &&
     "$py" -c "$same_json" "$t.want.json" "$t.got.json"
  then ok; else bad "round-trip $name"; fi
}
round_trip moe-workload models/qwen3-30b-a3b.yaml topologies/h200-ib.yaml --nodes 2 \
  --layout fsdp=8,cp=2,ep=8 --offload optimizer --offload-staging chunked --pinned-state \
  --bf16-momentum --ns-schedule polar-express --lr 0.01 --adamw-betas 0.8,0.99 \
  --tokens-per-step 1048576 --seq-len 4096 --lm-head-chunk 1024 --cp-style ring
round_trip adamw models/qwen3-8b.yaml topologies/h200-ib.yaml --nodes 1 --offload none \
  --optimizer adamw --lr 0.001
printf '[deployment]\nnum_nodes = 1\n\n[model]\nofload = "none"\n' >"$work/unknown.toml"
expect trainer-config-unknown-key 2 "$work/unknown.toml:5:1: model.ofload: unknown key in [model]; \
known: offload, fsdp_cpu_offload, optim_cpu_offload, dp_replicate, dp_shard, cp, ep" \
  "$bin" plan --model models/qwen3-8b.yaml --trainer-config "$work/unknown.toml"
expect trainer-config-conflict 2 \
  "--nodes: conflicts with $work/moe-workload.rt.toml:5 (num_nodes = 2)" \
  "$bin" plan --model models/qwen3-30b-a3b.yaml --trainer-config "$work/moe-workload.rt.toml" \
  --nodes 3
finish
