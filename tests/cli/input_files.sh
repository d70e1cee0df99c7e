#!/usr/bin/env bash
# Hostile input files (docs/reliability.md, "Input and output files"): /dev/zero, /dev/urandom,
# a FIFO, a directory and a 65 MiB file given as every file flag exit 2 with one line naming the
# file, within a 2 GB address-space cap and 10 s (an unbounded read or a blocking open fails
# here instead of filling memory or hanging); node ranges beyond the topology are refused
# before they are expanded, and the report's chosen node count is one of its sweep's.
set -u
source "$(dirname "$0")/lib.sh"
EXPECT_MATCH=suffix EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=10
M=models/qwen3-8b.yaml
mkfifo "$work/fifo"
mkdir "$work/dir"
truncate -s 65M "$work/big"
declare -A why=(
  [/dev/zero]="is a character device, not a regular file"
  [/dev/urandom]="is a character device, not a regular file"
  [$work/fifo]="is a FIFO, not a regular file"
  [$work/dir]="is a directory, not a file"
  [$work/big]="is larger than 64 MiB, more than any muonplan input")
for f in /dev/zero /dev/urandom "$work/fifo" "$work/dir" "$work/big"; do
  line="$f: file: ${why[$f]}"
  expect "inspect --model $f" 2 "$line" "$bin" inspect --model "$f"
  expect "plan --model $f" 2 "$line" "$bin" plan --model "$f"
  expect "topology --topology $f" 2 "$line" "$bin" topology --topology "$f"
  expect "plan --topology $f" 2 "$line" "$bin" plan --model $M --topology "$f"
  expect "plan --workload $f" 2 "$line" "$bin" plan --model $M --workload "$f"
  expect "plan --trainer-config $f" 2 "$line" "$bin" plan --model $M --trainer-config "$f"
  expect "execute --plan $f" 2 "muonplan: rank 0: $line" "$bin" execute --plan "$f"
  expect "calibrate --metrics $f" 2 "$line" "$bin" calibrate --metrics "$f"
  expect "report --metrics $f" 2 "$line" \
    "$bin" report --model $M --nodes 1 --metrics "$f" --out "$work/r"
done

# Node ranges: bounded by the topology's max_nodes (64 for h200-ib) before they are expanded.
for nodes in 1..1000000000 1000000000..1000000000 65 1,2,1000; do
  expect "report --nodes $nodes" 2 "--nodes: '$nodes' goes beyond the topology's max_nodes (64)" \
    "$bin" report --model $M --nodes "$nodes" --out "$work/r"
done
# glm-4.5-air fits on one node; a sweep of 3..4 chooses among 3 and 4 all the same.
if "$bin" report --model models/glm-4.5-air.yaml --nodes 3..4 --out "$work/r34" >/dev/null \
    2>"$work/err"; then ok; else bad "report --nodes 3..4: $(cat "$work/err")"; fi
grep -qF "**Chosen:** 3 node(s)" "$work/r34/report.md" && ok ||
  bad "report --nodes 3..4: $(grep -F "**Chosen:**" "$work/r34/report.md")"
finish
