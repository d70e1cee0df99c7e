// The CUDA backend's kernels (cuda_kernels.h). The elementwise kernels call the CPU backend's
// per-element formulas (optimizer_formulas.h, bf16.h). Built with -fmad=false: every a * b + c
// rounds twice, as on the CPU backend (-ffp-contract=off), so they give its bits. sqrtf and '/'
// are IEEE (nvcc's defaults -prec-sqrt=true -prec-div=true, no -ftz), double arithmetic always
// is.
#include <algorithm>
#include <cstdint>

#include "cuda_kernels.h"

namespace muonplan::exec::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = int64_t{1} << 16;  // grid-stride loops beyond this
constexpr int kMaxGridYZ = 65535;

// Elements per block of the first pass of sum_squares: a constant, so the summation order
// depends on the matrix size alone.
constexpr int64_t kSumChunk = 16384;

int grid_for(int64_t n) {
  return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ int64_t global_id() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t global_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

const uint16_t* bits(const bf16* p) {
  return reinterpret_cast<const uint16_t*>(p);
}
uint16_t* bits(bf16* p) {
  return reinterpret_cast<uint16_t*>(p);
}

// --- sum of squares: pass 1, one block per (chunk, matrix): thread t sums elements t,
// t + 256, ... of the chunk; a fixed tree adds the 256 lanes.
__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared is reused by the caller's next iteration
  return total;
}

__device__ __forceinline__ double as_double(bf16 v) {
  return to_float(v);
}
__device__ __forceinline__ double as_double(float v) {
  return v;
}

template <class T>
__global__ void sum_squares_chunks(int64_t batch, int64_t elems, int64_t chunks, const T* x,
                                   double* partial) {
  __shared__ double shared[kThreads];
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const int64_t first = static_cast<int64_t>(blockIdx.x) * kSumChunk;
    const int64_t last = min(first + kSumChunk, elems);
    const T* xb = x + b * elems;
    double s = 0;
    for (int64_t i = first + threadIdx.x; i < last; i += kThreads) {
      const double v = as_double(xb[i]);
      s += v * v;  // exact for bf16 (16 significant bits); rounded once for fp32
    }
    const double total = block_sum(s, shared);
    if (threadIdx.x == 0) partial[b * chunks + blockIdx.x] = total;
  }
}

// Pass 2, one block per matrix: thread t adds chunks t, t + 256, ... in order; a fixed tree.
__global__ void sum_squares_total(int64_t batch, int64_t chunks, const double* partial,
                                  float* out) {
  __shared__ double shared[kThreads];
  for (int64_t b = blockIdx.x; b < batch; b += gridDim.x) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < chunks; j += kThreads) s += partial[b * chunks + j];
    const double total = block_sum(s, shared);
    if (threadIdx.x == 0) out[b] = static_cast<float>(total);
  }
}

__global__ void scale_kernel(int64_t batch, int64_t elems, const bf16* x, const float* scale,
                             bf16* y) {
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    const float s = scale[b];
    for (int64_t i = global_id(); i < elems; i += global_stride()) {
      y[b * elems + i] = formula::scale_bf16(x[b * elems + i], s);
    }
  }
}

__global__ void scale_by_kernel(int64_t elems, float s, const bf16* x, bf16* y) {
  for (int64_t i = global_id(); i < elems; i += global_stride()) {
    y[i] = formula::scale_bf16(x[i], s);
  }
}

__global__ void ns_scale_kernel(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                                float* scale) {
  for (int64_t b = global_id(); b < batch; b += global_stride()) {
    scale[b] = formula::ns_scale(norm_scale, eps, sum_sq[b]);
  }
}

// 32 x 32 tiles through shared memory (padded against bank conflicts), 32 x 8 threads.
constexpr int kTile = 32, kTileRows = 8;

// The tile at (r0, c0) of src, a rows x cols matrix with leading dimension ld_src, transposed
// into dst (leading dimension ld_dst): dst[c][r] = src[r][c], through the shared `tile`, by all
// kTile x kTileRows threads of the block. kBelowDiagonal: only the elements with c > r are
// written; dst may then be src (the whole tile is read before any of it is written).
template <bool kBelowDiagonal>
__device__ __forceinline__ void transpose_tile(uint16_t (&tile)[kTile][kTile + 1],
                                               const uint16_t* src, int64_t ld_src, uint16_t* dst,
                                               int64_t ld_dst, int64_t rows, int64_t cols,
                                               int64_t r0, int64_t c0) {
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {
    const int64_t r = r0 + k, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = src[r * ld_src + c];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < kTile; k += kTileRows) {
    const int64_t c = c0 + k, r = r0 + threadIdx.x;
    if (r < rows && c < cols && (!kBelowDiagonal || c > r)) {
      dst[c * ld_dst + r] = tile[threadIdx.x][k];
    }
  }
  __syncthreads();  // the tile is reused by the caller's next iteration
}

__global__ void transpose_kernel(int64_t batch, int64_t rows, int64_t cols, const uint16_t* x,
                                 uint16_t* y) {
  __shared__ uint16_t tile[kTile][kTile + 1];
  const int64_t tiles_r = (rows + kTile - 1) / kTile;
  for (int64_t b = blockIdx.z; b < batch; b += gridDim.z) {
    const uint16_t* xb = x + b * rows * cols;
    uint16_t* yb = y + b * rows * cols;
    for (int64_t tr = blockIdx.y; tr < tiles_r; tr += gridDim.y) {
      const int64_t r0 = tr * kTile, c0 = static_cast<int64_t>(blockIdx.x) * kTile;
      // y is [cols, rows]: y[c][r] = x[r][c].
      transpose_tile<false>(tile, xb, cols, yb, rows, rows, cols, r0, c0);
    }
  }
}

__global__ void cast_to_bf16_kernel(int64_t n, const float* x, bf16* y) {
  for (int64_t i = global_id(); i < n; i += global_stride()) y[i] = to_bf16(x[i]);
}

__global__ void cast_to_f32_kernel(int64_t n, const bf16* x, float* y) {
  for (int64_t i = global_id(); i < n; i += global_stride()) y[i] = to_float(x[i]);
}

__global__ void momentum_f32_kernel(int64_t n, float mu, bool nesterov, const float* g, float* m,
                                    bf16* u) {
  for (int64_t i = global_id(); i < n; i += global_stride()) {
    u[i] = formula::momentum_f32(mu, nesterov, g[i], m[i]);
  }
}

__global__ void momentum_bf16_kernel(int64_t n, float mu, bool nesterov, const float* g, bf16* m,
                                     bf16* u) {
  for (int64_t i = global_id(); i < n; i += global_stride()) {
    u[i] = formula::momentum_bf16(mu, nesterov, g[i], m[i]);
  }
}

__global__ void apply_update_kernel(int64_t n, float decay, float s, const bf16* o, float* w) {
  for (int64_t i = global_id(); i < n; i += global_stride()) {
    w[i] = formula::apply_update(decay, s, o[i], w[i]);
  }
}

__global__ void adamw_kernel(int64_t n, formula::AdamwConstants k, const float* g, float* w,
                             float* m, float* v) {
  for (int64_t i = global_id(); i < n; i += global_stride()) {
    formula::adamw(k, g[i], w[i], m[i], v[i]);
  }
}

__global__ void scale_matrix_kernel(int64_t batch, int64_t rows, int64_t cols, int64_t ld,
                                    int64_t stride, float beta, bf16* c) {
  const int64_t n = batch * rows * cols;
  for (int64_t i = global_id(); i < n; i += global_stride()) {
    const int64_t b = i / (rows * cols), r = (i / cols) % rows, col = i % cols;
    bf16& e = c[b * stride + r * ld + col];
    e = beta == 0.0f ? to_bf16(0.0f) : to_bf16(beta * to_float(e));
  }
}

// Block t of the lower triangle of 32 x 32 tiles (row-major order: (0,0), (1,0), (1,1), ...).
__device__ void lower_tile(int64_t t, int64_t& ti, int64_t& tj) {
  ti = static_cast<int64_t>((sqrt(8.0 * static_cast<double>(t) + 1.0) - 1.0) / 2.0);
  while (ti * (ti + 1) / 2 > t) --ti;
  while ((ti + 1) * (ti + 2) / 2 <= t) ++ti;
  tj = t - ti * (ti + 1) / 2;
}

// Tile (ti, tj), ti >= tj, of the lower triangle gets the transpose of tile (tj, ti); on the
// diagonal only the elements below it are written (after the whole tile was read).
__global__ void mirror_kernel(int64_t batch, int64_t n, int64_t ld, int64_t stride, int64_t tiles,
                              uint16_t* c) {
  __shared__ uint16_t tile[kTile][kTile + 1];
  for (int64_t b = blockIdx.y; b < batch; b += gridDim.y) {
    uint16_t* cb = c + b * stride;
    for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
      int64_t ti = 0, tj = 0;
      lower_tile(t, ti, tj);
      const int64_t r0 = tj * kTile, c0 = ti * kTile;  // the source tile, above the diagonal
      transpose_tile<true>(tile, cb, ld, cb, ld, n, n, r0, c0);
    }
  }
}

__global__ void syrk_pointers_kernel(int group, int64_t total, int64_t per_matrix, int64_t full,
                                     int64_t tile, const uint16_t* a, int64_t lda, int64_t stride_a,
                                     uint16_t* c, int64_t ldc, int64_t stride_c,
                                     const void** a_rows, const void** a_cols, void** c_blocks) {
  for (int64_t idx = global_id(); idx < total; idx += global_stride()) {
    const int64_t b = idx / per_matrix;
    int64_t t = idx % per_matrix, bi = full, bj = full;
    if (group == static_cast<int>(SyrkGroup::full)) {  // row bi holds blocks bi..full-1
      bi = 0;
      while (t >= full - bi) {
        t -= full - bi;
        ++bi;
      }
      bj = bi + t;
    } else if (group == static_cast<int>(SyrkGroup::edge)) {
      bi = t;
    }
    a_rows[idx] = a + b * stride_a + bi * tile * lda;
    a_cols[idx] = a + b * stride_a + bj * tile * lda;
    c_blocks[idx] = c + b * stride_c + bi * tile * ldc + bj * tile;
  }
}

}  // namespace

int64_t sum_squares_partials(int64_t batch, int64_t elems) {
  return batch * std::max<int64_t>(1, (elems + kSumChunk - 1) / kSumChunk);
}

namespace {

template <class T>
cudaError_t sum_squares(int64_t batch, int64_t elems, const T* x, float* out, double* partial,
                        cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  const int64_t chunks = std::max<int64_t>(1, (elems + kSumChunk - 1) / kSumChunk);
  const dim3 grid1(static_cast<unsigned>(chunks),
                   static_cast<unsigned>(std::min<int64_t>(batch, kMaxGridYZ)));
  sum_squares_chunks<<<grid1, kThreads, 0, stream>>>(batch, elems, chunks, x, partial);
  const auto grid2 = static_cast<unsigned>(std::min<int64_t>(batch, kMaxBlocks));
  sum_squares_total<<<grid2, kThreads, 0, stream>>>(batch, chunks, partial, out);
  return cudaGetLastError();
}

}  // namespace

cudaError_t sum_squares_bf16(int64_t batch, int64_t elems, const bf16* x, float* out,
                             double* partial, cudaStream_t stream) {
  return sum_squares(batch, elems, x, out, partial, stream);
}

cudaError_t sum_squares_f32(int64_t n, const float* x, float* out, double* partial,
                            cudaStream_t stream) {
  return sum_squares(int64_t{1}, n, x, out, partial, stream);
}

cudaError_t scale_bf16(int64_t batch, int64_t elems, const bf16* x, const float* scale, bf16* y,
                       cudaStream_t stream) {
  if (batch <= 0 || elems <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(std::min(grid_for(elems), 4096)),
                  static_cast<unsigned>(std::min<int64_t>(batch, kMaxGridYZ)));
  scale_kernel<<<grid, kThreads, 0, stream>>>(batch, elems, x, scale, y);
  return cudaGetLastError();
}

cudaError_t scale_bf16_by(int64_t elems, float s, const bf16* x, bf16* y, cudaStream_t stream) {
  if (elems <= 0) return cudaSuccess;
  scale_by_kernel<<<grid_for(elems), kThreads, 0, stream>>>(elems, s, x, y);
  return cudaGetLastError();
}

cudaError_t ns_scale(int64_t batch, const float* sum_sq, double norm_scale, double eps,
                     float* scale, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  ns_scale_kernel<<<grid_for(batch), kThreads, 0, stream>>>(batch, sum_sq, norm_scale, eps, scale);
  return cudaGetLastError();
}

cudaError_t transpose_bf16(int64_t batch, int64_t rows, int64_t cols, const bf16* x, bf16* y,
                           cudaStream_t stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
  const int64_t tiles_c = (cols + kTile - 1) / kTile, tiles_r = (rows + kTile - 1) / kTile;
  if (tiles_c > INT32_MAX) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(tiles_c),
                  static_cast<unsigned>(std::min<int64_t>(tiles_r, kMaxGridYZ)),
                  static_cast<unsigned>(std::min<int64_t>(batch, kMaxGridYZ)));
  transpose_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(batch, rows, cols, bits(x),
                                                                bits(y));
  return cudaGetLastError();
}

cudaError_t cast_to_bf16(int64_t n, const float* x, bf16* y, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  cast_to_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, x, y);
  return cudaGetLastError();
}

cudaError_t cast_to_f32(int64_t n, const bf16* x, float* y, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  cast_to_f32_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, x, y);
  return cudaGetLastError();
}

cudaError_t momentum_f32(int64_t n, float mu, bool nesterov, const float* g, float* m, bf16* u,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  momentum_f32_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, mu, nesterov, g, m, u);
  return cudaGetLastError();
}

cudaError_t momentum_bf16(int64_t n, float mu, bool nesterov, const float* g, bf16* m, bf16* u,
                          cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  momentum_bf16_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, mu, nesterov, g, m, u);
  return cudaGetLastError();
}

cudaError_t apply_update(int64_t n, float decay, float s, const bf16* o, float* w,
                         cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  apply_update_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, decay, s, o, w);
  return cudaGetLastError();
}

cudaError_t adamw(int64_t n, const formula::AdamwConstants& k, const float* g, float* w, float* m,
                  float* v, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  adamw_kernel<<<grid_for(n), kThreads, 0, stream>>>(n, k, g, w, m, v);
  return cudaGetLastError();
}

cudaError_t scale_matrix_bf16(int64_t batch, int64_t rows, int64_t cols, int64_t ld, int64_t stride,
                              float beta, bf16* c, cudaStream_t stream) {
  if (batch <= 0 || rows <= 0 || cols <= 0) return cudaSuccess;
  scale_matrix_kernel<<<grid_for(batch * rows * cols), kThreads, 0, stream>>>(batch, rows, cols, ld,
                                                                              stride, beta, c);
  return cudaGetLastError();
}

cudaError_t mirror_upper_bf16(int64_t batch, int64_t n, int64_t ld, int64_t stride, bf16* c,
                              cudaStream_t stream) {
  if (batch <= 0 || n <= 1) return cudaSuccess;
  const int64_t nt = (n + kTile - 1) / kTile, tiles = nt * (nt + 1) / 2;
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, kMaxBlocks)),
                  static_cast<unsigned>(std::min<int64_t>(batch, kMaxGridYZ)));
  mirror_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(batch, n, ld, stride, tiles, bits(c));
  return cudaGetLastError();
}

cudaError_t syrk_block_pointers(SyrkGroup group, int64_t batch, int64_t per_matrix, int64_t full,
                                int64_t tile, const bf16* a, int64_t lda, int64_t stride_a, bf16* c,
                                int64_t ldc, int64_t stride_c, const void** a_rows,
                                const void** a_cols, void** c_blocks, cudaStream_t stream) {
  const int64_t total = batch * per_matrix;
  if (total <= 0) return cudaSuccess;
  syrk_pointers_kernel<<<grid_for(total), kThreads, 0, stream>>>(
      static_cast<int>(group), total, per_matrix, full, tile, bits(a), lda, stride_a, bits(c), ldc,
      stride_c, a_rows, a_cols, c_blocks);
  return cudaGetLastError();
}

}  // namespace muonplan::exec::cuda
