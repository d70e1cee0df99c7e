#include "muonplan/exec/reference_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "muonplan/base/units.h"
#include "muonplan/exec/init.h"
#include "muonplan/exec/reference_step.h"
#include "muonplan/exec/step.h"

namespace muonplan::exec {
namespace {

// Adds one field of one tensor: mine and theirs over the same elements, init the field's
// initial values (nullptr: zeros).
void add(StateDiff& d, const std::string& name, const std::vector<float>& mine, const float* theirs,
         const float* init) {
  double num = 0, den = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (!std::isfinite(mine[i]) || !std::isfinite(theirs[i])) {
      if (d.nonfinite.empty()) d.nonfinite = name;
      continue;
    }
    const double start = init ? init[i] : 0.0;
    const double a = double(mine[i]) - start, b = double(theirs[i]) - start;
    d.max_abs = std::max(d.max_abs, std::fabs(double(mine[i]) - double(theirs[i])));
    num += (a - b) * (a - b);
    den += b * b;
  }
  if (num > 0) d.rel = std::max(d.rel, den > 0 ? std::sqrt(num / den) : INFINITY);
}

// A field of p as fp32 (bf16 momentum widened); empty when p has no such array.
std::vector<float> values(const RankState& s, const LocalParam& p, Field f) {
  const size_t bytes = s.field_bytes(p, f);
  if (bytes == 0) return {};
  const size_t n = size_t(p.elems());
  std::vector<float> out(n);
  if (bytes == n * sizeof(float)) {
    s.copy_out(p, f, out.data());
    return out;
  }
  std::vector<bf16> narrow(n);
  s.copy_out(p, f, narrow.data());
  for (size_t i = 0; i < n; ++i) out[i] = to_float(narrow[i]);
  return out;
}

std::vector<float> widened(const std::vector<bf16>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = to_float(x[i]);
  return out;
}

constexpr Field kFields[] = {Field::param, Field::momentum, Field::variance};

// Each of this rank's tensors and fields against `theirs(p, field)`: the other run's whole
// tensor for that field. Weights are compared as the change since initialization.
template <class Theirs>
StateDiff diff_each(const RankState& state, Theirs theirs) {
  StateDiff d;
  std::vector<float> init;
  for (const LocalParam& p : state.params()) {
    if (p.elems() == 0) continue;
    const std::string& name = state.plan().inventory.tensors[p.tensor].name;
    init.resize(size_t(p.elems()));
    fill_param(name, p.global_offset(), p.elems(), init.data());
    for (Field f : kFields) {
      const std::vector<float> mine = values(state, p, f);
      if (mine.empty()) continue;
      const std::vector<float> other = theirs(p, f);
      if (other.empty()) throw std::logic_error(name + ": the other run lacks a field");
      add(d, name, mine, other.data() + p.global_offset(),
          f == Field::param ? init.data() : nullptr);
    }
  }
  return d;
}

}  // namespace

StateDiff diff_against_one_rank(const RankState& state, const RankState& one) {
  return diff_each(
      state, [&](const LocalParam& p, Field f) { return values(one, one.param(p.tensor), f); });
}

StateDiff diff_against_reference(const RankState& state, const ReferenceStep& ref) {
  return diff_each(state, [&](const LocalParam& p, Field f) {
    const ReferenceTensor& r = ref.tensor(p.tensor);
    if (f == Field::param) return r.w;
    if (f == Field::variance) return r.v;
    return r.m_bf16.empty() ? r.m : widened(r.m_bf16);
  });
}

void check_reference(const Plan& plan, const ExecuteOptions& opt, const RankState& state,
                     Backend& backend, Communicator& comm, int64_t last, Measured& measured) {
  const Plan one_plan = on_one_rank(plan);
  RankState one(one_plan, backend, 0);
  one.init_params();
  const std::unique_ptr<Communicator> self = make_self_communicator(backend);
  MuonStep one_step(one, *self);
  one_step.set_ns_variant(opt.symmetric_ns ? NsVariant::symmetric : NsVariant::plain);
  ReferenceStep ref(plan);
  for (int64_t s = 1; s <= last; ++s) {
    if (s == opt.inject_nonfinite_step) continue;  // skipped by the run as well
    one.load_grads(s);
    one_step.run(s);
    ref.run(s);
  }
  const StateDiff a = diff_against_one_rank(state, one), b = diff_against_reference(state, ref);
  const std::string bad = a.nonfinite.empty() ? b.nonfinite : a.nonfinite;
  double figures[4] = {a.max_abs, a.rel, b.rel, bad.empty() ? 0.0 : 1.0};
  comm.allreduce_max(figures, 4);
  if (figures[3] > 0) {
    throw std::runtime_error("reference check failed: non-finite parameters" +
                             (bad.empty() ? std::string(" on another rank")
                                          : " in " + bad + " (sharded or reference run)"));
  }
  measured.one_rank_max_abs_diff = figures[0];
  measured.one_rank_rel_error = figures[1];
  measured.reference_rel_error = figures[2];
  const double bound = reference_rel_bound(last);
  measured.reference_rel_bound = bound;
  // Sharding changes no bits on the CPU backends (docs/executor-numerics.md, "Determinism"); on
  // CUDA the GEMM kernel may change with the batch count, so the one-rank run gets the bound.
  const bool bit_exact = backend.name().rfind("cpu", 0) == 0;
  if (bit_exact ? figures[0] != 0 : figures[1] > bound) {
    throw std::runtime_error(
        "reference check failed: the sharded run differs from the same steps on one rank by up "
        "to " +
        sig_figs(figures[0], 3) + " (relative " + sig_figs(figures[1], 3) + "); expected " +
        (bit_exact ? std::string("0 on the ") + backend.name() + " backend"
                   : "at most " + sig_figs(bound, 3)));
  }
  if (figures[2] > bound) {
    throw std::runtime_error(
        "reference check failed: the run differs from the independent "
        "reference step by " +
        sig_figs(figures[2], 3) +
        " (relative), more than "
        "the bound " +
        sig_figs(bound, 3) + " for " + std::to_string(last) + " steps");
  }
}

}  // namespace muonplan::exec
