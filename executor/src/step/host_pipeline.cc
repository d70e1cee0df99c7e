// Full offload's host pipeline (host_pipeline.h): the host passes, the pinned buffers they go
// through, and the relay of gradients and weights across PCIe during backward.
#include "step/host_pipeline.h"

#include <algorithm>
#include <stdexcept>

#include "muonplan/exec/host_kernels.h"
#include "muonplan/planfile/stage_names.h"
#include "step/step_parts.h"

namespace muonplan::exec {

using step_detail::Timed;

// One lane's pinned buffers (Staging), grown as a larger chunk needs them.
struct HostPipeline::LaneBuffers {
  Backend* backend = nullptr;
  int64_t capacity = 0;  // elements of each buffer
  Staging bufs;
  ~LaneBuffers() { release(); }
  void release() {
    for (bf16* p : {bufs.momentum, bufs.update, bufs.weights}) backend->free_host(p);
    bufs = Staging{};
    capacity = 0;
  }
};

std::unique_ptr<HostPipeline> HostPipeline::for_policy(const OffloadPolicy& policy,
                                                       RankState& state, Backend& backend,
                                                       StepCounters& counters, StepTrace& trace) {
  const bool host = policy.host_fold;
  if (policy.host_apply != host || policy.host_adamw != host || policy.bf16_compute_copy != host) {
    throw std::invalid_argument(
        "offload policy: the host pipeline folds, applies and runs AdamW together, from the bf16 "
        "compute copy's gradients");
  }
  return host ? std::make_unique<HostPipeline>(state, backend, counters, trace) : nullptr;
}

HostPipeline::HostPipeline(RankState& state, Backend& backend, StepCounters& counters,
                           StepTrace& trace)
    : state_(state), backend_(backend), counters_(counters), trace_(trace) {
  for (int i = 0; i < Backend::kMaxLanes; ++i) lanes_.push_back(std::make_unique<LaneBuffers>());
  for (auto& l : lanes_) l->backend = &backend_;
}

HostPipeline::~HostPipeline() = default;

void HostPipeline::gradients_and_folds() {
  grads_to_host();
  fold_all();  // from the gradients just widened
}

void HostPipeline::momentum_to_device(LocalParam& p, int64_t off, int64_t len, bf16* u,
                                      bf16* host_stage) {
  // Folded on the host already (fold_all); the bf16 copy goes to the device.
  const bf16* src = p.m_bf16 ? p.m_bf16 + off : host_stage;
  if (!p.m_bf16) {
    Timed t(counters_.host_s);
    host::cast_to_bf16(len, p.m + off, host_stage);
  }
  backend_.copy_to_device(u, src, len * sizeof(bf16));
}

void HostPipeline::update_to_host(bf16* u, int64_t len, float s, bf16* host_update) {
  Span sp(trace_, stage::kUpdateD2H, Resource::pcie_d2h, trace_.chunk);
  backend_.scale_bf16_by(len, -s, u, u);  // the scalar as an argument: no pageable copy
  backend_.copy_to_host(host_update, u, len * sizeof(bf16));
  // The host reads it next: wait for this lane only, so the other batches keep running.
  backend_.synchronize_lane();
}

void HostPipeline::apply(LocalParam& p, int64_t off, int64_t len, float decay,
                         const bf16* host_update, bf16* host_weights) {
  {
    Span sp(trace_, stage::kCpuApply, Resource::cpu, trace_.chunk);
    Timed t(counters_.host_s);
    host::add_update_bf16(len, decay, host_update, p.w + off);
    host::cast_to_bf16(len, p.w + off, host_weights);
  }
  Span sp(trace_, stage::kWeightsH2D, Resource::pcie_h2d, trace_.chunk);
  backend_.copy_to_device(p.w_compute + off, host_weights, len * sizeof(bf16));
}

double HostPipeline::adamw(LocalParam& p, float lr, float b1, float b2, float eps, float wd,
                           int64_t step) {
  {
    Span sp(trace_, stage::kCpuAdamw, Resource::cpu, trace_.chunk);
    Timed t(counters_.host_s);
    host::adamw(p.elems(), lr, b1, b2, eps, wd, step, p.g, p.w, p.m, p.v);
  }
  double sum = 0;
  {
    Timed t(counters_.check_s);
    sum = host::sum_squares_f32(p.elems(), p.w);
  }
  weights_to_device(p);
  return sum;
}

HostPipeline::Staging HostPipeline::staging(int lane, int64_t elems) {
  LaneBuffers& s = *lanes_[lane];
  if (s.capacity < elems) {
    backend_.synchronize();  // the old buffers may still be in a copy
    s.release();
    const size_t bytes = static_cast<size_t>(elems) * sizeof(bf16);
    s.bufs.momentum = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.bufs.update = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.bufs.weights = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.capacity = elems;
  }
  return s.bufs;
}

namespace {

// The relay's two buffers take turns on these two lanes, so waiting for one buffer's copy
// (synchronize_lane) does not wait for the other's: the host fills or drains one piece while
// the next one crosses PCIe.
constexpr int kRelayLanes[2] = {0, 1};

// A rank with no share of any Muon chunk still relays its AdamW tensors: through buffers of
// this many elements (3 x 128 KiB), which the planner's pinned_staging leaves out.
constexpr int64_t kRelayFloorElems = int64_t{1} << 16;

}  // namespace

int64_t HostPipeline::largest_share_elems() const {
  const Plan& plan = state_.plan();
  const int me = state_.group_position();
  int64_t largest = 0;
  for (const Chunk& c : plan.chunks.chunks) {
    if (c.kind == Chunk::Kind::adamw_group || c.matrices.empty()) continue;
    int64_t share = 0;
    if (c.kind == Chunk::Kind::muon_batch) {
      // start_batch's send layout: my rows of every owner's matrix, padding entries included.
      const size_t real = c.matrices.size();
      for (size_t k = 0; k < c.owners.size(); ++k) {
        share += step_detail::slice_elems(plan, me, c.matrices[std::min(k, real - 1)]);
      }
    } else {
      share = step_detail::local_count(state_, c) * c.matrices[0].rows *
              c.matrices[0].cols;  // local_chunk's
    }
    largest = std::max(largest, share);
  }
  return largest;
}

HostPipeline::Relay HostPipeline::relay() {
  if (share_elems_ < 0) share_elems_ = largest_share_elems();
  // The batches reach this capacity anyway: borrowing it allocates nothing the planner's
  // pinned_staging does not count. Nothing is in flight here (between steps, before the
  // batches), and the relay waits for its own copies before a batch reuses the buffers.
  const int64_t piece = share_elems_ > 0 ? share_elems_ : kRelayFloorElems;
  const Staging hs =
      staging(step_detail::batch_lane(state_.plan(), 0), piece);  // the first batch's
  return {{hs.momentum, hs.update}, piece};
}

// Full offload, during backward: every tensor's bf16 gradients to the host, widened into its
// fp32 accumulator (one micro step: the accumulator is the gradient). The copies land in pinned
// buffers, as the planner's PCIe rate assumes, in pieces of the relay's size: piece k + 2 is
// copied while the host widens piece k.
void HostPipeline::grads_to_host() {
  struct Piece {
    LocalParam* p;
    int64_t off, len;
  };
  const Relay r = relay();
  std::vector<Piece> pieces;
  for (LocalParam& p : state_.params()) {
    if (!p.g_compute) continue;
    for (int64_t off = 0; off < p.elems(); off += r.piece_elems) {
      pieces.push_back({&p, off, std::min(r.piece_elems, p.elems() - off)});
    }
  }
  Span sp(trace_, stage::kGradsD2H, Resource::pcie_d2h, nullptr);
  const auto issue = [&](size_t k) {
    const Piece& x = pieces[k];
    backend_.set_lane(kRelayLanes[k % 2]);
    backend_.copy_to_host(r.buf[k % 2], x.p->g_compute + x.off, size_t(x.len) * sizeof(bf16));
  };
  for (size_t k = 0; k < std::min<size_t>(2, pieces.size()); ++k) issue(k);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Piece& x = pieces[k];
    backend_.set_lane(kRelayLanes[k % 2]);
    backend_.synchronize_lane();
    {
      Timed t(counters_.host_s);
      host::widen_bf16(x.len, r.buf[k % 2], x.p->g + x.off);
    }
    if (k + 2 < pieces.size()) issue(k + 2);
  }
  backend_.set_lane(0);
}

// Cast to bf16 on the host into a pinned buffer, then to the device, a piece at a time: the
// host casts piece k + 1 while piece k crosses PCIe. (RankState::refresh_compute_copy does the
// same through pageable memory for the loads outside the step.)
void HostPipeline::weights_to_device(LocalParam& p) {
  const Relay r = relay();
  Span sp(trace_, stage::kWeightsH2D, Resource::pcie_h2d, trace_.chunk);
  int turn = 0;
  for (int64_t off = 0; off < p.elems(); off += r.piece_elems, turn ^= 1) {
    const int64_t len = std::min(r.piece_elems, p.elems() - off);
    backend_.set_lane(kRelayLanes[turn]);
    backend_.synchronize_lane();  // this buffer's previous copy has left it
    {
      Timed t(counters_.host_s);
      host::cast_to_bf16(len, p.w + off, r.buf[turn]);
    }
    backend_.copy_to_device(p.w_compute + off, r.buf[turn], size_t(len) * sizeof(bf16));
  }
  // The batches rewrite these buffers from the host: every copy out of them is done first.
  for (int lane : kRelayLanes) {
    backend_.set_lane(lane);
    backend_.synchronize_lane();
  }
  backend_.set_lane(0);
}

void HostPipeline::fold_all() {
  const Plan& plan = state_.plan();
  const float mu = float(plan.options.hyper.momentum);
  std::vector<char> folded(plan.inventory.tensors.size(), 0);
  Span sp(trace_, stage::kCpuFold, Resource::cpu, nullptr);
  Timed t(counters_.host_s);
  for (const Chunk& c : plan.chunks.chunks) {
    for (const MatrixRef& m : c.matrices) {
      if (folded[m.tensor]) continue;
      folded[m.tensor] = 1;
      LocalParam& p = state_.param(m.tensor);
      if (p.elems() == 0) continue;
      if (p.m_bf16) {
        host::fold_momentum_bf16(p.elems(), mu, 1.0f, p.g, p.m_bf16);
      } else {
        host::fold_momentum_f32(p.elems(), mu, 1.0f, p.g, p.m);
      }
    }
  }
}

}  // namespace muonplan::exec
