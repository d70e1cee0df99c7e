// muonplan execute: run a Plan's sharded Muon step, one process per rank under mpirun.
// Every rank reports a failure on its own line ("muonplan: rank R: ..."); rank 0 writes the
// metrics, with the plan's predictions beside the measurements.
#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <new>
#include <nlohmann/json.hpp>

#include "backend_select.h"
#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/parse_int.h"
#include "muonplan/base/units.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/communicator.h"
#include "muonplan/exec/cpu_threads.h"
#include "muonplan/exec/execute.h"
#include "muonplan/planfile/metric_keys.h"
#include "muonplan/planfile/plan_checks.h"
#include "muonplan/planner/plan.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

// Deadline of one NCCL all-to-all (setup, launch, completion) before the rank aborts NCCL
// and probes its peers; a larger --comm-timeout raises it.
constexpr double kExchangeTimeoutS = 300;

struct ExecuteFlags {
  std::string plan, backend = "cpu", metrics, inject, trace;
  exec::ExecuteOptions options;
  bool json = false, progress = false;
  double comm_timeout_s = 20;   // MPI waits: probe peers after this long (docs/reliability.md)
  exec::CpuAsyncOptions async;  // --backend cpu-async: --async-seed, --async-delay-us
  bool host_staged = false;     // --host-staged-exchange
};

// Most steps one run takes: step numbers (from + steps - 1) then stay far from int64's end.
constexpr int64_t kMaxSteps = 1'000'000'000;
// Longest --comm-timeout: deadlines computed from it stay representable.
constexpr double kMaxCommTimeoutS = 1e6;
// Shortest --comm-timeout: below it an ordinary wait (a peer's Newton-Schulz, an fsync) is
// taken for a hang, and every multi-rank run fails (docs/reliability.md).
constexpr double kMinCommTimeoutS = 1;

// The whole text as an integer in [lo, hi] into `out`, else false ("12abc", "zz", past int64).
bool parse_int_in(const std::string& text, int64_t lo, int64_t hi, int64_t& out) {
  const std::optional<int64_t> v = parse_int(text, lo, hi);
  if (v) out = *v;
  return v.has_value();
}

// One write per line, so the lines of ranks sharing a terminal do not interleave.
void report(int rank, const std::string& message) {
  const std::string line = "muonplan: rank " + std::to_string(rank) + ": " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// --inject-nonfinite NAME:STEP names a tensor of the plan: a name that matches none would
// poison nothing, and the run would pass as if the check had been exercised.
void check_inject_target(const Plan& plan, const std::string& name) {
  for (const auto& t : plan.inventory.tensors) {
    if (t.name == name) return;
  }
  throw InputError({}, "--inject-nonfinite",
                   name.empty()
                       ? std::string("expected NAME:STEP with NAME a tensor of the plan, got "
                                     "an empty name")
                       : "no tensor named '" + name + "' in the plan");
}

// --checkpoint/--resume DIR as one spelling: `ck/.`, `ck/` and `./ck` are `ck`, and `.` or
// `x/..` is the directory's absolute path, so that DIR.lock, DIR.tmp and DIR.old are its
// siblings (`.` was refused for holding `..lock`, the lock file muonplan had made itself).
// A figure of the plan JSON at `section.key`, or -1 when it is absent or not a number.
double plan_figure(const nlohmann::json& plan, const char* section, const char* key) {
  const auto s = plan.find(section);
  if (s == plan.end() || !s->is_object()) return -1;
  const auto v = s->find(key);
  return v != s->end() && v->is_number() ? v->get<double>() : -1;
}

// A plan that does not fit is refused with its figures and what to re-plan with, before its
// fields are checked: its negative predicted.fit_margin is its verdict, not a bad field.
void refuse_unfit(const nlohmann::json& plan, const std::string& path) {
  const auto fits = plan.is_object() ? plan.find("fits") : plan.end();
  if (fits == plan.end() || !fits->is_boolean() || fits->get<bool>()) return;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "this plan does not fit: GPU peak %.4g of %.4g GiB, host RAM %.4g of %.4g GiB per "
                "node (headroom GPU %.0f%%, host %.0f%%); ",
                plan_figure(plan, "predicted", "gpu_peak_gib"),
                plan_figure(plan, "limits", "gpu_memory_gib"),
                plan_figure(plan, "predicted", "host_ram_per_node_gib"),
                plan_figure(plan, "limits", "host_ram_per_node_gib"),
                100 * std::max(0.0, plan_figure(plan, "runtime", "gpu_headroom")),
                100 * std::max(0.0, plan_figure(plan, "runtime", "host_headroom")));
  throw InputError({path, 0, 0}, "",
                   std::string(buf) +
                       "re-plan with more nodes (--nodes auto), another offload mode (--offload "
                       "auto) or the limits of the machine it runs on (--gpu-memory-gib, "
                       "--host-ram-gib)");
}

std::string normal_dir(const std::string& dir) {
  if (dir.empty()) return dir;
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();  // "ck/" -> "ck"
  if (p.filename() == "." || p.filename() == "..") {
    p = std::filesystem::absolute(p).lexically_normal();
    if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();
  }
  return p.string();
}

// The run's figures, in fixed formats with their units (the metrics JSON has every digit).
void print_summary(const nlohmann::json& metrics, int world, const std::string& backend) {
  namespace k = metric;
  const auto& m = metrics["measured"];
  const auto& predicted_gb = metrics["predicted"][k::kAlltoallGbPerRankMax];  // null: none
  std::printf("executed steps %lld..%lld on %d %s rank(s)\n",
              metrics["first_step"].get<long long>(), metrics["last_step"].get<long long>(), world,
              backend.c_str());
  std::printf("  step %.4f s (median of steps 2+, max over ranks)\n",
              m[k::kOptimizerStepS].get<double>());
  std::printf("  all-to-all %.3f GB per rank (predicted %.3f)\n",
              m[k::kAlltoallGbPerRankMax].get<double>(),
              predicted_gb.is_number() ? predicted_gb.get<double>() : 0.0);
  std::printf("  peak %.3f GiB, transient %.3f GiB (backend memory)\n",
              m[k::kGpuPeakGib].get<double>(), m[k::kGpuTransientGib].get<double>());
  std::printf("  state_digest %s\n", m[k::kStateDigest].get<std::string>().c_str());
  if (m.contains(k::kReferenceRelError)) {
    std::printf(
        "  one rank: max |diff| %.3g, relative %.3g; reference_rel_error %.3g (bound %.3g)\n",
        m[k::kOneRankMaxAbsDiff].get<double>(), m[k::kOneRankRelError].get<double>(),
        m[k::kReferenceRelError].get<double>(), m[k::kReferenceRelBound].get<double>());
  }
}

// Rank 0's progress line on stderr: step k/K, seconds per step, time left. Overwritten in
// place on a terminal ("\r"), one line per step otherwise.
void print_progress(int64_t done, int64_t total, double step_s, double& sum_s, bool tty) {
  sum_s += step_s;
  const double per_step = sum_s / double(done);
  char line[160];
  std::snprintf(line, sizeof line, "step %lld/%lld  %.3f s/step  ETA %.0f s%s",
                static_cast<long long>(done), static_cast<long long>(total), per_step,
                per_step * double(total - done), tty ? "" : "\n");
  std::fprintf(stderr, "%s%s", tty ? "\r" : "", line);
  if (tty && done == total) std::fputc('\n', stderr);
}

int run(const ExecuteFlags& f) {
  prepare_backend_before_mpi(f.backend);
  exec::MpiSession mpi(nullptr, nullptr);
  // Declared before the communicator, so it is destroyed after it: the NCCL communicator
  // references the backend (its device, its lane streams) until it is gone.
  std::unique_ptr<exec::Backend> backend;
  std::unique_ptr<exec::Communicator> comm = exec::make_mpi_communicator(f.comm_timeout_s);
  const int rank = comm->rank();
  exec::configure_cpu_threads(comm->local_size());
  try {
    // cuda: the CUDA backend on this rank's device, and comm becomes NCCL over MPI.
    backend = make_execute_backend(f.backend, comm, std::max(kExchangeTimeoutS, f.comm_timeout_s),
                                   f.async, f.host_staged);
    exec::ExecuteOptions opt = f.options;
    opt.trace = !f.trace.empty();
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    double progress_sum_s = 0;
    if (rank == 0 && (f.progress || (tty && f.options.steps > 1))) {
      opt.on_step = [&](int64_t done, int64_t total, double step_s) {
        print_progress(done, total, step_s, progress_sum_s, tty);
      };
    }
    if (!f.inject.empty()) {
      const size_t colon = f.inject.rfind(':');
      if (colon == std::string::npos)
        throw InputError({}, "--inject-nonfinite", "expected NAME:STEP");
      opt.inject_nonfinite_tensor = f.inject.substr(0, colon);
      if (!parse_int_in(f.inject.substr(colon + 1), 1, INT64_MAX, opt.inject_nonfinite_step)) {
        throw InputError(
            {}, "--inject-nonfinite",
            "expected NAME:STEP with STEP a positive integer, got '" + brief(f.inject) + "'");
      }
    }
    const nlohmann::json plan_json = read_json_file(f.plan);
    refuse_unfit(plan_json, f.plan);
    const Plan plan = plan_from_json(plan_json, f.plan);
    if (!f.inject.empty()) check_inject_target(plan, opt.inject_nonfinite_tensor);
    exec::ExecuteResult r = exec::execute(plan, opt, *backend, *comm);
    r.metrics["plan"] = f.plan;
    // The plan's figures as the table types them (metric_keys.h), not its object copied.
    r.metrics["predicted"] = figures_to_json(read_plan_predicted(plan_json, f.plan));
    if (rank == 0 && !f.metrics.empty()) write_file_atomic(f.metrics, r.metrics.dump(2) + "\n");
    if (rank == 0 && opt.trace) write_file_atomic(f.trace, r.trace.dump(1) + "\n");
    // The run has succeeded only once the metrics are written: until then every rank waits
    // here, so a failed write reaches the others as rank 0's failure notice at once instead of
    // after they have left (docs/reliability.md).
    comm->barrier();
    if (rank == 0) {
      if (f.json) {
        std::cout << r.metrics.dump(2) << "\n";
      } else {
        print_summary(r.metrics, plan.world, backend->name());
      }
    }
    return 0;
  } catch (const exec::RankFailure& e) {
    // Another rank died or failed: its rank and step are in the message. Relaying it lets
    // ranks still computing learn it at once (docs/reliability.md).
    report(rank, e.what());
    comm->announce_failure(e.what());
    return 1;
  } catch (const InputError& e) {
    report(rank, e.what());
    comm->announce_failure(e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Freed by the unwinding: the lines below have memory again.
    const std::string what = "out of memory running --plan " + f.plan;
    report(rank, "error: " + what);
    comm->announce_failure(what);
    return 1;
  } catch (const std::exception& e) {
    report(rank, std::string("error: ") + e.what());
    comm->announce_failure(e.what());
    return 1;
  }
}

// The backend and its test hooks.
void add_backend_flags(CLI::App* c, const std::shared_ptr<ExecuteFlags>& f) {
  c->add_option("--backend", f->backend, "cpu | cpu-async | cuda")->capture_default_str();
  c->add_option("--async-seed", f->async.seed, "cpu-async: seed of the lanes' random delays")
      ->capture_default_str();
  c->add_option_function<int64_t>(
       "--async-delay-us",
       [f](const int64_t& v) {
         if (v < 0 || v > 10'000'000) {
           throw InputError({}, "--async-delay-us",
                            "expected microseconds in [0, 10000000], got " + std::to_string(v));
         }
         f->async.max_delay_us = v;
       },
       "cpu-async: each operation may start up to this long late unless waited for (default: " +
           std::to_string(f->async.max_delay_us) + ")")
      ->type_name("INT");
  c->add_flag("--host-staged-exchange", f->host_staged,
              "All-to-alls through pinned host memory over MPI (automatic for cuda ranks "
              "sharing a GPU)");
  // Test hook (docs/executor.md, "Lanes"): a dropped wait must change the digest. Group "":
  // usable, not listed by --help.
  c->add_flag("--async-drop-joins", f->async.drop_joins,
              "Test hook, cpu-async: join_lanes() does nothing")
      ->group("");
}

// What the run does: steps, outputs, checkpoints, checks.
void add_run_flags(CLI::App* c, const std::shared_ptr<ExecuteFlags>& f) {
  // --steps and --comm-timeout are checked here, before MPI starts, with one line naming the
  // flag (exit 2): CLI11 reads 99999999999999999999 as INT64_MAX and lets NaN pass.
  c->add_option_function<std::string>(
       "--steps",
       [f](const std::string& v) {
         if (!parse_int_in(v, 1, kMaxSteps, f->options.steps)) {
           throw InputError({}, "--steps",
                            "expected an integer in [1, " + std::to_string(kMaxSteps) + "], got '" +
                                brief(v) + "'");
         }
       },
       "Optimizer steps to run (default: " + std::to_string(f->options.steps) + ")")
      ->type_name("INT");
  c->add_option("--metrics", f->metrics, "Write the metrics JSON here (rank 0)")
      ->check(non_empty_path());
  c->add_flag("--check-reference", f->options.check_reference,
              "Compare with the same steps recomputed unsharded");
  c->add_option("--checkpoint", f->options.checkpoint_dir,
                "Save the state here after the last step")
      ->check(non_empty_path());
  c->add_option("--resume", f->options.resume_dir, "Load the state from this checkpoint first")
      ->check(non_empty_path());
  c->add_flag("--skip-nonfinite", f->options.skip_nonfinite,
              "Skip a step with NaN/Inf gradients instead of failing");
  c->add_option("--inject-nonfinite", f->inject, "Test hook: NAME:STEP poisons a gradient")
      ->group("")  // a test hook: usable, not listed by --help
      ->check(CLI::Validator(
          // Hidden options have no name in CLI11's errors: the message names it (main.cc).
          [](std::string& v) {
            return v.empty() ? "--inject-nonfinite: empty; expected NAME:STEP" : std::string();
          },
          "NAME:STEP", "tensor:step"));
  c->add_flag("--json", f->json, "Print the metrics JSON");
  c->add_flag("--progress", f->progress,
              "Print step k/K, s/step and ETA on stderr after each step (on by default when "
              "stderr is a terminal and more than one step runs)");
  c->add_option("--trace", f->trace,
                "Write the last step's stages on every rank as Chrome trace-event JSON (rank 0)")
      ->check(non_empty_path());
  c->add_flag("--symmetric-ns", f->options.symmetric_ns,
              "Newton-Schulz computing one triangle of the symmetric products");
}

// One spelling of each checkpoint path, and no output overwriting an input, before MPI starts.
void check_paths(ExecuteFlags* f) {
  // One spelling of each checkpoint path before anything compares or names them.
  f->options.checkpoint_dir = normal_dir(f->options.checkpoint_dir);
  f->options.resume_dir = normal_dir(f->options.resume_dir);
  // Before MPI starts: every rank refuses alike, with one line (exit 2).
  std::vector<PathArg> in = {{"--plan", f->plan}},
                       out = {{"--metrics", f->metrics}, {"--trace", f->trace}};
  for (const PathArg& a : checkpoint_paths("--resume", f->options.resume_dir, false))
    in.push_back(a);
  for (const PathArg& a : checkpoint_paths("--checkpoint", f->options.checkpoint_dir, true))
    out.push_back(a);
  refuse_overlaps(in, out);
  if (!f->options.checkpoint_dir.empty())
    refuse_checkpoint_sibling("--checkpoint", f->options.checkpoint_dir);
}

}  // namespace

Runner add_execute(CLI::App& app) {
  auto f = std::make_shared<ExecuteFlags>();
  CLI::App* c = app.add_subcommand("execute", "Run a plan's sharded Muon step (under mpirun)");
  c->add_option("--plan", f->plan, "Plan JSON from `muonplan plan --out`")
      ->required()
      ->check(non_empty_path());
  add_backend_flags(c, f);
  add_run_flags(c, f);
  c->add_option_function<std::string>(
       "--comm-timeout",
       [f](const std::string& v) {
         char* end = nullptr;
         const double s = std::strtod(v.c_str(), &end);
         if (v.empty() || *end != '\0' || !(s >= kMinCommTimeoutS && s <= kMaxCommTimeoutS)) {
           throw InputError({}, "--comm-timeout",
                            "expected seconds in [1, 1e6], got '" + brief(v) + "'");
         }
         f->comm_timeout_s = s;
       },
       "Seconds an MPI wait may last before the ranks are probed (a failed rank is then "
       "reported; at least " +
           sig_figs(kMinCommTimeoutS, 6) + ", default: " + sig_figs(f->comm_timeout_s, 6) + ")")
      ->type_name("FLOAT");
  return [f]() {
    check_paths(f.get());
    return run(*f);
  };
}

}  // namespace muonplan::cli
