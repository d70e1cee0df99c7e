// Conformance cases: reductions (max of doubles, u64 sums modulo 2^64), broadcast from the last
// rank, and agreeing on errors (agreed_error.h).
#include "comm_conformance.h"
#include "muonplan/base/error.h"
#include "muonplan/exec/agreed_error.h"

namespace muonplan::exec::conformance {
namespace {

void reductions(const Context& c) {
  double mx[2] = {double(c.rank), -double(c.rank)};
  c.comm.allreduce_max(mx, 2);
  CONFORM_EXPECT(c, mx[0] == c.world - 1 && mx[1] == 0);
  uint64_t sum[2] = {uint64_t(c.rank + 1), ~uint64_t(0)};
  c.comm.allreduce_sum_u64(sum, 2);
  CONFORM_EXPECT(c, sum[0] == uint64_t(c.world) * uint64_t(c.world + 1) / 2);
  CONFORM_EXPECT(c, sum[1] == uint64_t(0) - uint64_t(c.world));
}

void broadcast(const Context& c) {
  std::vector<uint8_t> data(1000, uint8_t(c.rank));
  if (c.rank == c.world - 1) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 13);
  }
  c.comm.broadcast(data.data(), data.size(), c.world - 1);
  bool same = true;
  for (size_t i = 0; i < data.size(); ++i) same = same && data[i] == uint8_t(i * 13);
  CONFORM_EXPECT(c, same);
}

// The even ranks fail, rank 0 with bad input; every rank learns how many failed, the highest
// of them and its kind. Alone (no communicator): this rank's own.
void agreed_errors(const Context& c) {
  RankError own;
  if (c.rank % 2 == 0) own = {"failed on rank " + std::to_string(c.rank), c.rank == 0};
  const AgreedErrors a = agree_on_errors(&c.comm, own);
  CONFORM_EXPECT(c, a.count == (c.world + 1) / 2);
  CONFORM_EXPECT(c, a.highest_rank == (c.world - 1) / 2 * 2);
  CONFORM_EXPECT(c, a.highest_input == (a.highest_rank == 0));
  const AgreedErrors none = agree_on_errors(&c.comm, RankError{});
  CONFORM_EXPECT(c, none.count == 0 && none.highest_rank == -1);
  const AgreedErrors alone = agree_on_errors(nullptr, RankError{"x", false});
  CONFORM_EXPECT(c, alone.count == 1 && alone.highest_rank == 0 && !alone.highest_input);
  bool as_input = false;
  try {
    RankError{"bad", true}.rethrow();
  } catch (const InputError& e) {
    as_input = std::string(e.what()) == "bad";
  }
  CONFORM_EXPECT(c, as_input);
}

}  // namespace

std::vector<Case> collective_cases() {
  return {{"max and wrapping u64 sum reductions", reductions},
          {"broadcast from the last rank", broadcast},
          {"ranks agree on errors", agreed_errors}};
}

}  // namespace muonplan::exec::conformance
