#!/usr/bin/env bash
# The plan search stops where nothing can fit (docs/planner.md, "Search"; docs/reliability.md):
#   the floor:       a limit below the lower bound at every world evaluates one node count, and
#                    the decision says so; no evaluated candidate needs less than the floor
#   the knife edge:  a large-world candidate costs the ranks its chunks touch, not chunks x world,
#                    and the search evaluates from the bound's cut
#   the budget:      --max-predictions stops the search, lists the counts left (one table row)
#                    and says one of them may fit; 0 is refused
set -u
source "$(dirname "$0")/lib.sh"

# --- A limit below the floor at every world ---------------------------------------------------
sed 's/^max_nodes: 2$/max_nodes: 32768/' topologies/cpu-ci.yaml > "$work/huge.yaml"
"$bin" plan --model tests/data/micro-dense.yaml --topology "$work/huge.yaml" --nodes auto \
  --gpu-memory-gib 0.000001 --out "$work/nofit.json" >/dev/null 2>"$work/err" || bad "nofit plan: $(cat "$work/err")"
json_check "no fit: one node count evaluated" "$work/nofit.json" "
import re
r = d['decision']['reason']
assert 'only the first of 32768 node counts was evaluated' in r, r
assert {c['nodes'] for c in d['decision']['candidates']} == {1}, d['decision']['candidates']
floor = float(re.search(r'at least ([0-9.e+-]+) GiB per GPU', r).group(1))
# The floor is a lower bound: no candidate evaluated needs less.
assert all(c['gpu_peak_gib'] >= floor * 0.999 for c in d['decision']['candidates'] if 'gpu_peak_gib' in c)"

# --- Between the bound's cut and the first fit ------------------------------------------------
# The knife edge: a limit just above the bound at the largest world evaluates every count from
# the bound's cut to the first fit, so each evaluation must cost the ranks its chunks touch,
# not chunks x world (docs/planner.md, "Search"). The plan's work counter (MUONPLAN_WORK_STATS)
# says how many rank-chunk window steps one large-world candidate took; the dense loop took
# one per chunk and rank.
sed 's/^max_nodes: 64$/max_nodes: 2048/' topologies/h200-ib.yaml > "$work/big.yaml"
MUONPLAN_WORK_STATS=1 "$bin" plan --model models/kimi-k2.yaml --topology "$work/big.yaml" \
  --offload none --nodes 1024 --out "$work/wide.json" >/dev/null 2>"$work/err" \
  || bad "1024-node plan: $(cat "$work/err")"
steps="$(sed -n 's/^work: 1 candidates predicted, \([0-9]*\) rank-window steps$/\1/p' "$work/err")"
json_check "one 1024-node candidate costs its touched ranks" "$work/wide.json" "
steps = int('${steps:-0}' or 0)
dense = len(d['chunks']) * d['world_size']
assert 0 < steps and steps * 4 < dense, (steps, dense)"
# Near the bound: the counter counts each evaluated candidate once, and none is under the floor.
MUONPLAN_WORK_STATS=1 "$bin" plan --model models/kimi-k2.yaml --topology "$work/big.yaml" \
  --offload none --nodes auto --gpu-memory-gib 30.9 --out "$work/edge.json" >/dev/null 2>"$work/err" \
  || bad "knife-edge plan: $(cat "$work/err")"
predicted="$(sed -n 's/^work: \([0-9]*\) candidates predicted, .*/\1/p' "$work/err")"
json_check "knife edge: evaluated from the bound's cut" "$work/edge.json" "
import re
c = d['decision']['candidates']
evaluated = [x for x in c if 'gpu_peak_gib' in x]
assert len(evaluated) == int('${predicted:-0}' or 0), (len(evaluated), '$predicted')
cut = int(re.search(r'node counts up to ([0-9]+) not evaluated', d['decision']['reason']).group(1))
assert min(x['nodes'] for x in evaluated) == cut + 1 and d['nodes'] > cut + 1, (cut, d['nodes'])
floors = {x['nodes']: float(re.search(r'at least ([0-9.e+-]+) GiB', x['note']).group(1))
          for x in c if x.get('note', '').startswith('not evaluated')}
assert floors and all(floors[n] > 30.9 for n in floors), floors"

# --- The budget of predictions ----------------------------------------------------------------
# Within the few MiB between the bound and the peak at every large world, thousands of counts
# stay: the search stops once its budget of predictions is spent (--max-predictions), says
# that the counts left may fit, and the table prints them as one row.
sed 's/^max_nodes: 64$/max_nodes: 16384/' topologies/h200-ib.yaml > "$work/vast.yaml"
"$bin" plan --model models/kimi-k2.yaml --topology "$work/vast.yaml" --offload none --nodes auto \
  --gpu-memory-gib 30.758 --max-predictions 100 --out "$work/budget.json" >"$work/out" 2>"$work/err" \
  || bad "budget plan: $(cat "$work/err")"
json_check "knife edge: the budget stops the search" "$work/budget.json" "
c = d['decision']['candidates']
evaluated = [x for x in c if 'gpu_peak_gib' in x]
left = [x['nodes'] for x in c if 'budget of 100 predicted candidates' in x.get('note', '')]
assert 100 <= len(evaluated) < 116 and not d['fits'], (len(evaluated), d['fits'])
last = max(x['nodes'] for x in evaluated)
assert left == list(range(last + 1, 16385)), (last, left[:3], left[-3:])
assert d['decision']['reason'].startswith('no candidate evaluated fits; %d node count(s), %d..16384, not evaluated' % (len(left), last + 1)), d['decision']['reason']"
grep -q "^ *[0-9]*\.\.16384 .* not evaluated: the search's budget of 100 predicted candidates (--max-predictions) was spent$" "$work/out" \
  && ok || bad "budget plan: no one-row summary of the counts left: $(grep -c . "$work/out") lines"
expect "--max-predictions 0" 2 "--max-predictions: expected a positive integer, got '0'" \
  "$bin" plan --model models/tiny-dense.yaml --max-predictions 0

finish
