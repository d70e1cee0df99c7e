// The sharded Muon step (docs/muon-step.md sections 2-5), written once for every backend,
// communicator and offload mode: momentum on each rank's shards, the all-to-all of each batch
// to its owners, Newton-Schulz on the owner, the all-to-all back, the scaled update with
// decoupled weight decay; local NS for expert stacks and replicated matrices; AdamW for the
// rest. Up to the plan's batches_in_flight batches are between their exchanges at once, so one
// batch's communication overlaps another's NS.
//
// Offload (the plan's mode; RankState says where each array lives):
//   none       everything on the device.
//   optimizer  momentum and AdamW moments live in host memory and are staged to the device,
//              either whole for the step (`whole` staging) or per slice as each chunk uses
//              them (`chunked`); the device math is that of `none`, so the bits are too.
//   full       the host folds the momentum as the gradients arrive and runs AdamW; per Muon
//              batch (two in flight) the bf16 momentum goes to the device, takes the same NS
//              and exchange path, comes back as the bf16 update -s * NS(M), and the host adds
//              it into the fp32 master (with weight decay) and sends the new bf16 weights.
//              These host passes are the HostPipeline's (step/host_pipeline.h), which the step
//              holds only under this mode.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/newton_schulz.h"
#include "muonplan/exec/rank_state.h"
#include "muonplan/exec/step_trace.h"
#include "muonplan/exec/timed_backend.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planfile/trace.h"

namespace muonplan::exec {

class HostPipeline;

// Where the last run() spent its time, by the planner's resources (cost_model.h), and what it
// copied. Seconds are host wall time inside each kind of call: real work on the CPU backend,
// mostly launch time on a device backend (whose kernels run asynchronously).
struct StepCounters {
  double device_s = 0;          // momentum, NS, update and AdamW on the backend
  double exchange_wait_s = 0;   // waiting for all-to-alls (exposed communication)
  double h2d_s = 0, d2h_s = 0;  // copies between host and device memory
  double host_s = 0;            // host kernels (offload): fold, AdamW, update add, casts
  uint64_t h2d_bytes = 0, d2h_bytes = 0;
  double check_s = 0;  // the non-finite check: NS-output reductions and reading them back
};

class MuonStep {
 public:
  // Throws std::invalid_argument for a plan the step cannot run (Nesterov under full offload).
  MuonStep(RankState& state, Communicator& comm);
  ~MuonStep();

  // One optimizer step over every chunk of the plan with the gradients in state. `step` is
  // 1-based (AdamW bias correction).
  void run(int64_t step);
  const StepCounters& counters() const { return counters_; }
  // After run(): the first tensor whose update was not finite on this rank ("" if none). Each
  // Muon chunk's Newton-Schulz output is reduced once (a sum of squares, NaN/Inf propagate)
  // and the update scales and AdamW rates are checked, so a diverging schedule or an
  // overflowing learning rate is caught in the step that produced it (docs/reliability.md).
  const std::string& nonfinite_tensor() const { return nonfinite_; }
  // Plain NS, or the symmetric-product variant (one triangle of X X^T and A A).
  void set_ns_variant(NsVariant v) { ns_variant_ = v; }
  // Each run() replaces `sink`'s contents with its stages, named and timed as the planner's
  // predicted schedule names them (trace.h), from the start of the run; nullptr (the default)
  // records nothing and reads no clock.
  void set_trace(std::vector<TraceEvent>* sink) { trace_.set_sink(sink); }

 private:
  struct Flight;
  struct StateSlice;
  using Clock = StepTrace::Clock;
  // Waits for exchange `ex` of chunk c, started at `started`: exposed communication, counted in
  // exchange_wait_s, and traced as stage `what` on the network.
  void await_exchange(Request& ex, const char* what, const Chunk* c, Clock::time_point started);
  // The momentum stage as the planner names it: on the device, or (full offload, folded on the
  // host already) the bf16 copy going to it.
  const char* momentum_stage() const { return host_ ? stage::kMomentumH2D : stage::kMomentum; }
  Resource momentum_resource() const { return host_ ? Resource::pcie_h2d : Resource::gpu; }
  std::unique_ptr<Flight> start_batch(const Chunk& chunk, int lane);
  void orthogonalize(Flight& f);
  void finish(Flight& f);
  void local_chunk(const Chunk& chunk);
  void adamw_group(int64_t step);
  float update_scale(int64_t rows, int64_t cols) const;
  // The bf16 NS input of elements [off, off + len) of p, written to u (device memory).
  void momentum_input(LocalParam& p, int64_t off, int64_t len, bf16* u, bf16* host_stage);
  // Adds the orthogonalized o (device; for full offload already scaled to -s * NS and copied
  // to host_update) into elements [off, off + len) of p.
  void apply(LocalParam& p, int64_t off, int64_t len, const bf16* o, float decay, float s,
             const bf16* host_update, bf16* host_weights);
  StateSlice state_in(LocalParam& p, int64_t off, int64_t len);
  void state_out(StateSlice& slice);
  void stage_whole_state(bool in);
  // Reduces n bf16 NS outputs of `chunk` into its check slot (device memory).
  void check_output(const Chunk& chunk, const bf16* x, int64_t n);
  void scalar_check(float v, const Chunk* chunk, const std::string& tensor);

  RankState& state_;
  Communicator& comm_;
  StepCounters counters_;
  // The rank's backend, and the step's view of it (timed_backend.h): every call the step makes
  // goes through backend_, which counts its time and bytes in counters_; checks_ counts the
  // non-finite check's reductions in check_s. untimed_ only reads the check sums back.
  Backend& untimed_;
  TimedBackend backend_;
  TimedBackend checks_;
  // Where each array lives and what moves (offload_policy.h): the step's only view of the mode.
  const OffloadPolicy& policy_;
  bool whole_staging() const { return policy_.staging == OffloadStaging::whole; }
  struct Staged {        // a param's state on the device under `whole` staging
    void* m = nullptr;   // momentum / first moment (fp32 or bf16)
    float* v = nullptr;  // second moment (AdamW)
  };
  std::vector<Staged> whole_;
  StepTrace trace_;
  // Full offload's host passes (host_pipeline.h), chosen once from the policy; null otherwise.
  std::unique_ptr<HostPipeline> host_;
  NsVariant ns_variant_ = NsVariant::plain;
  float* check_sums_ = nullptr;  // device: one sum of squares per chunk, read after the step
  std::string nonfinite_;
};

}  // namespace muonplan::exec
