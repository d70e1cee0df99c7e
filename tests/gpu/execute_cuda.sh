#!/usr/bin/env bash
# `muonplan execute --backend cuda` end to end: tiny-moe on 1 rank (and on 2 ranks where the
# node has 2 devices), 2 steps with --check-reference. The update must match the unsharded
# recomputation within bf16 rounding (not bit for bit: cuBLAS may pick other kernels for the
# owner's batch of one than for the reference's batches), and the all-to-all bytes the NCCL
# communicator counts must equal the planner's prediction. Skips (77) without a device.
# Arguments: muonplan binary, repo root, mpiexec, its flags, the gpu device probe (exits 77
# without one).
source "$(dirname "$0")/../mpi/lib.sh"
probe="$5"
"$probe" >/dev/null; rc=$?
if [ "$rc" = 77 ]; then echo "skipped: no CUDA device"; exit 77; fi
devices=1
if command -v nvidia-smi >/dev/null; then devices="$(nvidia-smi -L | grep -c '^GPU')"; fi
for world in 1 2; do
  [ "$world" -gt "$devices" ] && { echo "world $world: skipped ($devices device(s))"; continue; }
  plan "$work/p.json" tiny-moe "$world" --nesterov --weight-decay 0.1
  m="$("$mpiexec" "${mpiflags[@]}" -n "$world" "$bin" execute \
        --plan "$work/p.json" --backend cuda --steps 2 --check-reference --json 2>"$work/err")" \
    || { bad "world $world: $(cat "$work/err")"; continue; }
  [ "$(field "$m" backend)" = cuda ] && ok || bad "world $world: backend $(field "$m" backend)"
  err="$(field "$m" measured.reference_rel_error)"
  "$py" -c "import sys; sys.exit(0 if float(sys.argv[1]) < 0.01 else 1)" "$err" && ok \
    || bad "world $world: reference_rel_error $err"
  echo "world $world: reference_rel_error $err, step $(field "$m" measured.optimizer_step_s) s"
  [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok \
    || bad "world $world: bytes $(field "$m" measured.alltoall_bytes_per_rank_max) != predicted $(field "$m" predicted.alltoall_bytes_per_rank_max)"
done
finish
