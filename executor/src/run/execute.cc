#include "muonplan/exec/execute.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <stdexcept>

#include <unistd.h>

#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/exec/agreed_error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/fnv1a.h"
#include "muonplan/exec/init.h"
#include "muonplan/exec/metrics.h"
#include "muonplan/exec/plan_shards.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/reference_check.h"
#include "muonplan/exec/step.h"
#include "muonplan/exec/trace_gather.h"
#include "muonplan/planfile/plan_checks.h"
#include "run/execute_checkpoint.h"

namespace muonplan::exec {
namespace {

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The first tensor (by index) whose local gradient holds a NaN or Inf, agreed by all ranks;
// -1 when none.
int find_nonfinite(RankState& state, Communicator& comm) {
  std::vector<float> host;
  const int n = static_cast<int>(state.params().size());
  int found = -1;
  for (const LocalParam& p : state.params()) {
    if (p.elems() == 0) continue;
    host.resize(p.elems());
    state.copy_out(p, Field::grad, host.data());
    if (std::any_of(host.begin(), host.end(), [](float x) { return !std::isfinite(x); })) {
      found = p.tensor;
      break;
    }
  }
  double code = found >= 0 ? double(n - found) : 0.0;  // max picks the lowest index
  comm.allreduce_max(&code, 1);
  return code > 0 ? n - static_cast<int>(code) : -1;
}

// A plan whose shards this rank cannot hold is refused before anything is allocated (a hand-
// edited [1000, 10^8] shape took the machine's memory, or ended in std::bad_alloc). The bound
// is the master weight and gradient plus up to two state fields, 4 bytes an element each,
// against the machine's physical memory (the CPU backend keeps all of it there).
// --check-reference adds, on every rank, the whole model twice: the same steps on one rank
// (the bound above over every element) and the independent reference step (its fp32 weight
// and two moments, reference_step.h), plus the reference's scratch for its largest tensor: the
// fp32 gradient, the bf16 momentum matrix and Newton-Schulz's bf16 iterates and fp32 GEMM
// operands, at most 26 bytes an element (reference_step.cc). Without them a plan that passed
// at 2.2 GB took 5.8 GB. Measured on one CPU rank, a 126M-element dense model (one 32.8M
// tensor): 2.08 GB resident without the check, 5.33 GB with it; the bound says 2.0 + 4.4 GB.
constexpr double kStateBytesPerElem = 4.0 * 4;
constexpr double kReferenceBytesPerElem = 3 * 4.0;
constexpr double kReferenceScratchBytesPerElem = 26;

void check_shards_fit(const Plan& plan, const Backend& backend, int rank, bool check_reference) {
  if (backend.name() != "cpu") return;  // device memory: the plan's own prediction
  double elems = 0, all = 0, largest = 0;
  for (size_t t = 0; t < plan.inventory.tensors.size(); ++t) {
    elems += double(shard_of(plan, static_cast<int>(t), rank).elems());
    const double n = double(plan.inventory.tensors[t].numel());
    all += n;
    largest = std::max(largest, n);
  }
  const double shard_bytes = elems * kStateBytesPerElem;
  const double check_bytes = check_reference ? all * (kStateBytesPerElem + kReferenceBytesPerElem) +
                                                   largest * kReferenceScratchBytesPerElem
                                             : 0;
  const double have_bytes = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (have_bytes <= 0 || shard_bytes + check_bytes <= have_bytes) return;
  char buf[400];
  if (check_bytes > 0) {
    std::snprintf(buf, sizeof buf,
                  "rank %d's shards need %.3g GiB (%.3g elements x 16 bytes) and --check-reference "
                  "adds %.3g GiB (the whole model on one rank and in the reference step, %.3g "
                  "elements x 28 bytes, and the reference's scratch for its largest tensor), more "
                  "than this machine's %.3g GiB of memory",
                  rank, shard_bytes / kGiB, elems, check_bytes / kGiB, all, have_bytes / kGiB);
    throw InputError({}, "--check-reference", buf);
  }
  std::snprintf(buf, sizeof buf,
                "rank %d's shards need %.3g GiB (%.3g elements x 16 bytes), more than this "
                "machine's %.3g GiB of memory",
                rank, shard_bytes / kGiB, elems, have_bytes / kGiB);
  throw InputError({}, "--plan", buf);
}

void poison(RankState& state, const std::string& tensor) {
  for (LocalParam& p : state.params()) {
    if (state.plan().inventory.tensors[p.tensor].name != tensor || p.elems() == 0) continue;
    std::vector<float> g(static_cast<size_t>(p.elems()));
    state.copy_out(p, Field::grad, g.data());
    g[0] = std::numeric_limits<float>::quiet_NaN();
    state.copy_in(p, Field::grad, g.data());
  }
}

// What the steps measured on this rank, before the ranks agree on it (measure()).
struct StepRecord {
  std::vector<double> times;
  // Per step: device, exchange wait, H2D, D2H, host-kernel seconds (StepCounters).
  std::vector<std::vector<double>> busy = std::vector<std::vector<double>>(6);
  double peak = 0, transient = 0, sent = 0, host_peak = 0, h2d = 0, d2h = 0;
  int64_t skipped = 0;
};

// Step s's gradients, checked for non-finite values on every rank first: true when the step is
// to be skipped (--skip-nonfinite), a throw when it may not be.
bool skip_nonfinite_grads(RankState& state, const ExecuteOptions& opt, Communicator& comm,
                          int64_t s) {
  const Plan& plan = state.plan();
  if (s == opt.inject_nonfinite_step) poison(state, opt.inject_nonfinite_tensor);
  const int bad = find_nonfinite(state, comm);
  if (bad < 0) return false;
  const std::string what = "non-finite gradient in " + plan.inventory.tensors[bad].name +
                           " at step " + std::to_string(s);
  if (!opt.skip_nonfinite) {
    throw std::runtime_error(what + "; parameters and state left as after step " +
                             std::to_string(s - 1) + " (--skip-nonfinite skips such steps)");
  }
  const std::string line =
      "muonplan: rank " + std::to_string(comm.rank()) + ": " + what + ": step skipped\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  return true;
}

// A non-finite update (a diverging NS schedule, an overflowing learning rate) stops every
// rank: the parameters now hold it, so there is no step to skip (--skip-nonfinite covers
// gradients, checked before the step changes anything).
void check_update_finite(const MuonStep& step, Communicator& comm, int64_t s) {
  const std::string& tensor = step.nonfinite_tensor();
  const std::string at_step =
      " at step " + std::to_string(s) +
      "; the parameters hold it: check the learning rate and the NS schedule";
  const RankError own{tensor.empty() ? "" : "non-finite update in " + tensor + at_step};
  const AgreedErrors agreed = agree_on_errors(&comm, own);
  own.rethrow_if_failed();
  if (agreed.count > 0) {
    throw std::runtime_error("non-finite update on rank " + std::to_string(agreed.highest_rank) +
                             at_step);
  }
}

// Steps first..last, each timed and its memory, traffic and busy seconds recorded.
StepRecord run_steps(RankState& state, MuonStep& step, const ExecuteOptions& opt, Backend& backend,
                     Communicator& comm, int64_t first, int64_t last) {
  StepRecord rec;
  for (int64_t s = first; s <= last; ++s) {
    comm.set_step(s);
    state.load_grads(s);
    if (skip_nonfinite_grads(state, opt, comm, s)) {
      ++rec.skipped;
      if (opt.on_step) opt.on_step(s - first + 1, opt.steps, 0.0);
      continue;
    }
    comm.barrier();
    comm.reset_counters();
    backend.synchronize();
    const size_t before = backend.memory().current_bytes;
    backend.reset_peak();
    backend.reset_host_peak();
    const auto t0 = std::chrono::steady_clock::now();
    step.run(s);
    const auto t1 = std::chrono::steady_clock::now();
    check_update_finite(step, comm, s);
    rec.times.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (opt.on_step) opt.on_step(s - first + 1, opt.steps, rec.times.back());
    const MemoryStats m = backend.memory();
    rec.peak = std::max(rec.peak, double(m.peak_bytes));
    rec.transient = std::max(rec.transient, double(m.peak_bytes - before));
    rec.sent = std::max(rec.sent, double(comm.alltoall_bytes_sent()));
    rec.host_peak = std::max(rec.host_peak, double(backend.host_memory().peak_bytes));
    const StepCounters& c = step.counters();
    rec.h2d = std::max(rec.h2d, double(c.h2d_bytes));
    rec.d2h = std::max(rec.d2h, double(c.d2h_bytes));
    const double per_kind[6] = {c.device_s, c.exchange_wait_s, c.h2d_s,
                                c.d2h_s,    c.host_s,          c.check_s};
    for (int k = 0; k < 6; ++k) rec.busy[k].push_back(per_kind[k]);
  }
  return rec;
}

// The run's statistics, agreed over the ranks (the max of each, the digest summed).
Measured measure(const StepRecord& rec, const Plan& plan, const ExecuteOptions& opt,
                 Backend& backend, Communicator& comm, const RankState& state) {
  const std::vector<double>& times = rec.times;
  const double peak = rec.peak, transient = rec.transient;
  // Steps 2+ when there are any: the first step pays for first-touch and warm-up.
  std::vector<double> steady(times.size() > 1 ? times.begin() + 1 : times.begin(), times.end());
  auto steady_median = [&](const std::vector<double>& v) {
    return median(std::vector<double>(v.size() > 1 ? v.begin() + 1 : v.begin(), v.end()));
  };
  double stats[13] = {median(steady), peak, transient, rec.sent, rec.host_peak, rec.h2d, rec.d2h};
  for (int k = 0; k < 6; ++k) stats[7 + k] = steady_median(rec.busy[k]);
  comm.allreduce_max(stats, 13);
  // The transient of the rank whose peak is highest (the prediction's peak rank; ties: the
  // larger transient), not the largest transient of any rank: peak = persistent + transient
  // holds for one rank on both sides.
  double transient_at_peak = peak == stats[1] ? transient : 0;
  comm.allreduce_max(&transient_at_peak, 1);
  stats[2] = transient_at_peak;
  uint64_t digest = state.partial_digest();
  comm.allreduce_sum_u64(&digest, 1);

  Measured measured;
  // stats[] in the order it was filled above, then reduced (max over ranks) as one array.
  double Measured::*const from_stats[13] = {&Measured::optimizer_step_s,
                                            &Measured::gpu_peak_bytes,
                                            &Measured::gpu_transient_bytes,
                                            &Measured::alltoall_bytes_per_rank_max,
                                            &Measured::host_peak_bytes_per_rank_max,
                                            &Measured::h2d_bytes_per_gpu,
                                            &Measured::d2h_bytes_per_gpu,
                                            &Measured::busy_gpu_s,
                                            &Measured::busy_network_s,
                                            &Measured::busy_pcie_h2d_s,
                                            &Measured::busy_pcie_d2h_s,
                                            &Measured::busy_cpu_s,
                                            &Measured::nonfinite_check_s};
  for (int i = 0; i < 13; ++i) measured.*from_stats[i] = stats[i];
  measured.state_digest = hex(digest);
  measured.steps_skipped = rec.skipped;
  measured.offload = to_string(plan.options.offload);
  measured.ns_variant = opt.symmetric_ns ? "symmetric" : "plain";
  measured.device_busy_timed = backend.host_timed();
  const GemmPath gemm = backend.describe().gemm_path;
  measured.gemm_path = gemm.library;
  measured.openblas_core = gemm.openblas_core;
  if (std::optional<RuntimeMemory> rm = backend.runtime_memory()) {  // every rank or none
    double v[3] = {double(rm->pool_reserved_high_bytes), double(rm->pool_used_high_bytes),
                   double(rm->device_used_bytes)};
    comm.allreduce_max(v, 3);
    measured.runtime_memory = RuntimeMemory{size_t(v[0]), size_t(v[1]), size_t(v[2])};
  }
  return measured;
}

// The plan's refusals the executor makes before any rank allocates anything.
void check_runnable(const Plan& plan, const ExecuteOptions& opt, Communicator& comm) {
  if (plan.world != comm.size()) {
    throw InputError({}, "--plan",
                     "plan world_size " + std::to_string(plan.world) + " differs from the " +
                         std::to_string(comm.size()) +
                         " ranks running it: launch it as mpirun -np " +
                         std::to_string(plan.world) + " muonplan execute ...");
  }
  if (plan.options.optimizer == OptimizerKind::signsgd) {
    throw InputError({}, "--plan", "the executor runs muon and adamw plans, not signsgd");
  }
  check_nesterov(plan.options, "--plan");
  if (opt.steps <= 0) throw InputError({}, "--steps", "must be positive");
}

}  // namespace

// The run: lock, resume, the step loop, its statistics, the reference check, the checkpoint
// and the metrics; each part above.
ExecuteResult execute(const Plan& plan, const ExecuteOptions& opt, Backend& backend,
                      Communicator& comm) {
  check_runnable(plan, opt, comm);
  std::unique_ptr<CheckpointLock> lock;
  if (!opt.checkpoint_dir.empty()) lock = lock_checkpoint(opt, comm);
  check_shards_fit(plan, backend, comm.rank(), opt.check_reference);
  RankState state(plan, backend, comm.rank());
  state.init_params();
  int64_t first = 1;
  Resumed resumed;
  const std::string fingerprint = plan_fingerprint(plan);
  comm.set_step(0);  // loading: failure messages name the step in progress
  if (!opt.resume_dir.empty()) {
    resumed = resume_on_every_rank(state, opt, plan.world, comm);
    first = resumed.step + 1;
  }
  MuonStep step(state, comm);
  step.set_ns_variant(opt.symmetric_ns ? NsVariant::symmetric : NsVariant::plain);
  std::vector<TraceEvent> stages;  // the last step's, when tracing
  if (opt.trace) step.set_trace(&stages);
  // Every rank loaded the same step, so every rank refuses alike, before step `first`.
  int64_t last_step = 0;
  const bool wraps = __builtin_add_overflow(first - 1, opt.steps, &last_step);
  if (const std::string why =
          wraps ? checkpoint_step_message("a step past 2^63") : checkpoint_step_fault(last_step);
      !why.empty()) {
    throw InputError({}, "--steps",
                     std::to_string(opt.steps) + " steps after step " + std::to_string(first - 1) +
                         " end past the steps a checkpoint may hold: the last step: " + why);
  }
  const int64_t last = first + opt.steps - 1;
  const StepRecord rec = run_steps(state, step, opt, backend, comm, first, last);
  Measured measured = measure(rec, plan, opt, backend, comm, state);
  if (opt.check_reference) check_reference(plan, opt, state, backend, comm, last, measured);
  if (!opt.checkpoint_dir.empty()) {
    comm.set_step(last);
    save_checkpoint(opt.checkpoint_dir, comm.rank(), plan.world, last, checkpoint_plan_info(plan),
                    snapshot(state), &comm);
  }
  ExecuteResult r;
  r.last_step = last;
  if (opt.trace) r.trace = gather_trace(stages, backend, comm);
  r.metrics = {{"schema", kMetricsSchema},
               {"backend", backend.name()},
               {"world_size", plan.world},
               {"first_step", first},
               {"last_step", last},
               {"plan_fingerprint", fingerprint},
               {"measured", to_json(measured)}};
  if (!opt.resume_dir.empty()) {
    r.metrics["resumed_from"] = resumed.dir;
    r.metrics["resumed_step"] = resumed.step;
  }
  return r;
}

}  // namespace muonplan::exec
