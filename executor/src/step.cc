#include "muonplan/exec/step.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "muonplan/exec/newton_schulz.h"

namespace muonplan::exec {
namespace {

// Rows [begin, end) of a tensor's dim 0 that group position j holds, within one matrix
// (a partition starting at row_offset).
Range slice_rows(const ParamTensor& t, int group_size, int j, const MatrixRef& m) {
  const Range held = chunk_range(t.shape[0], group_size, j);
  return {std::max(held.begin, m.row_offset), std::min(held.end, m.row_offset + m.rows)};
}

// Backend memory freed when it goes out of scope.
struct Buffer {
  Backend* backend = nullptr;
  void* ptr = nullptr;
  Buffer() = default;
  Buffer(Backend& b, size_t bytes) : backend(&b), ptr(bytes ? b.alloc(bytes) : nullptr) {}
  Buffer(Buffer&& o) noexcept : backend(o.backend), ptr(o.ptr) { o.ptr = nullptr; }
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(backend, o.backend);
    std::swap(ptr, o.ptr);
    return *this;
  }
  ~Buffer() {
    if (ptr) backend->free(ptr);
  }
  bf16* bf() const { return static_cast<bf16*>(ptr); }
};

}  // namespace

// A Muon batch between its two exchanges.
struct MuonStep::Flight {
  const Chunk* chunk = nullptr;
  int owned = -1;               // index of the matrix this rank owns, or -1
  std::vector<int64_t> my_pos;  // per matrix: element offset of my slice in send1/recv2
  std::vector<int64_t> my_len;  // per matrix: elements of my slice
  Buffer send1, gathered, recv2;
  std::vector<size_t> s1_bytes, s1_displs, r1_bytes, r1_displs;
  std::unique_ptr<Request> ex1, ex2;
  bool orthogonalized = false;
};

MuonStep::MuonStep(RankState& state, Communicator& comm)
    : state_(state), comm_(comm), backend_(state.backend()) {}

MuonStep::~MuonStep() = default;

float MuonStep::update_scale(int64_t rows, int64_t cols) const {
  const OptimizerHyper& h = state_.plan().options.hyper;
  const double rms = h.update_rms > 0 ? h.update_rms : state_.plan().options.schedule.update_rms;
  return static_cast<float>(h.lr * rms * std::sqrt(double(std::max(rows, cols))));
}

std::unique_ptr<MuonStep::Flight> MuonStep::start_batch(const Chunk& c) {
  const Plan& plan = state_.plan();
  const OptimizerHyper& h = plan.options.hyper;
  const int g = c.group_size, me = state_.group_position(), base = state_.rank() - me;
  const int total = static_cast<int>(c.owners.size());  // real matrices, then padding
  const int real = static_cast<int>(c.matrices.size());
  auto f = std::make_unique<Flight>();
  f->chunk = &c;
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
      const Range r = slice_rows(plan.inventory.tensors[m.tensor], g, me, m);
      f->my_pos[k] = pos;
      f->my_len[k] = std::max<int64_t>(0, r.size()) * m.cols;
      pos += f->my_len[k];
    }
    f->s1_bytes[base + j] = static_cast<size_t>(pos) * sizeof(bf16) - f->s1_displs[base + j];
  }
  f->send1 = Buffer(backend_, pos * sizeof(bf16));  // zero-filled: padding slices stay zero
  f->recv2 = Buffer(backend_, pos * sizeof(bf16));
  // Momentum straight into the send buffer (the bf16 NS input).
  for (int k = 0; k < real; ++k) {
    if (f->my_len[k] == 0) continue;
    const MatrixRef& m = c.matrices[k];
    LocalParam& p = state_.param(m.tensor);
    const Range r = slice_rows(plan.inventory.tensors[m.tensor], g, me, m);
    const int64_t off = (r.begin - p.begin) * p.entry_elems;
    bf16* u = f->send1.bf() + f->my_pos[k];
    if (p.m_bf16) {
      backend_.momentum_bf16(f->my_len[k], float(h.momentum), plan.options.nesterov, p.g + off,
                             p.m_bf16 + off, u);
    } else {
      backend_.momentum_f32(f->my_len[k], float(h.momentum), plan.options.nesterov, p.g + off,
                            p.m + off, u);
    }
  }
  // The matrix I own arrives as every holder's slice in group order: rows in order, whole.
  for (int k = 0; k < total; ++k) {
    if (c.owners[k] == me) f->owned = k;
  }
  if (f->owned >= 0) {
    const MatrixRef& m = c.matrices[std::min(f->owned, real - 1)];
    const ParamTensor& t = plan.inventory.tensors[m.tensor];
    f->gathered = Buffer(backend_, size_t(m.rows * m.cols) * sizeof(bf16));
    size_t at = 0;
    for (int j = 0; j < g; ++j) {
      const Range r = slice_rows(t, g, j, m);
      f->r1_displs[base + j] = at;
      f->r1_bytes[base + j] = size_t(std::max<int64_t>(0, r.size()) * m.cols) * sizeof(bf16);
      at += f->r1_bytes[base + j];
    }
  }
  f->ex1 = comm_.ialltoallv(f->send1.ptr, f->s1_bytes, f->s1_displs, f->gathered.ptr, f->r1_bytes,
                            f->r1_displs);
  return f;
}

void MuonStep::orthogonalize(Flight& f) {
  if (f.orthogonalized) return;
  f.orthogonalized = true;
  f.ex1->wait();
  const Plan& plan = state_.plan();
  const Chunk& c = *f.chunk;
  if (f.owned >= 0) {
    NsWorkspace ws(backend_, 1, c.rows, c.cols);
    newton_schulz(backend_, plan.options.schedule, 1, c.rows, c.cols, f.gathered.bf(), ws);
  }
  // The result goes back the way it came: r1 describes each holder's rows of my matrix.
  f.ex2 = comm_.ialltoallv(f.gathered.ptr, f.r1_bytes, f.r1_displs, f.recv2.ptr, f.s1_bytes,
                           f.s1_displs);
}

void MuonStep::finish(Flight& f) {
  orthogonalize(f);
  f.ex2->wait();
  const Plan& plan = state_.plan();
  const Chunk& c = *f.chunk;
  const float decay = float(1.0 - plan.options.hyper.lr * plan.options.hyper.weight_decay);
  const float s = update_scale(c.rows, c.cols);
  const int g = c.group_size, me = state_.group_position();
  for (size_t k = 0; k < c.matrices.size(); ++k) {
    if (f.my_len[k] == 0) continue;
    const MatrixRef& m = c.matrices[k];
    LocalParam& p = state_.param(m.tensor);
    const Range r = slice_rows(plan.inventory.tensors[m.tensor], g, me, m);
    const int64_t off = (r.begin - p.begin) * p.entry_elems;
    backend_.apply_update(f.my_len[k], decay, s, f.recv2.bf() + f.my_pos[k], p.w + off);
  }
}

void MuonStep::local_chunk(const Chunk& c) {
  const Plan& plan = state_.plan();
  const OptimizerHyper& h = plan.options.hyper;
  const MatrixRef& m = c.matrices[0];
  LocalParam& p = state_.param(m.tensor);
  const ParamTensor& t = plan.inventory.tensors[m.tensor];
  // A stack holds `count` experts of [out, in]; a replicated matrix is one entry of its rows.
  const bool stack = t.stack_dim == 0;
  const int64_t count = stack ? p.end - p.begin : (p.elems() > 0 ? 1 : 0);
  if (count == 0) return;
  const int64_t mat = m.rows * m.cols;
  const int64_t stride = stack ? p.entry_elems : 0;
  Buffer u(backend_, size_t(count * mat) * sizeof(bf16));
  for (int64_t e = 0; e < count; ++e) {
    const int64_t off = e * stride + m.row_offset * m.cols;
    if (p.m_bf16) {
      backend_.momentum_bf16(mat, float(h.momentum), plan.options.nesterov, p.g + off,
                             p.m_bf16 + off, u.bf() + e * mat);
    } else {
      backend_.momentum_f32(mat, float(h.momentum), plan.options.nesterov, p.g + off, p.m + off,
                            u.bf() + e * mat);
    }
  }
  {
    NsWorkspace ws(backend_, count, m.rows, m.cols);
    newton_schulz(backend_, plan.options.schedule, count, m.rows, m.cols, u.bf(), ws);
  }
  const float decay = float(1.0 - h.lr * h.weight_decay);
  const float s = update_scale(m.rows, m.cols);
  for (int64_t e = 0; e < count; ++e) {
    const int64_t off = e * stride + m.row_offset * m.cols;
    backend_.apply_update(mat, decay, s, u.bf() + e * mat, p.w + off);
  }
}

void MuonStep::adamw_group(int64_t step) {
  const OptimizerHyper& h = state_.plan().options.hyper;
  const double lr = h.adamw_lr > 0 ? h.adamw_lr : h.lr;
  for (LocalParam& p : state_.params()) {
    if (p.muon || p.elems() == 0) continue;
    backend_.adamw(p.elems(), float(lr), float(h.adamw_beta1), float(h.adamw_beta2),
                   float(h.adamw_eps), float(h.adamw_weight_decay), step, p.g, p.w, p.m, p.v);
  }
}

void MuonStep::run(int64_t step) {
  const Plan& plan = state_.plan();
  const size_t depth = static_cast<size_t>(std::max(1, plan.options.batches_in_flight()));
  std::deque<std::unique_ptr<Flight>> flights;
  // Retire the oldest batch; orthogonalize the next one first so its return exchange runs
  // while the oldest is applied.
  auto retire = [&]() {
    orthogonalize(*flights.front());
    if (flights.size() > 1) orthogonalize(*flights[1]);
    finish(*flights.front());
    flights.pop_front();
  };
  for (const Chunk& c : plan.chunks.chunks) {
    switch (c.kind) {
      case Chunk::Kind::muon_batch:
        if (flights.size() == depth) retire();
        flights.push_back(start_batch(c));
        break;
      case Chunk::Kind::muon_local:
        local_chunk(c);
        break;
      case Chunk::Kind::adamw_group:
        adamw_group(step);
        break;
    }
  }
  while (!flights.empty()) retire();
  backend_.synchronize();
}

}  // namespace muonplan::exec
