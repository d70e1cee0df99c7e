#!/usr/bin/env bash
# Inputs are bounded on their text before they are parsed (docs/reliability.md; TOML in
# toml_bounds.sh), and nothing hangs or crashes under an address-space cap:
#   nesting:         JSON deeper than 64 levels in any input (an HF config, a plan, a trace, a
#                    metrics file) is refused at LINE:COL while reading; YAML past yaml-cpp's
#                    depth guard is named as such
#   element counts:  a JSON array of more than 2^20 elements or 2^23 values in all, a YAML file
#                    of more than 65536 items, refused at FILE:LINE:COL under a 2 GB cap; the
#                    bundled YAML files far below the bound
#   memory:          inspect under a 1.2 GB cap returns, execute under 1.5 GB is refused (exit 1)
#                    rather than hung; a plan whose shards no machine holds is refused, exit 2,
#                    before anything is allocated
set -u
source "$(dirname "$0")/lib.sh"

# --- Deep nesting -----------------------------------------------------------------------------
plan_tiny "$work/tiny.json" 2>"$work/err" || bad "plan: $(cat "$work/err")"
deep="json: nested deeper than 64 levels; no muonplan input nests more than a few"
"$py" -c "open('$work/deep.json','w').write('{\"model_type\": '+'['*100000+']'*100000+'}')"
expect "inspect deep JSON" 2 "$work/deep.json:1:79: $deep" "$bin" inspect --model "$work/deep.json"
edit_json "$work/tiny.json" "$work/deep-plan.json" 'p["predicted"]["deep"] = eval("[" * 100 + "]" * 100)'
EXPECT_MATCH=suffix expect "execute deep predicted" 2 "$deep" "$bin" execute --plan "$work/deep-plan.json"
"$py" -c "open('$work/deep-trace.json','w').write('['*100000+']'*100000)"
expect "report --trace deep" 2 "$work/deep-trace.json:1:65: $deep" \
  "$bin" report --model models/tiny-dense.yaml --trace "$work/deep-trace.json" --out "$work/rd"
expect "calibrate --metrics deep" 2 "$work/deep-trace.json:1:65: $deep" \
  "$bin" calibrate --metrics "$work/deep-trace.json"
# 10,000 nested lists: yaml-cpp's depth guard; 100,000: the separator bound, before parsing.
"$py" -c "open('$work/deep.yaml','w').write('name: '+'['*10000+']'*10000+'\n')"
EXPECT_MATCH=suffix expect "deep YAML" 2 "yaml: nested too deeply (depth 500); muonplan's formats nest a few levels" \
  "$bin" inspect --model "$work/deep.yaml"
"$py" -c "open('$work/deeper.yaml','w').write('name: '+'['*100000+']'*100000+'\n')"
EXPECT_MATCH=suffix expect "deeper YAML" 2 "yaml: more than 65536 items (separators , : - ? [ { or lines); no muonplan YAML file holds as many" \
  "$bin" inspect --model "$work/deeper.yaml"

# --- Element counts bounded before parsing (under a 2 GB address-space cap) -------------------
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

# --- Under an address-space cap nothing hangs -------------------------------------------------
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
  # 0.8 GB: the refusal's threshold is about 1.1-1.2 GB on 2 OpenMP threads (the process
  # itself, OpenBLAS's 136 MiB a thread, oneDNN's 384 MiB); it was 1.5 GB while cuBLAS was
  # linked and mapped into every process.
  EXPECT_VMEM_KB=800000 EXPECT_TIMEOUT=30 EXPECT_MATCH=suffix expect "execute under a 0.8 GB cap" 1 \
    "); raise it, or lower OMP_NUM_THREADS" \
    "$bin" execute --plan "$work/capped.json" --steps 1
  grep -q "address-space limit (ulimit -v 800000 KiB) leaves no room for the GEMM libraries' buffers" "$work/err" \
    && ok || bad "execute under a 0.8 GB cap: $(cat "$work/err")"
fi

# --- A plan no machine holds ------------------------------------------------------------------
plan_micro "$work/p.json" || bad "plan micro"
# A plan whose shards no machine holds (10^13 elements, each dimension within 10^8): refused
# before anything is allocated, exit 2.
edit_json "$work/p.json" "$work/huge-shard.json" "p['tensors'][0]['shape'] = [10**8, 10**5]"
EXPECT_VMEM_KB=2000000 EXPECT_MATCH=suffix expect "plan of 10^13 elements" 2 \
  " GiB (1e+13 elements x 16 bytes), more than this machine's $("$py" -c "import os; print('%.3g' % (os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30))") GiB of memory" \
  "$bin" execute --plan "$work/huge-shard.json"

finish
