#!/usr/bin/env bash
# A trainer TOML is bounded on its text before toml++ parses it (issue 33, items 10 and 15), as
# JSON and YAML are: nesting past 64 levels (a 12,000-deep table header or dotted key was a
# segfault inside toml++) and more than 65536 items (a 30M-element array took 6.5 GB) are
# refused at FILE:LINE:COL, exit 2, quickly and under an address-space cap; Python's
# plan(trainer_config=...) raises InputError rather than crashing the interpreter.
set -u
source "$(dirname "$0")/lib.sh"
deep="nested deeper than 64 levels (tables, dotted keys, arrays, inline tables); no trainer config nests past a few"
many="more than 65536 items (keys, array and inline-table entries, tables); no trainer config holds as many"
gen() {  # FILE PYTHON-EXPR: the TOML text the expression makes
  "$py" -c "import sys; open(sys.argv[1], 'w').write($2)" "$1"
}
run() {  # NAME FILE WANT
  EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=20 expect "$1" 2 "$2:$3" \
    "$bin" plan --trainer-config "$2" --topology topologies/cpu-ci.yaml
}
gen "$work/header.toml" "'[' + '.'.join(['a'] * 12000) + ']\nx = 1\n'"
run "12,000-deep header" "$work/header.toml" "1:129: toml: $deep"
gen "$work/dotted.toml" "'.'.join(['a'] * 12000) + ' = 1\n'"
run "12,000-deep dotted key" "$work/dotted.toml" "1:130: toml: $deep"
gen "$work/aot.toml" "'[[' + '.'.join(['a'] * 12000) + ']]\n'"
run "12,000-deep array of tables" "$work/aot.toml" "1:128: toml: $deep"
# A header's levels count under the keys below it, and arrays and inline tables add theirs.
gen "$work/sum.toml" "'[' + '.'.join(['a'] * 41) + ']\n' + '.'.join(['b'] * 20) + ' = ' + '[' * 5 + ']' * 5 + '\n'"
run "header + key + arrays past 64" "$work/sum.toml" "2:47: toml: $deep"
gen "$work/inline.toml" "'x = ' + '{a = ' * 70 + '1' + '}' * 70 + '\n'"
run "nested inline tables" "$work/inline.toml" "1:325: toml: $deep"
# Dots inside strings and numbers are not levels.
gen "$work/strings.toml" "'[model]\nname = \"' + '.' * 200 + '\"\n\"' + '.' * 200 + '\" = 1.5\n# ' + '[' * 200 + '\n[data]\nbatch_size = 8\n'"
"$bin" plan --trainer-config "$work/strings.toml" --topology topologies/cpu-ci.yaml >/dev/null 2>"$work/err"
! grep -q "toml: nested\|toml: more" "$work/err" && ok || bad "dots in strings counted: $(head -c 300 "$work/err")"
gen "$work/big.toml" "'x = [' + '1,' * 3000000 + ']\n'"
run "3M-element array" "$work/big.toml" "1:131075: toml: $many"
gen "$work/keys.toml" "''.join('k%d = 1\n' % i for i in range(70000))"
run "70,000 keys" "$work/keys.toml" "65537:8: toml: $many"
# The bundled trainer configs stay far inside both bounds.
for f in tests/data/prime-rl/*.toml; do
  "$bin" plan --trainer-config "$f" --topology topologies/cpu-ci.yaml >/dev/null 2>"$work/err"
  ! grep -q "toml: nested\|toml: more than" "$work/err" && ok || bad "$f: $(cat "$work/err")"
done
finish
