// RankWindows (planner/src/cost/step_figures.h): add_sparse, which visits only the ranks a
// chunk touches and lets the others catch up later, gives the dense add's windows bit for bit,
// since the cost model's figures must not change with the shortcut.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "cost/step_figures.h"

using muonplan::step_cost::RankWindows;

TEST_CASE("sparse rank windows equal dense ones exactly", "[cost]") {
  std::mt19937 rng(22);
  std::uniform_real_distribution<double> bytes(0, 1e9);
  for (int depth : {1, 2, 3, 5}) {
    const int world = 37, chunks = 60;
    RankWindows dense(world, depth), sparse(world, depth);
    uint64_t sparse_visits = 0;
    for (int c = 0; c < chunks; ++c) {
      // Each chunk touches a random subset of the ranks (none, some, or all), and a run of
      // empty chunks longer than the depth, so a rank catches up over more than depth chunks.
      const double touch_share = (c % 10 >= 5 && c % 10 < 9) ? 0 : double(c % 4) / 3;
      std::vector<double> held(world, 0), scratch(world, 0);
      std::vector<int> ranks;
      for (int r = 0; r < world; ++r) {
        if (std::uniform_real_distribution<double>(0, 1)(rng) >= touch_share) continue;
        ranks.push_back(r);
        held[r] = bytes(rng);
        scratch[r] = bytes(rng);
      }
      sparse_visits += ranks.size();
      dense.add([&](int r) { return std::make_pair(held[r], scratch[r]); });
      sparse.add_sparse(ranks, [&](int r) { return std::make_pair(held[r], scratch[r]); });
    }
    dense.finish();
    sparse.finish();
    for (int r = 0; r < world; ++r) {
      INFO("depth " << depth << " rank " << r);
      CHECK(sparse.at(r) == dense.at(r));  // exact: the same additions in the same order
    }
    CHECK(dense.steps() == uint64_t(world) * chunks);
    CHECK(sparse.steps() < dense.steps());
    CHECK(sparse.steps() >= sparse_visits);
  }
}
