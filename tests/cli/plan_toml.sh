#!/usr/bin/env bash
# muonplan plan --emit prime-rl (and its old name --emit toml): valid TOML (Python's tomllib)
# in prime-rl's schema whose values are the plan's, with no key prime-rl lacks; planning from
# the emitted file gives the same plan (round trips, RL and SFT); bad --emit values exit 2.
set -u
source "$(dirname "$0")/lib.sh"
export HF_HUB_CACHE="$work/hub"
check_emit() {  # NAME TOML JSON: the emitted file against the plan JSON
  "$py" - "$2" "$3" <<'PY' && ok || bad "$1"
import json, sys, tomllib
text = open(sys.argv[1]).read()
t = tomllib.loads(text)
p = json.load(open(sys.argv[2]))
sft = "data" in t
m = t["model"] if sft else t["trainer"]["model"]
o = t["optim"] if sft else t["trainer"]["optim"]
dep, lay = t["deployment"], p["layout"]
bad = []
def want(what, got, exp):
    if got != exp: bad.append(f"{what} = {got!r}, plan {exp!r}")
if dep["type"] == "single_node":
    want("one node", p["nodes"], 1)
    want("num_train_gpus", dep.get("num_train_gpus"), p["gpus_per_node"])
else:
    want("num_train_nodes", dep.get("num_train_nodes"), p["nodes"])
    want("gpus_per_node", dep.get("gpus_per_node"), p["gpus_per_node"])
want("dp_replicate", m["dp_replicate"], p["world_size"] // lay["fsdp"])
want("cp", m["cp"], lay["cp"]); want("ep", m["ep"], lay["ep"])
want("optim_cpu_offload", m["optim_cpu_offload"], p["offload"] == "optimizer")
want("full_offload", m.get("full_offload", False), p["offload"] == "full" and p["optimizer"] != "muon")
want("type", o["type"], {"signsgd": "sign_sgd"}.get(p["optimizer"], p["optimizer"]))
for k in ("offload", "fsdp_cpu_offload", "dp_shard", "world_size", "bf16_momentum", "update_rms"):
    if k in m or k in o or k in dep: bad.append(f"key prime-rl lacks: {k}")
if p["optimizer"] == "muon":
    want("mu", o["mu"], p["optimizer_config"]["momentum"])
    want("lr", o["lr"], p["optimizer_config"]["lr"])
    if f'# muonplan: bf16_momentum = {str(p["optimizer_config"]["bf16_momentum"]).lower()}' not in text:
        bad.append("bf16_momentum is not a muonplan comment")
if p["decision"]["reason"] not in text: bad.append("the decision is not in the header comment")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}
same_json='import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for x in (a, b): x.pop("trainer_config", None)
diff = [k for k in set(a) | set(b) if a.get(k) != b.get(k)]
print(diff); sys.exit(1 if diff else 0)'
round_trip() {  # NAME EMIT FLAGS...: emit, check, plan the emitted file, compare
  local name="$1" emit="$2"; shift 2
  local t="$work/$name"
  if "$bin" plan "$@" --emit "$emit" >"$t.toml" 2>/dev/null && "$bin" plan "$@" --json >"$t.want.json" 2>/dev/null; then
    check_emit "$name-values" "$t.toml" "$t.want.json"
    "$bin" plan --trainer-config "$t.toml" --topology "${TOPO:-topologies/h200-ib.yaml}" --json >"$t.got.json" 2>"$t.err" &&
      "$py" -c "$same_json" "$t.want.json" "$t.got.json" >"$t.diff" && ok ||
      bad "round-trip $name: $(cat "$t.diff" "$t.err" 2>/dev/null | head -c 600)"
  else
    bad "$name: emit failed"
  fi
}
round_trip muon-flags prime-rl --model models/qwen3-30b-a3b.yaml --nodes 2 --layout fsdp=8,cp=2,ep=8 \
  --offload optimizer --offload-staging chunked --pinned-state --bf16-momentum \
  --ns-schedule polar-express --lr 0.01 --adamw-betas 0.8,0.99 --tokens-per-step 1048576 \
  --seq-len 4096 --lm-head-chunk 1024 --cp-style ring
round_trip muon-none toml --model models/qwen3-8b.yaml --nodes 1 --offload none --lr 0.002 \
  --tokens-per-step 65536 --seq-len 4096 --ns-schedule '3.4445,-4.775,2.0315;3.4445,-4.775,2.0315'
round_trip adamw-sft prime-rl-sft --model glm-4.5-air --nodes 2 --offload full --optimizer adamw \
  --tokens-per-step 262144 --seq-len 8192 --micro-batch-seqs 1
round_trip glm-rl prime-rl --trainer-config tests/data/prime-rl/rl-glm-full.toml
round_trip sft-file prime-rl --trainer-config tests/data/prime-rl/sft.toml
round_trip old-rl prime-rl --trainer-config tests/data/prime-rl/rl-old.toml
grep -q '^token_batch_size = 2097152' "$work/glm-rl.toml" && ok || bad "glm-rl: token_batch_size not kept"
grep -q '^batch_size = 66 ' "$work/old-rl.toml" && ok || bad "old-rl: batch_size not kept"
# Muon under full offload is not written (prime-rl's full_offload refuses Muon; tests/cli/first_hour.sh).
grep -qx 'optim_cpu_offload = false' "$work/muon-none.toml" && ! grep -q 'full_offload' "$work/muon-none.toml" \
  && ok || bad "muon-none: offload keys"

expect bad-emit 2 "--emit: expected prime-rl or prime-rl-sft, got 'yaml'" \
  "$bin" plan --model models/qwen3-8b.yaml --emit yaml
expect emit-and-json 2 "--emit: prints instead of --json; give one of them" \
  "$bin" plan --model models/qwen3-8b.yaml --emit prime-rl --json
finish
