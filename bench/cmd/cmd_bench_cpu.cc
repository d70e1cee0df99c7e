// muonplan bench cpu-kernels: GB/s of each host kernel (host_kernels.h), the vector + OpenMP form
// the CPU runs (host::active_isa) on the executor's threads and the plain scalar loop on one,
// beside the STREAM triad measured in the same run (docs/executor-numerics.md, "Host kernels").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/units.h"
#include "muonplan/exec/cpu_threads.h"
#include "muonplan/exec/host_kernels.h"

namespace muonplan::cli {
namespace {

namespace host = exec::host;
using exec::bf16;

// The targets (reported, never asserted: the machine decides).
constexpr double kTriadTarget = 0.90;  // vector GB/s >= 90% of the triad's
constexpr double kScalarTarget = 3.0;  // vector GB/s >= 3x the scalar loop's

struct CpuKernelFlags {
  int64_t elems = int64_t{64} << 20;
  int reps = 5;
  bool json = false;
};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

template <typename T>
std::unique_ptr<T[], FreeDeleter> aligned_array(int64_t n) {
  const size_t bytes = (static_cast<size_t>(n) * sizeof(T) + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, bytes);
  if (p == nullptr) throw std::bad_alloc();
  return std::unique_ptr<T[], FreeDeleter>(static_cast<T*>(p));
}

// Every array the kernels touch, `elems` each, filled once (which also maps the pages) with
// values that keep every kernel on normal numbers over any number of repetitions.
struct Arrays {
  explicit Arrays(int64_t n)
      : g(aligned_array<float>(n)),
        w(aligned_array<float>(n)),
        m(aligned_array<float>(n)),
        v(aligned_array<float>(n)),
        a(aligned_array<float>(n)),
        mb(aligned_array<bf16>(n)),
        y(aligned_array<bf16>(n)) {
    for (int64_t i = 0; i < n; ++i) {
      g[i] = 1e-3f * static_cast<float>(i % 1001 - 500);
      w[i] = 1.0f + 1e-4f * static_cast<float>(i % 97);
      m[i] = 0.1f;
      v[i] = 1e-4f;
      a[i] = 0.0f;
      mb[i] = exec::to_bf16(0.1f);
      y[i] = exec::to_bf16(1e-3f);
    }
  }
  std::unique_ptr<float[], FreeDeleter> g, w, m, v, a;
  std::unique_ptr<bf16[], FreeDeleter> mb, y;
};

struct Kernel {
  std::string name;
  int bytes_per_elem;
  std::string traffic;  // what the bytes are, per element
  std::function<void(int64_t, Arrays&)> vector, scalar;
};

// Bytes per element: each array read once and written once, no write-allocate (STREAM's
// count). The write-only outputs (triad's a, the cast's y) use non-temporal stores on large
// arrays, so for them there is no write-allocate traffic to leave out.
std::vector<Kernel> kernels() {
  return {
      {"triad", 12, "read b 4 + c 4, write a 4",
       [](int64_t n, Arrays& x) { host::triad(n, 0.5f, x.g.get(), x.w.get(), x.a.get()); },
       [](int64_t n, Arrays& x) { host::scalar::triad(n, 0.5f, x.g.get(), x.w.get(), x.a.get()); }},
      {"fold_momentum_f32", 12, "read g 4 + m 4, write m 4",
       [](int64_t n, Arrays& x) { host::fold_momentum_f32(n, 0.9f, 1.0f, x.g.get(), x.m.get()); },
       [](int64_t n, Arrays& x) {
         host::scalar::fold_momentum_f32(n, 0.9f, 1.0f, x.g.get(), x.m.get());
       }},
      {"fold_momentum_bf16", 8, "read g 4 + m 2, write m 2",
       [](int64_t n, Arrays& x) { host::fold_momentum_bf16(n, 0.9f, 1.0f, x.g.get(), x.mb.get()); },
       [](int64_t n, Arrays& x) {
         host::scalar::fold_momentum_bf16(n, 0.9f, 1.0f, x.g.get(), x.mb.get());
       }},
      {"add_update_bf16", 10, "read u 2 + w 4, write w 4",
       [](int64_t n, Arrays& x) { host::add_update_bf16(n, 0.999f, x.y.get(), x.w.get()); },
       [](int64_t n, Arrays& x) {
         host::scalar::add_update_bf16(n, 0.999f, x.y.get(), x.w.get());
       }},
      {"adamw", 28, "read g 4 + w 4 + m 4 + v 4, write w 4 + m 4 + v 4",
       [](int64_t n, Arrays& x) {
         host::adamw(n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, x.g.get(), x.w.get(), x.m.get(),
                     x.v.get());
       },
       [](int64_t n, Arrays& x) {
         host::scalar::adamw(n, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 10, x.g.get(), x.w.get(),
                             x.m.get(), x.v.get());
       }},
      {"cast_to_bf16", 6, "read x 4, write y 2",
       [](int64_t n, Arrays& x) { host::cast_to_bf16(n, x.w.get(), x.y.get()); },
       [](int64_t n, Arrays& x) { host::scalar::cast_to_bf16(n, x.w.get(), x.y.get()); }},
  };
}

double seconds(const std::function<void(int64_t, Arrays&)>& run, int64_t n, Arrays& arrays) {
  const auto start = std::chrono::steady_clock::now();
  run(n, arrays);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  return took.count();
}

struct Result {
  double vector_gbs = 0, scalar_gbs = 0;
  double stream_ratio = 0, x_scalar = 0;
  bool meets_triad_target = false, meets_scalar_target = false;
};

int run(const CpuKernelFlags& f) {
  if (f.elems <= 0) throw InputError({}, "--elems", "must be positive");
  if (f.reps <= 0) throw InputError({}, "--reps", "must be positive");
  const int threads = exec::configure_cpu_threads(1);
  const std::vector<Kernel> list = kernels();
  Arrays arrays(f.elems);
  for (const Kernel& k : list) k.vector(f.elems, arrays);  // warm-up

  // Best of `reps`, the repetitions interleaved across kernels so that a busy moment on a
  // shared machine does not fall on one kernel only.
  std::vector<double> best_vector(list.size(), INFINITY), best_scalar(list.size(), INFINITY);
  for (int r = 0; r < f.reps; ++r) {
    for (size_t i = 0; i < list.size(); ++i) {
      best_vector[i] = std::min(best_vector[i], seconds(list[i].vector, f.elems, arrays));
      best_scalar[i] = std::min(best_scalar[i], seconds(list[i].scalar, f.elems, arrays));
    }
  }
  std::vector<Result> results(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const double bytes = static_cast<double>(f.elems) * list[i].bytes_per_elem;
    results[i].vector_gbs = bytes / best_vector[i] / kGB;
    results[i].scalar_gbs = bytes / best_scalar[i] / kGB;
  }
  const double triad = results[0].vector_gbs;
  for (Result& r : results) {
    r.stream_ratio = r.vector_gbs / triad;
    r.x_scalar = r.vector_gbs / r.scalar_gbs;
    r.meets_triad_target = r.stream_ratio >= kTriadTarget;
    r.meets_scalar_target = r.x_scalar >= kScalarTarget;
  }

  nlohmann::json out = {{"elems", f.elems},
                        {"isa", host::isa_name(host::active_isa())},
                        {"reps", f.reps},
                        {"threads_vector", threads},
                        {"threads_scalar", 1},
                        {"bytes_counted", "each array read once, written once; no write-allocate"},
                        {"triad_gbs", triad},
                        {"targets", {{"stream_ratio", kTriadTarget}, {"x_scalar", kScalarTarget}}},
                        {"kernels", nlohmann::json::array()}};
  for (size_t i = 0; i < list.size(); ++i) {
    const Result& r = results[i];
    nlohmann::json k = {{"name", list[i].name},       {"bytes_per_elem", list[i].bytes_per_elem},
                        {"traffic", list[i].traffic}, {"gbs_vector", r.vector_gbs},
                        {"gbs_scalar", r.scalar_gbs}, {"stream_ratio", r.stream_ratio},
                        {"x_scalar", r.x_scalar}};
    if (i > 0) {  // the triad is the yardstick, not a kernel with targets
      k["meets_triad_target"] = r.meets_triad_target;
      k["meets_scalar_target"] = r.meets_scalar_target;
    }
    out["kernels"].push_back(k);
  }
  if (f.json) {
    std::cout << out.dump(2) << "\n";
    return 0;
  }

  std::printf(
      "host kernels: %lld elements per array, best of %d; vector: %s on %d thread(s), "
      "scalar: plain loop on 1\n",
      (long long)f.elems, f.reps, host::isa_name(host::active_isa()), threads);
  std::printf("B/elem: each array read once and written once, no write-allocate (as STREAM)\n");
  std::printf("%-20s %6s %12s %12s %10s %9s  %-7s %-5s\n", "kernel", "B/elem", "GB/s vector",
              "GB/s scalar", "% triad", "x scalar", ">=90%", ">=3x");
  for (size_t i = 0; i < list.size(); ++i) {
    const Result& r = results[i];
    const char* triad_met = i == 0 ? "-" : r.meets_triad_target ? "yes" : "no";
    const char* scalar_met = i == 0 ? "-" : r.meets_scalar_target ? "yes" : "no";
    std::printf("%-20s %6d %12.2f %12.2f %10.1f %9.2f  %-7s %-5s\n", list[i].name.c_str(),
                list[i].bytes_per_elem, r.vector_gbs, r.scalar_gbs, 100.0 * r.stream_ratio,
                r.x_scalar, triad_met, scalar_met);
  }
  std::printf("bytes per element:\n");
  for (const Kernel& k : list) {
    std::printf("  %-20s %s = %d\n", k.name.c_str(), k.traffic.c_str(), k.bytes_per_elem);
  }
  return 0;
}

}  // namespace

Runner add_bench_cpu_kernels(CLI::App& bench) {
  auto f = std::make_shared<CpuKernelFlags>();
  CLI::App* cmd = bench.add_subcommand(
      "cpu-kernels",
      "Host kernels' GB/s (vector on all threads, scalar on one) beside STREAM triad");
  cmd->add_option("--elems", f->elems,
                  "Elements per array; 5 fp32 and 2 bf16 arrays (1.5 GiB at the default)")
      ->capture_default_str();
  cmd->add_option("--reps", f->reps, "Timed calls per kernel and form (best reported)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Machine-readable output");
  return [f]() { return run(*f); };
}

}  // namespace muonplan::cli
