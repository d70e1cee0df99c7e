#!/usr/bin/env bash
# No checkpoint of non-finite weights is saved with exit 0, and none is resumed from
# (docs/reliability.md): AdamW's weights are checked as Muon's updates are.
#   AdamW betas:   a beta that is 1 in fp32, the step's precision (AdamW's bias correction is then
#                  0), is refused by plan and in a plan
#   updates:       an overflowing AdamW update stops the run (exit 1, naming the tensor), and
#                  nothing is saved
#   weight decay:  past 1/lr, Muon's and AdamW's, refused by plan and in a plan; nothing saved
#   at resume:     a negative AdamW variance or a NaN parameter in a checkpoint is refused, exit
#                  2, naming the entry and the element
set -u
source "$(dirname "$0")/lib.sh"
T="--topology topologies/cpu-ci.yaml"
plan_tiny "$work/p.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
edit_plan() { edit_json "$work/p.json" "$1" "$2"; }  # OUT PYTHON (lib.sh)

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

finish
