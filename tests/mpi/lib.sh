# Helpers for the multi-rank tests: plan a tiny model for W CPU ranks and run it under mpiexec.
# Sourced by the tests/mpi/*.sh scripts; ctest passes: muonplan binary, repo root, mpiexec and
# its flags (MPIEXEC_PREFLAGS, one space-separated argument). `launch N CMD...` runs N ranks.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
mpiexec="${3:-mpiexec}"; read -r -a mpiflags <<<"${4:-}"
launch() { local n="$1"; shift; "$mpiexec" "${mpiflags[@]}" -n "$n" "$@"; }

# plan OUT MODEL WORLD [plan flags...]
plan() {
  local out="$1" model="$2" world="$3"; shift 3
  "$bin" plan --model "models/$model.yaml" --topology topologies/cpu-ci.yaml --nodes 1 \
    --gpus-per-node "$world" --offload none --out "$out" "$@" >/dev/null
}
# run WORLD PLAN [execute flags...]: metrics JSON on stdout, stderr to $work/err
run() {
  local world="$1"; shift
  launch "$world" "$bin" execute --plan "$@" --json \
    2>"$work/err"
}
# async SEED: execute flags for the CPU backend with asynchronous lanes (docs/executor.md,
# "Lanes"), seeded, the delay cycling through 0, 300 and 3000 us with the seed. A script runs
# some of its runs with them, so a missing wait between lanes changes a digest it compares,
# at no extra run.
async() { local d=(0 300 3000); echo "--backend cpu-async --async-seed $1 --async-delay-us ${d[$(($1 % 3))]}"; }
# field JSON KEY.PATH
field() { echo "$1" | "$py" -c "import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split('.'): d=d[k]
print(d)" "$2"; }
# checked METRICS: --check-reference's figures as expected (docs/executor-numerics.md, "The
# independent reference"): the one-rank MuonStep rerun equal bit for bit, the independent
# reference step within its bound; else prints them and fails.
checked() { echo "$1" | "$py" -c "import json,sys; m=json.load(sys.stdin)['measured']
k = ('one_rank_max_abs_diff', 'one_rank_rel_error', 'reference_rel_error', 'reference_rel_bound')
a, r, e, b = (m[x] for x in k)
if a == 0 and r == 0 and 0 <= e <= b <= 0.1: sys.exit(0)
print('one rank: max diff %g, relative %g; reference %g, bound %g' % (a, r, e, b)); sys.exit(1)"; }
