#!/usr/bin/env bash
# No silent loss, no crash (docs/reliability.md, "Paths and writes"): the third hostile-input
# round's reproductions, each of which lost data, wrote a wrong result with exit 0, or crashed.
#   1  an empty path is an input error, never "not given"
#   2  no output is an input or another output, however spelled (links, hard links, ./)
#   3  report --out writes only into a new or empty directory, or one muonplan wrote
#   4  --resume DIR with only DIR.old left: loaded, and said on stderr and in the metrics
#   5  a failed save or report leaves nothing behind; no output inside a checkpoint
#   6  a write past `ulimit -f` is EFBIG (exit 1, named), not a SIGXFSZ kill
#   7  AdamW weights: a beta that is 1 in fp32, an overflowing update, a loaded NaN or
#      negative variance are refused, never saved with exit 0
#   12 deep nesting in any JSON or YAML input is refused while reading
set -u
source "$(dirname "$0")/lib.sh"
M=models/qwen3-8b.yaml
T="--topology topologies/cpu-ci.yaml"
"$bin" plan --model models/tiny-dense.yaml $T --nodes 1 --gpus-per-node 1 --offload none \
  --out "$work/p.json" >/dev/null 2>"$work/err" || bad "plan: $(cat "$work/err")"
edit_plan() { edit_json "$work/p.json" "$1" "$2"; }  # OUT PYTHON (lib.sh)

# --- 1. Empty paths ---------------------------------------------------------------------------
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

# --- 2. Outputs that are inputs ---------------------------------------------------------------
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

# --- 5. Outputs inside a checkpoint directory, which would then not be muonplan's alone -------
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

# --- 3. Report directories --------------------------------------------------------------------
refusal="muonplan writes a report only into a new or empty directory, or one it wrote: give another --out"
mkdir "$work/mine"; echo "my notes" > "$work/mine/report.md"
expect "report into a user's directory" 2 "--out: $work/mine holds files muonplan did not write (report.md); $refusal" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/mine"
[ "$(cat "$work/mine/report.md")" = "my notes" ] && ok || bad "report overwrote a user's report.md"
"$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/rep" >/dev/null 2>"$work/err" \
  && [ -f "$work/rep/.muonplan-report" ] && ok || bad "report into a new directory: $(cat "$work/err")"
echo secret > "$work/target.txt"; ln -s ../target.txt "$work/rep/report-data.json.link"
expect "report with a link inside" 2 "--out: $work/rep holds report-data.json.link, which is not a regular file; $refusal" \
  "$bin" report --model models/tiny-dense.yaml --nodes 1 --out "$work/rep"
[ "$(cat "$work/target.txt")" = secret ] && ok || bad "report wrote through a link"
rm "$work/rep/report-data.json.link"; cp "$work/rep/report.md" "$work/rep-before.md"
# 5. A report that fails half-way leaves its directory as it was, and no staging directory.
MUONPLAN_REPORT_PYTHON=/bin/false "$bin" report --model models/qwen3-8b.yaml --nodes 1 \
  --out "$work/rep" >/dev/null 2>&1 && bad "a failing report.py exited 0"
cmp -s "$work/rep/report.md" "$work/rep-before.md" && [ -z "$(ls -A "$work" | grep '^\.rep\.')" ] \
  && ok || bad "a failed report changed its directory or left a staging directory"
"$bin" report --model models/qwen3-8b.yaml --nodes 1 --out "$work/rep" >/dev/null 2>"$work/err" \
  && grep -q qwen3-8b "$work/rep/report.md" && ok || bad "a second report into its own directory: $(cat "$work/err")"

# --- 5, 6. Writes past `ulimit -f` --------------------------------------------------------------
expect "plan --out past ulimit -f" 1 "muonplan: error: cannot write $work/big.json: File too large" \
  bash -c 'ulimit -f 8; exec "$@"' _ "$bin" plan --model models/tiny-dense.yaml $T --nodes 1 \
  --gpus-per-node 1 --out "$work/big.json"
[ -z "$(ls -A "$work" | grep big.json)" ] && ok || bad "plan --out left $(ls -A "$work" | grep big.json)"
expect "checkpoint past ulimit -f" 1 "muonplan: rank 0: error: checkpoint $work/fz: $work/fz.tmp/rank-00000.safetensors: write failed: File too large" \
  bash -c 'ulimit -f 1000; exec "$@"' _ "$bin" execute --plan "$work/p.json" --checkpoint "$work/fz"
[ ! -e "$work/fz.tmp" ] && [ ! -e "$work/fz" ] && ok || bad "a failed save left $work/fz.tmp"

# --- 4. A save interrupted between its renames: only DIR.old is left -------------------------
cp -r "$work/good" "$work/int.old"
expect "resume DIR.old" 0 "muonplan: rank 0: --resume: $work/int holds no manifest.json (a save was interrupted); resumed from $work/int.old, step 3" \
  "$bin" execute --plan "$work/p.json" --resume "$work/int" --metrics "$work/int-m.json"
json_check "resumed_from" "$work/int-m.json" "assert d['resumed_from'] == '$work/int.old' and d['resumed_step'] == 3 and d['first_step'] == 4, d"

# --- 7. AdamW weights -------------------------------------------------------------------------
expect "adamw beta1 = 1 in fp32" 2 "--adamw-betas: must be in [0, 1) in fp32, the precision of the step (it rounds to 1), got 0.99999999" \
  "$bin" plan --model models/tiny-dense.yaml $T --nodes 1 --gpus-per-node 1 --adamw-betas 0.99999999,0.95
edit_plan "$work/beta.json" 'p["optimizer_config"]["adamw"]["beta1"] = 0.99999999'
expect "plan with beta1 = 1 in fp32" 2 "muonplan: rank 0: $work/beta.json: optimizer_config.adamw.beta1: must be in [0, 1) in fp32, the precision of the step (it rounds to 1), got 0.99999999" \
  "$bin" execute --plan "$work/beta.json"
edit_plan "$work/alr.json" 'p["optimizer_config"]["adamw"]["lr"] = 1e38'
expect "AdamW update overflows" 1 "muonplan: rank 0: error: non-finite update in model.embed_tokens.weight at step 1; the parameters hold it: check the learning rate and the NS schedule" \
  "$bin" execute --plan "$work/alr.json" --steps 2 --checkpoint "$work/nan"
[ ! -e "$work/nan" ] && ok || bad "a NaN AdamW state was saved"
# Decay past 1/lr: each step multiplied every Muon weight by 1 - lr * wd = -2e28, the updates
# stayed finite, and a checkpoint of inf weights was saved with exit 0.
expect "weight decay past 1/lr" 2 "--weight-decay: must be at most 1/lr = 50 (lr 0.02): each step multiplies W by 1 - lr * weight_decay, got 1e+30" \
  "$bin" plan --model models/tiny-dense.yaml $T --nodes 1 --gpus-per-node 1 --weight-decay 1e30
edit_plan "$work/wd.json" 'p["optimizer_config"]["weight_decay"] = 1e30'
expect "plan with decay past 1/lr" 2 "muonplan: rank 0: $work/wd.json: optimizer_config.weight_decay: must be at most 1/lr = 50 (lr 0.02): each step multiplies W by 1 - lr * weight_decay, got 1e+30" \
  "$bin" execute --plan "$work/wd.json" --steps 3 --checkpoint "$work/inf"
edit_plan "$work/awd.json" 'p["optimizer_config"]["adamw"]["weight_decay"] = 60.5'
expect "plan with AdamW decay past 1/lr" 2 "muonplan: rank 0: $work/awd.json: optimizer_config.adamw.weight_decay: must be at most 1/lr = 50 (AdamW lr 0.02): each step multiplies W by 1 - lr * weight_decay, got 60.5" \
  "$bin" execute --plan "$work/awd.json" --steps 3 --checkpoint "$work/inf"
[ ! -e "$work/inf" ] && ok || bad "a checkpoint of inf weights was saved"
# write_checkpoint refuses these values (tests/python/test_checkpoint_writes.py), so the damage
# is done to a saved micro-dense checkpoint's bytes, its checksum (FNV-1a 64) made to match.
plan_micro "$work/pm.json" || bad "plan micro"
timeout 60 "$bin" execute --plan "$work/pm.json" --checkpoint "$work/mgood" >/dev/null 2>"$work/err" \
  || bad "save micro: $(cat "$work/err")"
"$py" - "$work" <<'EOF' && ok || bad "writing the damaged checkpoints failed"
import json, shutil, struct, sys
w = sys.argv[1]
def fnv1a64(data):
    h = 14695981039346656037
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h
def damage(dst, entry, element, value):
    shutil.copytree(w + "/mgood", dst)
    path = dst + "/rank-00000.safetensors"
    raw = bytearray(open(path, "rb").read())
    n = struct.unpack_from("<Q", raw)[0]
    begin = json.loads(raw[8:8 + n])[entry]["data_offsets"][0]
    struct.pack_into("<f", raw, 8 + n + begin + 4 * element, value)
    open(path, "wb").write(raw)
    m = json.load(open(dst + "/manifest.json"))
    m["ranks"][0]["checksum"] = "%016x" % fnv1a64(raw)
    json.dump(m, open(dst + "/manifest.json", "w"))
damage(w + "/negv", "model.embed_tokens.weight/variance", 3, -1.0)
damage(w + "/nanp", "model.norm.weight/param", 0, float("nan"))
EOF
expect "resume a negative variance" 2 "muonplan: rank 0: $work/negv: model.embed_tokens.weight/variance: holds -1 at element 3; an AdamW variance is >= 0: the checkpoint is damaged, refusing to resume from it" \
  "$bin" execute --plan "$work/pm.json" --resume "$work/negv"
expect "resume a NaN parameter" 2 "muonplan: rank 0: $work/nanp: model.norm.weight/param: holds nan at element 0; a checkpoint holds only finite values: the checkpoint is damaged, refusing to resume from it" \
  "$bin" execute --plan "$work/pm.json" --resume "$work/nanp"

# --- 12. Deep nesting -------------------------------------------------------------------------
deep="json: nested deeper than 64 levels; no muonplan input nests more than a few"
"$py" -c "open('$work/deep.json','w').write('{\"model_type\": '+'['*100000+']'*100000+'}')"
expect "inspect deep JSON" 2 "$work/deep.json:1:79: $deep" "$bin" inspect --model "$work/deep.json"
edit_plan "$work/deep-plan.json" 'p["predicted"]["deep"] = eval("[" * 100 + "]" * 100)'
EXPECT_MATCH=suffix expect "execute deep predicted" 2 "$deep" "$bin" execute --plan "$work/deep-plan.json"
"$py" -c "open('$work/deep-trace.json','w').write('['*100000+']'*100000)"
expect "report --trace deep" 2 "$work/deep-trace.json:1:65: $deep" \
  "$bin" report --model models/tiny-dense.yaml --trace "$work/deep-trace.json" --out "$work/rd"
expect "calibrate --metrics deep" 2 "$work/deep-trace.json:1:65: $deep" \
  "$bin" calibrate --metrics "$work/deep-trace.json"
# 10,000 nested lists: yaml-cpp's depth guard; 100,000: the separator bound, before parsing.
"$py" -c "open('$work/deep.yaml','w').write('name: '+'['*10000+']'*10000+'\n')"
EXPECT_MATCH=suffix expect "deep YAML" 2 "yaml: nested too deeply (depth 500); muonplan's formats nest a few levels" \
  "$bin" inspect --model "$work/deep.yaml"
"$py" -c "open('$work/deeper.yaml','w').write('name: '+'['*100000+']'*100000+'\n')"
EXPECT_MATCH=suffix expect "deeper YAML" 2 "yaml: more than 65536 items (separators , : - ? [ { or lines); no muonplan YAML file holds as many" \
  "$bin" inspect --model "$work/deeper.yaml"

# --- What execute prints: fixed formats, and rank 0's progress with --progress -------------
"$bin" execute --plan "$work/p.json" --steps 2 --progress >"$work/out" 2>"$work/err" \
  || bad "execute --progress: $(cat "$work/err")"
grep -Eq '^  step [0-9]+\.[0-9]{4} s \(median' "$work/out" \
  && grep -Eq '^  peak [0-9]+\.[0-9]{3} GiB, transient [0-9]+\.[0-9]{3} GiB' "$work/out" \
  && ok || bad "execute summary formats: $(cat "$work/out")"
[ "$(grep -Ec '^step [12]/2  [0-9.]+ s/step  ETA [0-9]+ s$' "$work/err")" = 2 ] \
  && [ "$(wc -l <"$work/err")" = 2 ] && ok || bad "execute --progress lines: $(cat "$work/err")"

finish
