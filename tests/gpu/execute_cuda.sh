#!/usr/bin/env bash
# `muonplan execute --backend cuda` end to end: tiny-moe on 1 rank (and on 2 ranks where the
# node has 2 devices), 2 steps with --check-reference; then 2 and 4 ranks sharing one GPU. The update must match the unsharded
# recomputation and the independent reference within bf16 rounding (not bit for bit: cuBLAS may pick other kernels for the
# owner's batch of one than for the reference's batches), and the all-to-all bytes the NCCL
# communicator counts must equal the planner's prediction. Skips (77) without a device.
# Arguments: muonplan binary, repo root, mpiexec, its flags, the gpu device probe (exits 77
# without one).
source "$(dirname "$0")/../mpi/lib.sh"
probe="$5"
"$probe" >/dev/null; rc=$?
if [ "$rc" = 77 ]; then echo "skipped: no CUDA device"; exit 77; fi
# cuda_checked METRICS: prints --check-reference's figures; fails unless the one-rank CUDA rerun
# is within 1% and the independent (CPU) reference within its bound (docs/executor-numerics.md,
# "The independent reference").
cuda_checked() { echo "$1" | "$py" -c "import json,sys; m=json.load(sys.stdin)['measured']
r, e, b = m['one_rank_rel_error'], m['reference_rel_error'], m['reference_rel_bound']
print('one_rank_rel_error %g, reference_rel_error %g (bound %g)' % (r, e, b))
sys.exit(0 if r < 0.01 and e <= b else 1)"; }
devices=1
if command -v nvidia-smi >/dev/null; then devices="$(nvidia-smi -L | grep -c '^GPU')"; fi
for world in 1 2; do
  [ "$world" -gt "$devices" ] && { echo "world $world: skipped ($devices device(s))"; continue; }
  plan "$work/p.json" tiny-moe "$world" --nesterov --weight-decay 0.1
  m="$("$mpiexec" "${mpiflags[@]}" -n "$world" "$bin" execute \
        --plan "$work/p.json" --backend cuda --steps 2 --check-reference --json 2>"$work/err")" \
    || { bad "world $world: $(cat "$work/err")"; continue; }
  [ "$(field "$m" backend)" = cuda ] && ok || bad "world $world: backend $(field "$m" backend)"
  err="$(cuda_checked "$m")" && ok || bad "world $world: $err"
  echo "world $world: $err, step $(field "$m" measured.optimizer_step_s) s"
  [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok \
    || bad "world $world: bytes $(field "$m" measured.alltoall_bytes_per_rank_max) != predicted $(field "$m" predicted.alltoall_bytes_per_rank_max)"
done

# Several ranks on one GPU (docs/executor.md, "Multi-rank CUDA on one GPU"): NCCL refuses two
# ranks on a device, so the all-to-alls go device -> pinned -> MPI -> device
# (--host-staged-exchange, automatic where ranks outnumber devices). fsdp > 1, so the batch
# lanes 1..3, their pipelining and the staging paths run, as at 8 GPUs: every offload mode
# and staging on 2 ranks, none and full on 4; --check-reference (cuda_checked) and the plan's bytes.
# (Digests are not the CPU backend's: cuBLAS sums in another order than OpenBLAS.)
for c in "2 none" "2 optimizer" "2 optimizer --offload-staging chunked" "2 full" "4 none" "4 full"; do
  read -r world mode extra <<<"$c"
  "$bin" plan --model models/tiny-moe.yaml --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node "$world" --offload "$mode" $extra --bf16-momentum --out "$work/s.json" \
    >/dev/null || { bad "plan $c"; continue; }
  m="$("$mpiexec" "${mpiflags[@]}" -n "$world" "$bin" execute --plan "$work/s.json" \
        --backend cuda --host-staged-exchange --steps 2 --check-reference --json 2>"$work/err")" \
    || { bad "one GPU, $c: $(cat "$work/err")"; continue; }
  err="$(cuda_checked "$m")" && ok || bad "one GPU, $c: $err"
  [ "$(field "$m" measured.alltoall_bytes_per_rank_max)" = "$(field "$m" predicted.alltoall_bytes_per_rank_max)" ] && ok \
    || bad "one GPU, $c: bytes $(field "$m" measured.alltoall_bytes_per_rank_max) != predicted"
  echo "one GPU, $c: reference_rel_error $err, step $(field "$m" measured.optimizer_step_s) s"
done
finish
