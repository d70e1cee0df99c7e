#!/usr/bin/env bash
# A plan whose fields contradict each other is refused when it is loaded, naming the field
# (issue 33, item 5): the `optimizer` field and the tensors' update rules say the same, since the
# step runs the rules (a Muon plan edited to say adamw ran Muon, and its metrics said adamw).
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/muon.json" || bad "plan muon"
plan_micro "$work/adamw.json" --optimizer adamw || bad "plan adamw"
first_muon="$("$py" -c "import json, sys
t = json.load(open(sys.argv[1]))['tensors']
print(next(i for i, x in enumerate(t) if x['rule'] == 'muon'))" "$work/muon.json")"
for opt in adamw signsgd; do
  edit_json "$work/muon.json" "$work/m-$opt.json" "p['optimizer'] = '$opt'"
  expect "muon plan saying $opt" 2 "muonplan: rank 0: $work/m-$opt.json: tensors[$first_muon].rule: expected adamw: only a muon plan updates tensors by Muon, and this plan's optimizer is $opt, got muon" \
    "$bin" execute --plan "$work/m-$opt.json"
done
# One tensor turned to Muon in an AdamW plan is the same contradiction.
edit_json "$work/adamw.json" "$work/a-one.json" "p['tensors'][$first_muon]['rule'] = 'muon'"
expect "adamw plan with a muon tensor" 2 "muonplan: rank 0: $work/a-one.json: tensors[$first_muon].rule: expected adamw: only a muon plan updates tensors by Muon, and this plan's optimizer is adamw, got muon" \
  "$bin" execute --plan "$work/a-one.json"
# An AdamW plan edited to say muon would run AdamW on every tensor under Muon's name.
edit_json "$work/adamw.json" "$work/a-muon.json" "p['optimizer'] = 'muon'"
expect "adamw plan saying muon" 2 "muonplan: rank 0: $work/a-muon.json: optimizer: expected adamw: no tensor has rule muon, so the step would run AdamW on every tensor, got muon" \
  "$bin" execute --plan "$work/a-muon.json"
# The plans as written still run.
for p in muon adamw; do
  timeout 60 "$bin" execute --plan "$work/$p.json" --steps 1 >/dev/null 2>"$work/err" && ok \
    || bad "execute $p: $(cat "$work/err")"
done
finish
