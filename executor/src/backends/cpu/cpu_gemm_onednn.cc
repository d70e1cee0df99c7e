// OnednnGemm (cpu_gemm_onednn.h): oneDNN matmul primitives, cached by shape, one per row block.
#include "backends/cpu/cpu_gemm_onednn.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cpu/cpu_kernels.h"

namespace muonplan::exec::cpu {
namespace {

using dnnl::memory;
using Dims = memory::dims;

// What fixes a primitive: the block's rows, n, k, the transposes and leading dimensions (oneDNN
// compiles the strides into its kernel), alpha and beta (its output scale and sum post-op). One
// key, one kernel, whatever the calls before it: the bits of a shape never depend on the
// history of the process (a sharded rank's differs from the one-rank run's).
struct Key {
  int64_t rows, n, k;
  bool trans_a, trans_b;
  int64_t lda, ldb, ldc;
  float alpha, beta;
  auto tie() const { return std::tie(rows, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta); }
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

// A primitive with what its calls need to know. B is read as stored and each call packs what
// it reads (measured: packing B once per matrix ahead of the row blocks, with oneDNN's reorder,
// made every NS shape slower, 2 x 1024 x 1024 by half).
struct Primitive {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul matmul;
  size_t scratch_bytes = 0;
};

// One call's row blocks and their primitives.
struct Blocks {
  int64_t m, n, k, row_block;
  bool trans_a;
  const Primitive* full;  // the row_block-row blocks (null when m < row_block or k == 0)
  const Primitive* last;  // the shorter last block (null when there is none or k == 0)
};

// Per OpenMP thread: its stream, scratchpad, and zeros for k == 0.
struct ThreadState {
  std::unique_ptr<dnnl::stream> stream;
  std::vector<char> scratchpad;
  std::vector<float> zeros;
};

struct OnednnGemm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex mutex;  // guards primitives
  std::map<Key, Primitive> primitives;
  std::vector<ThreadState> threads;

  // The primitive of a row block, planned for one thread (oneDNN plans for omp_get_max_threads(),
  // set to 1 around the creation).
  const Primitive& primitive(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = primitives.find(key);
    if (it != primitives.end()) return it->second;
    const auto [rows, n, k, trans_a, trans_b, lda, ldb, ldc, alpha, beta] = key;
    const memory::desc a({rows, k}, memory::data_type::bf16, trans_a ? Dims{1, lda} : Dims{lda, 1});
    const memory::desc b({k, n}, memory::data_type::bf16, trans_b ? Dims{1, ldb} : Dims{ldb, 1});
    const memory::desc c({rows, n}, memory::data_type::bf16, Dims{ldc, 1});
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
      pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
    } catch (const dnnl::error&) {
      omp_set_num_threads(threads);
      throw;
    }
    omp_set_num_threads(threads);
    const Primitive entry{pd, dnnl::matmul(pd), pd.scratchpad_desc().get_size()};
    return primitives.emplace(key, entry).first->second;
  }

  void block(const Primitive& p, ThreadState& t, const bf16* a, const bf16* b, bf16* c) {
    const dnnl::matmul::primitive_desc& pd = p.pd;
    if (t.scratchpad.size() < p.scratch_bytes) t.scratchpad.resize(p.scratch_bytes);
    if (!t.stream) t.stream = std::make_unique<dnnl::stream>(engine);
    memory ma(pd.src_desc(), engine, const_cast<bf16*>(a));
    memory mb(pd.weights_desc(), engine, const_cast<bf16*>(b));
    memory mc(pd.dst_desc(), engine, c);
    memory ms(pd.scratchpad_desc(), engine, t.scratchpad.data());
    p.matmul.execute(*t.stream, {{DNNL_ARG_SRC, ma},
                                 {DNNL_ARG_WEIGHTS, mb},
                                 {DNNL_ARG_DST, mc},
                                 {DNNL_ARG_SCRATCHPAD, ms}});
  }
};

std::unique_ptr<OnednnGemm> OnednnGemm::create() {
  // oneDNN's bf16 matmul needs AVX-512 (F, BW, VL, DQ: its avx512_core). Decided by CPUID, not
  // by a probe primitive: the first primitive of a process costs 20-50 ms (oneDNN's setup),
  // which a process whose GEMMs all stay below kOnednnMinMacs should not pay.
  __builtin_cpu_init();
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))) {
    return nullptr;
  }
  return std::unique_ptr<OnednnGemm>(new OnednnGemm(std::make_unique<Impl>()));
}

OnednnGemm::OnednnGemm(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnednnGemm::~OnednnGemm() = default;

std::string OnednnGemm::implementation(int64_t m, int64_t n, int64_t k) {
  return impl_->primitive(Key{m, n, k, false, false, k, n, n, 1.0f, 0.0f}).pd.impl_info_str();
}

namespace {

// One task per (matrix, row block), each oneDNN call on its task's thread alone.
void run_blocks(OnednnGemm::Impl& impl, const Blocks& p, int64_t batch, float alpha,
                const MatrixBatch& a, const MatrixBatch& b, float beta, const MatrixBatch& c) {
  const int64_t blocks = (p.m + p.row_block - 1) / p.row_block;
  const bool read_c = beta != 0.0f;
#pragma omp parallel
  {
    omp_set_num_threads(1);  // this thread's oneDNN calls: one thread each
    ThreadState& t = impl.threads[omp_get_thread_num()];
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < batch * blocks; ++task) {
      const int64_t mat = task / blocks, i0 = (task % blocks) * p.row_block;
      const int64_t rows = std::min(p.row_block, p.m - i0);
      bf16* const cblock = static_cast<bf16*>(c.ptr) + mat * c.stride + i0 * c.ld;
      if (p.k == 0) {
        if (t.zeros.size() < static_cast<size_t>(p.n)) t.zeros.assign(p.n, 0.0f);
        for (int64_t i = 0; i < rows; ++i) {
          round_row(t.zeros.data(), p.n, alpha, beta, read_c, cblock + i * c.ld);
        }
      } else {
        const bf16* ablock = p.trans_a ? elem(a, mat, 0, i0) : elem(a, mat, i0, 0);
        const Primitive& prim = rows == p.row_block && p.full != nullptr ? *p.full : *p.last;
        impl.block(prim, t, ablock, elem(b, mat, 0, 0), cblock);
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
  // The primitives of the block sizes this call has (a full block may be more rows than m).
  Key key{row_block, n, k, trans_a, trans_b, a.ld, b.ld, c.ld, alpha, beta};
  const Primitive* full = k > 0 && m >= row_block ? &impl_->primitive(key) : nullptr;
  key.rows = tail;
  const Primitive* last = k > 0 && tail != row_block ? &impl_->primitive(key) : nullptr;
  impl_->threads.resize(std::max<size_t>(impl_->threads.size(), omp_get_max_threads()));
  run_blocks(*impl_, Blocks{m, n, k, row_block, trans_a, full, last}, batch, alpha, a, b, beta, c);
}

}  // namespace muonplan::exec::cpu
