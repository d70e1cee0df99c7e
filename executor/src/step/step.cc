#include "muonplan/exec/step.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <stdexcept>

#include "muonplan/planfile/decay_factor.h"
#include "muonplan/planfile/stage_names.h"
#include "muonplan/planfile/step_buffers.h"
#include "step/host_pipeline.h"
#include "step/step_parts.h"

namespace muonplan::exec {

using step_detail::Buffer;
using step_detail::HostFree;
using step_detail::slice_rows;
using step_detail::Timed;

MuonStep::MuonStep(RankState& state, Communicator& comm)
    : state_(state),
      comm_(comm),
      untimed_(state.backend()),
      backend_(untimed_, {&counters_.device_s, &counters_.h2d_s, &counters_.d2h_s,
                          &counters_.h2d_bytes, &counters_.d2h_bytes}),
      checks_(untimed_, {&counters_.check_s}),
      policy_(state.policy()),
      trace_(state.plan(), state.backend()) {
  const PlanOptions& o = state.plan().options;
  check_nesterov(o, "--plan");  // execute refuses it first; a step built by hand, here
  host_ = HostPipeline::for_policy(policy_, state_, backend_, counters_, trace_);
}

MuonStep::~MuonStep() {
  if (check_sums_) backend_.free(check_sums_);  // a run() that threw
}

float MuonStep::update_scale(int64_t rows, int64_t cols) const {
  const OptimizerHyper& h = state_.plan().options.hyper;
  const double rms = h.update_rms_or(state_.plan().options.schedule);
  return static_cast<float>(h.lr * rms * std::sqrt(double(std::max(rows, cols))));
}

void MuonStep::momentum_input(LocalParam& p, int64_t off, int64_t len, bf16* u, bf16* host_stage) {
  const PlanOptions& o = state_.plan().options;
  if (host_) {
    host_->momentum_to_device(p, off, len, u, host_stage);
    return;
  }
  StateSlice s = state_in(p, off, len);
  if (s.m_bf16) {
    backend_.momentum_bf16(len, float(o.hyper.momentum), o.nesterov, p.g + off, s.m_bf16, u);
  } else {
    backend_.momentum_f32(len, float(o.hyper.momentum), o.nesterov, p.g + off, s.m, u);
  }
  state_out(s);
}

void MuonStep::apply(LocalParam& p, int64_t off, int64_t len, const bf16* o, float decay, float s,
                     const bf16* host_update, bf16* host_weights) {
  if (host_) {
    host_->apply(p, off, len, decay, host_update, host_weights);
  } else {
    backend_.apply_update(len, decay, s, o, p.w + off);
  }
}

std::unique_ptr<MuonStep::Flight> MuonStep::start_batch(const Chunk& c, int lane) {
  const Plan& plan = state_.plan();
  const int g = c.group_size, me = state_.group_position(), base = state_.rank() - me;
  const int total = static_cast<int>(c.owners.size());  // real matrices, then padding
  const int real = static_cast<int>(c.matrices.size());
  auto f = std::make_unique<Flight>();
  f->chunk = &c;
  trace_.chunk = &c;
  f->lane = lane;
  backend_.set_lane(lane);
  const size_t world = static_cast<size_t>(plan.world);
  f->s1_bytes.assign(world, 0);
  f->s1_displs.assign(world, 0);
  f->r1_bytes.assign(world, 0);
  f->r1_displs.assign(world, 0);
  f->my_pos.assign(total, 0);
  f->my_len.assign(total, 0);
  // Send layout: for each group position j, my slices of the matrices j owns, in batch order.
  int64_t pos = 0;
  for (int j = 0; j < g; ++j) {
    f->s1_displs[base + j] = static_cast<size_t>(pos) * sizeof(bf16);
    for (int k = 0; k < total; ++k) {
      if (c.owners[k] != j) continue;
      const MatrixRef& m = c.matrices[std::min(k, real - 1)];
      f->my_pos[k] = pos;
      f->my_len[k] = step_detail::slice_elems(plan, me, m);
      pos += f->my_len[k];
    }
    f->s1_bytes[base + j] = static_cast<size_t>(pos) * sizeof(bf16) - f->s1_displs[base + j];
  }
  f->my_total = pos;
  // The matrix I own arrives as every holder's slice in group order: rows in order, whole.
  for (int k = 0; k < total; ++k) {
    if (c.owners[k] == me) f->owned = k;
  }
  const MatrixRef& om = c.matrices[std::min(std::max(f->owned, 0), real - 1)];
  const BatchBuffers bytes = batch_buffers(pos, f->owned >= 0, om.rows, om.cols);
  f->send1 = Buffer(backend_, bytes.send);  // zero-filled: padding slices stay zero
  f->recv2 = Buffer(backend_, bytes.recv);
  // Momentum straight into the send buffer (the bf16 NS input).
  bf16* host_stage = host_ ? host_->staging(lane, pos).momentum : nullptr;
  std::optional<Span> sp;
  sp.emplace(trace_, momentum_stage(), momentum_resource(), &c);
  for (int k = 0; k < real; ++k) {
    if (f->my_len[k] == 0) continue;
    const MatrixRef& m = c.matrices[k];
    LocalParam& p = state_.param(m.tensor);
    const Range r = slice_rows(plan, me, m);
    const int64_t off = (r.begin - p.begin) * p.entry_elems;
    momentum_input(p, off, f->my_len[k], f->send1.bf() + f->my_pos[k],
                   host_stage ? host_stage + f->my_pos[k] : nullptr);
  }
  sp.reset();
  if (f->owned >= 0) {
    f->gathered = Buffer(backend_, bytes.gathered);
    size_t at = 0;
    for (int j = 0; j < g; ++j) {
      const Range r = slice_rows(plan, j, om);
      f->r1_displs[base + j] = at;
      f->r1_bytes[base + j] = size_t(std::max<int64_t>(0, r.size()) * om.cols) * sizeof(bf16);
      at += f->r1_bytes[base + j];
    }
  }
  f->ex1_at = trace_.now();
  f->ex1 = comm_.ialltoallv(f->send1.ptr, f->s1_bytes, f->s1_displs, f->gathered.ptr, f->r1_bytes,
                            f->r1_displs);
  return f;
}

void MuonStep::await_exchange(Request& ex, const char* what, const Chunk* c,
                              Clock::time_point started) {
  {
    Timed t(counters_.exchange_wait_s);
    ex.wait();
  }
  if (trace_.on()) trace_.record(what, Resource::network, c, started);
}

void MuonStep::orthogonalize(Flight& f) {
  if (f.orthogonalized) return;
  f.orthogonalized = true;
  backend_.set_lane(f.lane);
  await_exchange(*f.ex1, stage::kToOwners, f.chunk, f.ex1_at);
  const Plan& plan = state_.plan();
  const Chunk& c = *f.chunk;
  if (f.owned >= 0) {
    Span sp(trace_, stage::kNewtonSchulz, Resource::gpu, &c);
    NsWorkspace ws(backend_, 1, c.rows, c.cols);
    newton_schulz(backend_, plan.options.schedule, 1, c.rows, c.cols, f.gathered.bf(), ws,
                  ns_variant_);
    check_output(c, f.gathered.bf(), c.rows * c.cols);
  }
  // The result goes back the way it came: r1 describes each holder's rows of my matrix.
  f.ex2_at = trace_.now();
  f.ex2 = comm_.ialltoallv(f.gathered.ptr, f.r1_bytes, f.r1_displs, f.recv2.ptr, f.s1_bytes,
                           f.s1_displs);
}

void MuonStep::finish(Flight& f) {
  orthogonalize(f);
  backend_.set_lane(f.lane);
  await_exchange(*f.ex2, stage::kBack, f.chunk, f.ex2_at);
  const Plan& plan = state_.plan();
  const Chunk& c = *f.chunk;
  trace_.chunk = &c;
  const float decay = muon_decay_factor(plan.options.hyper.lr, plan.options.hyper.weight_decay);
  const float s = update_scale(c.rows, c.cols);
  scalar_check(s * decay, &c, "");
  const int me = state_.group_position();
  bf16 *host_update = nullptr, *host_weights = nullptr;
  if (host_ && f.my_total > 0) {
    const HostPipeline::Staging hs = host_->staging(f.lane, f.my_total);
    host_update = hs.update;
    host_weights = hs.weights;
    host_->update_to_host(f.recv2.bf(), f.my_total, s, host_update);
  }
  // Under full offload the host pipeline records its host and copy stages itself.
  Span sp(trace_, host_ ? nullptr : stage::kUpdate, Resource::gpu, &c);
  for (size_t k = 0; k < c.matrices.size(); ++k) {
    if (f.my_len[k] == 0) continue;
    const MatrixRef& m = c.matrices[k];
    LocalParam& p = state_.param(m.tensor);
    const Range r = slice_rows(plan, me, m);
    const int64_t off = (r.begin - p.begin) * p.entry_elems;
    const int64_t at = f.my_pos[k];
    apply(p, off, f.my_len[k], f.recv2.bf() + at, decay, s,
          host_update ? host_update + at : nullptr, host_weights ? host_weights + at : nullptr);
  }
}

void MuonStep::local_chunk(const Chunk& c) {
  const Plan& plan = state_.plan();
  const OptimizerHyper& h = plan.options.hyper;
  const MatrixRef& m = c.matrices[0];
  LocalParam& p = state_.param(m.tensor);
  const bool stack = plan.inventory.tensors[m.tensor].stack_dim == 0;
  const int64_t count = step_detail::local_count(state_, c);
  if (count == 0) return;
  trace_.chunk = &c;
  backend_.set_lane(0);
  const int64_t mat = m.rows * m.cols;
  const int64_t stride = stack ? p.entry_elems : 0;
  Buffer u(backend_, local_chunk_bytes(count, m.rows, m.cols));
  HostPipeline::Staging hs;
  if (host_) hs = host_->staging(0, count * mat);
  // With four batches in flight one is on lane 0 too, and its momentum copy from these buffers
  // may still be queued: the host rewrites them only after it. (A batch's buffers were last
  // used by the batch its lane retired, whose update came back through synchronize_lane.)
  if (host_) backend_.synchronize_lane();
  std::optional<Span> sp;
  sp.emplace(trace_, momentum_stage(), momentum_resource(), &c);
  for (int64_t e = 0; e < count; ++e) {
    const int64_t off = e * stride + m.row_offset * m.cols;
    momentum_input(p, off, mat, u.bf() + e * mat, host_ ? hs.momentum + e * mat : nullptr);
  }
  sp.emplace(trace_, stage::kNewtonSchulz, Resource::gpu, &c);
  {
    NsWorkspace ws(backend_, count, m.rows, m.cols);
    newton_schulz(backend_, plan.options.schedule, count, m.rows, m.cols, u.bf(), ws, ns_variant_);
    check_output(c, u.bf(), count * mat);
  }
  const float decay = muon_decay_factor(h.lr, h.weight_decay);
  const float s = update_scale(m.rows, m.cols);
  scalar_check(s * decay, &c, "");
  sp.reset();
  if (host_) host_->update_to_host(u.bf(), count * mat, s, hs.update);
  sp.emplace(trace_, host_ ? nullptr : stage::kUpdate, Resource::gpu, &c);
  for (int64_t e = 0; e < count; ++e) {
    const int64_t off = e * stride + m.row_offset * m.cols;
    apply(p, off, mat, u.bf() + e * mat, decay, s, host_ ? hs.update + e * mat : nullptr,
          host_ ? hs.weights + e * mat : nullptr);
  }
}

void MuonStep::adamw_group(int64_t step) {
  const OptimizerHyper& h = state_.plan().options.hyper;
  const float lr = float(h.adamw_lr_or_lr());
  const float b1 = float(h.adamw_beta1), b2 = float(h.adamw_beta2), eps = float(h.adamw_eps),
              wd = float(h.adamw_weight_decay);
  backend_.set_lane(0);
  for (LocalParam& p : state_.params()) {
    if (p.muon || p.elems() == 0) continue;
    scalar_check(lr + wd + b1 + b2 + eps, nullptr, state_.plan().inventory.tensors[p.tensor].name);
    if (host_) {
      const double sum = host_->adamw(p, lr, b1, b2, eps, wd, step);
      scalar_check(static_cast<float>(sum), nullptr,
                   state_.plan().inventory.tensors[p.tensor].name);
      continue;
    }
    StateSlice s = state_in(p, 0, p.elems());
    {
      Span sp(trace_, stage::kAdamwKernel, Resource::gpu, trace_.chunk);
      backend_.adamw(p.elems(), lr, b1, b2, eps, wd, step, p.g, p.w, s.m, s.v);
    }
    // Every AdamW weight finite, as every Muon update is (check_output): one read of w.
    checks_.sum_squares_f32(p.elems(), p.w,
                            check_sums_ + state_.plan().chunks.chunks.size() + p.tensor);
    state_out(s);
  }
}

void MuonStep::check_output(const Chunk& c, const bf16* x, int64_t n) {
  if (n == 0) return;
  const size_t slot = size_t(&c - state_.plan().chunks.chunks.data());
  checks_.sum_squares_bf16(1, n, x, check_sums_ + slot);
}

void MuonStep::scalar_check(float v, const Chunk* c, const std::string& tensor) {
  if (std::isfinite(v) || !nonfinite_.empty()) return;
  nonfinite_ = c ? state_.plan().inventory.tensors[c->matrices[0].tensor].name : tensor;
}

void MuonStep::run(int64_t step) {
  const Plan& plan = state_.plan();
  counters_ = {};
  nonfinite_.clear();
  trace_.start();
  // Under full offload the host AdamW runs first, during backward: its chunk is the last.
  const Chunk* adamw_chunk = nullptr;
  for (const Chunk& c : plan.chunks.chunks) {
    if (c.kind == Chunk::Kind::adamw_group) adamw_chunk = &c;
  }
  if (check_sums_) backend_.free(check_sums_);
  // One float per chunk, then one per tensor for AdamW's weights, zero-filled: chunks this rank
  // does not orthogonalize stay 0.
  const size_t slots = plan.chunks.chunks.size() + plan.inventory.tensors.size();
  const size_t check_bytes =
      nonfinite_check_bytes(plan.chunks.chunks.size(), plan.inventory.tensors.size());
  check_sums_ = static_cast<float*>(backend_.alloc(check_bytes));
  // Zero-filled on the current lane, written on every lane: no lane may write a sum before the
  // zeroing has run (a late zero-fill would erase a NaN).
  backend_.join_lanes();
  const size_t depth = step_detail::flight_depth(plan);
  if (host_) {
    host_->gradients_and_folds();  // during backward, from the bf16 gradients
    trace_.chunk = adamw_chunk;
    adamw_group(step);  // the host AdamW runs during backward too
  }
  if (whole_staging()) stage_whole_state(true);
  std::deque<std::unique_ptr<Flight>> flights;
  // Retire the oldest batch; orthogonalize the next one first so its return exchange runs
  // while the oldest is applied.
  auto retire = [&]() {
    orthogonalize(*flights.front());
    if (flights.size() > 1) orthogonalize(*flights[1]);
    finish(*flights.front());
    flights.pop_front();
  };
  int64_t started = 0;
  for (const Chunk& c : plan.chunks.chunks) {
    switch (c.kind) {
      case Chunk::Kind::muon_batch:
        if (flights.size() == depth) retire();
        flights.push_back(start_batch(c, step_detail::batch_lane(plan, started++)));
        break;
      case Chunk::Kind::muon_local:
        local_chunk(c);
        break;
      case Chunk::Kind::adamw_group:
        trace_.chunk = &c;
        if (!host_) adamw_group(step);
        break;
    }
  }
  while (!flights.empty()) retire();
  if (whole_staging()) stage_whole_state(false);
  backend_.set_lane(0);
  backend_.synchronize();
  // Reading the sums is the check's, not the step's traffic: on the unwrapped backend, timed whole.
  Timed t(counters_.check_s);
  // Into pinned memory, as every copy of the step: a pageable one would stage it (CUDA).
  const std::unique_ptr<float, HostFree> sums(static_cast<float*>(untimed_.alloc_host(check_bytes)),
                                              HostFree{&untimed_});
  untimed_.copy_to_host(sums.get(), check_sums_, check_bytes);
  untimed_.synchronize();
  untimed_.free(check_sums_);
  check_sums_ = nullptr;
  const size_t chunks = plan.chunks.chunks.size();
  for (size_t i = 0; i < slots && nonfinite_.empty(); ++i) {
    if (std::isfinite(sums.get()[i])) continue;
    nonfinite_ =
        plan.inventory.tensors[i < chunks ? plan.chunks.chunks[i].matrices[0].tensor : i - chunks]
            .name;
  }
}

}  // namespace muonplan::exec
