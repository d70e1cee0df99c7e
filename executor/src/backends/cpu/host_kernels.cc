// The host kernels' entry points (host_kernels.h): each calls the vector form of the instruction
// set chosen once per process (built without AVX flags, so it runs on any x86-64 CPU).
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "backends/cpu/cpu_kernels.h"
#include "backends/cpu/host_kernels_isa.h"
#include "muonplan/exec/host_kernels.h"

namespace muonplan::exec::host {
namespace {

Isa choose_isa() {
  const char* env = std::getenv("MUONPLAN_HOST_ISA");
  if (env == nullptr || *env == '\0') {
    for (Isa isa : {Isa::avx512_bf16, Isa::avx512}) {
      if (isa_supported(isa)) return isa;
    }
    return Isa::avx2;
  }
  for (Isa isa : {Isa::avx2, Isa::avx512, Isa::avx512_bf16}) {
    if (env != std::string(isa_name(isa))) continue;
    if (!isa_supported(isa)) {
      throw std::invalid_argument(std::string("MUONPLAN_HOST_ISA: this CPU lacks ") + env);
    }
    return isa;
  }
  throw std::invalid_argument(std::string("MUONPLAN_HOST_ISA: '") + env +
                              "' is not avx2, avx512 or avx512_bf16");
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return "avx2";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_bf16:
      return "avx512_bf16";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  switch (isa) {
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::avx512:
      return avx512;
    case Isa::avx512_bf16:
      return avx512 && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

namespace {
Isa& active() {
  static Isa isa = choose_isa();
  return isa;
}
}  // namespace

Isa active_isa() {
  return active();
}

void set_active_isa(Isa isa) {
  if (!isa_supported(isa)) {
    throw std::invalid_argument(std::string("set_active_isa: this CPU lacks ") + isa_name(isa));
  }
  active() = isa;
}

void fold_momentum_f32(int64_t n, float mu, float scale, const float* g, float* m) {
  if (active_isa() == Isa::avx2) return avx2::fold_momentum_f32(n, mu, scale, g, m);
  avx512::fold_momentum_f32(n, mu, scale, g, m);
}

void fold_momentum_bf16(int64_t n, float mu, float scale, const float* g, bf16* m) {
  switch (active_isa()) {
    case Isa::avx2:
      return avx2::fold_momentum_bf16(n, mu, scale, g, m);
    case Isa::avx512:
      return avx512::fold_momentum_bf16(n, mu, scale, g, m);
    case Isa::avx512_bf16:
      return avx512_bf16::fold_momentum_bf16(n, mu, scale, g, m);
  }
}

void add_update_bf16(int64_t n, float decay, const bf16* u, float* w) {
  if (active_isa() == Isa::avx2) return avx2::add_update_bf16(n, decay, u, w);
  avx512::add_update_bf16(n, decay, u, w);
}

void adamw(int64_t n, float lr, float beta1, float beta2, float eps, float wd, int64_t step,
           const float* g, float* w, float* m, float* v) {
  if (active_isa() == Isa::avx2) return avx2::adamw(n, lr, beta1, beta2, eps, wd, step, g, w, m, v);
  avx512::adamw(n, lr, beta1, beta2, eps, wd, step, g, w, m, v);
}

void cast_to_bf16(int64_t n, const float* x, bf16* y) {
  switch (active_isa()) {
    case Isa::avx2:
      return avx2::cast_to_bf16(n, x, y);
    case Isa::avx512:
      return avx512::cast_to_bf16(n, x, y);
    case Isa::avx512_bf16:
      return avx512_bf16::cast_to_bf16(n, x, y);
  }
}

void triad(int64_t n, float q, const float* b, const float* c, float* a) {
  if (active_isa() == Isa::avx2) return avx2::triad(n, q, b, c, a);
  avx512::triad(n, q, b, c, a);
}

void widen_bf16(int64_t n, const bf16* x, float* y) {
  cpu::bf16_to_f32(x, y, n);
}

double sum_squares_f32(int64_t n, const float* x) {
  return cpu::sum_squares(x, n);
}

}  // namespace muonplan::exec::host
