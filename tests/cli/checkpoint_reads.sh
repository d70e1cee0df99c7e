#!/usr/bin/env bash
# Reading a checkpoint (`execute --resume`, Python's read_checkpoint) when its files are not
# what a save leaves (docs/reliability.md, round 4):
#   C5  a rank file that is a FIFO is refused before the open, which blocked until a writer came
#   U3  a load that fails while another run holds DIR.lock (it may be saving into DIR as it is
#       read) says so and names the holder, instead of calling a healthy checkpoint damaged;
#       checked by order of events: the lock is held (flock) around the resume
set -u
source "$(dirname "$0")/lib.sh"
plan_micro "$work/p.json" || bad "plan micro"
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
rank=rank-00000.safetensors

# --- C5: a FIFO as a rank file ----------------------------------------------------------------
cp -r "$work/ck" "$work/fck"; rm "$work/fck/$rank"; mkfifo "$work/fck/$rank"
EXPECT_TIMEOUT=20 EXPECT_MATCH=suffix expect "--resume with a FIFO rank file" 2 \
  "$work/fck/$rank: file: is a FIFO, not a regular file" \
  "$bin" execute --plan "$work/p.json" --resume "$work/fck"
PYTHONPATH="$root/build/python" timeout 20 "$py" -c "
import sys, muonplan
try:
    muonplan.read_checkpoint(sys.argv[1])
except muonplan.InputError as e:
    assert str(e).endswith('$rank: file: is a FIFO, not a regular file'), e
else:
    raise SystemExit('read_checkpoint of a FIFO rank file returned')
" "$work/fck" && ok || bad "read_checkpoint with a FIFO rank file: not refused naming the FIFO within 20 s"

# --- U3: a load that fails while another run holds the lock -----------------------------------
# The bytes a resume met when a save replaced the files under it: one flipped byte, so the
# checksum differs. With no run holding the lock it is damaged; while one holds it, maybe not.
cp -r "$work/ck" "$work/rck"
"$py" -c "
import sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read()); b[-1] ^= 1; open(p, 'wb').write(b)
" "$work/rck/$rank"
EXPECT_MATCH=suffix expect "resume a flipped byte, no lock held" 2 \
  "the manifest says $(python3 -c "import json; print(json.load(open('$work/rck/manifest.json'))['ranks'][0]['checksum'])")" \
  "$bin" execute --plan "$work/p.json" --resume "$work/rck"
printf 'muonplan checkpoint lock\npid 4242\n' >"$work/rck.lock"
saving="resume once that run has saved; the checkpoint is damaged only if this happens with no run holding the lock"
EXPECT_MATCH=suffix expect "resume while another run holds the lock" 2 "$saving" \
  flock -x "$work/rck.lock" "$bin" execute --plan "$work/p.json" --resume "$work/rck"
grep -qF -- "--resume: $work/rck could not be loaded while another run (pid 4242) holds $work/rck.lock and may be saving into it ($work/rck/$rank: checksum mismatch" "$work/err" \
  && ok || bad "the message does not name the holder and the cause: $(cat "$work/err")"
PYTHONPATH="$root/build/python" flock -x "$work/rck.lock" "$py" -c "
import sys, muonplan
try:
    muonplan.read_checkpoint(sys.argv[1])
except muonplan.InputError as e:
    assert 'another run (pid 4242) holds' in str(e) and str(e).endswith('$saving'), e
else:
    raise SystemExit('read_checkpoint of a flipped byte returned')
" "$work/rck" && ok || bad "read_checkpoint while another run holds the lock"
# The lock file a resume probed is left as it was: a resume writes nothing there.
[ "$(cat "$work/rck.lock")" = "$(printf 'muonplan checkpoint lock\npid 4242')" ] && ok \
  || bad "the lock file changed: $(cat "$work/rck.lock")"
finish
