// prime-rl's defaults by date (prime_rl_versions.cc, the one table): the values of each era, and
// that the readers take them where the run or the flags are silent: the flag path
// (--runs-on prime-rl --prime-rl-version) and the trainer-benchmark form of --training-run,
// whose `date:` is its era (docs/validation.md, the June 2026 runs).
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "muonplan/planner/prime_rl.h"
#include "muonplan/planner/topology.h"
#include "muonplan/tools/training_run.h"
#include "test_plans.h"

using namespace muonplan;
using namespace muonplan::test;

TEST_CASE("prime-rl eras: RL's fused head, optimizer and AC offload by date", "[prime_rl_era]") {
  // Before #1544 (2026-01-05) no fused head; then 2048 vocabulary rows until #1904 made it
  // "disabled" (2026-02-26); c5afcaa2e (#2868, 2026-06-26) 1024 tokens with optim_cpu_offload,
  // AC and AC offload on; 2acb19ecc (#3302, 2026-08-19) 8192.
  struct Row {
    const char* date;
    int64_t chunk;
    bool offload, ac, ac_offloading;
  };
  for (const Row& r :
       {Row{"2025-12-31", 0, false, false, false}, Row{"2026-01-05", 2048, false, false, false},
        Row{"2026-01-15", 2048, false, false, false}, Row{"2026-02-26", 0, false, false, false},
        Row{"2026-06-24", 0, false, false, false}, Row{"2026-06-26", 1024, true, true, true},
        Row{"2026-08-19", 8192, true, true, true}, Row{"", 8192, true, true, true}}) {
    INFO(r.date);
    const PrimeRlEra e = prime_rl_era(r.date);
    CHECK(e.rl_lm_head_chunk == r.chunk);
    CHECK(e.optim_cpu_offload == r.offload);
    CHECK(e.ac == r.ac);
    CHECK(e.ac_offloading == r.ac_offloading);
  }
  CHECK(error_of([] { prime_rl_era("2026-02-30"); }, "").rfind("--prime-rl-version: ", 0) == 0);
}

TEST_CASE("prime-rl eras: the flag path's fused head of January is 2048 rows", "[prime_rl_era]") {
  PlanFlags f = plan_flags_from_map({{"tokens-per-step", "131072"},
                                     {"seq-len", "65536"},
                                     {"runs-on", "prime-rl"},
                                     {"trainer", "rl"},
                                     {"prime-rl-version", "2026-01-15"}});
  const PlanInputs jan = prepare_plan(repo_path("models/qwen3-0.6b.yaml"), f);
  CHECK(jan.request.options.workload->lm_head_chunk == 2048);
  CHECK_FALSE(jan.request.options.workload->ac_offload);
  f.prime_rl_version = "2026-04-01";
  const PlanInputs apr = prepare_plan(repo_path("models/qwen3-0.6b.yaml"), f);
  CHECK(apr.request.options.workload->lm_head_chunk == 0);
}

namespace {

// The benchmark's RL run of Qwen3-0.6B on one A6000 at `date`, as gen-matrix-runs.py writes it.
TrainingRun benchmark_run(const std::string& date) {
  const TempFile f("prime_rl_era_run.yaml",
                   "model: qwen3-0.6b\ntopology: rtx-a6000\nnodes: 1\ngpus: 1\ntype: rl\n"
                   "lora_rank: 0\nseq_len: 65536\nac: recompute\n"
                   "attention: flash_attention_2\nmicro_batches: 2\ndate: '" +
                       date +
                       "'\nmeasured:\n  gpu_peak_gib: 11.7\n"
                       "  gpu_peak_kind: max_memory_reserved\n");
  return load_training_run(f.path, topology("rtx-a6000"));
}

}  // namespace

TEST_CASE("prime-rl eras: a benchmark run takes the defaults of its date", "[prime_rl_era]") {
  // January: no optimizer offload, AC without offload, the head in 2048-row chunks.
  const TrainingRun jan = benchmark_run("2026-01-15");
  CHECK(jan.plan.options.offload == OffloadMode::none);
  CHECK(jan.plan.options.workload->ac_full);
  CHECK_FALSE(jan.plan.options.workload->ac_offload);
  CHECK(jan.plan.options.workload->lm_head_chunk == 2048);
  // April: main's RL head is the vanilla one (whole logits).
  const TrainingRun apr = benchmark_run("2026-04-01");
  CHECK(apr.plan.options.offload == OffloadMode::none);
  CHECK(apr.plan.options.workload->lm_head_chunk == 0);
  // #2868's era (the June runs' commit, gen-matrix-runs.py): optim_cpu_offload, AC offload on
  // beside the benchmark's --model.ac, a 1024-token head; the persistent state is the fp32
  // weights and gradients (8 B per parameter), and the reserved peak comes down with it.
  const TrainingRun jun = benchmark_run("2026-06-26");
  CHECK(jun.plan.options.offload == OffloadMode::optimizer);
  CHECK(jun.plan.options.workload->ac_full);
  CHECK(jun.plan.options.workload->ac_offload);
  CHECK(jun.plan.options.workload->lm_head_chunk == 1024);
  const Topology a6000 = topology("rtx-a6000");
  const TrainingRunCheck cj = check_training_run(jan, a6000), cn = check_training_run(jun, a6000);
  CHECK(*cn.predicted_gpu_gib < *cj.predicted_gpu_gib - 5);
}
