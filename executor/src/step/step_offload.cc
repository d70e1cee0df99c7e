// The step's host and offload passes (docs/muon-step.md section 5): optimizer state staged
// to the device and back, the pinned buffers of full offload, and the gradients' fold into
// the host momentum during backward.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_kernels.h"
#include "muonplan/exec/host_kernels.h"
#include "muonplan/exec/step.h"
#include "muonplan/stage_names.h"
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
    s.hold = Buffer(backend_, len * mb);
    if (p.v) s.hold_v = Buffer(backend_, len * sizeof(float));
    base = static_cast<char*>(s.hold.ptr);
    vbase = s.hold_v.f32();
  }
  const int64_t at = whole_staging() ? off : 0;
  if (p.m) s.m = reinterpret_cast<float*>(base) + at;
  if (p.m_bf16) s.m_bf16 = reinterpret_cast<bf16*>(base) + at;
  if (p.v) s.v = vbase + at;
  if (!whole_staging()) {
    Span sp(*this, stage::kStateH2D, Resource::pcie_h2d, cur_chunk_);
    Timed t(counters_.h2d_s);
    backend_.copy_to_device(base, p.m ? static_cast<void*>(p.m + off) : p.m_bf16 + off, len * mb);
    if (p.v) backend_.copy_to_device(s.v, p.v + off, len * sizeof(float));
    counters_.h2d_bytes += len * mb + (p.v ? len * sizeof(float) : 0);
  }
  return s;
}

void MuonStep::state_out(StateSlice& s) {
  if (!s.hold.ptr) return;  // on the device already, or staged whole
  LocalParam& p = *s.p;
  const size_t mb = p.m_bf16 ? sizeof(bf16) : sizeof(float);
  Span sp(*this, stage::kStateD2H, Resource::pcie_d2h, cur_chunk_);
  Timed t(counters_.d2h_s);
  backend_.copy_to_host(p.m ? static_cast<void*>(p.m + s.off) : p.m_bf16 + s.off, s.hold.ptr,
                        s.len * mb);
  if (p.v) backend_.copy_to_host(p.v + s.off, s.v, s.len * sizeof(float));
  counters_.d2h_bytes += s.len * mb + (p.v ? s.len * sizeof(float) : 0);
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
      w.m = backend_.alloc(n * mb);
      if (p.v) w.v = static_cast<float*>(backend_.alloc(n * sizeof(float)));
      Timed t(counters_.h2d_s);
      backend_.copy_to_device(w.m, host_m, n * mb);
      if (p.v) backend_.copy_to_device(w.v, p.v, n * sizeof(float));
      counters_.h2d_bytes += n * mb + (p.v ? n * sizeof(float) : 0);
    } else {
      {
        Timed t(counters_.d2h_s);
        backend_.copy_to_host(host_m, w.m, n * mb);
        if (p.v) backend_.copy_to_host(p.v, w.v, n * sizeof(float));
        counters_.d2h_bytes += n * mb + (p.v ? n * sizeof(float) : 0);
      }
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
  {
    Timed t(counters_.device_s);
    backend_.scale_bf16_by(len, -s, u, u);  // the scalar as an argument: no pageable copy
  }
  Timed t(counters_.d2h_s);
  backend_.copy_to_host(host_update, u, len * sizeof(bf16));
  // The host reads it next: wait for this lane only, so the other batches keep running.
  backend_.synchronize_lane();
  counters_.d2h_bytes += len * sizeof(bf16);
}

// Full offload, "during backward": each Muon parameter's gradients fold into its host momentum
// as they arrive, in chunk order (docs/muon-step.md section 5, step 1).
// Full offload, during backward: every tensor's bf16 gradients to the host, widened into its
// fp32 accumulator (one micro step: the accumulator is the gradient).
void MuonStep::grads_to_host() {
  std::vector<bf16> stage;
  for (LocalParam& p : state_.params()) {
    if (!p.g_compute || p.elems() == 0) continue;
    stage.resize(static_cast<size_t>(p.elems()));
    {
      Span sp(*this, stage::kGradsD2H, Resource::pcie_d2h, nullptr);
      Timed t(counters_.d2h_s);
      backend_.copy_to_host(stage.data(), p.g_compute, stage.size() * sizeof(bf16));
      backend_.synchronize();
      counters_.d2h_bytes += stage.size() * sizeof(bf16);
    }
    Timed t(counters_.host_s);
    for (size_t i = 0; i < stage.size(); ++i) p.g[i] = to_float(stage[i]);
  }
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
