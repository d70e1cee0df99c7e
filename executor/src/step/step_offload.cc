// The step's optimizer-state offload (docs/muon-step.md section 5): the state staged to the
// device and back, per slice (`chunked`) or whole. Full offload's host passes are the host
// pipeline's (host_pipeline.cc).
#include <algorithm>
#include <cstring>

#include "muonplan/exec/step.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planfile/step_buffers.h"
#include "step/step_parts.h"

namespace muonplan::exec {

using step_detail::Buffer;

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
    Span sp(trace_, stage::kStateH2D, Resource::pcie_h2d, trace_.chunk);
    backend_.copy_to_device(base, p.m ? static_cast<void*>(p.m + off) : p.m_bf16 + off, len * mb);
    if (p.v) backend_.copy_to_device(s.v, p.v + off, len * sizeof(float));
  }
  return s;
}

void MuonStep::state_out(StateSlice& s) {
  if (!s.hold.ptr) return;  // on the device already, or staged whole
  LocalParam& p = *s.p;
  const size_t mb = p.m_bf16 ? sizeof(bf16) : sizeof(float);
  Span sp(trace_, stage::kStateD2H, Resource::pcie_d2h, trace_.chunk);
  backend_.copy_to_host(p.m ? static_cast<void*>(p.m + s.off) : p.m_bf16 + s.off, s.hold.ptr,
                        s.len * mb);
  if (p.v) backend_.copy_to_host(p.v + s.off, s.v, s.len * sizeof(float));
}

// `whole` staging (what torch's optimizer-state offload does): every state array to the
// device before the step, back after it.
void MuonStep::stage_whole_state(bool in) {
  Span sp(trace_, in ? stage::kStateH2D : stage::kStateD2H,
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

}  // namespace muonplan::exec
