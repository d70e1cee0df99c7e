// The CUDA backend (cuda_backend.h): cuBLAS GEMMs, the kernels of cuda_kernels.cu, a
// stream-ordered memory pool, one stream and one cuBLAS handle per lane.
#include "muonplan/exec/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "cublas_loader.h"
#include "cuda_check.h"
#include "cuda_kernels.h"

namespace muonplan::exec {
namespace {

using cuda::check;

constexpr size_t kBlasWorkspaceBytes = size_t{32} << 20;  // per lane; cuBLAS's Hopper advice
constexpr size_t kAllocAlign = 256;

void check_blas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cuda::cublas().status_string(st));
  }
}

// cuBLAS's 32-bit API: sizes and leading dimensions must fit an int.
int as_int(int64_t v, const char* call) {
  if (v > INT_MAX) {
    throw std::invalid_argument(std::string(call) + ": size " + std::to_string(v) +
                                " exceeds cuBLAS's int range; split the batch");
  }
  return static_cast<int>(v);
}

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

int64_t env_tile() {
  const char* s = std::getenv("MUONPLAN_SYRK_TILE");
  if (s == nullptr || *s == '\0') return 0;
  char* end = nullptr;
  const long long v = std::strtoll(s, &end, 10);
  if (*end != '\0' || v < 64 || v % 8 != 0) {
    throw std::invalid_argument(std::string("MUONPLAN_SYRK_TILE: expected a multiple of 8, at "
                                            "least 64, got '") +
                                s + "'");
  }
  return v;
}

// Its kernel table (table()) sets every entry: the kernels run on the current lane's stream and
// handle.
class CudaBackendImpl final : public CudaBackend {
 public:
  explicit CudaBackendImpl(int device) : CudaBackend(table(), device, env_tile()) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error(std::string("cuda backend: no usable CUDA device (error ") +
                               std::to_string(static_cast<int>(err)) + ": " +
                               cudaGetErrorString(err) + ")");
    }
    if (device < 0 || device >= count) {
      throw std::runtime_error("cuda backend: device " + std::to_string(device) +
                               " does not exist (" + std::to_string(count) + " visible)");
    }
    try {
      check(cudaSetDevice(device), "cudaSetDevice");
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = device;
      check(cudaMemPoolCreate(&pool_, &props), "cudaMemPoolCreate");
      // Keep freed memory in the pool: a step allocates and frees the same sizes every time.
      uint64_t keep = UINT64_MAX;
      check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep),
            "cudaMemPoolSetAttribute");
      for (int k = 0; k < kMaxLanes; ++k) {
        check(cudaStreamCreateWithFlags(&streams_[k], cudaStreamNonBlocking), "cudaStreamCreate");
        check(cudaEventCreateWithFlags(&events_[k], cudaEventDisableTiming), "cudaEventCreate");
        check(cudaEventCreateWithFlags(&join_events_[k], cudaEventDisableTiming),
              "cudaEventCreate");
        check_blas(cuda::cublas().create(&blas_[k]), "cublasCreate");
        check_blas(cuda::cublas().set_stream(blas_[k], streams_[k]), "cublasSetStream");
        // One rounding per output: no split-K partial sums rounded to bf16.
        check_blas(cuda::cublas().set_math_mode(
                       blas_[k],
                       static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
                   "cublasSetMathMode");
        // A workspace per handle: cuBLAS results are reproducible only with one per stream.
        check(cudaMalloc(&blas_workspace_[k], kBlasWorkspaceBytes), "cudaMalloc");
        check_blas(cuda::cublas().set_workspace(blas_[k], blas_workspace_[k], kBlasWorkspaceBytes),
                   "cublasSetWorkspace");
      }
    } catch (...) {
      release();
      throw;
    }
  }

  ~CudaBackendImpl() override { release(); }

  // Calls enqueue on a stream: not host timed.
  BackendInfo describe() const override { return {"cuda", false, {"cublas", ""}}; }

  // --- memory
  void* alloc(size_t bytes, MemoryKind kind) override {
    if (kind == MemoryKind::pinned_host) return alloc_pinned(bytes);
    const size_t rounded =
        (std::max<size_t>(bytes, 1) + kAllocAlign - 1) / kAllocAlign * kAllocAlign;
    void* p = nullptr;
    const cudaError_t err = cudaMallocFromPoolAsync(&p, rounded, pool_, stream());
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    check(err, "cudaMallocFromPoolAsync");
    check(cudaMemsetAsync(p, 0, rounded, stream()), "cudaMemsetAsync");
    counted(kind).add(p, bytes, lane());
    return p;
  }

  void free(void* ptr, MemoryKind kind) override {
    if (ptr == nullptr) return;
    if (kind == MemoryKind::pinned_host) return free_pinned(ptr);
    const std::optional<MemoryCounter::Allocation> found = counted(kind).remove(ptr);
    if (!found) {
      throw std::invalid_argument("cuda backend: free() of a pointer alloc() did not return");
    }
    const MemoryCounter::Allocation a = *found;
    // Free on the allocating lane, after what the calling lane has queued so far.
    cudaStream_t s = streams_[a.lane];
    if (a.lane != lane()) {
      check(cudaEventRecord(events_[lane()], streams_[lane()]), "cudaEventRecord");
      check(cudaStreamWaitEvent(s, events_[lane()], 0), "cudaStreamWaitEvent");
    }
    check(cudaFreeAsync(ptr, s), "cudaFreeAsync");
  }

  void copy(void* dst, const void* src, size_t bytes, Copy direction) override {
    if (direction != Copy::device_to_device) {
      if (bytes == 0) return;
      const bool to_device = direction == Copy::host_to_device;
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()),
            to_device ? "cudaMemcpyAsync (to device)" : "cudaMemcpyAsync (to host)");
      // Pageable memory may change (or be read) as soon as we return: wait for the copy.
      if (!pinned(to_device ? src : dst, bytes)) {
        check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
      }
      return;
    }
    if (bytes == 0 || dst == src) return;
    const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
    if (d < s + bytes && s < d + bytes) {  // overlapping (memmove): through a temporary
      Scratch tmp(*this, bytes);
      check(cudaMemcpyAsync(tmp.ptr, src, bytes, cudaMemcpyDefault, stream()), "cudaMemcpyAsync");
      check(cudaMemcpyAsync(dst, tmp.ptr, bytes, cudaMemcpyDefault, stream()), "cudaMemcpyAsync");
      return;
    }
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream()), "cudaMemcpyAsync");
  }

  std::optional<RuntimeMemory> runtime_memory() const override {
    RuntimeMemory r;
    uint64_t v = 0;
    check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &v),
          "cudaMemPoolGetAttribute");
    r.pool_reserved_high_bytes = v;
    check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &v),
          "cudaMemPoolGetAttribute");
    r.pool_used_high_bytes = v;
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
    r.device_used_bytes = total_bytes - free_bytes;
    return r;
  }
  void synchronize(Sync scope) override {
    switch (scope) {
      case Sync::all_lanes:
        for (int k = 0; k < kMaxLanes; ++k) {
          check(cudaStreamSynchronize(streams_[k]), "cudaStreamSynchronize");
        }
        return;
      case Sync::current_lane:
        check(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
        return;
      case Sync::join_lanes:
        join();
        return;
    }
  }

 private:
  // An event per lane, recorded after its queued work; every lane waits for all of them.
  void join() {
    for (int k = 0; k < kMaxLanes; ++k) {
      check(cudaEventRecord(join_events_[k], streams_[k]), "cudaEventRecord (join)");
    }
    for (int j = 0; j < kMaxLanes; ++j) {
      for (int k = 0; k < kMaxLanes; ++k) {
        if (j != k)
          check(cudaStreamWaitEvent(streams_[j], join_events_[k], 0), "cudaStreamWaitEvent");
      }
    }
  }

  void* alloc_pinned(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocDefault);
    if (err == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw std::bad_alloc();
    }
    check(err, "cudaHostAlloc");
    std::memset(p, 0, bytes);
    pinned_[reinterpret_cast<uintptr_t>(p)] = bytes;
    counted(MemoryKind::pinned_host).add(p, bytes);
    return p;
  }

  void free_pinned(void* ptr) {
    synchronize(Sync::all_lanes);  // a copy may still read or write it
    pinned_.erase(reinterpret_cast<uintptr_t>(ptr));
    counted(MemoryKind::pinned_host).remove(ptr);
    check(cudaFreeHost(ptr), "cudaFreeHost");
  }

  // --- the kernel table (kernels.h), reached through launch(); each entry is `self`'s member.
  static CudaBackendImpl& cuda_of(Backend& self) { return static_cast<CudaBackendImpl&>(self); }
  static KernelTable table() {
    KernelTable t;
    t.gemm_bf16 = [](Backend& self, int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n,
                     int64_t k, float alpha, const MatrixBatch& a, const MatrixBatch& b, float beta,
                     const MatrixBatch& c) {
      cuda_of(self).gemm(batch, trans_a, trans_b, m, n, k, alpha, a, b, beta, c);
    };
    t.sum_squares = [](Backend& self, int64_t batch, int64_t elems, DType type, const void* x,
                       float* out) { cuda_of(self).sum_squares(batch, elems, type, x, out); };
    t.scale_bf16 = [](Backend& self, int64_t batch, int64_t elems, const bf16* x,
                      const float* scale, bf16* y) {
      check(cuda::scale_bf16(batch, elems, x, scale, y, cuda_of(self).stream()), "scale_bf16");
    };
    t.elementwise = [](Backend& self, const Elementwise& op) {
      CudaBackendImpl& b = cuda_of(self);
      std::visit([&b](const auto& k) { b.run(k); }, op);
    };
    t.syrk_bf16 = [](Backend& self, int64_t batch, int64_t n, int64_t k, float alpha,
                     const MatrixBatch& a, float beta,
                     const MatrixBatch& c) { cuda_of(self).syrk(batch, n, k, alpha, a, beta, c); };
    t.scale_bf16_by = [](Backend& self, int64_t elems, float s, const bf16* x, bf16* y) {
      check(cuda::scale_bf16_by(elems, s, x, y, cuda_of(self).stream()), "scale_bf16_by");
    };
    t.ns_scale = [](Backend& self, int64_t batch, const float* sum_sq, double norm_scale,
                    double eps, float* scale) {
      check(cuda::ns_scale(batch, sum_sq, norm_scale, eps, scale, cuda_of(self).stream()),
            "ns_scale");
    };
    t.transpose_bf16 = [](Backend& self, int64_t batch, int64_t rows, int64_t cols, const bf16* x,
                          bf16* y) {
      check(cuda::transpose_bf16(batch, rows, cols, x, y, cuda_of(self).stream()),
            "transpose_bf16");
    };
    return t;
  }

  // --- GEMMs
  // Arguments checked by Backend::gemm_bf16.
  void gemm(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const MatrixBatch& a, const MatrixBatch& b, float beta, const MatrixBatch& c) {
    constexpr const char* call = "gemm_bf16";
    if (k == 0) {  // C = bf16(beta * C), or 0
      check(cuda::scale_matrix_bf16(batch, m, n, c.ld, c.stride, beta, static_cast<bf16*>(c.ptr),
                                    stream()),
            call);
      return;
    }
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: a row-major matrix is
    // its transpose in column-major with the same ld, so B goes first and no data moves.
    check_blas(cuda::cublas().gemm_strided_batched_ex(
                   blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                   as_int(n, call), as_int(m, call), as_int(k, call), &alpha, b.ptr, CUDA_R_16BF,
                   as_int(b.ld, call), b.stride, a.ptr, CUDA_R_16BF, as_int(a.ld, call), a.stride,
                   &beta, c.ptr, CUDA_R_16BF, as_int(c.ld, call), c.stride, as_int(batch, call),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
  }

  void syrk(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a, float beta,
            const MatrixBatch& c);

  // --- reductions and the elementwise kernels
  void sum_squares(int64_t batch, int64_t elems, DType type, const void* x, float* out) {
    if (batch <= 0) return;
    Scratch partial(*this, cuda::sum_squares_partials(batch, elems) * sizeof(double));
    auto* partials = static_cast<double*>(partial.ptr);
    if (type == DType::bf16) {
      check(cuda::sum_squares_bf16(batch, elems, static_cast<const bf16*>(x), out, partials,
                                   stream()),
            "sum_squares_bf16");
    } else {  // a batch of one (Backend::sum_squares_f32)
      check(cuda::sum_squares_f32(elems, static_cast<const float*>(x), out, partials, stream()),
            "sum_squares_f32");
    }
  }
  void run(const CastToBf16& k) {
    check(cuda::cast_to_bf16(k.n, k.x, k.y, stream()), "cast_to_bf16");
  }
  void run(const CastToF32& k) { check(cuda::cast_to_f32(k.n, k.x, k.y, stream()), "cast_to_f32"); }
  void run(const MomentumF32& k) {
    check(cuda::momentum_f32(k.n, k.mu, k.nesterov, k.g, k.m, k.u, stream()), "momentum_f32");
  }
  void run(const MomentumBf16& k) {
    check(cuda::momentum_bf16(k.n, k.mu, k.nesterov, k.g, k.m, k.u, stream()), "momentum_bf16");
  }
  void run(const ApplyUpdate& k) {
    check(cuda::apply_update(k.n, k.decay, k.s, k.o, k.w, stream()), "apply_update");
  }
  void run(const Adamw& a) {
    const formula::AdamwConstants k =
        formula::adamw_constants(a.lr, a.beta1, a.beta2, a.eps, a.wd, a.step);
    check(cuda::adamw(a.n, k, a.g, a.w, a.m, a.v, stream()), "adamw");
  }

 private:
  // Backend-internal device memory for one call, freed in stream order on the same lane.
  struct Scratch {
    Scratch(CudaBackendImpl& b, size_t bytes) : stream(b.stream()) {
      check(cudaMallocFromPoolAsync(&ptr, std::max<size_t>(bytes, 1), b.pool_, stream),
            "cudaMallocFromPoolAsync (scratch)");
    }
    ~Scratch() { cudaFreeAsync(ptr, stream); }
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    void* ptr = nullptr;
    cudaStream_t stream;
  };

  cudaStream_t stream() const { return streams_[lane()]; }
  cublasHandle_t blas() const { return blas_[lane()]; }

  // Whether [p, p + bytes) lies in one alloc_host allocation.
  bool pinned(const void* p, size_t bytes) const { return within_one(pinned_, p, bytes); }

  // Destroys whatever the constructor created; errors are ignored (a destructor cannot report
  // them, and a failed device makes every call fail alike).
  void release() noexcept {
    for (void* ptr : counted(MemoryKind::device).live()) {
      const std::optional<MemoryCounter::Allocation> a = counted(MemoryKind::device).remove(ptr);
      cudaFreeAsync(ptr, streams_[a->lane]);
    }
    for (auto& [at, bytes] : pinned_) cudaFreeHost(reinterpret_cast<void*>(at));
    pinned_.clear();
    for (int k = 0; k < kMaxLanes; ++k) {
      if (streams_[k]) cudaStreamSynchronize(streams_[k]);
      if (blas_[k]) cuda::cublas().destroy(blas_[k]);
      if (blas_workspace_[k]) cudaFree(blas_workspace_[k]);
      if (events_[k]) cudaEventDestroy(events_[k]);
      if (join_events_[k]) cudaEventDestroy(join_events_[k]);
      join_events_[k] = nullptr;
      if (streams_[k]) cudaStreamDestroy(streams_[k]);
      blas_[k] = nullptr;
      blas_workspace_[k] = nullptr;
      events_[k] = nullptr;
      streams_[k] = nullptr;
    }
    if (pool_) cudaMemPoolDestroy(pool_);
    pool_ = nullptr;
    cudaGetLastError();
  }

  std::array<cudaEvent_t, kMaxLanes> events_{};
  std::array<cudaEvent_t, kMaxLanes> join_events_{};  // join_lanes(): one per lane
  std::array<cublasHandle_t, kMaxLanes> blas_{};
  std::array<void*, kMaxLanes> blas_workspace_{};
  cudaMemPool_t pool_ = nullptr;
  std::map<uintptr_t, size_t> pinned_;  // alloc_host allocations: start -> bytes
};

// C = alpha A A^T + beta C computing only the tile x tile blocks on and above the diagonal
// (batched GEMMs over device pointer arrays, up to three block shapes), then mirroring the
// upper triangle into the lower one. Falls back to one GEMM (then the mirror) when C is a
// single block, or when the operands are not 16-byte aligned (tensor-core kernels need every
// block pointer aligned, and the pointer arrays hide them from cuBLAS's checks).
// Arguments checked by Backend::syrk_bf16.
void CudaBackendImpl::syrk(int64_t batch, int64_t n, int64_t k, float alpha, const MatrixBatch& a,
                           float beta, const MatrixBatch& c) {
  constexpr const char* call = "syrk_bf16";
  auto* cp = static_cast<bf16*>(c.ptr);
  const int64_t tile = syrk_tile(n);
  const bool aligned = aligned16(a.ptr) && aligned16(c.ptr) && a.ld % 8 == 0 && c.ld % 8 == 0 &&
                       (batch == 1 || (a.stride % 8 == 0 && c.stride % 8 == 0));
  if (k == 0 || n <= tile || !aligned) {
    gemm(batch, false, true, n, n, k, alpha, a, a, beta, c);
  } else {
    const int64_t full = n / tile, rest = n % tile;
    struct Group {
      cuda::SyrkGroup kind;
      int64_t per_matrix, rows, cols;
    };
    std::vector<Group> groups = {{cuda::SyrkGroup::full, full * (full + 1) / 2, tile, tile}};
    if (rest > 0) {
      groups.push_back({cuda::SyrkGroup::edge, full, tile, rest});
      groups.push_back({cuda::SyrkGroup::corner, 1, rest, rest});
    }
    int64_t total = 0;
    for (const Group& g : groups) total += batch * g.per_matrix;
    Scratch arrays(*this, 3 * static_cast<size_t>(total) * sizeof(void*));
    auto** base = static_cast<void**>(arrays.ptr);
    const auto* ap = static_cast<const bf16*>(a.ptr);
    int64_t at = 0;
    for (const Group& g : groups) {
      const int64_t count = batch * g.per_matrix;
      auto** rows_ptrs = const_cast<const void**>(base + at);
      auto** cols_ptrs = const_cast<const void**>(base + total + at);
      void** c_ptrs = base + 2 * total + at;
      check(cuda::syrk_block_pointers(g.kind, batch, g.per_matrix, full, tile, ap, a.ld, a.stride,
                                      cp, c.ld, c.stride, rows_ptrs, cols_ptrs, c_ptrs, stream()),
            call);
      // Block (I, J) = alpha A_I A_J^T + beta C_IJ, row-major; column-major as in gemm_bf16:
      // A_J first (transposed), then A_I.
      check_blas(
          cuda::cublas().gemm_batched_ex(
              blas(), CUBLAS_OP_T, CUBLAS_OP_N, as_int(g.cols, call), as_int(g.rows, call),
              as_int(k, call), &alpha, cols_ptrs, CUDA_R_16BF, as_int(a.ld, call), rows_ptrs,
              CUDA_R_16BF, as_int(a.ld, call), &beta, c_ptrs, CUDA_R_16BF, as_int(c.ld, call),
              as_int(count, call), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmBatchedEx");
      at += count;
    }
  }
  check(cuda::mirror_upper_bf16(batch, n, c.ld, c.stride, cp, stream()), call);
}

}  // namespace

std::unique_ptr<CudaBackend> make_cuda_backend(int device) {
  return std::make_unique<CudaBackendImpl>(device);
}

namespace {

// This rank's rank on its node, from the launcher's environment; -1 when none names it.
int env_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::atoi(v);
  }
  return -1;
}

}  // namespace

void set_cuda_device_before_mpi() {
  const int local = env_local_rank();
  int count = 0;
  if (local < 0 || cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return;
  }
  if (cudaSetDevice(local % count) != cudaSuccess) cudaGetLastError();
}

int local_cuda_device(int rank, int local_size) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    cudaGetLastError();
    throw std::runtime_error(std::string("no usable CUDA device (") +
                             (err != cudaSuccess ? cudaGetErrorString(err) : "none visible") + ")");
  }
  int local = env_local_rank();
  if (local < 0) local = rank % std::max(local_size, 1);
  return local % count;
}

}  // namespace muonplan::exec
