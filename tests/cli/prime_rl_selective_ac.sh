#!/usr/bin/env bash
# prime-rl's [model.ac] mode = "selective", targets and freq are planned as apply_ac runs them
# (issue 48 item 5): the TOML plans the same as --ac selective --ac-targets --ac-freq; the
# selective plan keeps more than full AC and recomputes less; an unsupported target is
# prime-rl's ValueError.
set -u
source "$(dirname "$0")/lib.sh"
d=tests/data/prime-rl
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
# The same file without its [trainer.model.ac] table, the AC given as flags instead.
sed '/^\[trainer.model.ac\]/,$d' $d/rl-selective-ac.toml >"$work/flags.toml"
"$bin" plan --trainer-config $d/rl-selective-ac.toml --json >"$work/toml.json" 2>"$work/toml.err" && ok ||
  bad "toml: $(cat "$work/toml.err")"
"$bin" plan --trainer-config "$work/flags.toml" --ac selective --ac-targets mlp,attn_proj \
  --ac-freq 2 --json >"$work/flags.json" 2>"$work/flags.err" && ok || bad "flags: $(cat "$work/flags.err")"
"$bin" plan --trainer-config "$work/flags.toml" --ac full --json >"$work/full.json" 2>/dev/null && ok ||
  bad "full"
# The hand counts below are of --runtime muonplan's terms: the step timeline's tensors live at
# its peak of requested bytes (no allocator, no fitted backward temporaries); under pytorch the
# same timeline's at the allocator replay's peak.
for n in toml:$d/rl-selective-ac.toml full:"$work/flags.toml --ac full"; do
  # shellcheck disable=SC2086
  "$bin" plan --trainer-config ${n#*:} --runtime muonplan --json >"$work/${n%%:*}-cf.json" 2>/dev/null &&
    ok || bad "${n%%:*} closed form"
done
grep -q "ac\\.\\(mode\\|freq\\|targets\\)" "$work/toml.err" && bad "AC warned: $(cat "$work/toml.err")" || ok
"$py" - "$work/toml.json" "$work/flags.json" "$work/toml-cf.json" "$work/full-cf.json" <<'PYEOF' && ok || bad "selective terms"
import json, sys
t, f, tcf, full = (json.load(open(p)) for p in sys.argv[1:])
assert t["workload"]["ac"] == "selective", t["workload"]
assert t["workload"]["ac_targets"] == ["mlp", "attn_proj"] and t["workload"]["ac_freq"] == 2, t["workload"]
assert t["workload"] == f["workload"], (t["workload"], f["workload"])
assert t["predicted"] == f["predicted"], "the TOML and the flags plan differently"
def terms(d, group):
    return {x["name"]: x.get("gib", x.get("gb", x.get("s"))) for x in d["predicted"]["breakdown"][group]}
wt, wf = terms(tcf, "gpu_workload_gib"), terms(full, "gpu_workload_gib")
# Qwen3-8B, t = 4096 tokens per micro step: a layer keeps 2 t x (5 h (its input, q, the
# attention output, two norm inputs; heads x qk = h) + 2 kv qk (k, v)) + 4 t heads (softmax
# statistics) + 3 x 2 t f (gate, up, act: the mlp target's) = 464.5 MiB, 32 MiB of them its
# input (a checkpoint, not an activation) and 288 MiB the MLP's.
h, heads, kv, qk, f, tk = 4096, 32, 8, 128, 12288, 4096
MiB = 2**20
layer = (2 * tk * (5 * h + 2 * kv * qk) + 4 * tk * heads + 3 * 2 * tk * f) / MiB
inp, mlp = 2 * tk * h / MiB, 3 * 2 * tk * f / MiB
assert (layer, inp, mlp) == (464.5, 32, 288), (layer, inp, mlp)
# Both peak in layer 34's SwiGLU backward (the last layer, 35, done), as up's gradient is made:
# the inputs of layers 0-34 live (35 x 32 MiB), layer 34's recompute less the act output (its
# gradient made, it is gone), the act's and up's gradients, and SwiGLU's third live gradient
# (backward_temporaries.h: one more [t, f] from up's gradient to the input's).
for d in (tcf, full):
    for x in d["predicted"]["breakdown"]["gpu_workload_gib"]:
        assert "micro step 2: backward layer 34:" in x["formula"], x
gib = lambda mib: mib / 1024
assert abs(wt["checkpointed_layer_inputs"] - gib(35 * inp)) < 1e-9, wt
assert abs(wf["checkpointed_layer_inputs"] - gib(35 * inp)) < 1e-9, wf
# Selective (layers 0, 2, ... 34, 18 of 36): each keeps all but its input and the MLP's three
# ffn-wide tensors, and layer 34 has made those three again; layers 1, 3, ... 33 keep
# everything. Full AC: nothing kept, layer 34's tensors made again.
assert abs(wt["activations"] - gib(18 * (layer - inp - mlp) + 17 * (layer - inp))) < 1e-9, wt
act = 2 * tk * f / MiB  # 96 MiB: one of the MLP's ffn-wide tensors
assert abs(wt["recomputed_layer_activations"] - gib(mlp - act)) < 1e-9, wt
assert "activations" not in wf, wf
assert abs(wf["recomputed_layer_activations"] - gib(layer - inp - act)) < 1e-9, wf
# The gradients in hand: the act's and up's (96 MiB each), and the third.
assert abs(wt["activation_grads"] - gib(2 * act)) < 1e-9, wt
assert abs(wt["swiglu_bwd_third_grad"] - gib(act)) < 1e-9, wt
PYEOF
# freq alone (the era before mode and targets): full AC on every second layer, as the flags.
sed '/^mode = /d; /^targets = /d' $d/rl-selective-ac.toml >"$work/freq.toml"
"$bin" plan --trainer-config "$work/freq.toml" --json >"$work/freq.json" 2>"$work/freq.err" && ok ||
  bad "freq: $(cat "$work/freq.err")"
"$bin" plan --trainer-config "$work/flags.toml" --ac full --ac-freq 2 --json >"$work/freq-flags.json" \
  2>/dev/null && ok || bad "freq flags"
"$bin" plan --trainer-config "$work/freq.toml" --runtime muonplan --json >"$work/freq-cf.json" \
  2>/dev/null && ok || bad "freq closed form"
"$py" - "$work/freq.json" "$work/freq-flags.json" "$work/freq-cf.json" <<'PYEOF' && ok || bad "freq terms"
import json, sys
t, f, cf = (json.load(open(p)) for p in sys.argv[1:])
assert (t["workload"]["ac"], t["workload"]["ac_freq"]) == ("full", 2), t["workload"]
assert t["predicted"] == f["predicted"], "freq: the TOML and the flags plan differently"
w = {x["name"]: x["gib"] for x in cf["predicted"]["breakdown"]["gpu_workload_gib"]}
# Full AC on layers 0, 2, ... 34 (their input kept), the other 18 keep everything (464.5 MiB a
# layer, 32 of it the input). At the peak (layer 34's SwiGLU backward, layer 35 done, as above)
# the inputs of layers 0-34 are live (35 x 32 MiB), the activations of layers 1, 3, ... 33
# (17 x 432.5 MiB) and layer 34's recompute less its act output (432.5 - 96 MiB).
assert abs(w["checkpointed_layer_inputs"] - 35 * 32 / 1024) < 1e-9, w
assert abs(w["activations"] - 17 * 432.5 / 1024) < 1e-9, w
assert abs(w["recomputed_layer_activations"] - (432.5 - 96) / 1024) < 1e-9, w
assert abs(w["swiglu_bwd_third_grad"] - 96 / 1024) < 1e-9, w
PYEOF
# mlp on a model of MoE layers only: prime-rl's apply_ac raises.
"$bin" plan --model qwen3-30b-a3b --nodes 1 --tokens-per-step 32768 --seq-len 4096 --ac selective \
  --ac-targets mlp >/dev/null 2>"$work/moe.err" && bad "mlp on MoE layers planned" || ok
grep -q "^--ac-targets: selective AC target mlp is not supported" "$work/moe.err" && ok ||
  bad "message: $(cat "$work/moe.err")"
"$bin" plan --model qwen3-8b --nodes 1 --tokens-per-step 32768 --seq-len 4096 --ac none \
  --ac-targets mlp >/dev/null 2>"$work/none.err" && bad "--ac-targets without selective" || ok
# --emit writes [model.ac] as planned (it wrote ac = "None" for selective AC): mode, targets and
# freq, and the emitted file plans the same AC again; --ac-offload=false declines prime-rl's
# offloading default (it set it true), which selective AC needs.
n=0
for extra in "--ac selective --ac-targets mlp" "--ac full --ac-freq 2" \
    "--ac selective --ac-targets mlp,norm --ac-freq 3"; do
  n=$((n + 1))
  # shellcheck disable=SC2086
  "$bin" plan --model qwen3-8b --nodes 1 --offload none --tokens-per-step 65536 --seq-len 4096 \
    $extra --ac-offload=false --emit prime-rl >"$work/e$n.toml" 2>"$work/e$n.err" ||
    bad "emit $extra: $(cat "$work/e$n.err")"
  # shellcheck disable=SC2086
  "$bin" plan --model qwen3-8b --nodes 1 --offload none --tokens-per-step 65536 --seq-len 4096 \
    $extra --ac-offload=false --runs-on prime-rl --json >"$work/w$n.json" 2>/dev/null
  "$bin" plan --trainer-config "$work/e$n.toml" --json >"$work/g$n.json" 2>"$work/g$n.err" ||
    bad "re-plan $extra: $(cat "$work/g$n.err")"
  "$py" - "$work/w$n.json" "$work/g$n.json" "$work/e$n.toml" <<'PYEOF' && ok || bad "round trip $extra"
import json, sys, tomllib
want, got = (json.load(open(f))["workload"] for f in sys.argv[1:3])
keys = ("ac", "ac_targets", "ac_freq", "ac_offload")
assert [want.get(k) for k in keys] == [got.get(k) for k in keys], (want, got)
ac = tomllib.load(open(sys.argv[3], "rb"))["trainer"]["model"]["ac"]
assert ac["mode"] == want["ac"], ac
PYEOF
done
# Without --ac-offload=false, prime-rl's offloading default is named as what to decline.
EXPECT_MATCH=suffix expect selective-offload-default 2 "--ac-offload: prime-rl offloads activations by default ([model.ac_offloading]), which muonplan plans with full AC on every layer only: give --ac-offload=false (the emitted config then turns it off) or --ac full" \
  "$bin" plan --model qwen3-8b --nodes 1 --tokens-per-step 65536 --seq-len 4096 --ac selective \
  --ac-targets mlp --emit prime-rl
finish
