#!/usr/bin/env python3
"""bench/gpu_check.sh's JSON: gathers what its stages left in the work folder into one file.

    gpu_check_report.py --work DIR --root REPO --out FILE --status S [--reason R] --shapes ...
    gpu_check_report.py --add-test TESTS.json NAME RESULT RC SECONDS   (one test's result)
    gpu_check_report.py --calibration-table CALIBRATE.json OUT.txt     (calibrate's tables)
"""
import argparse
import json
import os
import re
import sys


def load(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def add_test(path, name, result, rc, seconds):
    tests = load(path, {}) or {}
    tests[name] = {"result": result, "rc": int(rc), "seconds": float(seconds)}
    with open(path, "w") as f:
        json.dump(tests, f, indent=1)


def calibration_table(path, out):
    """`muonplan calibrate`'s own two tables, from its --json: the constants before and after,
    then each run's measured step time beside the prediction before and after the fit."""
    c = load(path)
    lines = ["%-24s %12s %12s  %s" % ("constant", "before", "after", "")]
    for name, k in c.get("constants", {}).items():
        lines.append("%-24s %12.6g %12.6g  %s" % (name, k["before"], k["after"], k["note"]))
    lines += ["", "%-9s %10s %10s %8s %10s %8s  %s" % ("run", "measured", "before", "error",
                                                        "after", "error", "metrics")]
    for r in c.get("runs", []):
        lines.append("%-9s %9.4fs %9.4fs %+7.1f%% %9.4fs %+7.1f%%  %s" % (
            "held-out" if r["held_out"] else "fit", r["measured_s"], r["predicted_before_s"],
            100 * r["rel_error_before"], r["predicted_after_s"], 100 * r["rel_error_after"],
            os.path.basename(r["metrics"])))
        for comp, v in r.get("components_s", {}).items():
            lines.append("%-9s %9.4fs %10s %8s %9.4fs %8s  %s" % (
                "", v["measured"], "", "", v["predicted_after"], "", "  component " + comp))
    lines += ["", "max error after: %.1f%% on fitted runs, %.1f%% held out" % (
        100 * c["max_fit_error"], 100 * c["max_held_out_error"])]
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(lines[-1])


def published_ns(root):
    """Published H200 NS times (published.yaml: 5-step schedule, bf16 GEMMs, folded adds)."""
    text = open(os.path.join(root, "data/calibration/published.yaml")).read()
    return {(int(m[1]), int(m[2]), int(m[3])): float(m[4]) for m in re.finditer(
        r"\{batch: *(\d+), *rows: *(\d+), *cols: *(\d+), *ms: *([\d.]+)\}", text)}


def ms_of(run, key, variant):
    for row in (run or {}).get("shapes", []):
        if (row["batch"], row["rows"], row["cols"]) == key and row.get("variant") == variant:
            return row["ms"]
    return None


def ns_rows(a, work, published):
    both = load(os.path.join(work, "ns_both.json"), {})
    sym = {t: load(os.path.join(work, f"ns_sym_{t}.json")) for t in a.tiles.split()}
    torch = load(os.path.join(work, "torch.json"), {}) or {}
    torch_rows = {(r["batch"], r["rows"], r["cols"]): r for r in torch.get("shapes", [])}
    rows, checks = [], []
    for item in a.shapes.split(";"):
        b, r, c = (int(x) for x in item.split(","))
        key = (b, r, c)
        row = {"batch": b, "rows": r, "cols": c, "published_ms": published.get(key)}
        row["predicted_plain_ms"] = (load(os.path.join(work, f"cost_{b}_{r}_{c}.json"), {})
                                     or {}).get("ms")
        row["predicted_symmetric_ms"] = (load(os.path.join(work, f"cost_{b}_{r}_{c}_sym.json"),
                                              {}) or {}).get("ms")
        row["plain_ms"] = ms_of(both, key, "plain")
        row["symmetric_ms"] = ms_of(both, key, "symmetric")  # the backend's own tile choice
        m = min(r, c)
        row["symmetric_default_tile"] = 128 if m <= 1024 else 256 if m <= 4096 else 512
        by_tile = {t: ms_of(run, key, "symmetric") for t, run in sym.items() if run}
        if by_tile:
            row["symmetric_ms_by_tile"] = by_tile
            timed = {t: v for t, v in by_tile.items() if v is not None}
            if timed:
                best = min(timed, key=timed.get)
                row["symmetric_best_tile"], row["symmetric_best_ms"] = int(best), timed[best]
        if row["plain_ms"] and row["symmetric_ms"]:
            row["symmetric_speedup_vs_plain"] = row["plain_ms"] / row["symmetric_ms"]
        t = torch_rows.get(key)
        if t:
            for k in ("torch_ms", "torch_wall_ms", "ratio_plain", "ratio_symmetric",
                      "ratio_plain_wall", "ratio_symmetric_wall", "ours_plain_rel_err",
                      "ours_symmetric_rel_err", "torch_bf16_rel_err",
                      "ours_plain_rel_err_max_matrix", "ours_symmetric_rel_err_max_matrix",
                      "torch_bf16_rel_err_max_matrix"):
                if k in t:
                    row[k] = t[k]
        p = row["published_ms"]
        if p is not None and a.rehearsal != "1":
            row["plain_pass"] = row["plain_ms"] is not None and row["plain_ms"] <= p
            row["symmetric_pass"] = row["symmetric_ms"] is not None and \
                p / row["symmetric_ms"] >= 1.3
            if row["plain_ms"]:
                row["plain_speedup_vs_published"] = p / row["plain_ms"]
            if row["symmetric_ms"]:
                row["symmetric_speedup_vs_published"] = p / row["symmetric_ms"]
            checks += [row["plain_pass"], row["symmetric_pass"]]
        rows.append(row)
    return rows, checks, torch


def planner_lora_layer(ops, w):
    """Beside each measured lora_layer point, the planner's: (adapter_gemm + lora_wrapper) of
    trainer_ops_plan_T.json (one micro step) over the model's layers, in ms, and the ratio."""
    layers = ops.get("layers")
    for p in ops.get("lora_layer", {}).get("by_tokens", []):
        plan = load(os.path.join(w, f"trainer_ops_plan_{p['tokens']}.json"))
        if plan is None or not layers:
            continue
        terms = {t["name"]: t["s"] for t in plan["predicted"]["breakdown"]["training_step_s"]}
        p["planner_ms"] = (terms.get("adapter_gemm", 0) + terms.get("lora_wrapper", 0)) / layers * 1e3
        p["measured_over_planner"] = p["extra_ms"] / p["planner_ms"] if p["planner_ms"] else None


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--add-test":
        add_test(*sys.argv[2:7])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--calibration-table":
        calibration_table(*sys.argv[2:4])
        return
    ap = argparse.ArgumentParser()
    for k in ("work", "root", "out", "status", "reason", "shapes", "tiles", "schedule", "elapsed",
              "budget", "rehearsal", "bundle"):
        ap.add_argument("--" + k, default="")
    a = ap.parse_args()
    w = a.work
    stages = load(os.path.join(w, "stages.json"), {}) or {}
    result = {
        "schema": "muonplan.gpu_check/2",
        "status": a.status,
        "rehearsal": a.rehearsal == "1",
        "elapsed_s": float(a.elapsed),
        "budget_s": float(a.budget),
        "device": load(os.path.join(w, "device.json"), {}),
        "stages": stages,
    }
    if a.reason:
        result["reason"] = a.reason
    manifest = load(os.path.join(a.bundle, "manifest.json"), {}) or {}
    check = load(os.path.join(w, "bundle_check.json"), {}) or {}
    result["bundle"] = {"path": a.bundle, "commit": manifest.get("commit"),
                        "bytes": check.get("bytes", manifest.get("bytes")),
                        "problems": check.get("problems"),
                        "device_libraries_needed": check.get("device_needed")}
    libs = load(os.path.join(w, "libs.json"))
    if libs is not None:
        result["libraries"] = libs
    if a.shapes:
        rows, checks, torch = ns_rows(a, w, published_ns(a.root))
        result["ns"] = rows
        result["ns_schedule"] = a.schedule + " (the published figures' 5-step schedule)"
        if torch:
            result["torch"] = {k: v for k, v in torch.items() if k != "shapes"}
        if checks:
            result["targets"] = {"plain_ns": "plain ms <= published ms",
                                 "symmetric_ns": "published ms / symmetric ms >= 1.3",
                                 "met": all(checks)}
    step = {}
    for mode in ("none", "optimizer", "full"):
        m = load(os.path.join(w, f"step_{mode}.metrics.json"))
        if m is not None:
            step[mode] = {"measured": m.get("measured"), "predicted": m.get("predicted"),
                          "backend": m.get("backend")}
    if step:
        result["step"] = {"model": "qwen3-30b-a3b, 2 of 48 layers" if a.rehearsal != "1"
                          else "tiny-moe (rehearsal)", "steps": 3, "offload": step}
    cal = load(os.path.join(w, "calibrate.json"))
    if cal is not None:
        result["calibration"] = cal
    tests = load(os.path.join(w, "tests.json"))
    if tests is not None:
        result["tests"] = tests
    ops = load(os.path.join(w, "trainer_ops.json"))
    if ops is not None:
        planner_lora_layer(ops, w)
        result["trainer_ops"] = ops
    good = ("ok", "rehearsed") if a.rehearsal == "1" else ("ok",)
    # An optional stage measures for the planner; skipped (no torch, no budget left) it fails
    # nothing, failed it fails the check like any other.
    optional = {"trainer_ops"}
    result["pass"] = a.status == "ran" and bool(stages) and all(
        s["status"] in good or (name in optional and s["status"] == "skipped")
        for name, s in stages.items())
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    summary = {k: result[k] for k in ("status", "pass", "elapsed_s")}
    summary["stages"] = {k: v["status"] for k, v in stages.items()}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
