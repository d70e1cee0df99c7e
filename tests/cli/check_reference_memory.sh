#!/usr/bin/env bash
# --check-reference holds the whole model twice more on every rank (the one-rank rerun and the
# independent reference step) and the shard-fit check counts it (issue 33 item 18: a plan that
# passed the check at 2.2 GB used 5.8 GB with it). A plan whose shards take 40% of this
# machine's memory passes the shards' bound (16 bytes an element) but not the reference's (44
# more, and 26 per element of the largest tensor): refused before anything is allocated,
# exit 2, with both figures.
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/p.json" || bad "plan micro"
phys="$("$py" -c "import os; print(os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE'))")"
# tensors[0] becomes [rows, 10^5] with 16 x its elements at 40% of the memory.
rows="$("$py" -c "print(max(1, int(0.4 * $phys / 16 / 10**5)))")"
edit_json "$work/p.json" "$work/big.json" "p['tensors'][0]['shape'] = [$rows, 10**5]"
want="$("$py" - "$work/big.json" "$phys" <<'PY'
import json, math, sys
p = json.load(open(sys.argv[1])); phys = int(sys.argv[2])
n = [math.prod(t["shape"]) for t in p["tensors"]]
shards, check = 16 * sum(n), 28 * sum(n) + 26 * max(n)
assert shards < phys < shards + check, (shards, check, phys)
g = 2**30
print("--check-reference: rank 0's shards need %.3g GiB (%.3g elements x 16 bytes) and "
      "--check-reference adds %.3g GiB (the whole model on one rank and in the reference step, "
      "%.3g elements x 28 bytes, and the reference's scratch for its largest tensor), more than "
      "this machine's %.3g GiB of memory" % (shards / g, sum(n), check / g, sum(n), phys / g))
PY
)" || bad "expected message: $want"
EXPECT_TIMEOUT=30 EXPECT_MATCH=suffix expect "check-reference beyond memory" 2 "$want" \
  "$bin" execute --plan "$work/big.json" --check-reference
finish
