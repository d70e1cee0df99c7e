#!/usr/bin/env bash
# Traces (docs/report.md): `plan --trace` and a 2-rank `execute --trace` both load as Chrome
# trace-event JSON with the required fields, the measured one holds both ranks, and the two
# share their stage categories (offload none: momentum, both exchanges, NS, update, AdamW).
source "$(dirname "$0")/lib.sh"
plan "$work/p.json" tiny-moe 2 --trace "$work/pred.json"
run 2 "$work/p.json" --steps 2 --trace "$work/meas.json" >/dev/null && ok ||
  bad "execute --trace: $(cat "$work/err")"
"$py" - "$work/pred.json" "$work/meas.json" <<'PY' && ok || bad "trace contents (above)"
import json, sys
def load(path):
    t = json.load(open(path))
    events = t["traceEvents"]
    x = [e for e in events if e["ph"] == "X"]
    assert x, f"{path}: no complete events"
    for e in x:
        for key in ("name", "cat", "pid", "tid", "ts", "dur"):
            assert key in e, f"{path}: event without {key}: {e}"
        assert e["dur"] >= 0 and e["ts"] >= 0, e
        assert e["name"].startswith(e["cat"]), e  # "<stage> #<chunk>"
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "thread_name"}
    for e in x:  # every track is named by its resource, as the trace itself lists them
        assert names.get((e["pid"], e["tid"])) == e["args"]["resource"], e
    return x, {name for (pid, tid), name in names.items()}
(pred, pred_tracks), (meas, meas_tracks) = load(sys.argv[1]), load(sys.argv[2])
assert pred_tracks == meas_tracks, f"tracks differ: {pred_tracks} vs {meas_tracks}"
pids = {e["pid"] for e in meas}
assert pids == {0, 1}, f"measured pids {pids}, want both ranks"
cp, cm = {e["cat"] for e in pred}, {e["cat"] for e in meas}
assert cm == cp, f"categories differ: predicted only {cp - cm}, measured only {cm - cp}"
for want in ("momentum", "all-to-all to owners", "Newton-Schulz", "all-to-all back"):
    assert want in cp and want in cm, f"{want}: predicted {want in cp}, measured {want in cm}"
PY
finish
