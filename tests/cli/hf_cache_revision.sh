#!/usr/bin/env bash
# The Hugging Face cache's refs/main is a revision name, not a path (issue 33, items 7, 13, 14):
# a revision with a separator, '..', an absolute path, a control character, or a refs/main that
# is a FIFO, a device or larger than 256 bytes is refused with one line naming the file, exit 2,
# and never read past its bound or used to reach a config.json outside the cache; a config.json
# that is not JSON (a link to a system file) is quoted in 40 escaped characters at most.
set -u
source "$(dirname "$0")/lib.sh"
export HF_HUB_CACHE="$work/hub" HF_HOME="$work/no-home"
repo="$HF_HUB_CACHE/models--org--m"
mkdir -p "$repo/snapshots/abc123" "$repo/refs" "$work/outside/snapshots/x"
cp tests/data/hf/qwen3-0.6b.json "$repo/snapshots/abc123/config.json"
cp tests/data/hf/qwen3-8b.json "$work/outside/config.json"
ref="$repo/refs/main"
printf 'abc123' >"$ref"
"$bin" inspect --model org/m --json >"$work/ok.json" && json_check "a hash" "$work/ok.json" \
  'assert d["params_total"] < 1e9, d["params_total"]' || bad "inspect a good refs/main"

# Names that are paths: each would have planned qwen3-8b from outside the cache.
for rev in "../../../outside" "$work/outside" "abc123/../../../../outside" ".." "a\\b" "a b"; do
  printf '%s' "$rev" >"$ref"
  expect "revision $rev" 2 "$ref: revision: '$rev' is not a revision name (no separators, spaces or '..')" \
    "$bin" inspect --model org/m
done
printf 'abc\033[31m123' >"$ref"
expect "revision with ESC" 2 "$ref: revision: must be printable text, got the control character U+001B" \
  "$bin" inspect --model org/m
printf 'abc123\000/../../../outside' >"$ref"
expect "revision with NUL" 2 "$ref: revision: must be printable text, got the control character U+0000" \
  "$bin" inspect --model org/m
: >"$ref"
expect "empty revision" 2 "$ref: revision: is empty; expected the snapshot's name (a commit hash)" \
  "$bin" inspect --model org/m
# Bounded: 257 bytes, and /dev/zero (it was read to 2.3 GB, then another snapshot was used).
head -c 257 /dev/zero | tr '\0' a >"$ref"
expect "revision of 257 bytes" 2 "$ref: revision: is larger than 256 bytes, more than it can hold" \
  "$bin" inspect --model org/m
rm -f "$ref"; ln -s /dev/zero "$ref"
EXPECT_VMEM_KB=2000000 EXPECT_TIMEOUT=10 expect "refs/main -> /dev/zero" 2 \
  "$ref: revision: is a character device, not a regular file" "$bin" inspect --model org/m
# A FIFO is refused before it is opened: inspect and plan never block on it.
rm -f "$ref"; mkfifo "$ref"
EXPECT_TIMEOUT=10 expect "refs/main a FIFO (inspect)" 2 \
  "$ref: revision: is a FIFO, not a regular file" "$bin" inspect --model org/m
EXPECT_TIMEOUT=10 expect "refs/main a FIFO (plan)" 2 \
  "$ref: revision: is a FIFO, not a regular file" \
  "$bin" plan --model org/m --topology topologies/h200-ib.yaml --nodes 1 --out "$work/p.json"
rm -f "$ref"
# No refs/main: the newest snapshot, as before.
"$bin" inspect --model org/m >/dev/null && ok || bad "no refs/main"

# A config.json that is not JSON is never echoed: a bounded, escaped summary of what was read.
# A system file (read as YAML: one long scalar; it printed 300 bytes of it), and JSON whose
# parser quotes the token it stopped in.
printf 'abc123' >"$ref"
for i in $(seq 1 12); do printf 'user%d:x:%d:%d:\033]0;pwned\007 account:/home/user%d:/bin/sh\n' $i $i $i $i; done \
  >"$work/system-file"
{ printf '{"model_type": "'; head -c 300 /dev/zero | tr '\0' r; printf '\001\033]0;x\007 tail"}'; } \
  >"$work/bad-json"
for target in system-file bad-json; do
  rm -f "$repo/snapshots/abc123/config.json"
  ln -s "$work/$target" "$repo/snapshots/abc123/config.json"
  "$bin" inspect --model org/m >/dev/null 2>"$work/err"
  rc=$?
  err="$(cat "$work/err")"
  [ "$rc" = 2 ] && [ "$(wc -l <"$work/err")" = 1 ] && [ "${#err}" -lt 320 ] && [[ "$err" != *$'\033'* ]] \
    && [[ "$err" != *user3* ]] && [[ "$err" != *rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr* ]] \
    && ok || bad "unparsable config.json ($target): exit $rc, ${#err} bytes: $(cat -v "$work/err" | head -c 600)"
done
# The same summary for our own JSON inputs (a plan).
cp "$work/bad-json" "$work/plan.json"
"$bin" execute --plan "$work/plan.json" >/dev/null 2>"$work/err"
rc=$?
err="$(cat "$work/err")"
[ "$rc" = 2 ] && [ "${#err}" -lt 400 ] && [[ "$err" != *$'\033'* ]] && ok \
  || bad "unparsable plan: exit $rc, ${#err} bytes: ${err:0:600}"
finish
