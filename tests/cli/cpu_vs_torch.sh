#!/usr/bin/env bash
# bench/cpu_vs_torch.py on tiny sizes: every row (the NS shape, each host pass) with positive
# times and speed = theirs / ours, in --json (one run: importing torch takes seconds, so the
# table is left to the eye); without torch it prints one line and exits 77; bad flags exit 2
# before torch is imported. Figures are the machine's: only their form is checked. Skipped (77) where
# Debian's python3 has no torch (apt-get install python3-torch).
set -u
source "$(dirname "$0")/lib.sh"
script="$root/bench/cpu_vs_torch.py"
export OMP_WAIT_POLICY=passive
unset OMP_NUM_THREADS

# Without torch: a module named torch that fails to import stands in for a missing one.
mkdir -p "$work/notorch"
echo 'raise ImportError("no torch here")' >"$work/notorch/torch.py"
PYTHONPATH="$work/notorch" "$py" "$script" --bin "$bin" >"$work/skip.txt" 2>&1
rc=$?
[ "$rc" = 77 ] && grep -qx "cpu_vs_torch.py: skipped, no torch (apt-get install python3-torch)" \
  "$work/skip.txt" && ok || bad "no torch: exit $rc, $(cat "$work/skip.txt")"

if ! "$py" -c 'import torch' 2>/dev/null; then
  finish
  echo "skipped: $py has no torch"
  exit 77
fi
small=(--bin "$bin" --shapes "1,16,24" --reps 1 --rounds 1 --elems 40000)
"$py" "$script" "${small[@]}" --json >"$work/out.json" && ok || bad "--json run"
json_check "json rows" "$work/out.json" "
rows = [r['row'] for r in d['rows']]
assert rows == ['ns_1x16x24', 'triad', 'fold_momentum_f32', 'fold_momentum_bf16',
                'add_update_bf16', 'adamw', 'cast_to_bf16'], rows
for r in d['rows']:
    for k in ('ours_ms', 'theirs_ms', 'speed'):
        assert math.isfinite(r[k]) and r[k] > 0, r
    assert abs(r['speed'] - r['theirs_ms'] / r['ours_ms']) <= 1e-9 * r['speed'], r
assert d['cpu'] and d['torch'] and d['elems'] == 40000, d
assert d['ours']['gemm_path'] in ('onednn', 'openblas'), d['ours']
assert d['ours']['host_isa'] in ('avx2', 'avx512', 'avx512_bf16'), d['ours']"
expect "--reps 0" 2 "cpu_vs_torch.py: --reps, --rounds, --elems and --threads must be positive" \
  "$py" "$script" --bin "$bin" --reps 0
finish
