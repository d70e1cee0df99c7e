#include "muonplan/exec/rank_state.h"

#include <vector>

#include "muonplan/exec/digest.h"
#include "muonplan/exec/init.h"

namespace muonplan::exec {

RankState::RankState(const Plan& plan, Backend& backend, int rank)
    : plan_(plan), backend_(backend), rank_(rank) {
  const ParamInventory& inv = plan.inventory;
  index_.assign(inv.tensors.size(), -1);
  for (size_t t = 0; t < inv.tensors.size(); ++t) {
    const ParamTensor& pt = inv.tensors[t];
    const Placement p = place(pt, plan.options.layout, plan.world);
    LocalParam lp;
    lp.tensor = static_cast<int>(t);
    lp.muon = pt.rule == UpdateRule::muon;
    lp.entry_elems = pt.numel() / pt.shape[0];
    if (p.kind == Placement::Kind::replicated) {
      lp.begin = 0;
      lp.end = pt.shape[0];
      lp.primary = rank == 0;
    } else {
      lp.primary = p.kind == Placement::Kind::stack_sharded || rank < p.group_size;
      const Range r =
          p.local[p.kind == Placement::Kind::stack_sharded ? rank : rank % p.group_size];
      lp.begin = r.begin;
      lp.end = r.end;
    }
    const size_t n = static_cast<size_t>(lp.elems());
    if (n > 0) {
      lp.w = static_cast<float*>(backend.alloc(n * sizeof(float)));
      lp.g = static_cast<float*>(backend.alloc(n * sizeof(float)));
      if (lp.muon && plan.options.bf16_momentum) {
        lp.m_bf16 = static_cast<bf16*>(backend.alloc(n * sizeof(bf16)));
      } else {
        lp.m = static_cast<float*>(backend.alloc(n * sizeof(float)));
      }
      if (!lp.muon) lp.v = static_cast<float*>(backend.alloc(n * sizeof(float)));
    }
    index_[t] = static_cast<int>(params_.size());
    params_.push_back(lp);
  }
}

RankState::~RankState() {
  for (LocalParam& p : params_) {
    for (void* ptr : {static_cast<void*>(p.w), static_cast<void*>(p.g), static_cast<void*>(p.m),
                      static_cast<void*>(p.m_bf16), static_cast<void*>(p.v)}) {
      if (ptr) backend_.free(ptr);
    }
  }
}

void RankState::init_params() {
  std::vector<float> host;
  for (LocalParam& p : params_) {
    if (p.elems() == 0) continue;
    host.resize(p.elems());
    fill_param(plan_.inventory.tensors[p.tensor].name, p.global_offset(), p.elems(), host.data());
    backend_.copy_to_device(p.w, host.data(), host.size() * sizeof(float));
  }
}

void RankState::load_grads(int64_t step) {
  std::vector<float> host;
  for (LocalParam& p : params_) {
    if (p.elems() == 0) continue;
    host.resize(p.elems());
    fill_grad(plan_.inventory.tensors[p.tensor].name, step, p.global_offset(), p.elems(),
              host.data());
    backend_.copy_to_device(p.g, host.data(), host.size() * sizeof(float));
  }
}

uint64_t RankState::partial_digest() const {
  uint64_t d = 0;
  std::vector<uint8_t> host;
  auto add = [&](const std::string& name, const void* ptr, size_t elem_bytes, const LocalParam& p) {
    if (!ptr || p.elems() == 0) return;
    host.resize(p.elems() * elem_bytes);
    backend_.copy_to_host(host.data(), ptr, host.size());
    d += digest_bytes(name, p.global_offset(), host.data(), elem_bytes, p.elems());
  };
  for (const LocalParam& p : params_) {
    if (!p.primary) continue;
    const std::string& name = plan_.inventory.tensors[p.tensor].name;
    add(name + "/param", p.w, 4, p);
    add(name + "/momentum", p.m ? static_cast<const void*>(p.m) : p.m_bf16, p.m ? 4 : 2, p);
    add(name + "/variance", p.v, 4, p);
  }
  return d;
}

}  // namespace muonplan::exec
