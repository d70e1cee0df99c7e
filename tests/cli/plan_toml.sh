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
# The reference is planned with --runs-on prime-rl, as --emit plans by default: prime-rl's
# defaults of the flags not given (its launcher's expandable segments among them, as
# `plan --trainer-config` plans it) and only what prime-rl runs.
round_trip() {  # NAME EMIT FLAGS...: emit, check, plan the emitted file, compare
  local name="$1" emit="$2"; shift 2
  local t="$work/$name"
  if "$bin" plan "$@" --emit "$emit" >"$t.toml" 2>/dev/null &&
    "$bin" plan "$@" --runs-on prime-rl --json >"$t.want.json" 2>/dev/null &&
    cp "$t.want.json" "$t.want-x.json"; then
    check_emit "$name-values" "$t.toml" "$t.want.json"
    "$bin" plan --trainer-config "$t.toml" --topology "${TOPO:-topologies/h200-ib.yaml}" --json >"$t.got.json" 2>"$t.err" &&
      "$py" -c "$same_json" "$t.want-x.json" "$t.got.json" >"$t.diff" && ok ||
      bad "round-trip $name: $(cat "$t.diff" "$t.err" 2>/dev/null | head -c 600)"
  else
    bad "$name: emit failed"
  fi
}
# Without a trainer config only the keys the plan chooses and those the flags give are written
# (issue 50 item 4): the flags give every value where muonplan's default is not prime-rl's.
round_trip muon-flags prime-rl --model models/qwen3-30b-a3b.yaml --nodes 2 --layout fsdp=8,cp=2,ep=8 \
  --offload optimizer --offload-staging chunked --pinned-state --bf16-momentum \
  --ns-schedule polar-express --lr 0.01 --weight-decay 0.01 --momentum 0.95 --adamw-betas 0.8,0.99 \
  --tokens-per-step 1048576 --seq-len 4096 --lm-head-chunk 1024 --cp-style ring --ac full --ac-offload
round_trip muon-none toml --model models/qwen3-8b.yaml --nodes 1 --offload none --lr 0.002 \
  --weight-decay 0.01 --momentum 0.95 --adamw-betas 0.9,0.95 --ac full --ac-offload \
  --lm-head-chunk 8192 --tokens-per-step 65536 --seq-len 4096 \
  --ns-schedule '3.4445,-4.775,2.0315;3.4445,-4.775,2.0315'
# SFT has no fused LM head and its own host work (--emit prime-rl-sft plans it unfused, with
# the SFT trainer; the reference is told both).
round_trip adamw-sft prime-rl-sft --model glm-4.5-air --nodes 2 --offload full --optimizer adamw \
  --trainer sft --adamw-lr 1e-6 --adamw-weight-decay 0.01 --adamw-betas 0.9,0.999 --ac full --ac-offload \
  --tokens-per-step 262144 --seq-len 8192 --micro-batch-seqs 1 --lm-head-chunk 0
# Over a trainer config (issue 35, item 9): the user's whole file, every table and key it has
# kept, with the keys the plan changes where the file writes them; it plans the same again.
keeps_file='import sys, tomllib
src, out = (tomllib.load(open(f, "rb")) for f in sys.argv[1:3])
dropped = sys.argv[3:]  # keys the other deployment type lacks, commented out
def walk(a, b, at):
    for k, v in a.items():
        p = at + k
        if p in dropped: continue
        if k not in b: sys.exit(f"{p} is gone")
        if isinstance(v, dict): walk(v, b[k], p + ".")
walk(src, out, "")'
round_trip_file() {  # NAME FILE [FLAGS...] [-- DROPPED...]: emit over FILE, keep it, plan it again
  local name="$1" file="$2"; shift 2
  local t="$work/$name" flags=() dropped=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift && dropped=("$@")
  # --force: the round trip holds for a plan that does not fit too (trainer-fake.toml's Qwen3-8B
  # on one GPU under optimizer offload: the staged AdamW's foreach temporaries, 152.9 GiB).
  "$bin" plan --trainer-config "$file" "${flags[@]}" --emit prime-rl --force >"$t.toml" 2>/dev/null &&
    "$bin" plan --trainer-config "$file" "${flags[@]}" --json >"$t.want.json" 2>/dev/null ||
    { bad "$name: emit failed"; return; }
  "$py" -c "$keeps_file" "$file" "$t.toml" "${dropped[@]}" && ok || bad "$name: the file is not kept"
  "$bin" plan --trainer-config "$t.toml" --json >"$t.got.json" 2>"$t.err" &&
    "$py" -c "$same_json" "$t.want.json" "$t.got.json" >"$t.diff" && ok ||
    bad "round-trip $name: $(cat "$t.diff" "$t.err" 2>/dev/null | head -c 600)"
}
round_trip_file glm-rl tests/data/prime-rl/rl-glm-full.toml
round_trip_file sft-file tests/data/prime-rl/sft.toml
round_trip_file old-rl tests/data/prime-rl/rl-old.toml
round_trip_file sft-inference tests/data/prime-rl/sft-inference.toml --nodes 2 -- deployment.num_train_gpus
round_trip_file trainer-file tests/data/prime-rl/trainer-fake.toml
# A trainer file has no world keys: torchrun's flags are a comment (the world from the flags;
# without them one process on one GPU).
"$bin" plan --trainer-config tests/data/prime-rl/trainer-fake.toml --nodes 2 --gpus-per-node 8 \
  --emit prime-rl 2>/dev/null |
  grep -q '^# world: torchrun --nnodes 2 --nproc-per-node 8$' && ok || bad "trainer file: no torchrun comment"
round_trip_file slurm-era tests/data/prime-rl/rl-slurm-era.toml --nodes 4
round_trip_file slurm-table tests/data/prime-rl/rl-slurm-table.toml --nodes 4
grep -q '^num_train_nodes = 4$' "$work/slurm-table.toml" && ! grep -q '^\[deployment\]' "$work/slurm-table.toml" &&
  ok || bad "slurm-table: num_train_nodes not written in [slurm]: $(cat "$work/slurm-table.toml")"
# As written: the file itself, no key changed.
grep -q '0 key(s) changed' "$work/glm-rl.toml" && ok || bad "glm-rl: keys changed as written"
tail -n +4 "$work/glm-rl.toml" | cmp -s - tests/data/prime-rl/rl-glm-full.toml && ok ||
  bad "glm-rl: the emitted file is not the input"
# --nodes 2 on a single-node file of the older schema: the world keys change, in place; the
# older names (fused_lm_head_chunk_size, rollouts_per_example) stay; the rows are whole again.
round_trip_file old-rl-2 tests/data/prime-rl/rl-old.toml --nodes 2 -- deployment.num_train_gpus deployment.num_infer_gpus
"$py" - "$work/old-rl-2.toml" <<'PY' && ok || bad "old-rl-2: keys not where the input wrote them"
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
assert t["deployment"] == {"type": "multi_node", "num_train_nodes": 2, "gpus_per_node": 6}, t["deployment"]
assert t["orchestrator"] == {"batch_size": 72, "rollouts_per_example": 8}, t["orchestrator"]
assert t["trainer"]["model"]["fused_lm_head_chunk_size"] == "auto"
assert t["model"] == {"name": "Qwen/Qwen3-30B-A3B"}
PY
# [trainer.model] name stays there (no shared [model] name to conflict with inference's).
printf 'seq_len = 4096\n[trainer.model]\nname = "Qwen/Qwen3-8B"\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n[orchestrator]\ntoken_batch_size = 65536\n' >"$work/tm.toml"
"$bin" plan --trainer-config "$work/tm.toml" --model models/qwen3-8b.yaml --nodes 2 --emit prime-rl >"$work/tm.out" 2>/dev/null
"$py" - "$work/tm.out" <<'PY' && ok || bad "trainer.model name: $(cat "$work/tm.out")"
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
assert "model" not in t and t["trainer"]["model"]["name"] == "Qwen/Qwen3-8B", t
assert t["deployment"]["num_train_nodes"] == 2
PY
# --emit prime-rl-diff: only the changed keys.
"$bin" plan --trainer-config tests/data/prime-rl/rl-old.toml --nodes 2 --emit prime-rl-diff >"$work/diff.toml" 2>/dev/null
"$py" - "$work/diff.toml" <<'PY' && ok || bad "diff: $(cat "$work/diff.toml")"
import sys, tomllib
t = tomllib.load(open(sys.argv[1], "rb"))
assert t == {"orchestrator": {"batch_size": 72},
             "deployment": {"type": "multi_node", "num_train_nodes": 2, "gpus_per_node": 6},
             "slurm": {"job_name": "prime-rl"}}, t  # multi_node runs only under SLURM
PY
# Muon under full offload is not written (prime-rl's full_offload refuses Muon; tests/cli/first_hour.sh).
grep -qx 'optim_cpu_offload = false' "$work/muon-none.toml" && ! grep -q 'full_offload' "$work/muon-none.toml" \
  && ok || bad "muon-none: offload keys"

expect bad-emit 2 "--emit: expected prime-rl, prime-rl-diff or prime-rl-sft, got 'yaml'" \
  "$bin" plan --model models/qwen3-8b.yaml --emit yaml
expect emit-and-json 2 "--emit: prints instead of --json; give one of them" \
  "$bin" plan --model models/qwen3-8b.yaml --emit prime-rl --json
# Whose step: a trainer config is prime-rl's RL or SFT trainer (its host work, AdamW and AC
# offloader: Workload::trainer), --runs-on prime-rl RL unless --trainer sft says SFT, and under
# --runs-on muonplan no prime-rl trainer runs it (no trainer host terms).
trainer_is() {  # NAME WANT ARGS...: the plan's workload.trainer ("" for none)
  local name="$1" want="$2"; shift 2
  EXPECT_MATCH=last expect "$name" 0 "" "$bin" plan "$@" --json  # notes and warnings aside
  json_check "$name" "$work/out" "
got = d['workload'].get('trainer', '')
assert got == '$want', got
names = [t['name'] for t in d['predicted']['breakdown']['training_step_s']]
assert ('trainer_host' in names) == bool('$want'), names"
}
trainer_is trainer-rl-file rl --trainer-config tests/data/prime-rl/rl-glm-full.toml
trainer_is trainer-sft-file sft --trainer-config tests/data/prime-rl/sft.toml
trainer_is trainer-file-muonplan "" --trainer-config tests/data/prime-rl/sft.toml --runs-on muonplan
q8=(--model models/qwen3-8b.yaml --nodes 1 --tokens-per-step 65536 --seq-len 4096)
trainer_is trainer-runs-on rl "${q8[@]}" --runs-on prime-rl
trainer_is trainer-runs-on-sft sft "${q8[@]}" --runs-on prime-rl --trainer sft
trainer_is trainer-none "" "${q8[@]}"
finish
