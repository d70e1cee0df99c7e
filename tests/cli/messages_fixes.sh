#!/usr/bin/env bash
# A new user's messages that named the wrong thing (issue 50 item 7): a model name that is the
# start of a bundled one is offered it (edit distance alone ranked qwen3-4b first for
# qwen3-30b); `report` takes --trainer-config, and refuses plan's search flags as such (not
# "did you mean --workload?"); a trainer config naming a model not found here says that
# --model overrides it; `report --out` onto the working directory names that rule, not the
# bundled model name as a file inside it.
set -u
source "$(dirname "$0")/lib.sh"

looked="looked in: qwen3-30b (no such file or directory); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded)"
expect "qwen3-30b" 2 "--model: 'qwen3-30b' not found (did you mean qwen3-30b-a3b?); $looked" \
  "$bin" plan --model qwen3-30b
EXPECT_MATCH=suffix expect "Qwen/Qwen3-30B" 2 "(did you mean Qwen/Qwen3-30B-A3B?); looked in: Qwen/Qwen3-30B (no such file or directory); /x/models--Qwen--Qwen3-30B (Hugging Face cache); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded)" \
  env HF_HUB_CACHE=/x "$bin" plan --model Qwen/Qwen3-30B
# Within a family, edit distance still picks: qwen3-8x is a typo of qwen3-8b.
EXPECT_MATCH=suffix expect "qwen3-8x" 2 "(did you mean qwen3-8b?); looked in: qwen3-8x (no such file or directory); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded)" \
  "$bin" plan --model qwen3-8x

expect "report --offload" 2 "muonplan: The following arguments were not expected: full --offload (report sweeps the node counts and offload modes: --offload is a flag of \`muonplan plan\`, which plans one)" \
  "$bin" report --model qwen3-8b --offload full --out "$work/r"

sed 's|^name = .*|name = "Org/Nope-7B"|' examples/prime-rl/qwen3-8b-sft.toml >"$work/nope.toml"
EXPECT_MATCH=suffix expect "unknown model in a TOML" 2 "(nothing is downloaded); --model PATH (a spec, config.json or a bundled name) overrides the file's name" \
  env HF_HUB_CACHE=/x "$bin" plan --trainer-config "$work/nope.toml"
grep -q "^$work/nope.toml:[0-9]*:[0-9]*: model.name: 'Org/Nope-7B' not found" "$work/err" && ok \
  || bad "unknown model: $(cat "$work/err")"
expect "--model overrides it" 0 "note: --model qwen3-8b overrides $work/nope.toml:3 (name = \"Org/Nope-7B\")" \
  "$bin" plan --trainer-config "$work/nope.toml" --model qwen3-8b --quiet

# report --trainer-config: the file's model and workload; its layout's cp and ep held, FSDP
# over each count's GPUs (the file's fsdp=8 named only its own world).
rl=examples/prime-rl/qwen3-30b-a3b-rl.toml
EXPECT_TIMEOUT=300 expect "report --trainer-config" 0 "note: $rl's layout (fsdp=8,cp=1,ep=8) swept as cp=1,ep=8, FSDP over each node count's GPUs" \
  "$bin" report --trainer-config "$rl" --nodes 1..2 --out "$work/rl" --json
json_check "report --trainer-config data" "$work/out" '
assert d["inputs"]["workload"] is not None, d["inputs"]
assert d["inputs"]["model_path"].endswith("qwen3-30b-a3b.yaml"), d["inputs"]["model_path"]
pts = [p for p in d["sweep"] if p["evaluated"]]
assert {p["nodes"] for p in pts} == {1, 2}, pts
assert all(p["layout"]["ep"] == 8 and p["layout"]["fsdp"] == p["world_size"] for p in pts)'

# --out onto the working directory: refused as that, by either spelling, before the model's
# name is taken for a file inside it (an empty folder refused "holds --model (qwen3-8b)").
mkdir "$work/empty"
(cd "$work/empty" && "$bin" report --model qwen3-8b --out . 2>"$work/err"); rc=$?
[ $rc = 2 ] && [ "$(cat "$work/err")" = "--out: . is a working directory; muonplan writes a report only into a new or empty directory, or one it wrote: give another --out" ] \
  && ok || bad "--out .: exit $rc: $(cat "$work/err")"
(cd "$work/empty" && "$bin" report --model qwen3-8b --out "$work/empty" 2>"$work/err"); rc=$?
[ $rc = 2 ] && [ "$(cat "$work/err")" = "--out: $work/empty is the working directory; muonplan writes a report only into a new or empty directory, or one it wrote: give another --out" ] \
  && [ -z "$(ls -A "$work/empty")" ] && ok || bad "--out \$PWD: exit $rc: $(cat "$work/err")"

finish
