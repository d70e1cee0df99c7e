#!/usr/bin/env bash
# muonplan bench cpu-kernels on small arrays: the table and the JSON have every kernel with
# positive, finite figures (never their size: that is the machine's), and bad flags exit 2.
set -u
source "$(dirname "$0")/lib.sh"
# lib.sh pins one OpenMP thread for `execute`; the vector figures use the machine's threads.
unset OMP_NUM_THREADS
export OMP_WAIT_POLICY=passive
kernels="triad fold_momentum_f32 fold_momentum_bf16 add_update_bf16 adamw cast_to_bf16"

# 1 << 21 elements: above the size from which write-only outputs use non-temporal stores.
table_ok() {
  "$bin" bench cpu-kernels --elems 2097152 --reps 1 >"$work/table.txt" || return 1
  grep -q '^kernel  *B/elem  *GB/s vector  *GB/s scalar  *% triad  *x scalar  *>=90%  *>=3x' \
    "$work/table.txt" || { echo "no table header"; cat "$work/table.txt"; return 1; }
  local k
  for k in $kernels; do
    # name, B/elem, four positive finite numbers, then the two targets
    awk -v k="$k" '$1 == k && !seen {  # the table row, not the byte legend below it
        seen = 1
        ok = NF == 8 && $2 ~ /^[0-9]+$/ && $2 > 0
        for (i = 3; i <= 6; ++i) ok = ok && $i ~ /^[0-9]+\.[0-9]+$/ && $i > 0
        if (k == "triad") ok = ok && $7 == "-" && $8 == "-"
        else ok = ok && ($7 == "yes" || $7 == "no") && ($8 == "yes" || $8 == "no")
        found = ok
      } END { exit !found }' "$work/table.txt" ||
      { echo "bad or missing row for $k"; cat "$work/table.txt"; return 1; }
  done
}
table_ok && ok || bad "table"

# The JSON: every kernel, in order, with positive finite figures and targets that agree.
json_ok() {  # elems
  "$bin" bench cpu-kernels --elems "$1" --reps 1 --json >"$work/out.json" || return 1
  "$py" - "$work/out.json" "$1" $kernels <<'EOF'
import json, math, sys
out = json.load(open(sys.argv[1]))
want = sys.argv[3:]
assert out["elems"] == int(sys.argv[2]) and out["reps"] == 1, out
assert out["threads_vector"] >= 1 and out["threads_scalar"] == 1, out
assert out["targets"] == {"stream_ratio": 0.9, "x_scalar": 3.0}, out["targets"]
assert out["isa"] in ("avx2", "avx512", "avx512_bf16"), out["isa"]
names = [k["name"] for k in out["kernels"]]
assert names == want, names
pos = lambda x: isinstance(x, (int, float)) and math.isfinite(x) and x > 0
assert pos(out["triad_gbs"]), out["triad_gbs"]
for k in out["kernels"]:
    for key in ("bytes_per_elem", "gbs_vector", "gbs_scalar", "stream_ratio", "x_scalar"):
        assert pos(k[key]), (k["name"], key, k[key])
    assert k["traffic"].endswith(("4", "2")), k
    if k["name"] == "triad":
        assert k["gbs_vector"] == out["triad_gbs"] and "meets_triad_target" not in k, k
    else:
        assert isinstance(k["meets_triad_target"], bool), k
        assert isinstance(k["meets_scalar_target"], bool), k
        # The ratios from the measured rates they are defined by (not the code's own ratio
        # restated): vector GB/s over the run's triad, vector over scalar.
        ratio, speedup = k["gbs_vector"] / out["triad_gbs"], k["gbs_vector"] / k["gbs_scalar"]
        assert math.isclose(k["stream_ratio"], ratio, rel_tol=1e-9), (k, ratio)
        assert math.isclose(k["x_scalar"], speedup, rel_tol=1e-9), (k, speedup)
        assert k["meets_triad_target"] == (ratio >= out["targets"]["stream_ratio"]), k
        assert k["meets_scalar_target"] == (speedup >= out["targets"]["x_scalar"]), k
EOF
}
json_ok 100003 && ok || bad "json"
# A one-element run takes the scalar tails only: the same kernels and figures.
json_ok 1 && ok || bad "one element"

# Bad flags: exit 2 and the one line naming the flag.
expect "--elems 0" 2 "--elems: must be positive" "$bin" bench cpu-kernels --elems 0
expect "--reps 0" 2 "--reps: must be positive" "$bin" bench cpu-kernels --reps 0 --elems 8
finish
