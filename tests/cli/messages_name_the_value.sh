#!/usr/bin/env bash
# A message names the value the user gave and where they gave it (issue 33 item 20): a trainer
# config's lr past what the step can use is said of optim.lr at its line, not of a weight decay
# the file never wrote; a subnormal is a number (its range check speaks), a value past double's
# range says so; a run without mpirun, stopped by SIGTERM, does not blame a launcher.
set -u
source "$(dirname "$0")/lib.sh"
sft=tests/data/prime-rl/sft.toml
lr_line="$(grep -n '^lr = ' "$sft" | cut -d: -f1)"
with_lr() { sed "s/^lr = .*/lr = $1/" "$sft" >"$work/lr.toml"; }
at="$work/lr.toml:$lr_line:6: optim.lr"
fp32="must be a finite number > 0 in fp32, the precision of the step"
with_lr 1e308
expect "toml lr 1e308" 2 "$at: $fp32 (it rounds to inf), got 1e+308" \
  "$bin" plan --trainer-config "$work/lr.toml"
with_lr 5e-324
expect "toml lr 5e-324" 2 "$at: $fp32 (it rounds to 0), got 5e-324" \
  "$bin" plan --trainer-config "$work/lr.toml"
# lr * weight_decay past 1, with the weight decay prime-rl's default (0.01 for SFT): said of lr.
with_lr 1000
expect "toml lr past the decay bound" 2 "$at: must be at most 1/weight_decay = 100 (weight decay 0.01, the trainer's default): each step multiplies W by 1 - lr * weight_decay, got 1000" \
  "$bin" plan --trainer-config "$work/lr.toml"
# A weight decay the file wrote keeps the blame.
sed "s/^lr = .*/lr = 1000\nweight_decay = 0.5/" "$sft" >"$work/wd.toml"
wd_line="$(grep -n '^weight_decay = ' "$work/wd.toml" | cut -d: -f1)"
expect "toml weight decay written" 2 "$work/wd.toml:$wd_line:16: optim.weight_decay: must be at most 1/lr = 0.001 (lr 1000): each step multiplies W by 1 - lr * weight_decay, got 0.5" \
  "$bin" plan --trainer-config "$work/wd.toml"
t=(--model tiny-moe --topology topologies/cpu-ci.yaml --nodes 1)
expect "flag 5e-324" 2 "--lr: $fp32 (it rounds to 0), got 5e-324" "$bin" plan "${t[@]}" --lr 5e-324
expect "flag 1e400" 2 "--lr: expected a number within double's range (|x| below 1.8e308), got '1e400'" \
  "$bin" plan "${t[@]}" --lr 1e400

# SIGTERM to a run mpirun did not start: the line says so, and names the step. The signal is
# sent once the process has its handler (SigCgt in /proc shows SIGTERM, bit 15), not after a sleep;
# no `timeout` wrapper, whose own SIGTERM handler would be the one seen.
"$bin" plan "${t[@]}" --gpus-per-node 1 --out "$work/p1.json" >/dev/null 2>&1
"$bin" execute --plan "$work/p1.json" --steps 1000000 >/dev/null 2>"$work/term.err" &
pid=$!
caught=0
for _ in $(seq 1 6000); do
  mask="$(awk '/^SigCgt:/ {print $2}' "/proc/$pid/status" 2>/dev/null)"
  if [ -n "$mask" ] && (( (16#$mask >> 14) & 1 )); then caught=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.02
done
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
if [ "$caught" = 1 ] && [ "$rc" = 1 ] &&
   grep -Eq "^muonplan: rank 0: terminated by SIGTERM \(not from a launcher: no mpirun started this process\) during step [0-9]+$" "$work/term.err"; then
  ok
else
  bad "sigterm without mpirun: handler seen $caught, exit $rc, stderr: $(head -c 300 "$work/term.err")"
fi
# A command name mistyped is named, with the closest command (issue 50 item 7: `muonplan plna`
# said only "A subcommand is required"); a word close to none gets no guess; control
# characters are escaped.
expect "muonplan plna" 2 "muonplan: A subcommand is required: 'plna' is not a command (did you mean plan?)" "$bin" plna
expect "muonplan reprot" 2 "muonplan: A subcommand is required: 'reprot' is not a command (did you mean report?)" "$bin" reprot
expect "muonplan xyzzy" 2 "muonplan: A subcommand is required: 'xyzzy' is not a command" "$bin" xyzzy
expect "muonplan <ESC>" 2 "muonplan: A subcommand is required: 'a\\x1Bb' is not a command" "$bin" "$(printf 'a\033b')"
# --max-nodes above the topology's max_nodes is refused as --nodes is (issue 50 item 6: 100 on
# a 64-node h200-ib chose 83 nodes); --gpu-memory-gib above the card warns, naming both.
expect "--max-nodes 100 on h200-ib" 2 "--max-nodes: must be between 1 and max_nodes (64) of topology h200-ib, got 100" \
  "$bin" plan --model tiny-dense --max-nodes 100
expect "--gpu-memory-gib 80000 on h200-ib" 0 "warning: --gpu-memory-gib 80000 is above the H200's 140.4 GiB (topology h200-ib): plans may fit this limit and not the card" \
  "$bin" plan --model tiny-dense --nodes 1 --gpu-memory-gib 80000 --quiet
expect "--gpu-memory-gib 100 on h200-ib" 0 "" "$bin" plan --model tiny-dense --nodes 1 --gpu-memory-gib 100 --quiet

# An override note prints the value as typed (issue 46 item 21), not 0.00029999999999999997.
"$bin" plan --trainer-config "$sft" --lr 3e-4 --momentum 0.9 --json >/dev/null 2>"$work/notes.err"
grep -qxF "note: --lr 3e-4 overrides $sft:$lr_line (optim.lr = 0.01)" "$work/notes.err" &&
  grep -qF "note: --momentum 0.9 overrides" "$work/notes.err" && ! grep -q "0000000" "$work/notes.err" &&
  ok || bad "override notes as typed: $(cat "$work/notes.err")"
finish
