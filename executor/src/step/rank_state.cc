#include "muonplan/exec/rank_state.h"

#include <cstring>
#include <vector>

#include "muonplan/exec/checkpoint_entries.h"
#include "muonplan/exec/digest.h"
#include "muonplan/exec/host_kernels.h"
#include "muonplan/exec/init.h"
#include "muonplan/exec/plan_shards.h"
#include "muonplan/planfile/step_buffers.h"

namespace muonplan::exec {

// The arrays are typed: their element sizes are the ones the planner counts (step_buffers.h).
static_assert(sizeof(float) == elem_bytes::kMaster && sizeof(float) == elem_bytes::kGrad &&
              sizeof(float) == elem_bytes::kMomentumF32 &&
              sizeof(float) == elem_bytes::kSecondMoment);
static_assert(sizeof(bf16) == elem_bytes::kComputeCopy &&
              sizeof(bf16) == elem_bytes::kMomentumBf16);

RankState::RankState(const Plan& plan, Backend& backend, int rank)
    : plan_(plan), backend_(backend), rank_(rank) {
  const ParamInventory& inv = plan.inventory;
  index_.assign(inv.tensors.size(), -1);
  auto device = [&](size_t bytes) {
    void* p = backend.alloc(bytes);
    device_allocs_.push_back(p);
    return p;
  };
  auto host = [&](size_t bytes) {
    void* p = backend.alloc_host(bytes);
    host_allocs_.push_back(p);
    return p;
  };
  // `optimizer` offload's state where the plan puts it: pinned only with --pinned-state (the
  // planner predicts pageable PCIe rates otherwise). Under `full` the host kernels own it.
  const bool pageable_state =
      plan.options.offload == OffloadMode::optimizer && !plan.options.pinned_host_state;
  auto pageable = [&](size_t bytes) {
    void* p = backend.alloc_pageable(bytes);
    pageable_allocs_.push_back(p);
    return p;
  };
  auto master = [&](size_t bytes) { return master_on_host() ? host(bytes) : device(bytes); };
  for (size_t t = 0; t < inv.tensors.size(); ++t) {
    const ShardRange sr = shard_of(plan, static_cast<int>(t), rank);
    LocalParam lp;
    lp.tensor = static_cast<int>(t);
    lp.muon = inv.tensors[t].rule == UpdateRule::muon;
    lp.entry_elems = sr.row_elems;
    lp.begin = sr.begin;
    lp.end = sr.end;
    lp.primary = sr.primary;
    const size_t n = static_cast<size_t>(lp.elems());
    if (n > 0) {
      auto state = [&](size_t bytes) {
        if (!state_on_host(lp.muon)) return device(bytes);
        return pageable_state ? pageable(bytes) : host(bytes);
      };
      lp.w = static_cast<float*>(master(n * elem_bytes::kMaster));
      lp.g = static_cast<float*>(master(n * elem_bytes::kGrad));
      const StateElemBytes sb = state_elem_bytes(lp.muon, plan.options.bf16_momentum);
      if (sb.momentum == elem_bytes::kMomentumBf16) {
        lp.m_bf16 = static_cast<bf16*>(state(n * sb.momentum));
      } else {
        lp.m = static_cast<float*>(state(n * sb.momentum));
      }
      if (sb.variance > 0) lp.v = static_cast<float*>(state(n * sb.variance));
      if (policy().bf16_compute_copy) {
        lp.w_compute = static_cast<bf16*>(device(n * elem_bytes::kComputeCopy));
        lp.g_compute = static_cast<bf16*>(device(n * elem_bytes::kComputeCopy));
      }
    }
    index_[t] = static_cast<int>(params_.size());
    params_.push_back(lp);
  }
}

RankState::~RankState() {
  for (void* p : device_allocs_) backend_.free(p);
  for (void* p : host_allocs_) backend_.free_host(p);
  for (void* p : pageable_allocs_) backend_.free_pageable(p);
}

namespace {

struct FieldRef {
  const void* ptr = nullptr;
  size_t elem_bytes = 0;
  bool on_host = false;
};

FieldRef field_ref(const RankState& s, const LocalParam& p, Field f) {
  switch (f) {
    case Field::param:
      return {p.w, 4, s.master_on_host()};
    case Field::grad:
      return {p.g, 4, s.master_on_host()};
    case Field::momentum:
      return p.m_bf16 ? FieldRef{p.m_bf16, 2, s.state_on_host(p.muon)}
                      : FieldRef{p.m, 4, s.state_on_host(p.muon)};
    case Field::variance:
      return {p.v, 4, s.state_on_host(p.muon)};
  }
  return {};
}

}  // namespace

size_t RankState::field_bytes(const LocalParam& p, Field f) const {
  const FieldRef r = field_ref(*this, p, f);
  return r.ptr ? r.elem_bytes * static_cast<size_t>(p.elems()) : 0;
}

void RankState::copy_out(const LocalParam& p, Field f, void* host_dst) const {
  const FieldRef r = field_ref(*this, p, f);
  const size_t bytes = field_bytes(p, f);
  if (bytes == 0) return;
  if (r.on_host) {
    std::memcpy(host_dst, r.ptr, bytes);
  } else {
    backend_.copy_to_host(host_dst, r.ptr, bytes);
    backend_.synchronize();
  }
}

void RankState::copy_in(LocalParam& p, Field f, const void* host_src) {
  const FieldRef r = field_ref(*this, p, f);
  const size_t bytes = field_bytes(p, f);
  if (bytes == 0) return;
  if (r.on_host) {
    std::memcpy(const_cast<void*>(r.ptr), host_src, bytes);
  } else {
    backend_.copy_to_device(const_cast<void*>(r.ptr), host_src, bytes);
    backend_.synchronize();
  }
  if (f == Field::param) refresh_compute_copy(p);
}

void RankState::refresh_compute_copy(LocalParam& p) {
  if (!p.w_compute || p.elems() == 0) return;
  std::vector<bf16> cast(static_cast<size_t>(p.elems()));
  host::cast_to_bf16(p.elems(), p.w, cast.data());
  backend_.copy_to_device(p.w_compute, cast.data(), cast.size() * sizeof(bf16));
  backend_.synchronize();
}

void RankState::init_params() {
  std::vector<float> host;
  for (LocalParam& p : params_) {
    if (p.elems() == 0) continue;
    host.resize(p.elems());
    fill_param(plan_.inventory.tensors[p.tensor].name, p.global_offset(), p.elems(), host.data());
    copy_in(p, Field::param, host.data());
  }
}

void RankState::load_grads(int64_t step) {
  std::vector<float> host;
  std::vector<bf16> cast;
  for (LocalParam& p : params_) {
    if (p.elems() == 0) continue;
    host.resize(p.elems());
    fill_grad(plan_.inventory.tensors[p.tensor].name, step, p.global_offset(), p.elems(),
              host.data());
    if (!p.g_compute) {
      copy_in(p, Field::grad, host.data());
      continue;
    }
    // Where backward leaves them under full offload: bf16 on the device. The step moves them to
    // the host's fp32 accumulator (MuonStep::grads_to_host).
    cast.resize(host.size());
    host::cast_to_bf16(p.elems(), host.data(), cast.data());
    backend_.copy_to_device(p.g_compute, cast.data(), cast.size() * sizeof(bf16));
    backend_.synchronize();
  }
}

uint64_t RankState::partial_digest() const {
  uint64_t d = 0;
  std::vector<uint8_t> host;
  auto add = [&](const std::string& name, Field f, const LocalParam& p) {
    const size_t bytes = field_bytes(p, f);
    if (bytes == 0) return;
    host.resize(bytes);
    copy_out(p, f, host.data());
    d += digest_bytes(name, p.global_offset(), host.data(), bytes / p.elems(), p.elems());
  };
  for (const LocalParam& p : params_) {
    if (!p.primary) continue;
    const std::string& name = plan_.inventory.tensors[p.tensor].name;
    // The checkpoint's names (a field this tensor lacks adds nothing).
    for (const CheckpointField& f : kCheckpointFields) add(name + "/" + f.name, f.state, p);
  }
  return d;
}

}  // namespace muonplan::exec
