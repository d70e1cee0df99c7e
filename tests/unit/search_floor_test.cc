// The search's no-fit floor (planner/src/plan/search_floor.cc) is a lower bound: no plan of any
// world size, layout or offload mode needs less GPU memory than it.
#include <catch2/catch.hpp>

#include "plan/search_floor.h"
#include "test_plans.h"

using namespace muonplan;
using test::h200;
using test::model;

TEST_CASE("no plan needs less GPU memory than the search floor", "[search]") {
  Topology wide = h200();
  wide.max_nodes = 256;  // plan --nodes stays within the topology's max_nodes
  for (const char* name : {"qwen3-8b", "glm-4.5-air"}) {
    for (int nodes : {1, 4, 32, 256}) {
      for (OffloadMode m : {OffloadMode::none, OffloadMode::optimizer, OffloadMode::full}) {
        PlanRequest r;
        r.options.nodes = nodes;
        r.options.offload = m;
        const Plan p = make_plan(model(name), wide, r);
        // World 0: the bound at any world (it only falls as the world grows).
        const double floor = SearchFloor(p.inventory, p.topology, p.options, {m}).gpu_bytes(m, 0);
        INFO(name << " on " << nodes << " node(s), offload " << to_string(m));
        CHECK(floor > 0);
        CHECK(p.predicted.gpu_peak_bytes() >= floor);
      }
    }
  }
}

// The world-dependent bound (rank 0's persistent arrays and local expert NS) against the
// predicted peak of plans at many worlds, layouts and modes: never above it, for a dense model
// and two MoE models (expert stacks are where rank 0's share stops shrinking).
TEST_CASE("no plan at a world needs less GPU memory than the search floor there", "[search]") {
  const std::vector<OffloadMode> modes = {OffloadMode::none, OffloadMode::optimizer,
                                          OffloadMode::full};
  for (const char* name : {"qwen3-8b", "qwen3-30b-a3b", "kimi-k2"}) {
    for (int nodes : {1, 3, 16, 64}) {
      for (const char* layout : {"", "ep=8"}) {
        for (OffloadMode m : modes) {
          PlanRequest r;
          r.options.nodes = nodes;
          r.options.offload = m;
          if (*layout && std::string(name) != "qwen3-8b") r.options.layout = parse_layout(layout);
          const Plan p = make_plan(model(name), h200(), r);
          const SearchFloor floor(p.inventory, p.topology, p.options, modes);
          INFO(name << " on " << nodes << " node(s), layout " << to_string(p.options.layout)
                    << ", offload " << to_string(m));
          const double bound = floor.gpu_bytes(m, p.world);
          CHECK(bound > floor.gpu_bytes(m, 0) * 0.999);  // non-increasing towards infinity
          CHECK(p.predicted.gpu_peak_bytes() >= bound);
          CHECK(floor.min_gpu_bytes(p.world) <= bound);
        }
      }
    }
  }
}

// Kimi-K2 in 60 GiB per GPU, offload none, over a topology of 16384 nodes: the bound skips
// 1..47 nodes and the search evaluates from 48, where the first fit is. The skipped counts are
// listed with their bound, the answer is the fewest nodes (47 does not fit when planned at a
// fixed count), and 20 GiB, below the floor at any world, evaluates one count only.
TEST_CASE("the search skips the node counts its lower bound rules out", "[search]") {
  Topology big = h200();
  big.max_nodes = 16384;
  PlanRequest r;
  r.auto_nodes = true;
  r.options.offload = OffloadMode::none;
  r.options.gpu_memory_gib = 60;
  const Plan p = make_plan(model("kimi-k2"), big, r);
  REQUIRE(p.fits);
  CHECK(p.options.nodes == 48);
  int skipped = 0;
  for (const Candidate& c : p.candidates) {
    if (c.nodes < 48) {
      CHECK_FALSE(c.evaluated);
      CHECK_THAT(c.note, Catch::StartsWith("not evaluated: at this world every candidate needs"));
      ++skipped;
    }
    CHECK(c.nodes <= 48);
  }
  CHECK(skipped == 47);
  CHECK_THAT(p.reason, Catch::Contains("node counts up to 47 not evaluated"));
  PlanRequest fixed = r;
  fixed.auto_nodes = false;
  fixed.options.nodes = 47;
  fixed.search_ep = true;
  CHECK_FALSE(make_plan(model("kimi-k2"), big, fixed).fits);

  r.options.gpu_memory_gib = 20;
  const Plan none = make_plan(model("kimi-k2"), big, r);
  CHECK_FALSE(none.fits);
  for (const Candidate& c : none.candidates) CHECK(c.nodes == 1);
  CHECK_THAT(none.reason, Catch::Contains("only the first of 16384 node counts was evaluated"));
}

// Kimi-K2 in 30.758 GiB over 16384 nodes: the bound is under the limit from about 1862 nodes to
// the last, and no count fits before the budget is spent, so the search stops after the count
// that spends it and lists the rest as not evaluated, without claiming that nothing fits. A
// budget cannot change an answer found: 60 GiB fits at the first count evaluated.
TEST_CASE("the search stops where its budget of predictions is spent", "[search]") {
  Topology big = h200();
  big.max_nodes = 16384;
  PlanRequest r;
  r.auto_nodes = true;
  r.search_ep = true;
  r.options.offload = OffloadMode::none;
  r.options.gpu_memory_gib = 30.758;
  r.max_predictions = 40;
  const Plan p = make_plan(model("kimi-k2"), big, r);
  CHECK_FALSE(p.fits);
  int predicted = 0, last_evaluated = 0, left = 0;
  std::vector<int> skipped(16385, 0), evaluated(16385, 0);  // per count
  for (const Candidate& c : p.candidates) {
    ++(c.evaluated ? evaluated : skipped)[c.nodes];
    if (c.evaluated) {
      ++predicted;
      last_evaluated = std::max(last_evaluated, c.nodes);
    } else if (c.note.find("budget") != std::string::npos) {
      CHECK(c.note ==
            "not evaluated: the search's budget of 40 predicted candidates "
            "(--max-predictions) was spent");
      CHECK(c.nodes > last_evaluated);
      ++left;
    }
  }
  CHECK(predicted >= 40);
  CHECK(predicted < 40 + 16);  // the count that spends it is evaluated whole
  CHECK(left == 16384 - last_evaluated);
  // Every count: evaluated (one candidate per layout), or listed once (one mode).
  for (int n = 1; n <= 16384; ++n)
    CHECK(((skipped[n] == 1 && evaluated[n] == 0) || (skipped[n] == 0 && evaluated[n] > 0)));
  CHECK_THAT(p.reason, Catch::StartsWith("no candidate evaluated fits; " + std::to_string(left) +
                                         " node count(s), " + std::to_string(last_evaluated + 1) +
                                         "..16384"));
  CHECK_THAT(p.reason, Catch::Contains("so one of them may fit"));

  r.options.gpu_memory_gib = 60;
  r.max_predictions = 1;
  const Plan fit = make_plan(model("kimi-k2"), big, r);
  CHECK(fit.fits);
  CHECK(fit.options.nodes == 48);
}

TEST_CASE("a limit below the floor stops the search after one node count", "[search]") {
  PlanRequest r;
  r.auto_nodes = r.auto_offload = true;
  r.options.gpu_memory_gib = 1.01 * h200().overheads.cuda_context_gib;  // above the overhead
  const Plan p = make_plan(model("qwen3-8b"), h200(), r);
  CHECK_FALSE(p.fits);
  for (const Candidate& c : p.candidates) CHECK(c.nodes == 1);
  CHECK_THAT(p.reason, Catch::Contains("only the first of"));
}
