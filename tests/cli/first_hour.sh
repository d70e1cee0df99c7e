#!/usr/bin/env bash
# A new user's first hour (issue 36): answers that cannot be misread. Without a workload
# "fits" is said to cover the optimizer step only; --emit prime-rl refuses what prime-rl would
# run otherwise than planned; execute on a plan that does not fit says so; --nodes above
# max_nodes is refused as `topology` refuses it; a flag that changes the trainer's global batch
# says so in the answer; every --help ends with examples and hides the test hooks.
set -u
source "$(dirname "$0")/lib.sh"
M=models/qwen3-8b.yaml

# 1. No workload: the first line and the decision qualify "fits"; the JSON says what it covers.
"$bin" plan --model $M >"$work/p.txt" || bad "plan without a workload"
head -1 "$work/p.txt" | grep -qF "; optimizer step only: activations not counted (--tokens-per-step and --seq-len, or --workload, plan the training step)" \
  && ok || bad "first line: $(head -1 "$work/p.txt")"
grep -q "^decision: fits (optimizer step only: activations not counted): fewest nodes that fit: " \
  "$work/p.txt" && ok || bad "decision: $(grep '^decision' "$work/p.txt")"
"$bin" plan --model $M --json >"$work/p.json" || bad "plan --json"
json_check fit-covers-optimizer "$work/p.json" '
assert d["fit_covers"] == "optimizer step only", d["fit_covers"]
assert d["decision"]["reason"].startswith("fits (optimizer step only: activations not counted): ")'
W=(--tokens-per-step 65536 --seq-len 4096)
"$bin" plan --model $M "${W[@]}" >"$work/w.txt" || bad "plan with a workload"
! head -1 "$work/w.txt" | grep -q "optimizer step only" && grep -q "^decision: fewest nodes that fit" \
  "$work/w.txt" && ok || bad "with a workload: $(head -1 "$work/w.txt"; grep '^decision' "$work/w.txt")"
"$bin" plan --model $M "${W[@]}" --json >"$work/w.json" || bad "plan --json with a workload"
json_check fit-covers-training "$work/w.json" 'assert d["fit_covers"] == "training step", d["fit_covers"]'
# The emitted config's decision carries the qualifier too; the plan file reads back.
"$bin" plan --model $M --nodes 1 --offload optimizer --emit prime-rl >"$work/e.toml" || bad "emit"
grep -q "^# decision: fits (optimizer step only: activations not counted): " "$work/e.toml" \
  && ok || bad "emit decision: $(grep '^# decision' "$work/e.toml")"
plan_micro "$work/micro.json" && ok || bad "plan micro"
expect "plan with fit_covers loads" 0 "" "$bin" execute --plan "$work/micro.json" --steps 1

# 2. Muon under full offload: prime-rl's full_offload takes adamw and sign_sgd only. --emit plans
# for prime-rl (--runs-on's default there), whose rules refuse the mode asked for before any
# candidate is planned: refused, nothing printed; the notes before it name prime-rl's defaults.
"$bin" plan --model $M --nodes 1 --offload full --emit prime-rl >"$work/out" 2>"$work/err"
rc=$?
want="--offload: Muon under full offload: prime-rl's full_offload accepts only adamw and sign_sgd (it would run once full_offload's CPU step supports Muon's Newton-Schulz update); plan with --offload optimizer or --offload none, or with --optimizer adamw"
[ "$rc" = 2 ] && [ "$(tail -n 1 "$work/err")" = "$want" ] && ! grep -qv "^note: \|^--offload: " "$work/err" \
  && ok || bad "emit-muon-full: exit $rc, stderr: $(head -c 600 "$work/err")"
[ ! -s "$work/out" ] && ok || bad "emit-muon-full printed a config"
"$bin" plan --model $M --nodes 1 --offload full --optimizer adamw --emit prime-rl >"$work/a.toml" \
  && grep -qx "full_offload = true" "$work/a.toml" && ok || bad "adamw full offload emit"

# 4. execute on a plan that does not fit: its figures and what to re-plan with.
"$bin" plan --model tests/data/micro-dense.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node 1 --offload none --gpu-memory-gib 0.001 --out "$work/unfit.json" >/dev/null
json_check unfit-plan "$work/unfit.json" 'assert d["fits"] is False and d["predicted"]["fit_margin"] < 0'
expect execute-unfit 2 "muonplan: rank 0: $work/unfit.json: this plan does not fit: GPU peak 0.001078 of 0.001 GiB, host RAM 0 of 8 GiB per node (headroom GPU 0%, host 0%); re-plan with more nodes (--nodes auto), another offload mode (--offload auto) or the limits of the machine it runs on (--gpu-memory-gib, --host-ram-gib)" \
  "$bin" execute --plan "$work/unfit.json"

# 5. --nodes above the topology's max_nodes: plan refuses it as topology does, in one message.
expect plan-nodes-above-max 2 "--nodes: must be between 1 and max_nodes (64) of topology h200-ib, got 65" \
  "$bin" plan --model $M --nodes 65
expect topology-nodes-above-max 2 "--nodes: must be between 1 and max_nodes (64) of topology h200-ib, got 65" \
  "$bin" topology --nodes 65

# 6. --nodes 3 on a 2-node config: 2097152 tokens become 3145728 (whole rows for 12 workers);
# the answer says the trainer's global batch changed, and the JSON gives both.
"$bin" plan --trainer-config tests/data/prime-rl/rl-glm-full.toml --nodes 3 >"$work/n3.txt" 2>/dev/null
grep -qxF "  global batch changed by the flags: 2097152 tokens per step as written, 3145728 planned; the trainer runs the planned step only with [orchestrator] token_batch_size set to match" \
  "$work/n3.txt" && ok || bad "batch change not in the answer: $(grep -A3 '^prime-rl' "$work/n3.txt")"
"$bin" plan --trainer-config tests/data/prime-rl/rl-glm-full.toml --nodes 3 --json >"$work/n3.json" 2>/dev/null
json_check batch-changed "$work/n3.json" '
assert d["trainer_config"]["global_batch_changed"] == {"as_written_tokens": 2097152, "planned_tokens": 3145728}'
"$bin" plan --trainer-config tests/data/prime-rl/rl-glm-full.toml --json >"$work/n2.json" 2>/dev/null
json_check batch-unchanged "$work/n2.json" 'assert d["trainer_config"]["global_batch_changed"] is None'

# 12. Every command's --help ends with examples; test hooks are hidden; topology has a default.
for c in inspect plan "cost ns" "bench ns" "bench cpu-kernels" validate calibrate execute topology report; do
  # shellcheck disable=SC2086
  "$bin" $c --help >"$work/h.txt" 2>&1
  n=$(sed -n '/^Examples:$/,$p' "$work/h.txt" | grep -c '^  \(mpirun -np [0-9]* \)\?muonplan ')
  [ "$n" -ge 2 ] && ok || bad "$c --help: $n examples: $(tail -4 "$work/h.txt")"
done
"$bin" execute --help >"$work/h.txt" 2>&1
! grep -q -- "--async-drop-joins\|--inject-nonfinite" "$work/h.txt" && ok || bad "test hooks listed by --help"
expect "test hook still parses" 2 "muonplan: rank 0: --inject-nonfinite: expected NAME:STEP" \
  "$bin" execute --plan "$work/micro.json" --inject-nonfinite x
expect topology-default 0 "" "$bin" topology
grep -q "^topology h200-ib " "$work/out" && ok || bad "topology default: $(head -1 "$work/out")"
"$bin" >"$work/o" 2>"$work/e"; rc=$?
[ $rc = 2 ] && grep -q "^Examples (one per command" "$work/e" && grep -q "^  muonplan plan --model" "$work/e" \
  && ok || bad "bare muonplan: exit $rc: $(head -3 "$work/e")"
# 11. Typos: a flag close to one of the command's, a model name close to a bundled one, an HF
# id in another case (the Hub ignores case).
expect flag-typo 2 "muonplan: The following argument was not expected: --node (did you mean --nodes?)" \
  "$bin" plan --model $M --node
expect flag-far 2 "muonplan: The following argument was not expected: --frobnicate" \
  "$bin" plan --model $M --frobnicate
EXPECT_MATCH=suffix expect model-typo 2 "" "$bin" inspect --model glm-4.5-ari
grep -q "^--model: 'glm-4.5-ari' not found (did you mean glm-4.5-air?); looked in: " "$work/err" \
  && ok || bad "model typo: $(cat "$work/err")"
expect hf-id-case 0 "" "$bin" inspect --model ZAI-ORG/glm-4.5-air --json
json_check hf-id-case-json "$work/out" 'assert d["model"] == "glm-4.5-air", d.get("model")'
# 9. --quiet: the first line, the limits, the decision and the chosen figures; no table.
"$bin" plan --model $M --quiet >"$work/q.txt" || bad "plan --quiet"
head -1 "$work/q.txt" | grep -q "; optimizer step only: activations not counted" \
  && grep -q "^decision: fits (optimizer step only" "$work/q.txt" && grep -q "^chosen: " "$work/q.txt" \
  && ! grep -q "^nodes " "$work/q.txt" && [ "$(wc -l <"$work/q.txt")" -le 8 ] \
  && ok || bad "--quiet: $(cat "$work/q.txt")"
expect quiet-explain 2 "--quiet: not with --explain" "$bin" plan --model $M --quiet --explain
# 9. A run of candidates failing for one reason is one row: glm-4.5-air's 3 modes at 1 node that
# fsdp=7 cannot take (ep is searched among the divisors of fsdp, 7: ep 1 only, so the table has
# no layout column).
"$bin" plan --model glm-4.5-air --layout fsdp=7 >"$work/f7.txt" || bad "plan --layout fsdp=7"
[ "$(grep -c "fsdp=7 does not divide world 8" "$work/f7.txt")" = 1 ] \
  && grep -q "^    1  all        -     fsdp=7 does not divide world 8 (3 candidates)$" "$work/f7.txt" \
  && ok || bad "one row per run: $(grep -m3 'does not divide' "$work/f7.txt")"
# The deepseek-v3 example (README) fits on one screen: one row per node count and offload
# mode (its best layout, the others counted on it), the chosen row among them; --explain lists
# every candidate the JSON has.
D=(--model models/deepseek-v3.yaml --tokens-per-step 4194304 --seq-len 4096 --ac-offload)
"$bin" plan "${D[@]}" >"$work/ds.txt" || bad "plan deepseek-v3"
rows="$(grep -cE '^ +[0-9]+  fsdp=' "$work/ds.txt")"
[ "$(wc -l <"$work/ds.txt")" -le 45 ] && [ "$(grep -c ' <- chosen' "$work/ds.txt")" = 1 ] \
  && [ "$(grep -E '^ +[0-9]+  fsdp=' "$work/ds.txt" | awk '{print $1, $3}' | sort | uniq -d | wc -l)" = 0 ] \
  && grep -qE "^    8  fsdp=64,cp=[0-9],ep=[0-9]+ .* <- chosen  \(\+27 other layouts, [0-9]+ fit\)$" "$work/ds.txt" \
  && grep -q "^(one row per node count and offload mode: .*list all 423 candidates)$" "$work/ds.txt" \
  && ok || bad "deepseek-v3 table ($rows rows): $(cat "$work/ds.txt")"
# One run for both (the JSON with --out): --explain's rows against the plan's candidates.
"$bin" plan "${D[@]}" --explain --out "$work/ds.json" >"$work/dsx.txt" || bad "plan deepseek-v3 --explain"
evaluated="$(python3 -c 'import json,sys; print(sum(1 for c in json.load(open(sys.argv[1]))["decision"]["candidates"] if "note" not in c))' "$work/ds.json")"
[ "$(grep -cE '^ +[0-9]+  fsdp=' "$work/dsx.txt")" = "$evaluated" ] && ! grep -q "other layouts" "$work/dsx.txt" \
  && ok || bad "--explain rows $(grep -cE '^ +[0-9]+  fsdp=' "$work/dsx.txt") of $evaluated evaluated"
# 13. A flag that overrides the file labels the first plan "as planned" and says what the file
# wrote; without one it stays "as written".
G=examples/prime-rl/glm-4.5-air-muon-rl-131k.toml
"$bin" plan --trainer-config $G --nodes 4 >"$work/o.txt" 2>/dev/null || bad "plan --nodes 4 over $G"
grep -q "^  as planned: 4 node(s) x 8 GPUs, fsdp=32,cp=4,ep=8, offload optimizer: " "$work/o.txt" \
  && grep -qx "    as written: deployment.num_train_nodes = 2; planned with --nodes 4" "$work/o.txt" \
  && ! grep -q "^  as written: " "$work/o.txt" && ok || bad "override label: $(grep -A2 '^prime-rl' "$work/o.txt")"
"$bin" plan --trainer-config $G >"$work/o2.txt" 2>/dev/null || bad "plan $G"
grep -q "^  as written: 2 node(s) x 8 GPUs, fsdp=16,cp=4,ep=8, offload optimizer: fits" "$work/o2.txt" \
  && ok || bad "as written: $(grep -A1 '^prime-rl' "$work/o2.txt")"
# 13. Small figures in MiB, and CPU ranks called ranks (topology node.device: cpu).
"$bin" plan --model models/tiny-moe.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
  --gpus-per-node 4 --offload none >"$work/t.txt" || bad "plan tiny-moe on cpu-ci"
head -1 "$work/t.txt" | grep -q "^muonplan plan: tiny-moe on cpu-ci (4 ranks per node)" \
  && grep -q "^nodes  offload    fits      peak MiB   host MiB/node      step s      rank-s  margin$" "$work/t.txt" \
  && grep -q "^chosen: 1 node(s) x 4 ranks, " "$work/t.txt" \
  && grep -qE "^  rank peak [0-9]+\.[0-9] MiB \(step transient [0-9.]+ MiB\)" "$work/t.txt" \
  && ! grep -q "GPUs\|0\.0[0-9] GiB (step" "$work/t.txt" && ok || bad "cpu ranks, MiB: $(cat "$work/t.txt")"
sed 's/^  device: cpu .*/  device: tpu/' topologies/cpu-ci.yaml >"$work/tpu.yaml"
EXPECT_MATCH=suffix expect device-kind 2 "node.device: must be gpu or cpu, got 'tpu'" \
  "$bin" plan --model models/tiny-moe.yaml --topology "$work/tpu.yaml" --nodes 1
finish
