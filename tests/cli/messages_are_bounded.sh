#!/usr/bin/env bash
# Messages are bounded whatever the input (issue 46 items 16 and 18): quoted text is cut at 60
# characters (`brief`, muonplan/base/error.h) and an InputError's message at 4096 bytes; the
# "did you mean" edit distance skips names past 256 characters and names whose lengths differ
# by more than its limit (a 3 MB model name took 25-35 s and 800 MB there, and a 100 kB name
# gave 200 kB of stderr); unknown keys of a trainer config get a warning line each for the
# first 20 and one line for the rest (60,000 keys were 60,000 lines).
set -u
source "$(dirname "$0")/lib.sh"
cut57="$(printf 'y%.0s' $(seq 57))..."

# A 3 MB model name in a trainer config: one short line, quickly, in little memory.
"$py" -c "open('$work/big.toml', 'w').write('seq_len = 4096\n[model]\nname = \"' + 'x' * 3000000 + '\"\n')"
x57="$(printf 'x%.0s' $(seq 57))..."
EXPECT_TIMEOUT=10 EXPECT_VMEM_KB=2000000 expect "3 MB model name" 2 \
  "$work/big.toml:3:8: model.name: '$x57' not found; looked in: $x57 (no such file or directory); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded); --model PATH (a spec, config.json or a bundled name) overrides the file's name" \
  "$bin" plan --trainer-config "$work/big.toml"

# 100 kB values of flags: each quoted cut at 60 characters.
long="$("$py" -c "print('y' * 100000)")"
t=(plan --model tiny-dense --topology topologies/cpu-ci.yaml)
expect "long --nodes" 2 "--nodes: expected a positive integer or auto, got '$cut57'" "$bin" "${t[@]}" --nodes "$long"
expect "long --lr" 2 "--lr: expected a number, got '$cut57'" "$bin" "${t[@]}" --lr "$long"
expect "long --optimizer" 2 "--optimizer: expected muon, adamw or signsgd, got '$cut57'" \
  "$bin" "${t[@]}" --nodes 1 --optimizer "$long"
expect "long --model" 2 "--model: '$cut57' not found; looked in: $cut57 (no such file or directory); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded)" \
  "$bin" plan --model "$long" --topology topologies/cpu-ci.yaml
# Short names still get a suggestion.
EXPECT_MATCH=suffix expect "suggestion kept" 2 "(did you mean qwen3-8b?); looked in: qwen3-8x (no such file or directory); the bundled specs' names and hf_id (muonplan inspect --list) (nothing is downloaded)" \
  "$bin" plan --model qwen3-8x --topology topologies/cpu-ci.yaml

# 60,000 unknown keys: 20 warning lines and one that counts the rest.
"$py" -c "open('$work/keys.toml', 'w').write('seq_len = 4096\n[model]\nname = \"Qwen/Qwen3-0.6B\"\n' + ''.join('k%d = 1\n' % i for i in range(60000)))"
"$bin" plan --trainer-config "$work/keys.toml" --nodes 1 --quiet >/dev/null 2>"$work/keys.err"
[ "$(grep -c '^warning: ' "$work/keys.err")" = 21 ] &&
  grep -qxF "warning: $work/keys.toml:23:1: model.k19: unknown key in [model]; not planned" "$work/keys.err" &&
  grep -qxF "warning: $work/keys.toml: 59980 more unknown keys in planning tables, not listed (the first 20 are); not planned" "$work/keys.err" &&
  ok || bad "60,000 unknown keys: $(head -c 600 "$work/keys.err")"
finish
