// Initial values and gradients depend only on (name, step, global index): any sharding of a
// tensor computes the same elements.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "muonplan/exec/init.h"

using namespace muonplan::exec;

TEST_CASE("init values: shards computed in pieces equal the whole", "[exec-infra]") {
  const int64_t n = 1001;
  std::vector<float> whole(n), pieces(n);
  fill_param("model.layers.0.mlp.down_proj.weight", 0, n, whole.data());
  // Uneven pieces, one empty, as ranks of an uneven shard group compute them.
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 334}, {334, 334}, {334, 700}, {700, n}})
    fill_param("model.layers.0.mlp.down_proj.weight", begin, end - begin, pieces.data() + begin);
  CHECK(whole == pieces);
  fill_grad("w", 7, 0, n, whole.data());
  fill_grad("w", 7, 0, 500, pieces.data());
  fill_grad("w", 7, 500, n - 500, pieces.data() + 500);
  CHECK(whole == pieces);
}

TEST_CASE("init values: statistics, and names and steps give different values", "[exec-infra]") {
  const int64_t n = 100000;
  auto stats = [](const std::vector<float>& v) {
    double s = 0, s2 = 0;
    for (float x : v) {
      s += x;
      s2 += double(x) * x;
    }
    CHECK(std::isfinite(s2));  // every value finite
    const double mean = s / v.size();
    return std::pair{mean, std::sqrt(s2 / v.size() - mean * mean)};
  };
  std::vector<float> a(n), b(n), g1(n), g2(n), norm(n);
  fill_param("a.weight", 0, n, a.data());
  fill_param("b.weight", 0, n, b.data());
  fill_grad("a.weight", 1, 0, n, g1.data());
  fill_grad("a.weight", 2, 0, n, g2.data());
  fill_param("model.norm.weight", 0, n, norm.data());
  CHECK(a != b);
  CHECK(g1 != g2);
  CHECK(std::abs(stats(a).first) < 1e-3);
  CHECK(stats(a).second == Approx(0.02).epsilon(0.02));
  CHECK(std::abs(stats(g1).first) < 1e-4);
  CHECK(stats(g1).second == Approx(1e-3).epsilon(0.02));
  CHECK(stats(norm).first == Approx(1.0).epsilon(1e-3));  // norm gains sit around 1
  CHECK(stats(norm).second == Approx(0.02).epsilon(0.02));
}

TEST_CASE("init values: pinned, so a change to the generator is noticed", "[exec-infra]") {
  // Re-pinned 2026-11-30 when the name hash moved to the standard FNV-1a offset basis.
  float p[2], g[1];
  fill_param("model.embed_tokens.weight", 12345, 2, p);
  fill_grad("model.embed_tokens.weight", 3, 12345, 1, g);
  INFO(p[0] << " " << p[1] << " " << g[0]);
  CHECK(p[0] == 0x1.1d4ea6p-6f);
  CHECK(p[1] == -0x1.b43e94p-6f);
  CHECK(g[0] == -0x1.13f754p-13f);
}
