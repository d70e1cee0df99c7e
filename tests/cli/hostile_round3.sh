#!/usr/bin/env bash
# Hostile inputs, third round (docs/reliability.md): each case below was accepted, ran with a
# silent wrong result, or failed in a confusing way; each must now be refused with one line
# naming the flag or the file (and key), or behave as documented.
#   step counters:         a manifest past 10^15
#   --inject-nonfinite:    a name that matches no tensor
#   plan `predicted`:      -5, 1e300, "fast" (the metrics rules), unknown keys, objects
#   report --nodes:        repeated counts planned once
#   --checkpoint .:        normalised before the lock is named
#   names:                 control characters and empty names in models and topologies
#   --comm-timeout:        below 1 s
#   report and SIGTERM:    report.py is ended with the command
set -u
source "$(dirname "$0")/lib.sh"
T="--topology topologies/cpu-ci.yaml"
plan_micro "$work/p.json" || bad "plan micro"

# --- Item 8: the step counter -------------------------------------------------------------
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
for step in 9223372036854775806 1000000000000001 1.5; do
  rm -rf "$work/cks"; cp -r "$work/ck" "$work/cks"
  edit_json "$work/ck/manifest.json" "$work/cks/manifest.json" "p['step'] = $step"
  shown="$("$py" -c "import json; print(json.dumps($step))")"
  expect "manifest step $step" 2 "muonplan: rank 0: $work/cks/manifest.json: step: expected an integer in [0, 10^15], got $shown" \
    "$bin" execute --plan "$work/p.json" --resume "$work/cks"
done

# --- Item 9: --inject-nonfinite names a tensor of the plan ----------------------------------
expect "inject nosuch" 2 "muonplan: rank 0: --inject-nonfinite: no tensor named 'nosuch' in the plan" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite nosuch:1
expect "inject :1" 2 "muonplan: rank 0: --inject-nonfinite: expected NAME:STEP with NAME a tensor of the plan, got an empty name" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite :1
expect "inject ''" 2 "muonplan: --inject-nonfinite: empty; expected NAME:STEP" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite ''
# A real name still poisons (exit 1, named), so the check above refuses only misses.
expect "inject real name" 1 "muonplan: rank 0: error: non-finite gradient in model.norm.weight at step 1; parameters and state left as after step 0 (--skip-nonfinite skips such steps)" \
  "$bin" execute --plan "$work/p.json" --inject-nonfinite model.norm.weight:1

# --- Item 10: the plan's `predicted` checked as metrics are ---------------------------------
key="$("$py" -c "import json; p = json.load(open('$work/p.json')); print(next(k for k, v in p['predicted'].items() if isinstance(v, (int, float)) and not isinstance(v, bool)))")"
for v in -5 1e300 '"fast"'; do
  edit_json "$work/p.json" "$work/pv.json" "p['predicted']['$key'] = $v"
  shown="$("$py" -c "import json; print(json.dumps($v))")"
  case "$v" in '"fast"') what="expected a number, got $shown" ;;
    *) what="expected a number in [0, 1e18], got $(printf '%s' "$v" | sed 's/1e300/1e+300/')" ;; esac
  expect "plan predicted $v" 2 "muonplan: rank 0: $work/pv.json: predicted.$key: $what" \
    "$bin" execute --plan "$work/pv.json"
done
edit_json "$work/p.json" "$work/pv.json" "p['predicted'] = 5"
expect "plan predicted 5" 2 "muonplan: rank 0: $work/pv.json: predicted: expected an object, got 5" \
  "$bin" execute --plan "$work/pv.json"
# A key the figures' table lacks, or an object where a figure belongs, was copied into the
# metrics unread (metric_keys.h): refused as the plan loader refuses it.
edit_json "$work/p.json" "$work/pv.json" "p['predicted']['gpu_peak_gb'] = 1"
expect "plan predicted unknown key" 2 "muonplan: rank 0: $work/pv.json: predicted.gpu_peak_gb: unknown key (muonplan plan does not write it)" \
  "$bin" execute --plan "$work/pv.json"
edit_json "$work/p.json" "$work/pv.json" "p['predicted']['$key'] = {'a': 1}"
expect "plan predicted object" 2 "muonplan: rank 0: $work/pv.json: predicted.$key: expected a number, got an object of 1 keys" \
  "$bin" execute --plan "$work/pv.json"
# The metrics' `predicted` holds exactly the table's figures, the plan's values.
timeout 60 "$bin" execute --plan "$work/p.json" --metrics "$work/pm.json" >/dev/null 2>"$work/err" \
  || bad "execute for metrics: $(cat "$work/err")"
"$py" - "$work/p.json" "$work/pm.json" <<'PY' && ok || bad "metrics predicted differs from the plan's"
import json, sys
plan, metrics = (json.load(open(a)) for a in sys.argv[1:3])
want = {k: v for k, v in plan["predicted"].items() if k != "breakdown"}
assert metrics["predicted"] == want, (metrics["predicted"], want)
PY
# What plan writes passes, and its metrics are what report and calibrate read.
timeout 60 "$bin" execute --plan "$work/p.json" --metrics "$work/m.json" >/dev/null 2>"$work/err" \
  || bad "execute for metrics: $(cat "$work/err")"
"$bin" calibrate --metrics "$work/m.json" $T >/dev/null 2>"$work/err" || bad "calibrate: $(cat "$work/err")"

# --- Item 16: --checkpoint . and DIR/. -------------------------------------------------------
mkdir -p "$work/dot/ck"
(cd "$work/dot/ck" && timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint . \
  >/dev/null 2>"$work/err") && [ -f "$work/dot/ck/manifest.json" ] && [ ! -e "$work/dot/ck/..lock" ] \
  && ok || bad "--checkpoint . in an empty directory: $(cat "$work/err")"
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/dot/ck/." --resume "$work/dot/ck/" \
  >/dev/null 2>"$work/err" && [ ! -e "$work/dot/ck/..lock" ] && ok \
  || bad "--checkpoint DIR/. --resume DIR/: $(cat "$work/err")"
"$py" -c "import json; assert json.load(open('$work/dot/ck/manifest.json'))['step'] == 2" \
  && ok || bad "DIR/. resumed and saved: not at step 2"

# --- Item 17: names are printable UTF-8, and not empty --------------------------------------
name_model() {  # name_model OUT NAME: tiny-dense named NAME (printf escapes)
  printf "name: \"$2\"\n" > "$1"; sed '/^name:/d' models/tiny-dense.yaml >> "$1"
}
# name_refused CHECK NAME WHY COMMAND [FLAGS...]: `muonplan COMMAND --model M FLAGS...` with M
# tiny-dense named NAME exits 2, saying "M:1:7: name: WHY".
name_refused() {
  local check="$1" model="$work/named.yaml" why="$3" command="$4"
  name_model "$model" "$2"; shift 4
  expect "$check" 2 "$model:1:7: name: $why" "$bin" "$command" --model "$model" "$@"
}
control="must be printable text, got the control character"
name_refused "model name with ESC" 'tiny\\e[31mred' "$control U+001B" inspect
name_refused "model name with a newline" 'two\\nlines' "$control U+000A" report --nodes 1 --out "$work/r-nl"
[ ! -e "$work/r-nl/report.md" ] && ok || bad "report written for a name with a newline"
name_refused "model name with C1 NEL" 'x\\u0085y' "$control U+0085" plan
name_refused "empty model name" '' "must not be empty" inspect
name_model "$work/uni.yaml" 'modèle-ü'
"$bin" inspect --model "$work/uni.yaml" >/dev/null 2>"$work/err" && ok || bad "UTF-8 name refused: $(cat "$work/err")"
sed 's/^name: cpu-ci/name: "cpu\\x7Fci"/' topologies/cpu-ci.yaml > "$work/del-topo.yaml"
expect "topology name with DEL" 2 "$work/del-topo.yaml:7:7: name: must be printable text, got the control character U+007F" \
  "$bin" topology --topology "$work/del-topo.yaml"
sed 's/^    name: cpu-rank/    name: "gpu\\tx"/' topologies/cpu-ci.yaml > "$work/tab-gpu.yaml"
n="$(grep -n 'name: "gpu' "$work/tab-gpu.yaml" | cut -d: -f1)"
expect "GPU name with a tab" 2 "$work/tab-gpu.yaml:$n:11: node.gpu.name: must be printable text, got the control character U+0009" \
  "$bin" topology --topology "$work/tab-gpu.yaml"
# An HF config named by its file: the name is echoed escaped.
cp tests/data/hf/glm-4.5-air.json "$work/$(printf 'a\033b').json"
"$py" - "$work/$(printf 'a\033b').json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1])); c.pop("_name_or_path", None); json.dump(c, open(sys.argv[1], "w"))
PYEOF
expect "HF name with ESC" 2 "$work/$(printf 'a\033b').json: name: the model name 'a\\x1Bb' must be printable text, got the control character U+001B" \
  "$bin" inspect --model "$work/$(printf 'a\033b').json"
edit_json "$work/p.json" "$work/pn.json" "p['model'] = 'a\\x1bb'"
expect "plan model name with ESC" 2 "muonplan: rank 0: $work/pn.json: model: must be printable text, got the control character U+001B" \
  "$bin" execute --plan "$work/pn.json"

# Paths may still hold such characters: report.md escapes what it quotes (reports/report.py).
"$py" - <<'PYEOF' && ok || bad "report.py md_text"
import sys
sys.path.insert(0, "reports")
import report
got = report.md_text("a\nb|c\x1b\u202e`é")
assert got == "a\\x0Ab\\|c\\x1B\\u202E\\`é", repr(got)
PYEOF

# --- Item 18: --comm-timeout at least 1 s -----------------------------------------------------
for v in 1e-9 0.5; do
  expect "comm-timeout $v" 2 "--comm-timeout: expected seconds in [1, 1e6], got '$v'" \
    "$bin" execute --plan "$work/p.json" --comm-timeout "$v"
done
timeout 60 "$bin" execute --plan "$work/p.json" --comm-timeout 1 >/dev/null 2>"$work/err" \
  && ok || bad "--comm-timeout 1: $(cat "$work/err")"

# --- Item 11: report --nodes with repeated counts plans each count once ----------------------
MUONPLAN_REPORT_PYTHON=/bin/true "$bin" report --model tests/data/micro-dense.yaml $T --nodes 2,1,1,1,1,2 --out "$work/r-rep" \
  >/dev/null 2>"$work/err" || bad "report --nodes 2,1,1,1,1,2: $(cat "$work/err")"
json_check "report repeated nodes" "$work/r-rep/report-data.json" "
assert d['inputs']['node_counts'] == [1, 2], d['inputs']['node_counts']
rows = [(r['nodes'], r['offload'], r['optimizer']) for r in d['sweep']]
assert len(rows) == len(set(rows)) == 2 * 3 * 4, len(rows)"

# --- Item 15: SIGTERM to report ends report.py first ---------------------------------------
# The signal comes while report.py runs, whatever the machine's speed: a stand-in for python
# says it has started, then runs until it is ended (the report is staged in $work/.rt.report.PID
# until report.py has finished).
cat >"$work/slow-python" <<EOF
#!/bin/sh
: >"$work/python-started"
exec /usr/bin/python3 -c 'import time; time.sleep(3600)' "\$@"
EOF
chmod +x "$work/slow-python"
MUONPLAN_REPORT_PYTHON="$work/slow-python" "$bin" report --model tests/data/micro-dense.yaml $T \
  --nodes 1 --out "$work/rt" >/dev/null 2>&1 &
pid=$!
# Hang guard only (60 s): the file appears once report.py has started.
for _ in $(seq 1200); do [ -e "$work/python-started" ] && break; sleep 0.05; done
kill -TERM "$pid"; wait "$pid"; rc=$?
left="$(ps -eo args | grep -F "$work/" | grep report.py | grep -v grep)"
[ "$rc" = 143 ] && [ -z "$left" ] && ok || bad "report after SIGTERM: exit $rc, still running: $left"
# Nothing written, and the staging directory removed.
[ ! -e "$work/rt" ] && [ -z "$(ls -A "$work" | grep '^\.rt\.report')" ] && ok \
  || bad "report after SIGTERM left: $(ls -A "$work" "$work/rt" 2>&1 | tr '\n' ' ')"

# --- Item 13: element counts bounded before parsing (under a 2 GB address-space cap) -------
"$py" -c "open('$work/long.json', 'w').write('{\"schema\": \"muonplan.plan/2\", \"tensors\": [' + ','.join(['1'] * 1100000) + ']}')"
col="$("$py" -c "s = open('$work/long.json').read(); i = -1
for _ in range((1 << 20) + 1): i = s.index(',', i + 1)
print(i + 1)")"
EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=20 expect "plan array of 1.1M" 2 \
  "muonplan: rank 0: $work/long.json:1:$col: json: an array of more than 1048576 elements; no muonplan input holds one" \
  "$bin" execute --plan "$work/long.json"
"$py" -c "open('$work/many.json', 'w').write('{\"model_type\": \"llama\", \"x\": [' + ','.join(['[' + ','.join(['1'] * 1000000) + ']'] * 9) + ']}')"
EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=20 EXPECT_MATCH=suffix expect "HF config of 9M values" 2 \
  ": json: more than 8388608 values; no muonplan input holds as many" \
  "$bin" inspect --model "$work/many.json"
[[ "$(cat "$work/err")" == "$work/many.json:1:"* ]] && ok || bad "9M values: file not named: $(cat "$work/err")"

# YAML: a model spec of 20M flow items (40 MB, within the 64 MiB input limit) took 1 GB RSS
# in yaml-cpp and ran out of memory under a 2 GB cap; refused before parsing at the first
# separator past 65536, naming the file, line and column. A topology and a block list alike.
yaml_refused() {  # NAME FILE PYTHON-TEXT COMMAND...: refused at the bound, naming FILE
  local name="$1" file="$2" text="$3"; shift 3
  "$py" -c "open('$file', 'w').write($text)"
  EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=20 EXPECT_MATCH=suffix expect "$name" 2 \
    "yaml: more than 65536 items (separators , : - ? [ { or lines); no muonplan YAML file holds as many" "$@"
  [[ "$(cat "$work/err")" == "$file:"* ]] && ok || bad "$name: file not named: $(cat "$work/err")"
}
yaml_refused "YAML model of 20M items" "$work/flow.yaml" \
  "'name: x\\nlayers: [' + ','.join(['1'] * 20000000) + ']\\n'" "$bin" inspect --model "$work/flow.yaml"
[[ "$(cat "$work/err")" == "$work/flow.yaml:2:131075: "* ]] && ok || bad "20M items: not at 2:131075"
yaml_refused "YAML topology of 100k lines" "$work/block.yaml" "'name: t\\nnodes:\\n' + '  - 1\\n' * 100000" \
  "$bin" plan --model models/tiny-dense.yaml --topology "$work/block.yaml" --nodes 1
# Every bundled YAML file is far below the bound.
for f in models/*.yaml topologies/*.yaml; do
  n="$("$py" -c "import sys; print(sum(open(sys.argv[1]).read().count(c) for c in ',:-?[{\n'))" "$f")"
  [ "$n" -lt 8192 ] && ok || bad "$f: $n separators, near the YAML bound"
done

# Under a tight address-space cap: OpenBLAS's worker thread, started at load, hung in malloc
# and exit() waited for it, so `inspect` never returned and its output was lost; now OpenBLAS
# starts no worker (OPENBLAS_NUM_THREADS=1 unless set). `execute` hung in OpenBLAS's buffer
# allocation inside the first GEMM (or oneDNN crashed creating a primitive); now the CPU
# backend takes the GEMM libraries' buffers first and refuses a cap that leaves no room.
if [ "$asan" = 0 ]; then  # ASan reserves terabytes of shadow memory: no cap under it (lib.sh)
  EXPECT_VMEM_KB=1200000 EXPECT_TIMEOUT=30 expect "inspect under a 1.2 GB cap" 0 "" \
    "$bin" inspect --model models/tiny-dense.yaml
  grep -q "^model tiny-dense" "$work/out" && ok || bad "inspect under a 1.2 GB cap printed: $(head -2 "$work/out")"
  plan_micro "$work/capped.json" >/dev/null
  EXPECT_VMEM_KB=1500000 EXPECT_TIMEOUT=30 EXPECT_MATCH=suffix expect "execute under a 1.5 GB cap" 1 \
    "); raise it, or lower OMP_NUM_THREADS" \
    "$bin" execute --plan "$work/capped.json" --steps 1
  grep -q "address-space limit (ulimit -v 1500000 KiB) leaves no room for the GEMM libraries' buffers" "$work/err" \
    && ok || bad "execute under a 1.5 GB cap: $(cat "$work/err")"
fi

# A plan whose shards no machine holds (10^13 elements, each dimension within 10^8): refused
# before anything is allocated, exit 2.
edit_json "$work/p.json" "$work/huge-shard.json" "p['tensors'][0]['shape'] = [10**8, 10**5]"
EXPECT_VMEM_KB=2000000 EXPECT_MATCH=suffix expect "plan of 10^13 elements" 2 \
  " GiB (1e+13 elements x 16 bytes), more than this machine's $("$py" -c "import os; print('%.3g' % (os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30))") GiB of memory" \
  "$bin" execute --plan "$work/huge-shard.json"

# --- Item 14: the search stops where nothing can fit ----------------------------------------
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
