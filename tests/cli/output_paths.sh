#!/usr/bin/env bash
# Path options (docs/reliability.md, "Paths"; D1, D2 and W3 of round 4): each case below exited
# 0 and replaced a file, wrote nothing where it was asked to write, or littered a checkpoint.
#   empty paths:          an input error, never "not given"
#   outputs onto inputs:  by the file a path leads to: every input a command reads counts, as
#                         resolved (the model file of --model DIR, of an HF id or of the trainer
#                         config's model.name, the plan a metrics file names), however spelled
#                         (links, hard links, ./), and an output reached through a link,
#                         dangling or not, is where the link leads; nor is it another output
#   unwritable outputs:   a directory, a path ending in '/', a missing directory: refused before
#                         the command does its work, nothing written
#   checkpoints:          no output inside a checkpoint (through links, at any depth) or onto
#                         the paths a save goes through (DIR.tmp, DIR.old, DIR.lock), and no
#                         checkpoint onto another's staging or previous copy
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

# --- Empty paths ------------------------------------------------------------------------------
# The checks from here on run tiny-dense's plan, in place of the micro-dense one above.
M=models/qwen3-8b.yaml
plan_tiny "$work/p.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
timeout 60 "$bin" execute --plan "$work/p.json" --steps 3 --checkpoint "$work/good" >/dev/null \
  2>"$work/err" || bad "save good: $(cat "$work/err")"
cp "$work/good/manifest.json" "$work/good-manifest"
empty="an empty path; give a path (leave the option out to skip it)"
for flag in --resume --checkpoint --metrics --trace; do
  expect "execute $flag ''" 2 "muonplan: $flag: $empty" \
    "$bin" execute --plan "$work/p.json" --checkpoint "$work/good" $flag ''
done
cmp -s "$work/good/manifest.json" "$work/good-manifest" && ok || bad "--resume '' changed the checkpoint"
expect "plan --out ''" 2 "muonplan: --out: $empty" "$bin" plan --model $M --out ''
expect "report --out ''" 2 "muonplan: --out: $empty" "$bin" report --model $M --out ''
expect "plan --model ''" 2 "muonplan: --model: $empty" "$bin" plan --model ''
mkdir "$work/cwd"
(cd "$work/cwd" && PYTHONPATH="$root/build/python" "$py" -c "
import muonplan
try:
    ck = muonplan.read_checkpoint('$work/good')
    muonplan.write_checkpoint('', ck['tensors'], ck['step'], '$work/p.json')
except muonplan.InputError as e:
    assert 'checkpoint directory: an empty path' in str(e), e
else:
    raise SystemExit('write_checkpoint(\"\") was accepted')
" && [ -z "$(ls -A)" ]) && ok || bad "write_checkpoint(''): not refused, or wrote into the working directory"

# --- Outputs that are inputs or other outputs, however spelled --------------------------------
cp $M "$work/m.yaml"; ln -s m.yaml "$work/link.yaml"; ln "$work/m.yaml" "$work/hard.yaml"
for out in m.yaml link.yaml hard.yaml; do
  expect "plan --out $out = --model" 2 "--out: $work/$out is the same file as --model ($work/m.yaml), an input; write it elsewhere" \
    "$bin" plan --model "$work/m.yaml" --out "$work/$out"
done
cmp -s "$work/m.yaml" $M && ok || bad "plan --out overwrote the model spec"
for flag in --metrics --trace; do
  expect "execute $flag = --plan" 2 "$flag: $work/./p.json is the same file as --plan ($work/p.json), an input; write it elsewhere" \
    "$bin" execute --plan "$work/p.json" $flag "$work/./p.json"
done
expect "plan --trace = --out" 2 "--trace: $work/x.json is the same file as --out ($work/x.json), another output; write it elsewhere" \
  "$bin" plan --model $M --out "$work/x.json" --trace "$work/x.json"
cp tests/data/calibration/cpu/dense-full.metrics.json "$work/cm.json"
expect "calibrate --out = --metrics" 2 "--out: $work/cm.json is the same file as --metrics ($work/cm.json), an input; write it elsewhere" \
  "$bin" calibrate --metrics "$work/cm.json" --out "$work/cm.json"

# Output files no write could create: refused before the command does its work (a long execute
# would end in "cannot write"), and nothing is written.
mkdir "$work/adir"
expect "--metrics at a directory" 2 "--metrics: $work/adir is a directory: give a file's path" \
  "$bin" execute --plan "$work/p.json" --metrics "$work/adir" --checkpoint "$work/never"
expect "--trace ending in /" 2 "--trace: $work/t.json/ ends with '/': give a file's path" \
  "$bin" execute --plan "$work/p.json" --trace "$work/t.json/" --checkpoint "$work/never"
expect "plan --out in a missing directory" 2 \
  "--out: $work/nodir/p.json cannot be written: its directory $work/nodir does not exist" \
  "$bin" plan --model $M --out "$work/nodir/p.json"
[ ! -e "$work/never" ] && [ ! -e "$work/nodir" ] && [ -z "$(ls -A "$work/adir")" ] && ok \
  || bad "a refused output path: something was written"

# --- Outputs inside a checkpoint directory, which would then not be muonplan's alone ----------
expect "metrics inside an existing checkpoint" 2 "--metrics: $work/good/metrics.json is inside a muonplan checkpoint directory ($work/good), which holds only the checkpoint's files; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --metrics "$work/good/metrics.json"
expect "metrics inside --checkpoint" 2 "--metrics: $work/new/m.json is inside the directory of --checkpoint ($work/new); write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/new" --metrics "$work/new/m.json"
expect "nested --checkpoint" 2 "--checkpoint: $work/good/sub and --resume ($work/good) are nested directories; keep them apart" \
  "$bin" execute --plan "$work/p.json" --resume "$work/good" --checkpoint "$work/good/sub"
# A file onto the paths a checkpoint saves through (DIR.tmp, DIR.old, DIR.lock): it was written,
# and the next save refused DIR.tmp as "not a directory" (or a resume met a file at DIR.old).
expect "metrics onto --checkpoint's DIR.tmp" 2 "--metrics: $work/new.tmp is the path of --checkpoint's staging directory ($work/new.tmp), another output; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/new" --metrics "$work/new.tmp"
expect "trace onto --checkpoint's DIR.old" 2 "--trace: $work/new.old is the path of --checkpoint's previous checkpoint ($work/new.old), another output; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/new/" --trace "$work/new.old"
expect "metrics onto --checkpoint's lock" 2 "--metrics: $work/new.lock is the same file as --checkpoint's lock file ($work/new.lock), another output; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/new" --metrics "$work/new.lock"
expect "metrics onto --resume's DIR.old" 2 "--metrics: $work/good.old is the path of --resume's previous checkpoint ($work/good.old), an input; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --resume "$work/good" --metrics "$work/good.old"
expect "--checkpoint onto the plan" 2 "--checkpoint: $work/p.json is the path of --plan ($work/p.json), an input; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/p.json"
[ ! -e "$work/new" ] && [ ! -e "$work/new.tmp" ] && [ ! -e "$work/new.old" ] && [ ! -e "$work/new.lock" ] \
  && [ ! -e "$work/good.old" ] && ok || bad "a refused checkpoint-path output: something was written"
# A checkpoint onto another's staging or previous copy: DIR's next save clears DIR.tmp and
# DIR.old before it writes, so the resumed-from copy was gone if that save then failed, and a
# checkpoint saved as DIR.tmp was removed by the next save of DIR.
cp -r "$work/good" "$work/keep.old"
expect "--resume DIR.old --checkpoint DIR" 2 "--checkpoint: $work/keep.old, --checkpoint's previous checkpoint, is the path of --resume ($work/keep.old), an input; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --resume "$work/keep.old" --checkpoint "$work/keep"
expect "--resume DIR --checkpoint DIR.tmp" 2 "--checkpoint: $work/good.tmp is the path of --resume's staging directory ($work/good.tmp), an input; write it elsewhere" \
  "$bin" execute --plan "$work/p.json" --resume "$work/good" --checkpoint "$work/good.tmp"
expect "--checkpoint beside a checkpoint, as its DIR.old" 2 "--checkpoint: $work/good.old is where a save of the checkpoint $work/good keeps its previous checkpoint, and that save would replace it: choose another name" \
  "$bin" execute --plan "$work/p.json" --checkpoint "$work/good.old"
[ ! -e "$work/keep" ] && [ ! -e "$work/good.tmp" ] && [ ! -e "$work/good.old" ] && [ -f "$work/keep.old/manifest.json" ] \
  && ok || bad "a refused checkpoint beside a checkpoint: something was written or removed"
rm -rf "$work/keep.old"

# --- round 5, item 1: standard output onto an input, and --emit-out ----------------------------
# `plan --trainer-config my.toml --emit prime-rl > my.toml`: the shell empties my.toml first.
# muonplan refuses at once (stdout is the input, by device and inode), and an empty trainer
# config is refused whatever the cause; --emit-out writes over the input atomically, keeping
# FILE.bak.
cp tests/data/prime-rl/sft.toml "$work/my.toml"
sh -c '"$1" plan --trainer-config "$2" --emit prime-rl >"$2" 2>"$3"' _ "$bin" "$work/my.toml" "$work/err5"
rc=$?
[ "$rc" = 2 ] && grep -q "^--trainer-config: standard output is the same file as --trainer-config ($work/my.toml), an input: the shell emptied it" "$work/err5" &&
  ok || bad "stdout onto the trainer config: exit $rc, $(head -c 400 "$work/err5")"
[ ! -s "$work/my.toml" ] && ok || bad "the shell's redirection should have emptied my.toml"
# Appending (>>) is refused the same way, and the file is left as it was.
cp tests/data/prime-rl/sft.toml "$work/my.toml"
sh -c '"$1" plan --trainer-config "$2" --emit prime-rl >>"$2" 2>/dev/null' _ "$bin" "$work/my.toml"
rc=$?
[ "$rc" = 2 ] && cmp -s "$work/my.toml" tests/data/prime-rl/sft.toml && ok ||
  bad "stdout appended onto the trainer config: exit $rc, or the file changed"
# Through a hard link, and onto the model file or the topology: the same.
ln "$work/my.toml" "$work/hard.toml"
sh -c '"$1" plan --trainer-config "$2" --emit prime-rl >>"$3" 2>/dev/null' _ "$bin" "$work/my.toml" "$work/hard.toml"
[ $? = 2 ] && ok || bad "stdout onto a hard link of the trainer config was not refused"
cp topologies/cpu-ci.yaml "$work/topo.yaml"
sh -c '"$1" plan --model tiny-dense --topology "$2" --nodes 1 >>"$2" 2>"$3"' _ "$bin" "$work/topo.yaml" "$work/err5"
[ $? = 2 ] && grep -q "^--topology: standard output is the same file as --topology" "$work/err5" && ok ||
  bad "stdout onto the topology: $(head -c 300 "$work/err5")"
# --out that is also standard output.
sh -c '"$1" plan --model tiny-dense --topology topologies/cpu-ci.yaml --nodes 1 --out "$2" >"$2" 2>"$3"' _ "$bin" "$work/both.json" "$work/err5"
[ $? = 2 ] && grep -q "^--out: $work/both.json is also standard output" "$work/err5" && ok ||
  bad "--out onto stdout: $(head -c 300 "$work/err5")"
# An empty trainer config (or one of comments only) is refused, not planned as the defaults.
: >"$work/empty.toml"
expect "plan --trainer-config <empty>" 2 "$work/empty.toml: --trainer-config: the file holds no keys (0 bytes): a trainer config names at least its model; an empty one is not planned as prime-rl's defaults" \
  "$bin" plan --trainer-config "$work/empty.toml"
printf '# a comment\n\n' >"$work/comments.toml"
EXPECT_MATCH=suffix expect "plan --trainer-config <comments only>" 2 "an empty one is not planned as prime-rl's defaults" \
  "$bin" plan --trainer-config "$work/comments.toml"
# --emit-out FILE over its own input: the new config in FILE, the old one in FILE.bak.
cp tests/data/prime-rl/sft.toml "$work/my.toml"
"$bin" plan --trainer-config "$work/my.toml" --emit prime-rl >"$work/want.toml" 2>/dev/null
"$bin" plan --trainer-config "$work/my.toml" --emit-out "$work/my.toml" >"$work/out5" 2>"$work/err5"
rc=$?
[ "$rc" = 0 ] && cmp -s "$work/my.toml" "$work/want.toml" && cmp -s "$work/my.toml.bak" tests/data/prime-rl/sft.toml &&
  [ ! -s "$work/out5" ] && grep -q "^wrote $work/my.toml (the file it replaced: $work/my.toml.bak)$" "$work/err5" &&
  ok || bad "--emit-out over the input: exit $rc, $(head -c 300 "$work/err5")"
# The emitted file plans as the plan did (the round trip).
"$bin" plan --trainer-config "$work/my.toml" --quiet >/dev/null 2>&1 && ok || bad "the --emit-out file does not plan"
# -diff over its own input would drop every unchanged key: refused, the file untouched.
cp tests/data/prime-rl/sft.toml "$work/my.toml"
expect "--emit prime-rl-diff --emit-out <input>" 2 "--emit-out: prime-rl-diff writes only the changed keys: written over its --trainer-config, the rest of the config would be lost; give another file" \
  "$bin" plan --trainer-config "$work/my.toml" --emit prime-rl-diff --emit-out "$work/my.toml"
cmp -s "$work/my.toml" tests/data/prime-rl/sft.toml && ok || bad "-diff --emit-out changed the input"
# --emit-out onto another input (the topology) is refused as --out is.
expect "--emit-out onto --topology" 2 "--emit-out: $work/topo.yaml is the same file as --topology ($work/topo.yaml), $same" \
  "$bin" plan --trainer-config "$work/my.toml" --topology "$work/topo.yaml" --emit-out "$work/topo.yaml"
finish
