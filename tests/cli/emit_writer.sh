#!/usr/bin/env bash
# The prime-rl writer (issue 46 items 2-10, issue 50 item 4): each flag's change is written
# where the re-plan reads it, the rest of the file byte for byte, and --emit of a NO FIT plan
# exits 3 with nothing written unless --force. The files are the issue's reproductions.
set -u
source "$(dirname "$0")/lib.sh"
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
mkdir -p "$HF_HUB_CACHE"
E=examples/prime-rl
field='import json, sys
d = json.load(open(sys.argv[1]))
for path in sys.argv[2:]:
    v = d
    for k in path.split("."): v = v.get(k) if isinstance(v, dict) else None
    print(json.dumps(v, sort_keys=True))'
# replan NAME FILE WANT PATHS...: the plan of FILE has these fields (one JSON value a line).
replan() {
  local name="$1" file="$2" want="$3"; shift 3
  if "$bin" plan --trainer-config "$file" --json >"$work/$name.json" 2>"$work/$name.err"; then
    local got; got="$("$py" -c "$field" "$work/$name.json" "$@" | paste -sd' ')"
    [ "$got" = "$want" ] && ok || bad "$name: re-planned $got, want $want"
  else
    bad "$name: the emitted file is refused: $(head -c 300 "$work/$name.err")"
  fi
}
emit() {  # OUT FLAGS...: --emit prime-rl into $work/OUT
  local out="$1"; shift
  "$bin" plan "$@" --emit prime-rl >"$work/$out" 2>"$work/$out.err" ||
    bad "$out: emit exit $?: $(head -c 300 "$work/$out.err")"
}

# Item 2: LoRA and its adapter slots.
emit lora.toml --trainer-config $E/qwen3-30b-a3b-rl.toml --optimizer adamw --offload none \
  --lora-rank 64 --lora-adapters 2
replan lora "$work/lora.toml" '64 2 "adamw"' lora.rank lora.adapters optimizer
# Item 3: --model over the file's [model] name.
emit model.toml --trainer-config $E/qwen3-30b-a3b-rl.toml --model qwen3-8b
grep -qx 'name = "Qwen/Qwen3-8B"' "$work/model.toml" && ok || bad "model: [model] name not written"
# Item 4: ep on a changed world.
printf 'seq_len = 4096\n[model]\nname = "Qwen/Qwen3-30B-A3B"\n[deployment]\ntype = "single_node"\nnum_train_gpus = 2\nnum_infer_gpus = 4\n[orchestrator]\ntoken_batch_size = 65536\n[trainer.optim]\ntype = "muon"\n' >"$work/w3.toml"
emit w3.out --trainer-config "$work/w3.toml" --gpus-per-node 4 --layout ep=2
replan ep "$work/w3.out" '4 {"cp": 1, "ep": 2, "fsdp": 4}' gpus_per_node layout
# Item 5: --seq-len at every row-length key, and no empty [] header in the diff.
printf 'seq_len = 4096\n[model]\nname = "Qwen/Qwen3-30B-A3B"\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n[orchestrator]\ntoken_batch_size = 262144\nseq_len = 2048\n' >"$work/w4.toml"
emit w4.out --trainer-config "$work/w4.toml" --seq-len 8192
replan seq "$work/w4.out" '8192' workload.seq_len
"$bin" plan --trainer-config "$work/w4.toml" --seq-len 8192 --emit prime-rl-diff >"$work/w4.diff" 2>/dev/null
! grep -qx '\[\]' "$work/w4.diff" && grep -qx 'seq_len = 8192' "$work/w4.diff" && ok ||
  bad "seq diff: $(cat "$work/w4.diff")"
# Item 6: full_offload written as a table, then --offload none.
printf 'seq_len = 4096\n[model]\nname = "Qwen/Qwen3-30B-A3B"\n[deployment]\ntype = "multi_node"\nnum_train_nodes = 1\n[orchestrator]\ntoken_batch_size = 262144\n[trainer.model]\noptim_cpu_offload = false\n[trainer.model.full_offload]\nnuma_bind = true\n[trainer.optim]\ntype = "adamw"\n' >"$work/w5.toml"
emit w5.out --trainer-config "$work/w5.toml" --offload none
replan full-off "$work/w5.out" '"none"' offload
grep -qx 'full_offload = false' "$work/w5.out" && ok || bad "full-off: full_offload = false not written"
# Item 7: --ac none writes AC off so it re-reads so; with --ac-offload it is a contradiction.
emit ac.toml --trainer-config $E/qwen3-30b-a3b-rl.toml --ac none
replan ac "$work/ac.toml" '"none" false' workload.ac workload.ac_offload
expect ac-contradiction 2 "--ac: none contradicts --ac-offload (offloading keeps AC's checkpoints in host RAM, and prime-rl turns AC on for it); give one of them" \
  "$bin" plan --model qwen3-8b --tokens-per-step 65536 --seq-len 4096 --ac none --ac-offload
# Item 8: --attention.
emit attn.toml --trainer-config $E/qwen3-30b-a3b-rl.toml --attention fa2
replan attn "$work/attn.toml" '"fa2"' workload.attention
# Item 9: a BOM stays at byte 0; the rest of the file byte for byte but the changed key and
# the [slurm] table a multi-node world needs (prime-rl runs multi_node only under SLURM).
printf '\xef\xbb\xbf' >"$work/bom.toml"
# without its [slurm] table, which the writer adds for the multi-node world
sed "/^# prime-rl runs a multi_node/,/^job_name/d" $E/qwen3-30b-a3b-rl.toml >>"$work/bom.toml"
emit bom.out --trainer-config "$work/bom.toml" --nodes 2
[ "$(head -c 3 "$work/bom.out" | od -An -tx1 | tr -d ' ')" = efbbbf ] && ok || bad "bom: not at byte 0"
replan bom "$work/bom.out" '2' nodes
diff <(tail -c +4 "$work/bom.toml") <(tail -c +4 "$work/bom.out" | tail -n +4) >"$work/bom.diff"
[ "$(grep -c '^<' "$work/bom.diff")" = 1 ] && grep -qx '> num_train_nodes = 2' "$work/bom.diff" &&
  grep -qx '> job_name = "prime-rl"' "$work/bom.diff" && ok ||
  bad "bom: more than the one key changed: $(cat "$work/bom.diff")"
# Item 10: a launcher-era file keeps its own keys: no [deployment].
printf 'trainer_gpu_ids = [0, 1]\ninference_gpu_ids = [2, 3]\nseq_len = 4096\n[model]\nname = "Qwen/Qwen3-8B"\n[orchestrator]\ntoken_batch_size = 65536\n' >"$work/w10.toml"
emit w10.out --trainer-config "$work/w10.toml" --gpus-per-node 4
replan launcher "$work/w10.out" '4' gpus_per_node
grep -qx 'trainer_gpu_ids = \[0, 1, 4, 5\]' "$work/w10.out" && ! grep -q '^\[deployment\]' "$work/w10.out" &&
  ok || bad "launcher: $(cat "$work/w10.out")"
# A standalone trainer file's world is read back (not only a comment).
emit trainer.out --trainer-config $E/qwen3-8b-trainer.toml --nodes 2 --gpus-per-node 4
replan trainer-world "$work/trainer.out" '2 4' nodes gpus_per_node
# Without a trainer config: no muonplan default for what the user did not set.
"$bin" plan --model qwen3-8b --tokens-per-step 65536 --seq-len 4096 --emit prime-rl >"$work/bare.toml" 2>/dev/null
! grep -Eq '^(lr|weight_decay|ac|ac_offloading|fused_lm_head_token_chunk_size|full_offload) =' "$work/bare.toml" &&
  grep -qx 'type = "muon"' "$work/bare.toml" && ok || bad "bare: $(cat "$work/bare.toml")"
# What prime-rl has no key for (the expert load) is said in the header comment, not written.
seq 100 227 >"$work/load.txt"
"$bin" plan --trainer-config $E/qwen3-30b-a3b-rl.toml --expert-load "$work/load.txt" --emit prime-rl-diff \
  >"$work/load.toml" 2>/dev/null
grep -q '^# planned with --expert-load (128 experts, the busiest at 1.39x the mean)' "$work/load.toml" &&
  grep -q 'no key changes' "$work/load.toml" && ok || bad "expert load: $(head -c 600 "$work/load.toml")"
# The allocator in the trainer's env table ([trainer.env_vars], from #2863, 2026-06-24): written
# when it is not prime-rl's launcher default (expandable segments), read back the same; a
# file's own PYTORCH_CUDA_ALLOC_CONF is replaced in place; an older era says it in a comment.
reserved() {  # FLAGS...: the plan's GPU reserved GiB
  "$bin" plan "$@" --json 2>/dev/null | "$py" -c 'import json, sys; print(json.load(sys.stdin)["predicted"]["gpu_reserved_gib"])'
}
emit alloc.toml --trainer-config $E/qwen3-30b-a3b-rl.toml --allocator default
want="$(reserved --trainer-config $E/qwen3-30b-a3b-rl.toml --allocator default)"
diff $E/qwen3-30b-a3b-rl.toml <(tail -n +4 "$work/alloc.toml") | grep '^[<>] *[^ ]' >"$work/alloc.diff"
[ "$(cat "$work/alloc.diff")" = '> [trainer.env_vars]
> PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:False"' ] &&
  [ "$(reserved --trainer-config "$work/alloc.toml")" = "$want" ] &&
  [ "$want" != "$(reserved --trainer-config $E/qwen3-30b-a3b-rl.toml)" ] && ok ||
  bad "allocator: $(cat "$work/alloc.diff"), reserved $(reserved --trainer-config "$work/alloc.toml") want $want"
{ cat $E/qwen3-30b-a3b-rl.toml; printf '\n[trainer.env_vars]\nPYTORCH_CUDA_ALLOC_CONF = "expandable_segments:False"\n'; } >"$work/alloc-off.toml"
emit alloc-on.toml --trainer-config "$work/alloc-off.toml" --allocator expandable
diff "$work/alloc-off.toml" <(tail -n +4 "$work/alloc-on.toml") >"$work/alloc-on.diff"
grep -qx '> PYTORCH_CUDA_ALLOC_CONF = "expandable_segments:True"' "$work/alloc-on.diff" &&
  [ "$(grep -c '^[<>]' "$work/alloc-on.diff")" = 2 ] &&
  [ "$(reserved --trainer-config "$work/alloc-on.toml")" = "$(reserved --trainer-config $E/qwen3-30b-a3b-rl.toml)" ] &&
  ok || bad "allocator replaced: $(cat "$work/alloc-on.diff")"
"$bin" plan --trainer-config $E/qwen3-30b-a3b-rl.toml --allocator default --prime-rl-version 2026-06-01 \
  --emit prime-rl --force >"$work/alloc-old.toml" 2>/dev/null
grep -q '^# planned with --allocator default: muonplan writes the trainer.s PYTORCH_CUDA_ALLOC_CONF only into an RL config.s \[trainer.env_vars\] (from #2863, 2026-06-24)' "$work/alloc-old.toml" &&
  ! grep -q 'env_vars\]$' "$work/alloc-old.toml" && ok || bad "allocator before #2863: $(head -c 600 "$work/alloc-old.toml")"
# NO FIT: exit 3, nothing written (stdout empty, --emit-out's file absent); --force writes it.
nofit=(plan --model qwen3-30b-a3b --nodes 1 --gpus-per-node 1 --offload none)
"$bin" "${nofit[@]}" >/dev/null 2>&1 && ok || bad "no-fit: plain plan is not exit 0"
"$bin" "${nofit[@]}" --emit prime-rl >"$work/nofit.toml" 2>"$work/nofit.err"
rc=$?
[ "$rc" = 3 ] && [ ! -s "$work/nofit.toml" ] && grep -q 'does not fit' "$work/nofit.err" && ok ||
  bad "no-fit: exit $rc, $(wc -c <"$work/nofit.toml") bytes: $(cat "$work/nofit.err")"
"$bin" "${nofit[@]}" --emit-out "$work/nofit-out.toml" 2>/dev/null
[ $? = 3 ] && [ ! -e "$work/nofit-out.toml" ] && ok || bad "no-fit: --emit-out wrote a file"
"$bin" "${nofit[@]}" --emit prime-rl --force >"$work/forced.toml" 2>/dev/null && grep -q 'NO FIT' "$work/forced.toml" &&
  ok || bad "no-fit: --force wrote nothing"
finish
