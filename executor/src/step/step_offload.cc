// The step's host and offload passes (docs/muon-step.md section 5): optimizer state staged
// to the device and back, the pinned buffers of full offload, and the gradients' fold into
// the host momentum during backward.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_kernels.h"
#include "muonplan/exec/host_kernels.h"
#include "muonplan/exec/step.h"
#include "muonplan/stage_names.h"
#include "muonplan/step_buffers.h"
#include "step/step_parts.h"

namespace muonplan::exec {

using step_detail::Buffer;
using step_detail::Timed;

MuonStep::StateSlice MuonStep::state_in(LocalParam& p, int64_t off, int64_t len) {
  StateSlice s;
  s.p = &p;
  s.off = off;
  s.len = len;
  const size_t mb = p.m_bf16 ? sizeof(bf16) : sizeof(float);
  if (!state_.state_on_host(p.muon)) {
    if (p.m) s.m = p.m + off;
    if (p.m_bf16) s.m_bf16 = p.m_bf16 + off;
    if (p.v) s.v = p.v + off;
    return s;
  }
  // Momentum and second moment in allocations of their own: what the planner counts, byte for
  // byte (no alignment padding between them).
  char* base = nullptr;
  float* vbase = nullptr;
  if (whole_staging()) {
    const Staged& w = whole_[&p - state_.params().data()];
    base = static_cast<char*>(w.m);
    vbase = w.v;
  } else {
    const StagedState bytes = staged_state(p.muon, p.m_bf16 != nullptr, len);
    s.hold = Buffer(backend_, bytes.momentum);
    if (p.v) s.hold_v = Buffer(backend_, bytes.variance);
    base = static_cast<char*>(s.hold.ptr);
    vbase = s.hold_v.f32();
  }
  const int64_t at = whole_staging() ? off : 0;
  if (p.m) s.m = reinterpret_cast<float*>(base) + at;
  if (p.m_bf16) s.m_bf16 = reinterpret_cast<bf16*>(base) + at;
  if (p.v) s.v = vbase + at;
  if (!whole_staging()) {
    Span sp(*this, stage::kStateH2D, Resource::pcie_h2d, cur_chunk_);
    backend_.copy_to_device(base, p.m ? static_cast<void*>(p.m + off) : p.m_bf16 + off, len * mb);
    if (p.v) backend_.copy_to_device(s.v, p.v + off, len * sizeof(float));
  }
  return s;
}

void MuonStep::state_out(StateSlice& s) {
  if (!s.hold.ptr) return;  // on the device already, or staged whole
  LocalParam& p = *s.p;
  const size_t mb = p.m_bf16 ? sizeof(bf16) : sizeof(float);
  Span sp(*this, stage::kStateD2H, Resource::pcie_d2h, cur_chunk_);
  backend_.copy_to_host(p.m ? static_cast<void*>(p.m + s.off) : p.m_bf16 + s.off, s.hold.ptr,
                        s.len * mb);
  if (p.v) backend_.copy_to_host(p.v + s.off, s.v, s.len * sizeof(float));
}

// `whole` staging (what torch's optimizer-state offload does): every state array to the
// device before the step, back after it.
void MuonStep::stage_whole_state(bool in) {
  Span sp(*this, in ? stage::kStateH2D : stage::kStateD2H,
          in ? Resource::pcie_h2d : Resource::pcie_d2h, nullptr);
  std::vector<LocalParam>& params = state_.params();
  if (in) whole_.assign(params.size(), Staged{});
  // Out: the copies run on this lane, after every lane's folds, AdamW and updates.
  if (!in) backend_.join_lanes();
  for (size_t i = 0; i < params.size(); ++i) {
    LocalParam& p = params[i];
    const int64_t n = p.elems();
    if (n == 0) continue;
    const size_t mb = p.m_bf16 ? sizeof(bf16) : sizeof(float);
    void* host_m = p.m ? static_cast<void*>(p.m) : p.m_bf16;
    Staged& w = whole_[i];
    if (in) {
      const StagedState bytes = staged_state(p.muon, p.m_bf16 != nullptr, n);
      w.m = backend_.alloc(bytes.momentum);
      if (p.v) w.v = static_cast<float*>(backend_.alloc(bytes.variance));
      backend_.copy_to_device(w.m, host_m, n * mb);
      if (p.v) backend_.copy_to_device(w.v, p.v, n * sizeof(float));
    } else {
      backend_.copy_to_host(host_m, w.m, n * mb);
      if (p.v) backend_.copy_to_host(p.v, w.v, n * sizeof(float));
      backend_.synchronize();
      backend_.free(w.m);
      if (w.v) backend_.free(w.v);
      w = Staged{};
    }
  }
  // In: the batches on the other lanes read the staged state (and its zero-fill) next.
  if (in) backend_.join_lanes();
}

MuonStep::HostStaging& MuonStep::staging(int lane, int64_t elems) {
  HostStaging& s = *staging_[lane];
  if (s.capacity < elems) {
    backend_.synchronize();  // the old buffers may still be in a copy
    s.release();
    const size_t bytes = static_cast<size_t>(elems) * sizeof(bf16);
    s.momentum = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.update = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.weights = static_cast<bf16*>(backend_.alloc_host(bytes));
    s.capacity = elems;
  }
  return s;
}

void MuonStep::scaled_update_to_host(bf16* u, int64_t len, float s, bf16* host_update) {
  Span sp(*this, stage::kUpdateD2H, Resource::pcie_d2h, cur_chunk_);
  backend_.scale_bf16_by(len, -s, u, u);  // the scalar as an argument: no pageable copy
  backend_.copy_to_host(host_update, u, len * sizeof(bf16));
  // The host reads it next: wait for this lane only, so the other batches keep running.
  backend_.synchronize_lane();
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

int64_t MuonStep::largest_share_elems() const {
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
      share = local_count(c) * c.matrices[0].rows * c.matrices[0].cols;  // local_chunk's
    }
    largest = std::max(largest, share);
  }
  return largest;
}

MuonStep::Relay MuonStep::relay() {
  if (share_elems_ < 0) share_elems_ = largest_share_elems();
  // The batches reach this capacity anyway: borrowing it allocates nothing the planner's
  // pinned_staging does not count. Nothing is in flight here (between steps, before the
  // batches), and the relay waits for its own copies before a batch reuses the buffers.
  const int64_t piece = share_elems_ > 0 ? share_elems_ : kRelayFloorElems;
  HostStaging& hs = staging(step_detail::batch_lane(state_.plan(), 0), piece);  // the first batch's
  return {{hs.momentum, hs.update}, piece};
}

// Full offload, during backward: every tensor's bf16 gradients to the host, widened into its
// fp32 accumulator (one micro step: the accumulator is the gradient). The copies land in pinned
// buffers, as the planner's PCIe rate assumes, in pieces of the relay's size: piece k + 2 is
// copied while the host widens piece k.
void MuonStep::grads_to_host() {
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
  Span sp(*this, stage::kGradsD2H, Resource::pcie_d2h, nullptr);
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
      cpu::bf16_to_f32(r.buf[k % 2], x.p->g + x.off, x.len);
    }
    if (k + 2 < pieces.size()) issue(k + 2);
  }
  backend_.set_lane(0);
}

// Cast to bf16 on the host into a pinned buffer, then to the device, a piece at a time: the
// host casts piece k + 1 while piece k crosses PCIe. (RankState::refresh_compute_copy does the
// same through pageable memory for the loads outside the step.)
void MuonStep::weights_to_device(LocalParam& p) {
  const Relay r = relay();
  Span sp(*this, stage::kWeightsH2D, Resource::pcie_h2d, cur_chunk_);
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

void MuonStep::fold_all() {
  const Plan& plan = state_.plan();
  const float mu = float(plan.options.hyper.momentum);
  std::vector<char> folded(plan.inventory.tensors.size(), 0);
  Span sp(*this, stage::kCpuFold, Resource::cpu, nullptr);
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
