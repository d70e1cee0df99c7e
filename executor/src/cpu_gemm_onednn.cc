// OnednnGemm (cpu_gemm_onednn.h): oneDNN matmul primitives, cached by shape, one per row block.
#include "cpu_gemm_onednn.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "cpu_kernels.h"

namespace muonplan::exec::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

constexpr size_t kPackBudgetBytes = size_t{64} << 20;  // packed B of a group of matrices

// What fixes a primitive: the block's rows, n, k, the transposes and leading dimensions (oneDNN
// compiles the strides into its kernel), alpha and beta (its output scale and sum post-op), and
// whether B's packed layout is the full block's (`shared`) or oneDNN's choice: one key, one
// kernel, whatever the calls before it, so the bits of a shape never depend on the history of
// the process (a sharded rank's differs from the one-rank run's).
struct Key {
  int64_t rows, n, k;
  bool trans_a, trans_b;
  int64_t lda, ldb, ldc;
  float alpha, beta;
  bool shared;
  auto tie() const {
    return std::tie(rows, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta, shared);
  }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

const bf16* elem(const MatrixBatch& x, int64_t mat, int64_t row, int64_t col) {
  return static_cast<const bf16*>(x.ptr) + mat * x.stride + row * x.ld + col;
}

// k == 0 (no oneDNN call): C = bf16(alpha * 0 + beta * C) on one row, each operation rounded as
// written (no FMA: the
// library builds with -ffp-contract=off); beta == 0 never reads C.
void round_row(const float* acc, int64_t n, float alpha, float beta, bool read_c, bf16* out) {
  if (read_c) {
    for (int64_t j = 0; j < n; ++j) out[j] = to_bf16(alpha * acc[j] + beta * to_float(out[j]));
  } else {
    for (int64_t j = 0; j < n; ++j) out[j] = to_bf16(alpha * acc[j]);
  }
}

}  // namespace

// A primitive with what its calls need to know. B is packed once per matrix into the layout
// the primitive asked for (`pack`, from B's own strides), not once per row block inside each
// call: on 2048^3 that packing, repeated for every block, took most of the time.
struct Primitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  size_t scratch_bytes = 0;
  memory::desc plain_b;  // B as stored
  dnnl::reorder pack;    // plain_b -> pd.weights_desc()
  size_t packed_bytes = 0;
};

// One call's row blocks: their primitives and where each matrix's packed B lies.
struct Blocks {
  int64_t m, n, k, row_block;
  bool trans_a;
  const Primitive* full;  // the row_block-row blocks (null when m < row_block or k == 0)
  const Primitive* last;  // the shorter last block (null when there is none or k == 0)
  bool shared_pack;       // last reads full's packed B
  size_t per_matrix, full_bytes;
};

// Per OpenMP thread: its stream, scratchpad, and zeros for k == 0.
struct ThreadState {
  std::unique_ptr<dnnl::stream> stream;
  std::vector<char> scratchpad;
  std::vector<float> acc;
};

struct OnednnGemm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;  // guards primitives
  std::map<Key, Primitive> primitives;
  std::vector<ThreadState> threads;
  std::unique_ptr<dnnl::stream> caller_stream;
  std::set<Key> no_shared_pack;  // tail blocks oneDNN refused the full block's layout for
  std::vector<char> packed;      // B of a group of matrices, in the primitives' layouts

  // The primitive of a row block, planned for one thread (oneDNN plans for omp_get_max_threads(),
  // set to 1 around the creation). B's packed layout is oneDNN's choice, or `packed_b`'s.
  const Primitive& primitive(const Key& key, const memory::desc* packed_b = nullptr) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = primitives.find(key);
    if (it != primitives.end()) return it->second;
    const auto [rows, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta, shared] = key;
    (void)shared;  // packed_b != nullptr
    const memory::desc a({rows, k}, memory::data_type::bf16, trans_a ? Dims{1, lda} : Dims{lda, 1});
    const memory::desc b({k, n}, memory::data_type::bf16, trans_b ? Dims{1, ldb} : Dims{ldb, 1});
    const memory::desc c({rows, n}, memory::data_type::bf16, Dims{ldc, 1});
    const memory::desc any_b({k, n}, memory::data_type::bf16, memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per thread, ours
    // C = bf16(alpha * AB + beta * C), rounded once by oneDNN (nearest even); C is read only
    // when beta != 0 (the sum post-op).
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    dnnl::matmul::primitive_desc pd;
    try {
      pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(a, packed_b != nullptr ? *packed_b : any_b, c), attr, engine);
    } catch (const dnnl::error&) {
      omp_set_num_threads(threads);
      throw;
    }
    omp_set_num_threads(threads);
    const dnnl::reorder::primitive_desc pack(engine, b, engine, pd.weights_desc());
    const Primitive entry{pd, dnnl::matmul(pd),    pd.scratchpad_desc().get_size(),
                          b,  dnnl::reorder(pack), pd.weights_desc().get_size()};
    return primitives.emplace(key, entry).first->second;
  }

  // B of one matrix into p's layout, on all threads (a copy: no bits depend on them).
  void pack(const Primitive& p, const bf16* b, char* packed) {
    if (!caller_stream) caller_stream = std::make_unique<dnnl::stream>(engine);
    memory from(p.plain_b, engine, const_cast<bf16*>(b));
    memory to(p.pd.weights_desc(), engine, packed);
    p.pack.execute(*caller_stream, from, to);
  }

  void block(const Primitive& p, ThreadState& t, const bf16* a, const void* packed_b, bf16* c) {
    const dnnl::matmul::primitive_desc& pd = p.pd;
    if (t.scratchpad.size() < p.scratch_bytes) t.scratchpad.resize(p.scratch_bytes);
    if (!t.stream) t.stream = std::make_unique<dnnl::stream>(engine);
    memory ma(pd.src_desc(), engine, const_cast<bf16*>(a));
    memory mb(pd.weights_desc(), engine, const_cast<void*>(packed_b));
    memory mc(pd.dst_desc(), engine, c);
    memory ms(pd.scratchpad_desc(), engine, t.scratchpad.data());
    p.matmul.execute(*t.stream, {{DNNL_ARG_SRC, ma},
                                 {DNNL_ARG_WEIGHTS, mb},
                                 {DNNL_ARG_DST, mc},
                                 {DNNL_ARG_SCRATCHPAD, ms}});
  }
};

std::unique_ptr<OnednnGemm> OnednnGemm::create() {
  try {
    auto impl = std::make_unique<Impl>();
    // A probe: oneDNN refuses bf16 matmul on CPUs without AVX-512 (it has no bf16 kernel there).
    std::unique_ptr<OnednnGemm> gemm(new OnednnGemm(std::move(impl)));
    gemm->implementation(16, 16, 16);
    return gemm;
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

OnednnGemm::OnednnGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnGemm::~OnednnGemm() = default;

std::string OnednnGemm::implementation(int64_t m, int64_t n, int64_t k) {
  return impl_->primitive(Key{m, n, k, false, false, k, n, n, 1.0f, 0.0f, false})
      .pd.impl_info_str();
}

namespace {

// One task per (matrix, row block) of a group, each oneDNN call on its task's thread alone.
void run_blocks(OnednnGemm::Impl& impl, const Blocks& p, int64_t g0, int64_t gn, float alpha,
                const MatrixBatch& a, float beta, const MatrixBatch& c) {
  const int64_t blocks = (p.m + p.row_block - 1) / p.row_block;
  const bool read_c = beta != 0.0f;
  const char* const packs = impl.packed.data();
#pragma omp parallel
  {
    omp_set_num_threads(1);  // this thread's oneDNN calls: one thread each
    ThreadState& t = impl.threads[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < gn * blocks; ++task) {
      const int64_t j = task / blocks, mat = g0 + j, i0 = (task % blocks) * p.row_block;
      const int64_t rows = std::min(p.row_block, p.m - i0);
      bf16* const cblock = static_cast<bf16*>(c.ptr) + mat * c.stride + i0 * c.ld;
      if (p.k == 0) {
        if (t.acc.size() < static_cast<size_t>(p.n)) t.acc.assign(p.n, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          round_row(t.acc.data(), p.n, alpha, beta, read_c, cblock + i * c.ld);
        }
      } else {
        const bool is_full = rows == p.row_block && p.full != nullptr;
        const size_t offset = j * p.per_matrix + (is_full || p.shared_pack ? 0 : p.full_bytes);
        const bf16* ablock = p.trans_a ? elem(a, mat, 0, i0) : elem(a, mat, i0, 0);
        impl.block(is_full ? *p.full : *p.last, t, ablock, packs + offset, cblock);
      }
    }
  }
}

}  // namespace

void OnednnGemm::run(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                     const MatrixBatch& c) {
  const int64_t row_block = onednn_row_block(m), blocks = (m + row_block - 1) / row_block;
  const int64_t tail = m - (blocks - 1) * row_block;
  // The primitives of the block sizes this call has (a full block may be more rows than m); the
  // tail block takes the full block's packed B where oneDNN accepts that layout for it.
  const Primitive* full = nullptr;
  const Primitive* last = nullptr;
  if (k > 0 && m >= row_block) {
    full = &impl_->primitive(
        Key{row_block, n, k, trans_a, trans_b, a.ld, b.ld, c.ld, alpha, beta, false});
  }
  if (k > 0 && tail != row_block) {
    const Key shared{tail, n, k, trans_a, trans_b, a.ld, b.ld, c.ld, alpha, beta, true};
    if (full != nullptr && impl_->no_shared_pack.count(shared) == 0) {
      const memory::desc packed = full->pd.weights_desc();
      try {
        last = &impl_->primitive(shared, &packed);
      } catch (const dnnl::error&) {
        impl_->no_shared_pack.insert(shared);  // asked once per shape
      }
    }
    if (last == nullptr)
      last = &impl_->primitive(
          Key{tail, n, k, trans_a, trans_b, a.ld, b.ld, c.ld, alpha, beta, false});
  }
  const bool shared_pack =
      full == nullptr || last == nullptr || last->pd.weights_desc() == full->pd.weights_desc();
  const size_t full_bytes = full != nullptr ? full->packed_bytes : 0;
  const size_t per_matrix = full_bytes + (shared_pack ? 0 : last->packed_bytes) +
                            (full == nullptr && last != nullptr ? last->packed_bytes : 0);
  const int64_t group =
      per_matrix == 0 ? batch : std::clamp<int64_t>(kPackBudgetBytes / per_matrix, 1, batch);
  if (impl_->packed.size() < group * per_matrix) impl_->packed.resize(group * per_matrix);
  const Blocks plan{m, n, k, row_block, trans_a, full, last, shared_pack, per_matrix, full_bytes};
  impl_->threads.resize(std::max<size_t>(impl_->threads.size(), omp_get_max_threads()));
  for (int64_t g0 = 0; g0 < batch; g0 += group) {
    const int64_t gn = std::min(group, batch - g0);
    // Packed B of matrix j of the group: the full block's at j * per_matrix, the tail's after it
    // (or the same one).
    char* const packs = impl_->packed.data();
    for (int64_t j = 0; j < gn; ++j) {
      const bf16* bm = elem(b, g0 + j, 0, 0);
      if (full != nullptr) impl_->pack(*full, bm, packs + j * per_matrix);
      if (last != nullptr && (full == nullptr || !shared_pack)) {
        impl_->pack(*last, bm, packs + j * per_matrix + full_bytes);
      }
    }
    run_blocks(*impl_, plan, g0, gn, alpha, a, beta, c);
  }
}

}  // namespace muonplan::exec::cpu
