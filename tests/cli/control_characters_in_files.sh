#!/usr/bin/env bash
# No string read from a file holds a control character (issue 33, items 9 and 19): a NUL in a
# TOML path truncated it ("model.yaml\u0000/etc/passwd" planned model.yaml), and ESC, BEL, C1
# codes and U+202E reached the terminal. Every reader's string getter refuses them (text_problem,
# plan_checks.h) naming FILE:LINE:COL and the key, and values quoted in messages are escaped.
# Model, topology and GPU names (YAML, an HF config's file name, a plan's `model`) follow one
# rule, name_problem: not empty, valid UTF-8, no control character; report.md escapes the names
# and paths it quotes.
set -u
source "$(dirname "$0")/lib.sh"
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
cp tests/data/micro-dense.yaml "$work/model.yaml"
toml() { printf '[model]\nname = "%s"\n\n[data]\nbatch_size = 8\n' "$1" >"$work/t.toml"; }
# TOML: the model path and keys of the planning tables.
for esc in 'u0000:U+0000' 'u001b[31m:U+001B' 'u0007:U+0007' 'u0085:U+0085' 'u202e:U+202E' 'u007f:U+007F'; do
  cp_=${esc#*:}; esc="\\${esc%%:*}"
  toml "$work/model.yaml$esc/etc/passwd"
  expect "toml model.name with $esc" 2 "$work/t.toml:2:8: model.name: must be printable text, got the control character $cp_" \
    "$bin" plan --trainer-config "$work/t.toml" --topology topologies/cpu-ci.yaml
done
printf '[model]\nname = "%s"\n\n[data]\nbatch_size = 8\n\n[optim]\ntype = "adamw\\u001b]0;x\\u0007"\n' \
  "$work/model.yaml" >"$work/m.toml"
expect "toml optim.type with ESC" 2 "$work/m.toml:8:8: optim.type: must be printable text, got the control character U+001B" \
  "$bin" plan --trainer-config "$work/m.toml" --topology topologies/cpu-ci.yaml
printf '[model]\nname = "%s"\ncp_style = "ring\\u202e"\n\n[data]\nbatch_size = 8\n' \
  "$work/model.yaml" >"$work/c.toml"
expect "toml model.cp_style with U+202E" 2 "$work/c.toml:3:12: model.cp_style: must be printable text, got the control character U+202E" \
  "$bin" plan --trainer-config "$work/c.toml" --topology topologies/cpu-ci.yaml
# A value quoted in a message, and an unknown key in a warning, are escaped.
printf '[model]\nname = 7\n\n[data]\nbatch_size = "\033[2J"\n' >"$work/q.toml"
"$bin" plan --trainer-config "$work/q.toml" --topology topologies/cpu-ci.yaml >/dev/null 2>"$work/err"
! grep -q $'\033' "$work/err" && ok || bad "a TOML value echoed raw: $(cat -v "$work/err")"
printf '[model]\nname = "%s"\n"k\\u001b[2J" = 1\n\n[data]\nbatch_size = 8\n' "$work/model.yaml" >"$work/k.toml"
"$bin" plan --trainer-config "$work/k.toml" --topology topologies/cpu-ci.yaml --json >/dev/null 2>"$work/err"
grep -q 'k\\x1B\[2J' "$work/err" && ! grep -q $'\033' "$work/err" && ok \
  || bad "unknown TOML key echoed raw: $(cat -v "$work/err")"
# YAML (model, topology, workload) and JSON (a plan, an HF config's model_type).
"$py" - "$work" <<'PY'
import sys, re
w = sys.argv[1]
t = open("tests/data/micro-dense.yaml").read()
open(w + "/nul.yaml", "w").write(re.sub(r"^name: .*$", 'name: "micro\\0dense"', t, count=1, flags=re.M))
PY
expect "yaml name with NUL" 2 "$work/nul.yaml:3:7: name: must be printable text, got the control character U+0000" \
  "$bin" inspect --model "$work/nul.yaml"
plan_micro "$work/p.json" || bad "plan micro"
edit_json "$work/p.json" "$work/pn.json" "p['tensors'][0]['name'] += '\x00/x'"
expect "plan tensor name with NUL" 2 "muonplan: rank 0: $work/pn.json: tensors[0].name: must be printable text, got the control character U+0000" \
  "$bin" execute --plan "$work/pn.json"
edit_json "$work/p.json" "$work/po.json" "p['offload'] = 'none\x1b[31m'"
expect "plan offload with ESC" 2 "muonplan: rank 0: $work/po.json: offload: must be printable text, got the control character U+001B" \
  "$bin" execute --plan "$work/po.json"
mkdir -p "$work/hf"
"$py" -c "import json,sys; d=json.load(open('tests/data/hf/qwen3-0.6b.json')); d['model_type']='qwen3\x1b]0;x\x07'; json.dump(d, open(sys.argv[1],'w'))" "$work/hf/config.json"
EXPECT_MATCH=suffix expect "hf model_type with ESC" 2 "model_type: must be printable text, got the control character U+001B" \
  "$bin" inspect --model "$work/hf"

# --- Names are printable UTF-8, and not empty -------------------------------------------------
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

finish
