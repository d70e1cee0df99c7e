// A target runtime's rules (runtime_rules.h): the search's alternatives rank only what the
// runtime runs; the runtime that runs everything, prime-rl's (prime_rl.h), and one written here.
#include <catch2/catch.hpp>
#include <functional>

#include "muonplan/planner/alternatives.h"
#include "muonplan/planner/layout.h"
#include "muonplan/planner/prime_rl.h"
#include "prime_rl/prime_rl_rules.h"
#include "test_plans.h"

using namespace muonplan;

namespace {

// A runtime that runs optimizer offload only.
class OptimizerOffloadOnly final : public RuntimeRules {
 public:
  std::string cannot_run(OffloadMode offload, OptimizerKind, const Layout&) const override {
    return offload == OffloadMode::optimizer ? "" : "optimizer offload only";
  }
};

// Each objective's ranking key, as alternatives.cc orders the candidates.
std::pair<double, double> key(const Alternative& a) {
  const Candidate& c = a.candidate;
  if (a.objective == "fewest nodes that fit") return {c.nodes, c.gpu_seconds};
  if (a.objective == "fewest GPU-seconds per step") return {c.gpu_seconds, c.nodes};
  return {c.step_s, c.nodes};
}

}  // namespace

TEST_CASE("runtime rules: prime-rl's are prime_rl_cannot_run, the default refuses nothing",
          "[runtime_rules]") {
  int refused = 0;
  for (OffloadMode m : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
    for (OptimizerKind k : {OptimizerKind::muon, OptimizerKind::adamw}) {
      for (const char* l : {"fsdp=8", "fsdp=8,ep=2,cp=4", "fsdp=8,ep=4,cp=2"}) {
        const Layout layout = parse_layout(l);
        CHECK(any_runtime().cannot_run(m, k, layout).empty());
        const std::string why = prime_rl_rules().cannot_run(m, k, layout);
        CHECK(why == prime_rl_cannot_run(m, k, layout));
        refused += !why.empty();
      }
    }
  }
  // Muon under full offload (3 layouts), and ep=2 with cp=4 under the other 5 pairs.
  CHECK(refused == 3 + 5);
  Candidate unevaluated;
  unevaluated.layout = "fsdp=8";
  CHECK_FALSE(any_runtime().takes(unevaluated, OptimizerKind::adamw));
}

TEST_CASE("runtime rules: the alternatives rank only what the runtime runs", "[runtime_rules]") {
  const ModelSpec spec = test::model("tiny-dense");
  const Topology topo = test::topology("cpu-ci");
  PlanRequest r;
  r.options.nodes = 1;
  r.options.offload = OffloadMode::none;
  const Plan written = make_plan(spec, topo, r);
  const Alternatives any = best_alternatives(spec, topo, r, written, any_runtime());
  const Alternatives only = best_alternatives(spec, topo, r, written, OptimizerOffloadOnly());
  const Alternatives prime = best_alternatives(spec, topo, r, written, prime_rl_rules());
  REQUIRE(any.alternatives.size() == 3);
  REQUIRE(only.alternatives.size() == 3);
  REQUIRE(prime.alternatives.size() == 3);
  CHECK(any.node_counts == only.node_counts);
  bool other_mode = false;
  for (size_t i = 0; i < 3; ++i) {
    CHECK(only.alternatives[i].candidate.offload == OffloadMode::optimizer);
    // Muon (the default optimizer) never under full offload for prime-rl.
    CHECK(prime.alternatives[i].candidate.offload != OffloadMode::full);
    // Every runtime's candidates are among any runtime's: its best is no better.
    CHECK(only.alternatives[i].objective == any.alternatives[i].objective);
    CHECK(key(any.alternatives[i]) <= key(only.alternatives[i]));
    CHECK(key(any.alternatives[i]) <= key(prime.alternatives[i]));
    other_mode |= any.alternatives[i].candidate.offload != OffloadMode::optimizer;
    CHECK(any.alternatives[i].keys.empty());  // the keys are an importer's
  }
  // The rule removed something the default runtime chose.
  CHECK(other_mode);
}

TEST_CASE("runtime rules: prime-rl's CP, SFT and optimizer rules of a run", "[runtime_rules]") {
  const Layout cp2 = parse_layout("fsdp=8,cp=2"), cp1 = parse_layout("fsdp=8");
  const auto none = OffloadMode::none;
  const auto muon = OptimizerKind::muon;
  PrimeRlRun run;
  run.attention = "sdpa";
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).find("cp_only_with_flash_attn") !=
        std::string::npos);
  CHECK(prime_rl_cannot_run(none, muon, cp1, run).empty());
  run.version = "2025-10-01";  // before ring-flash-attn (#1305): CP ran on SDPA
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).empty());
  run = PrimeRlRun{};
  run.vlm = true;
  run.cp_style = "ring";
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).find("vlm_cp_requires_ulysses") !=
        std::string::npos);
  run.cp_style = "ulysses";
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).empty());
  run = PrimeRlRun{};
  run.sft = true;
  run.micro_batch_seqs = 8;
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).find("validate_cp_micro_batch_size") !=
        std::string::npos);
  CHECK(prime_rl_cannot_run(none, muon, cp1, run).empty());
  run.micro_batch_seqs = 1;
  run.version = "2025-08-20";  // SFT cp from 2025-08-31 (#739); muon from 2025-08-12 (#690)
  CHECK(prime_rl_cannot_run(none, muon, cp2, run).find("#739") != std::string::npos);
  CHECK(prime_rl_cannot_run(none, muon, cp1, run).empty());
  CHECK(prime_rl_cannot_run(none, muon, cp1, "2025-08-01").find("#690") != std::string::npos);
  CHECK(prime_rl_cannot_run(none, OptimizerKind::signsgd, cp1, "2026-03-01").find("#2148") !=
        std::string::npos);
  CHECK(prime_rl_cannot_run(OffloadMode::full, OptimizerKind::signsgd, cp1, "2026-08-16")
            .find("#3303") != std::string::npos);
  CHECK(prime_rl_cannot_run(OffloadMode::full, OptimizerKind::signsgd, cp1, "2026-08-18").empty());
}

TEST_CASE("runtime rules: prime-rl's RL config runs one node before rl_slurm", "[runtime_rules]") {
  PrimeRlRun run;
  run.version = "2026-02-16";  // the day before rl_slurm's (#1774) last thread date
  const std::string why = prime_rl_cannot_run_nodes(2, run);
  CHECK(why.rfind("2 nodes: prime-rl of 2026-02-16's rl launcher runs the trainer on one node",
                  0) == 0);
  CHECK(why.find("--prime-rl-version 2026-02-17 or later runs it") != std::string::npos);
  CHECK(prime_rl_cannot_run_nodes(1, run).empty());
  run.sft = true;  // SFT ran on more nodes under torchrun --nnodes
  CHECK(prime_rl_cannot_run_nodes(2, run).empty());
  run.sft = false;
  run.standalone = true;  // so did a trainer file
  CHECK(prime_rl_cannot_run_nodes(2, run).empty());
  run.standalone = false;
  run.version = "2026-02-17";
  CHECK(prime_rl_cannot_run_nodes(2, run).empty());
  run.version = "";  // the newest
  CHECK(prime_rl_cannot_run_nodes(8, run).empty());
  // The search's rules take it: a 2-node candidate is refused at that date, 1 node taken.
  run.version = "2026-02-16";
  const auto rules = prime_rl_rules_for(run);
  Candidate c{};
  c.layout = "fsdp=8,cp=1,ep=1";
  c.offload = OffloadMode::none;
  c.evaluated = true;
  c.nodes = 2;
  CHECK_FALSE(rules->takes(c, OptimizerKind::adamw));
  c.nodes = 1;
  CHECK(rules->takes(c, OptimizerKind::adamw));
}
