#!/usr/bin/env bash
# muonplan bench ns --dump (what bench/gpu_check.sh hands to bench/ns_torch.py): ns.json names
# the schedule's coefficients and one input and one output file per shape and variant, of the
# right sizes; each output is NS of its input (against an fp64 NS computed here with numpy:
# within bf16's 0.1-2%, and not NS of another shape's input); with torch installed,
# ns_torch.py's figures agree with these.
set -u
source "$(dirname "$0")/lib.sh"
export OMP_WAIT_POLICY=passive
dump="$work/dump"
"$bin" bench ns --backend cpu --shapes "2,48,80;1,96,40;2,64,64" --variant both --reps 1 \
  --dump "$dump" --json >"$work/out.json" 2>"$work/err" && ok || bad "bench ns --dump: $(cat "$work/err")"
cmp -s "$work/out.json" "$dump/ns.json" && ok || bad "ns.json differs from the --json output"
"$py" - "$dump" "$work/np_err.json" <<'EOF' && ok || bad "dump contents"
import json, os, sys
import numpy as np
dump = sys.argv[1]
d = json.load(open(os.path.join(dump, "ns.json")))
errors = []
if d["schedule"] != "quintic" or len(d["schedule_steps"]) != 5 or \
        d["schedule_steps"][0] != [4.0848, -6.8946, 2.927] or d["norm_scale"] != 1.0 or \
        d["eps"] != 1e-8:
    errors.append(f"schedule: {d['schedule']} {d['schedule_steps']} {d['norm_scale']} {d['eps']}")

def bf16(path, shape):
    raw = np.fromfile(os.path.join(dump, path), dtype=np.uint16)
    if raw.size != shape[0] * shape[1] * shape[2]:
        errors.append(f"{path}: {raw.size} values for {shape}")
        return None
    return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64).reshape(shape)

def ns64(u):
    x = u.transpose(0, 2, 1) if u.shape[1] > u.shape[2] else u
    x = x / (d["norm_scale"] * np.sqrt((x * x).sum(axis=(1, 2), keepdims=True)) + d["eps"])
    for a, b, c in d["schedule_steps"]:
        am = x @ x.transpose(0, 2, 1)
        x = a * x + (b * am + c * am @ am) @ x
    return x.transpose(0, 2, 1) if u.shape[1] > u.shape[2] else x

rows = d["shapes"]
if sorted((r["batch"], r["rows"], r["cols"], r["variant"]) for r in rows) != sorted(
        (b, r, c, v) for b, r, c in ((2, 48, 80), (1, 96, 40), (2, 64, 64))
        for v in ("plain", "symmetric")):
    errors.append(f"rows: {[(r['batch'], r['rows'], r['cols'], r['variant']) for r in rows]}")
refs, np_err = {}, {}
for r in rows:
    key = (r["batch"], r["rows"], r["cols"])
    if r["input_file"] != "ns_%dx%dx%d.in.bf16" % key or \
            r["output_file"] != "ns_%dx%dx%d.%s.bf16" % (key + (r["variant"],)):
        errors.append(f"file names {r['input_file']} {r['output_file']}")
        continue
    u = bf16(r["input_file"], key)
    out = bf16(r["output_file"], key)
    if u is None or out is None:
        continue
    if not 0.015 < u.std() < 0.025:
        errors.append(f"{key}: input std {u.std()} (normal, sigma 0.02)")
    ref = refs.setdefault(key, ns64(u))
    err = np.linalg.norm(out - ref) / np.linalg.norm(ref)
    if not 1e-3 < err < 2e-2:
        errors.append(f"{key} {r['variant']}: {100 * err:.3f}% from fp64 NS")
    np_err["%dx%dx%d %s" % (key + (r["variant"],))] = err
    print(f"{key} {r['variant']}: {100 * err:.3f}% from fp64 NS of its input")
json.dump(np_err, open(sys.argv[2], "w"))
# An output against another shape's input of the same size would be far off: the pairing.
a = bf16("ns_2x64x64.plain.bf16", (2, 64, 64))
swapped = ns64(bf16("ns_2x64x64.in.bf16", (2, 64, 64))[::-1].copy())
if a is not None and np.linalg.norm(a - swapped) / np.linalg.norm(swapped) < 0.5:
    errors.append("the output matches NS of the matrices in another order")
print("\n".join(errors))
sys.exit(1 if errors else 0)
EOF

# ns_torch.py on the same dump, where torch is installed (Debian's python3-torch on the CPU).
if "$py" -c "import torch" 2>/dev/null; then
  "$py" bench/ns_torch.py --dump "$dump" --device cpu --warmup 1 --reps 2 --out "$work/torch.json" \
    2>"$work/terr" && ok || bad "ns_torch.py: $(cat "$work/terr")"
  "$py" - "$dump" "$work/torch.json" "$work/np_err.json" <<'EOF' && ok || bad "ns_torch.py figures"
import json, sys
ours = json.load(open(sys.argv[1] + "/ns.json"))
t = json.load(open(sys.argv[2]))
np_err = json.load(open(sys.argv[3]))
errors = []
if len(t["shapes"]) != 3:
    errors.append(f"{len(t['shapes'])} shapes")
ms = {(r["batch"], r["rows"], r["cols"], r["variant"]): r["ms"] for r in ours["shapes"]}
for s in t["shapes"]:
    key = (s["batch"], s["rows"], s["cols"])
    for v in ("plain", "symmetric"):
        if s[f"ours_{v}_ms"] != ms[key + (v,)]:
            errors.append(f"{key} {v}: ms {s[f'ours_{v}_ms']} != {ms[key + (v,)]}")
        if abs(s[f"ratio_{v}"] - s[f"ours_{v}_ms"] / s["torch_ms"]) > 1e-12 * s[f"ratio_{v}"]:
            errors.append(f"{key} {v}: ratio {s[f'ratio_{v}']}")
        # torch's fp64 NS and numpy's: the same truth, to fp64 rounding.
        want = np_err["%dx%dx%d %s" % (key + (v,))]
        if abs(s[f"ours_{v}_rel_err"] - want) > 1e-6 * want:
            errors.append(f"{key} {v}: error {s[f'ours_{v}_rel_err']}, numpy's {want}")
    # torch's bf16 NS is another rounding of the same iteration: as far from fp64 as ours.
    if not 1e-3 < s["torch_bf16_rel_err"] < 2e-2 or s["torch_ms"] <= 0:
        errors.append(f"{key}: torch {s['torch_bf16_rel_err']} {s['torch_ms']}")
print("\n".join(errors))
sys.exit(1 if errors else 0)
EOF
else
  echo "no torch for $py: ns_torch.py not run (apt-get install python3-torch)"
fi
# --- Where --dump writes (round 4, D3): report --out's rule. A user's directory, a checkpoint,
# a directory inside one (through a dangling link too) and '' are refused before anything is
# written; a directory an earlier --dump wrote is replaced whole.
small=(bench ns --backend cpu --shapes "1,8,8" --reps 1 --sgemm-size 8)
dumped="muonplan writes a bench dump only into a new or empty directory, or one it wrote: give another --dump"
mkdir "$work/mine"; echo "my figures" >"$work/mine/ns.json"
expect "--dump into a user's directory" 2 "--dump: $work/mine holds files muonplan did not write (ns.json); $dumped" \
  "$bin" "${small[@]}" --dump "$work/mine"
[ "$(cat "$work/mine/ns.json")" = "my figures" ] && [ "$(ls -A "$work/mine")" = ns.json ] && ok \
  || bad "--dump replaced a user's ns.json"
expect "--dump ''" 2 "muonplan: --dump: an empty path; give a path (leave the option out to skip it)" \
  "$bin" "${small[@]}" --dump ''
plan_micro "$work/p.json" || bad "plan micro"
timeout 60 "$bin" execute --plan "$work/p.json" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  || bad "save: $(cat "$work/err")"
expect "--dump into a checkpoint" 2 "--dump: $work/ck is a muonplan checkpoint directory; $dumped" \
  "$bin" "${small[@]}" --dump "$work/ck"
ln -s ck/dump "$work/dangling"
for d in "$work/ck/dump" "$work/dangling"; do
  expect "--dump inside a checkpoint ($d)" 2 "--dump: $d is inside a muonplan checkpoint directory ($work/ck), which holds only the checkpoint's files; write it elsewhere" \
    "$bin" "${small[@]}" --dump "$d"
done
[ "$(cd "$work/ck" && ls -A | sort | tr '\n' ' ')" = "manifest.json rank-00000.safetensors " ] && ok \
  || bad "--dump littered the checkpoint: $(ls -A "$work/ck")"
timeout 60 "$bin" execute --plan "$work/p.json" --resume "$work/ck" --checkpoint "$work/ck" >/dev/null 2>"$work/err" \
  && ok || bad "a save into ck after the refused dumps: $(cat "$work/err")"
"$bin" "${small[@]}" --dump "$dump" >/dev/null 2>"$work/err" && [ -f "$dump/.muonplan-bench-dump" ] \
  && [ -f "$dump/ns_1x8x8.in.bf16" ] && [ ! -e "$dump/ns_2x48x80.in.bf16" ] && ok \
  || bad "--dump into its own earlier dump, replaced whole: $(cat "$work/err"); $(ls -A "$dump")"
finish
