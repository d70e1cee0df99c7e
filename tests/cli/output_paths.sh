#!/usr/bin/env bash
# Outputs onto inputs and into checkpoints, by the file a path leads to (docs/reliability.md,
# "Paths", round 4): every input a command reads counts, as resolved (the model file of
# --model DIR, of an HF id or of the trainer config's model.name, the plan a metrics file
# names), and an output reached through a link, dangling or not, is where the link leads.
# Each case below exited 0 and replaced the file or littered the checkpoint.
set -u
source "$(dirname "$0")/lib.sh"
T="--topology topologies/cpu-ci.yaml"
same="an input; write it elsewhere"

# --- D1: the model file a name resolves to ---------------------------------------------------
mkdir "$work/m"; cp tests/data/hf/qwen3-0.6b.json "$work/m/config.json"
cp "$work/m/config.json" "$work/config.keep"
expect "plan --model DIR --out DIR/config.json" 2 "--out: $work/m/config.json is the same file as --model's file ($work/m/config.json), $same" \
  "$bin" plan --model "$work/m" --out "$work/m/config.json"
expect "plan --model DIR --trace DIR/config.json" 2 "--trace: $work/m/config.json is the same file as --model's file ($work/m/config.json), $same" \
  "$bin" plan --model "$work/m" --trace "$work/m/config.json"
# The Hugging Face cache: config.json in a snapshot is a link to a blob, as the hub writes it.
hub="$work/hub"; snap="$hub/models--org--m/snapshots/rev1"
mkdir -p "$snap" "$hub/models--org--m/refs" "$hub/models--org--m/blobs"
cp tests/data/hf/qwen3-0.6b.json "$hub/models--org--m/blobs/b1"
ln -s ../../blobs/b1 "$snap/config.json"; printf rev1 >"$hub/models--org--m/refs/main"
expect "plan --model org/m --trace <snapshot>/config.json" 2 "--trace: $snap/config.json is the same file as --model's file ($snap/config.json), $same" \
  env HF_HUB_CACHE="$hub" "$bin" plan --model org/m --trace "$snap/config.json"
expect "plan --model org/m --out <blob>" 2 "--out: $hub/models--org--m/blobs/b1 is the same file as --model's file ($snap/config.json), $same" \
  env HF_HUB_CACHE="$hub" "$bin" plan --model org/m --out "$hub/models--org--m/blobs/b1"
# The trainer config's model.name.
cp models/tiny-dense.yaml "$work/model.yaml"
sed "s|^name = \"Qwen/Qwen3-8B\"|name = \"$work/model.yaml\"|" tests/data/prime-rl/sft.toml >"$work/tc.toml"
grep -q "$work/model.yaml" "$work/tc.toml" && ok || bad "tc.toml does not name model.yaml"
expect "plan --trainer-config tc.toml --out model.yaml" 2 "--out: $work/model.yaml is the same file as --trainer-config's model.name ($work/model.yaml), $same" \
  "$bin" plan --trainer-config "$work/tc.toml" --out "$work/model.yaml"
# A bundled name: models/NAME.yaml in the data directory (a copy of it here).
mkdir -p "$work/data/models"; cp -r models/tiny-dense.yaml "$work/data/models/"
cp -r topologies "$work/data/"
expect "plan --model tiny-dense --out <data>/models/tiny-dense.yaml" 2 "--out: $work/data/models/tiny-dense.yaml is the same file as --model's file ($work/data/models/tiny-dense.yaml), $same" \
  env MUONPLAN_DATA_DIR="$work/data" "$bin" plan --model tiny-dense --out "$work/data/models/tiny-dense.yaml"
cmp -s "$work/m/config.json" "$work/config.keep" && cmp -s "$hub/models--org--m/blobs/b1" tests/data/hf/qwen3-0.6b.json \
  && cmp -s "$work/model.yaml" models/tiny-dense.yaml && cmp -s "$work/data/models/tiny-dense.yaml" models/tiny-dense.yaml \
  && ok || bad "a refused output replaced a model file"

# --- D2: the plan a metrics file names --------------------------------------------------------
cp tests/data/calibration/cpu/dense-full.metrics.json tests/data/calibration/cpu/dense-full.plan.json "$work/"
cp "$work/dense-full.plan.json" "$work/plan.keep"; ln -s dense-full.plan.json "$work/plan-link.json"
for out in dense-full.plan.json plan-link.json; do
  expect "calibrate --out <the metrics' plan> ($out)" 2 "--out: $work/$out is the same file as --metrics $work/dense-full.metrics.json's plan ($work/dense-full.plan.json), $same" \
    "$bin" calibrate --metrics "$work/dense-full.metrics.json" $T --out "$work/$out"
done
expect "calibrate --check's plan" 2 "--out: $work/dense-full.plan.json is the same file as --check $work/dense-full.metrics.json's plan ($work/dense-full.plan.json), $same" \
  "$bin" calibrate --metrics tests/data/calibration/cpu/dense-none.metrics.json --check "$work/dense-full.metrics.json" $T --out "$work/dense-full.plan.json"
cmp -s "$work/dense-full.plan.json" "$work/plan.keep" && ok || bad "calibrate --out replaced the metrics' plan"
# A training run's model (a file beside the run) is an input of calibrate --training-run too.
sed 's|^model: glm-4.5-air|model: m.yaml|' tests/data/training-runs/glm-4.5-air-1n-full-muon.yaml >"$work/run.yaml"
cp models/glm-4.5-air.yaml "$work/m.yaml"
expect "calibrate --training-run --out <the run's model>" 2 "--out: $work/m.yaml is the same file as --training-run $work/run.yaml's model ($work/m.yaml), $same" \
  "$bin" calibrate --training-run "$work/run.yaml" --topology topologies/h200-ib.yaml --out "$work/m.yaml"
cmp -s "$work/m.yaml" models/glm-4.5-air.yaml && ok || bad "calibrate --out replaced a training run's model"

# --- W3: outputs inside a checkpoint, through links, at any depth -----------------------------
plan_micro "$work/p.json" || bad "plan micro"
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
inside="is inside a muonplan checkpoint directory ($work/ck), which holds only the checkpoint's files; write it elsewhere"
ln -s ck/new.json "$work/dangling.json"; ln -s ck/rep "$work/dangling-rep"
for flag in --out --trace; do
  expect "plan $flag through a dangling link into ck" 2 "$flag: $work/dangling.json $inside" \
    "$bin" plan --model tests/data/micro-dense.yaml $T --nodes 1 --gpus-per-node 1 $flag "$work/dangling.json"
done
for flag in --metrics --trace; do
  expect "execute $flag through a dangling link into ck" 2 "$flag: $work/dangling.json $inside" \
    "$bin" execute --plan "$work/p.json" $flag "$work/dangling.json"
done
# A chain: a relative link to an absolute one that dangles into ck.
ln -s "$work/ck/chained.json" "$work/chain2"; ln -s chain2 "$work/chain1"
expect "plan --out through a chain of links into ck" 2 "--out: $work/chain1 $inside" \
  "$bin" plan --model tests/data/micro-dense.yaml $T --nodes 1 --gpus-per-node 1 --out "$work/chain1"
expect "calibrate --out through a dangling link into ck" 2 "--out: $work/dangling.json $inside" \
  "$bin" calibrate --metrics tests/data/calibration/cpu/dense-none.metrics.json $T --out "$work/dangling.json"
expect "report --out ck/rep" 2 "--out: $work/ck/rep $inside" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/ck/rep"
expect "report --out through a dangling link into ck" 2 "--out: $work/dangling-rep $inside" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/dangling-rep"
expect "execute --checkpoint ck/sub" 2 "--checkpoint: $work/ck/sub $inside" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck/sub"
expect "plan --out ck/deeper/x.json" 2 "--out: $work/ck/deeper/x.json $inside" \
  "$bin" plan --model tests/data/micro-dense.yaml $T --nodes 1 --gpus-per-node 1 --out "$work/ck/deeper/x.json"
[ "$(cd "$work/ck" && ls -A | sort | tr '\n' ' ')" = "manifest.json rank-00000.safetensors " ] \
  && ok || bad "a refused output littered the checkpoint: $(ls -A "$work/ck")"
# The checkpoint is still muonplan's alone: a save into it goes through.
timeout 60 "$bin" execute --plan "$work/p.json" --resume "$work/ck" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  && ok || bad "a save into ck after the refusals: $(cat "$work/err")"
finish
