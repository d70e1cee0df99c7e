// Planning speed. First Kimi-K2 (1.03T params) with --nodes auto --offload auto on the default
// topology, beside one fixed-node plan measured in the same run (the ratio is what to track).
// Then the growth with the world: Kimi-K2, offload none, 8 GPUs per node, at 8 to 131072 ranks,
// each planned and written as JSON (what `muonplan plan --out` does) in a child process of its
// own, so its peak RSS is its own. CPU time (user + sys) is the figure to compare on a busy
// machine; wall time is printed beside it. Usage: plan_bench [reps]
// docs/planner.md ("Scale") shows the table; scripts/plan_scale_plot.py draws it.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"

using namespace muonplan;

namespace {

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

double seconds(const timeval& t) {
  return double(t.tv_sec) + 1e-6 * double(t.tv_usec);
}

struct Sample {
  double wall_s = 0, user_s = 0, sys_s = 0, peak_rss_mib = 0;
  size_t json_bytes = 0;
};

// Plans `nodes` x 8 ranks in a forked child; the child's own rusage gives CPU time and peak RSS.
Sample measure(const ModelSpec& spec, const Topology& topo, int nodes) {
  int fd[2];
  if (pipe(fd) != 0) std::exit(1);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Sample s;
    const auto t0 = std::chrono::steady_clock::now();
    PlanRequest r;
    r.options.nodes = nodes;
    r.options.gpus_per_node = 8;
    r.options.offload = OffloadMode::none;
    s.json_bytes = plan_to_json(make_plan(spec, topo, r)).dump(1).size();
    s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    s.user_s = seconds(u.ru_utime);
    s.sys_s = seconds(u.ru_stime);
    s.peak_rss_mib = double(u.ru_maxrss) / 1024;  // KiB on Linux
    if (write(fd[1], &s, sizeof s) != sizeof s) _exit(1);
    _exit(0);
  }
  close(fd[1]);
  Sample s;
  const bool got = read(fd[0], &s, sizeof s) == sizeof s;
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!got || status != 0) {
    std::fprintf(stderr, "plan_bench: the %d-node plan failed\n", nodes);
    std::exit(1);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  const std::string root = MUONPLAN_SOURCE_DIR;
  const ModelSpec spec = load_model(root + "/models/kimi-k2.yaml");
  const Topology topo = load_topology(root + "/topologies/h200-ib.yaml");
  PlanRequest automatic;
  automatic.auto_nodes = automatic.auto_offload = true;
  PlanRequest fixed;
  fixed.options.nodes = 8;
  fixed.options.offload = OffloadMode::full;
  int nodes = 0;
  const double auto_ms =
      median_ms(reps, [&] { nodes = make_plan(spec, topo, automatic).options.nodes; });
  const double fixed_ms = median_ms(reps, [&] { make_plan(spec, topo, fixed); });
  std::printf(
      "{\"bench\": \"plan\", \"model\": \"kimi-k2\", \"chosen_nodes\": %d, "
      "\"auto_ms\": %.2f, \"fixed_ms\": %.2f, \"auto_over_fixed\": %.2f}\n",
      nodes, auto_ms, fixed_ms, auto_ms / fixed_ms);
  for (int n : {1, 8, 64, 512, 4096, 16384}) {
    const Sample s = measure(spec, topo, n);
    std::printf(
        "{\"bench\": \"plan_scale\", \"model\": \"kimi-k2\", \"offload\": \"none\", "
        "\"ranks\": %d, \"wall_s\": %.3f, \"user_s\": %.3f, \"sys_s\": %.3f, "
        "\"peak_rss_mib\": %.1f, \"plan_json_bytes\": %zu}\n",
        n * 8, s.wall_s, s.user_s, s.sys_s, s.peak_rss_mib, s.json_bytes);
    std::fflush(stdout);
  }
  return 0;
}
