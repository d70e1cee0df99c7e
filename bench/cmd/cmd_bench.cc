// muonplan bench ns: measured time of one batched Newton-Schulz call on a backend, next to the
// rate of a plain sgemm measured in the same run (docs/executor-numerics.md, "Speed").
// `bench cpu-kernels` is in cmd_bench_cpu.cc. With --dump DIR it also writes each shape's input
// and each variant's output, so another implementation can be run and judged on the same
// matrices (bench/ns_torch.py, bench/gpu_check.sh).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend_select.h"
#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/newton_schulz.h"
#include "muonplan/exec/openblas_core.h"
#include "muonplan/exec/sgemm_rate.h"
#include "muonplan/planner/ns_model.h"
#include "muonplan/tools/report_dir.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

struct Shape {
  int64_t batch = 0, rows = 0, cols = 0;
};

struct BenchFlags {
  std::string backend = "cpu", shapes = "4,256,1024;2,1024,1024;8,512,512", schedule = "quintic";
  std::string variant = "plain";  // plain | symmetric | both (newton_schulz.h, NsVariant)
  std::string gemm;               // the CPU backend's GEMM path; empty: MUONPLAN_CPU_GEMM's
  int reps = 3;
  int64_t sgemm_n = 1024;
  std::string dump;  // folder for the inputs, outputs and ns.json; empty: none
  bool json = false;
};

// "B,R,C;B,R,C;..." -> shapes; InputError (field --shapes) on anything else.
std::vector<Shape> parse_shapes(const std::string& text) {
  std::vector<Shape> shapes;
  std::stringstream all(text);
  std::string item;
  while (std::getline(all, item, ';')) {
    if (item.empty()) continue;
    Shape s;
    char c1 = 0, c2 = 0;
    std::stringstream one(item);
    if (!(one >> s.batch >> c1 >> s.rows >> c2 >> s.cols) || c1 != ',' || c2 != ',' ||
        !(one >> std::ws).eof() || s.batch <= 0 || s.rows <= 0 || s.cols <= 0) {
      throw InputError({}, "--shapes",
                       "expected BATCH,ROWS,COLS with positive integers, got '" + item + "'");
    }
    shapes.push_back(s);
  }
  if (shapes.empty()) throw InputError({}, "--shapes", "no shapes given");
  return shapes;
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The input of every timed call for shape s: the same for every variant and thread count
// (matrix k draws from its own generator, seed k + 1), made on every core (the GPU check's
// shapes hold 25M to 100M elements each).
std::vector<exec::bf16> bench_input(const Shape& s) {
  const int64_t per = s.rows * s.cols;
  std::vector<exec::bf16> host(s.batch * per);
  auto fill = [&](int64_t first, int64_t step) {
    for (int64_t k = first; k < s.batch; k += step) {
      std::mt19937 rng(static_cast<std::mt19937::result_type>(k + 1));
      std::normal_distribution<float> normal(0.0f, 0.02f);
      for (int64_t i = 0; i < per; ++i) host[k * per + i] = exec::to_bf16(normal(rng));
    }
  };
  const int64_t threads =
      std::min<int64_t>(s.batch, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) pool.emplace_back(fill, t, threads);
  fill(0, threads);
  for (std::thread& t : pool) t.join();
  return host;
}

// Writes `values` as raw bf16 (row-major, batch-major) to dir/name; the name on success.
std::string write_bf16(const std::string& dir, const std::string& name,
                       const std::vector<exec::bf16>& values) {
  const std::string path = dir + "/" + name;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(exec::bf16)));
  if (!f) throw std::runtime_error("--dump: cannot write " + path);
  return name;
}

// Median seconds of `reps` NS calls on `host`, after one warm-up call; `out`, when given,
// receives the last call's result.
double time_ns(exec::Backend& backend, const NsSchedule& schedule, const Shape& s, int reps,
               exec::NsVariant variant, const std::vector<exec::bf16>& host,
               std::vector<exec::bf16>* out) {
  const int64_t elems = s.batch * s.rows * s.cols;
  auto* x = static_cast<exec::bf16*>(backend.alloc(elems * sizeof(exec::bf16)));
  exec::NsWorkspace ws(backend, s.batch, s.rows, s.cols);
  std::vector<double> seconds;
  for (int r = -1; r < reps; ++r) {  // r = -1: warm-up
    backend.copy_to_device(x, host.data(), elems * sizeof(exec::bf16));
    backend.synchronize();
    const auto start = std::chrono::steady_clock::now();
    exec::newton_schulz(backend, schedule, s.batch, s.rows, s.cols, x, ws, variant);
    backend.synchronize();
    const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    if (r >= 0) seconds.push_back(took.count());
  }
  if (out != nullptr) {
    out->resize(elems);
    backend.copy_to_host(out->data(), x, elems * sizeof(exec::bf16));
    backend.synchronize();
  }
  backend.free(x);
  return median(seconds);
}

using NsVariants = std::vector<std::pair<std::string, exec::NsVariant>>;

// The variants --variant names, by name.
NsVariants ns_variants(const BenchFlags& f) {
  NsVariants variants;
  if (f.variant == "plain" || f.variant == "both") {
    variants.emplace_back("plain", exec::NsVariant::plain);
  }
  if (f.variant == "symmetric" || f.variant == "both") {
    variants.emplace_back("symmetric", exec::NsVariant::symmetric);
  }
  if (variants.empty()) {
    throw InputError({}, "--variant", "expected plain, symmetric or both, got '" + f.variant + "'");
  }
  return variants;
}

// The backend --backend and --gemm name, once the flags are checked.
std::unique_ptr<exec::Backend> ns_backend(const BenchFlags& f) {
  if (!f.gemm.empty() && f.gemm != "onednn" && f.gemm != "openblas") {
    throw InputError({}, "--gemm", "expected onednn or openblas, got '" + f.gemm + "'");
  }
  if (!f.gemm.empty() && f.backend != "cpu") {
    throw InputError({}, "--gemm", "only the cpu backend has GEMM paths");
  }
  return f.gemm.empty() ? make_backend(f.backend)
                        : exec::make_cpu_backend(f.gemm == "onednn" ? exec::CpuGemm::onednn
                                                                    : exec::CpuGemm::openblas);
}

// The JSON output without its rows: what ran, on what, with what yardstick.
nlohmann::json ns_run_json(const exec::Backend& backend, const NsSchedule& schedule,
                           const BenchFlags& f, int threads, bool cpu) {
  nlohmann::json steps = nlohmann::json::array();
  for (const NsCoefficients& c : schedule.steps) steps.push_back({c.a, c.b, c.c});
  nlohmann::json out = {{"backend", backend.name()},
                        {"schedule", schedule.name},
                        {"schedule_steps", steps},
                        {"norm_scale", schedule.norm_scale},
                        {"eps", exec::kNsEps},
                        {"iterations", schedule.steps.size()},
                        {"threads", threads},
                        {"sgemm_size", f.sgemm_n},
                        {"shapes", nlohmann::json::array()}};
  if (cpu) {
    out["gemm_path"] = exec::cpu_gemm_name(exec::cpu_gemm_path(backend));
    out["openblas_core"] = exec::openblas_core_name();
    out["openblas_core_origin"] = exec::openblas_core_origin();
  }
  return out;
}

// The text output's header line and column names.
void print_ns_header(const exec::Backend& backend, const NsSchedule& schedule, const BenchFlags& f,
                     int threads, bool cpu) {
  if (cpu) {
    std::printf(
        "NS on the %s backend (GEMM path %s), %s (%zu iterations), %d threads; reference: "
        "OpenBLAS sgemm %lld^3 (%s kernel, chosen by %s), %d threads, measured just before "
        "each shape\n",
        backend.name().c_str(), exec::cpu_gemm_name(exec::cpu_gemm_path(backend)),
        schedule.name.c_str(), schedule.steps.size(), threads, (long long)f.sgemm_n,
        exec::openblas_core_name().c_str(), exec::openblas_core_origin().c_str(), threads);
    std::printf("%6s %6s %6s %10s %9s %12s %7s\n", "batch", "rows", "cols", "ms", "GFLOP/s",
                "sgemm GF/s", "ratio");
  } else {
    std::printf("NS on the %s backend, %s (%zu iterations); GFLOP/s of the plain algorithm\n",
                backend.name().c_str(), schedule.name.c_str(), schedule.steps.size());
    std::printf("%6s %6s %6s %10s %9s\n", "batch", "rows", "cols", "ms", "GFLOP/s");
  }
}

// Every variant on shape `s`: a row each into out["shapes"], a line each unless --json.
void bench_shape(exec::Backend& backend, const NsSchedule& schedule, const BenchFlags& f,
                 const NsVariants& variants, const Shape& s, int threads, bool cpu,
                 nlohmann::json& out) {
  // The sgemm runs right before the shape, so a busy neighbour on a shared machine slows
  // both alike.
  const double sgemm =
      cpu ? exec::openblas_sgemm_gflops(f.sgemm_n, std::max(f.reps, 10), threads) : 0.0;
  const std::vector<exec::bf16> input = bench_input(s);
  const std::string stem =
      "ns_" + std::to_string(s.batch) + "x" + std::to_string(s.rows) + "x" + std::to_string(s.cols);
  const std::string input_file = f.dump.empty() ? "" : write_bf16(f.dump, stem + ".in.bf16", input);
  for (const auto& [variant_name, variant] : variants) {
    std::vector<exec::bf16> result;
    const double sec =
        time_ns(backend, schedule, s, f.reps, variant, input, f.dump.empty() ? nullptr : &result);
    // The plain algorithm's FLOPs for every variant: a faster variant shows a higher rate.
    const double gflops =
        s.batch * ns_flops(s.rows, s.cols, static_cast<int>(schedule.steps.size())) / sec / 1e9;
    nlohmann::json row = {{"batch", s.batch}, {"rows", s.rows},   {"cols", s.cols},
                          {"ms", sec * 1e3},  {"gflops", gflops}, {"variant", variant_name}};
    if (cpu) {
      row["sgemm_gflops"] = sgemm;
      row["ratio"] = gflops / sgemm;
    }
    if (!f.dump.empty()) {
      row["input_file"] = input_file;
      row["output_file"] = write_bf16(f.dump, stem + "." + variant_name + ".bf16", result);
    }
    out["shapes"].push_back(row);
    if (!f.json) {
      std::printf("%6lld %6lld %6lld %10.2f %9.1f", (long long)s.batch, (long long)s.rows,
                  (long long)s.cols, sec * 1e3, gflops);
      if (cpu) std::printf(" %12.1f %7.2f", sgemm, gflops / sgemm);
      if (variants.size() > 1 || variant != exec::NsVariant::plain) {
        std::printf("  %s", variant_name.c_str());
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
}

// `muonplan bench ns`.
int run_bench_ns(const BenchFlags& f) {
  const NsVariants variants = ns_variants(f);
  if (f.reps <= 0) throw InputError({}, "--reps", "must be positive");
  if (f.sgemm_n <= 0) throw InputError({}, "--sgemm-size", "must be positive");
  const std::vector<Shape> shapes = parse_shapes(f.shapes);
  const NsSchedule schedule = ns_schedule(f.schedule);
  std::unique_ptr<exec::Backend> backend = ns_backend(f);
  // The OpenBLAS sgemm yardstick is the CPU backend's; a device backend reports its rate alone.
  const bool cpu = backend->name() == "cpu";
  const int threads = omp_get_max_threads();

  // --dump DIR follows report --out's rule (report_dir.h): a directory of its own, marked,
  // never inside a checkpoint, filled in a staging directory and swapped in whole.
  std::optional<ReportDir> dump;
  if (!f.dump.empty()) dump.emplace(f.dump, kBenchDumpOwner);
  BenchFlags into = f;
  if (dump) into.dump = dump->staging();
  nlohmann::json out = ns_run_json(*backend, schedule, into, threads, cpu);
  if (!f.json) print_ns_header(*backend, schedule, into, threads, cpu);
  for (const Shape& s : shapes)
    bench_shape(*backend, schedule, into, variants, s, threads, cpu, out);
  if (dump) {
    write_file_atomic(into.dump + "/ns.json", out.dump(2) + "\n");
    dump->publish();
  }
  if (f.json) std::cout << out.dump(2) << "\n";
  return 0;
}

}  // namespace

Runner add_bench(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* bench = app.add_subcommand("bench", "Measure executor kernels on this machine");
  bench->require_subcommand(1);
  CLI::App* ns = bench->add_subcommand(
      "ns", "Batched Newton-Schulz: ms per call and GFLOP/s next to a plain sgemm's");
  ns->add_option("--backend", f->backend, "Backend to run on (" + known_backends() + ")")
      ->capture_default_str();
  ns->add_option("--variant", f->variant, "plain | symmetric (syrk for X X^T and A A) | both")
      ->capture_default_str();
  ns->add_option("--shapes", f->shapes, "Shapes as BATCH,ROWS,COLS;...")->capture_default_str();
  ns->add_option("--ns-schedule", f->schedule, "Schedule preset or explicit list")
      ->capture_default_str();
  ns->add_option("--reps", f->reps, "Timed calls per shape (median reported)")
      ->capture_default_str();
  ns->add_option("--sgemm-size", f->sgemm_n, "N of the N^3 reference sgemm")->capture_default_str();
  ns->add_option("--dump", f->dump,
                 "Write each shape's input and each variant's output (raw bf16) and ns.json "
                 "(the JSON output, with file names) to this folder: a new or empty one, or one "
                 "an earlier --dump wrote")
      ->check(non_empty_path());
  ns->add_option("--gemm", f->gemm,
                 "CPU backend's GEMM path: onednn | openblas (default: MUONPLAN_CPU_GEMM, else "
                 "onednn)");
  ns->add_flag("--json", f->json, "Machine-readable output");
  Runner cpu_kernels = add_bench_cpu_kernels(*bench);
  return [f, ns, cpu_kernels]() {
    if (!ns->parsed()) return cpu_kernels();
    return run_bench_ns(*f);
  };
}

}  // namespace muonplan::cli
