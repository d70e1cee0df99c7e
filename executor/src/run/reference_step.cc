// The independent reference step (reference_step.h): docs/muon-step.md sections 1-3 and 5 as
// plain loops over whole tensors. Deliberately written without MuonStep, newton_schulz.cc or the
// Backend: a shared logic error would otherwise hide in the comparison.
#include "muonplan/exec/reference_step.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "muonplan/exec/init.h"
#include "muonplan/exec/optimizer_formulas.h"
#include "muonplan/planfile/decay_factor.h"

namespace muonplan::exec {
namespace {

// docs/muon-step.md section 3: k = 1 / (norm_scale |X| + 1e-8). Written from the doc, not taken
// from newton_schulz.h's kNsEps, so that a change there shows as a difference from this oracle.
constexpr double kReferenceNsEps = 1e-8;

// c = round_bf16(alpha * a op(b) + beta * c), one rounding per element, on fp32 copies of bf16
// values: a [m, k]; b [k, n], or [n, k] read transposed when trans_b; c [m, n], beta's operand
// on entry (not read when beta is 0: BLAS's rule). The oracle of docs/executor-numerics.md: one
// OpenBLAS sgemm over the whole matrix on exact fp32 copies of the bf16 operands, its result
// rounded to bf16. The results stay in fp32 (each exactly a bf16 value): widening them again
// for the next gemm would give the same floats, and was most of this function's time.
void gemm(bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const std::vector<float>& a,
          const std::vector<float>& b, float beta, std::vector<float>& c) {
  c.resize(size_t(m * n));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(m), int(n),
              int(k), alpha, a.data(), int(k), b.data(), int(trans_b ? k : n), beta, c.data(),
              int(n));
  for (float& v : c) v = round_bf16(v);
}

// y = x^T for x [rows, cols].
std::vector<bf16> transposed(const std::vector<bf16>& x, int64_t rows, int64_t cols) {
  std::vector<bf16> y(x.size());
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) y[size_t(j * rows + i)] = x[size_t(i * cols + j)];
  return y;
}

// The matrices Muon orthogonalizes in one tensor: (element offset, rows), each `cols` wide.
// A stack [E, out, in] is E matrices, each split along out into the tensor's partitions.
std::vector<std::pair<int64_t, int64_t>> matrices_of(const ParamTensor& t) {
  const int64_t rows = t.shape[t.shape.size() - 2], cols = t.shape.back();
  const int64_t count = t.stack_dim == 0 ? t.shape[0] : 1;
  std::vector<int64_t> parts;
  for (const Partition& p : t.partitions) parts.push_back(p.rows);
  if (parts.empty()) parts.push_back(rows);
  int64_t sum = 0;
  for (int64_t r : parts) sum += r;
  if (sum != rows) throw std::runtime_error(t.name + ": partitions do not add up to its rows");
  std::vector<std::pair<int64_t, int64_t>> out;
  for (int64_t e = 0; e < count; ++e) {
    int64_t row = 0;
    for (int64_t r : parts) {
      out.push_back({(e * rows + row) * cols, r});
      row += r;
    }
  }
  return out;
}

}  // namespace

double reference_rel_bound(int64_t steps) {
  // The bf16 noise floor of two NS implementations per step (docs/muon-step.md section 7),
  // summed over the steps as independent errors of updates that are not anti-correlated.
  constexpr double kPerStep = 0.01;
  return kPerStep * std::sqrt(double(std::max<int64_t>(steps, 1)));
}

ReferenceStep::ReferenceStep(const Plan& plan, ReferenceFault fault)
    : plan_(plan), fault_(fault), openblas_threads_(openblas_get_num_threads()) {
  openblas_set_num_threads(1);
  for (const ParamTensor& t : plan.inventory.tensors) {
    const size_t n = size_t(t.numel());
    ReferenceTensor s;
    s.w.resize(n);
    fill_param(t.name, 0, int64_t(n), s.w.data());
    if (t.rule == UpdateRule::muon && plan.options.bf16_momentum) {
      s.m_bf16.assign(n, bf16{});
    } else {
      s.m.assign(n, 0.0f);
    }
    if (t.rule == UpdateRule::adamw) s.v.assign(n, 0.0f);
    tensors_.push_back(std::move(s));
  }
}

ReferenceStep::~ReferenceStep() {
  openblas_set_num_threads(openblas_threads_);
}

void ReferenceStep::run(int64_t step) {
  // Under full offload backward leaves bf16 gradients, widened on the host (section 5).
  const bool bf16_grads = plan_.options.offload == OffloadMode::full;
  std::vector<float> g;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const ParamTensor& t = plan_.inventory.tensors[i];
    g.resize(size_t(t.numel()));
    fill_grad(t.name, step, 0, t.numel(), g.data());
    if (bf16_grads)
      for (float& x : g) x = to_float(to_bf16(x));
    if (t.rule == UpdateRule::muon) {
      muon(t, g, tensors_[i]);
    } else {
      adamw(g, tensors_[i], step);
    }
  }
}

void ReferenceStep::muon(const ParamTensor& t, const std::vector<float>& g, ReferenceTensor& s) {
  const PlanOptions& o = plan_.options;
  const OptimizerHyper& h = o.hyper;
  const float mu = float(h.momentum);
  const bool nesterov = o.nesterov != (fault_ == ReferenceFault::nesterov_inverted);
  const int64_t cols = t.shape.back();
  const float decay = muon_decay_factor(h.lr, h.weight_decay);
  const bool bf16_update = o.offload == OffloadMode::full;  // Y = bf16(-s O) travels to the host
  std::vector<bf16> u;
  for (const auto& [offset, rows] : matrices_of(t)) {
    const size_t n = size_t(rows * cols), at = size_t(offset);
    u.resize(n);
    for (size_t i = 0; i < n; ++i) {
      u[i] = s.m_bf16.empty() ? formula::momentum_f32(mu, nesterov, g[at + i], s.m[at + i])
                              : formula::momentum_bf16(mu, nesterov, g[at + i], s.m_bf16[at + i]);
    }
    newton_schulz(u, rows, cols);
    const int64_t dim =
        fault_ == ReferenceFault::scale_sqrt_min ? std::min(rows, cols) : std::max(rows, cols);
    const float scale = float(h.lr * h.update_rms_or(o.schedule) * std::sqrt(double(dim)));
    for (size_t i = 0; i < n; ++i) {
      float& w = s.w[at + i];
      if (fault_ == ReferenceFault::decay_twice) w = w * decay;
      w = bf16_update ? formula::add_update(decay, formula::scale_bf16(u[i], -scale), w)
                      : formula::apply_update(decay, scale, u[i], w);
    }
  }
}

void ReferenceStep::adamw(const std::vector<float>& g, ReferenceTensor& s, int64_t step) const {
  const OptimizerHyper& h = plan_.options.hyper;
  const formula::AdamwConstants k = formula::adamw_constants(
      float(h.adamw_lr_or_lr()), float(h.adamw_beta1), float(h.adamw_beta2), float(h.adamw_eps),
      float(h.adamw_weight_decay), step);
  for (size_t i = 0; i < g.size(); ++i) formula::adamw(k, g[i], s.w[i], s.m[i], s.v[i]);
}

void ReferenceStep::newton_schulz(std::vector<bf16>& u, int64_t rows, int64_t cols) const {
  const NsSchedule& schedule = plan_.options.schedule;
  const bool tall = rows > cols;
  const int64_t m = std::min(rows, cols), n = std::max(rows, cols);
  std::vector<bf16> x = tall ? transposed(u, rows, cols) : u;  // [m, n]
  double sum_sq = 0;
  for (bf16 e : x) sum_sq += double(to_float(e)) * double(to_float(e));
  const float k = formula::ns_scale(schedule.norm_scale, kReferenceNsEps, float(sum_sq));
  for (bf16& e : x) e = formula::scale_bf16(e, k);
  size_t iterations = schedule.steps.size();
  if (fault_ == ReferenceFault::skip_ns_iteration && iterations > 0) --iterations;
  // The iterations on fp32 copies (ns_ of this object: its capacity kept from matrix to
  // matrix); every value in them is a bf16 value, so the bf16 chain is exact.
  NsScratch& f = ns_;
  f.x.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) f.x[i] = to_float(x[i]);
  for (size_t it = 0; it < iterations; ++it) {
    const NsCoefficients& c = schedule.steps[it];
    gemm(true, m, m, n, 1.0f, f.x, f.x, 0.0f, f.a);  // A = X X^T
    f.b = f.a;                                       // B = c A A + b A
    gemm(false, m, m, m, float(c.c), f.a, f.a, float(c.b), f.b);
    f.next = f.x;  // X' = B X + a X
    gemm(false, m, n, m, 1.0f, f.b, f.x, float(c.a), f.next);
    f.x.swap(f.next);
  }
  for (size_t i = 0; i < x.size(); ++i) x[i] = to_bf16(f.x[i]);  // exact: each is a bf16 value
  u = tall ? transposed(x, m, n) : x;
}

}  // namespace muonplan::exec
