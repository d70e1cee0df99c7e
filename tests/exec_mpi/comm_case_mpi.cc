// Conformance cases only MPI itself promises: a bad root comes back as an exception with MPI's
// text, a checkpoint saved by every rank and loaded whole by each, liveness probes, and failure
// notices that reach every rank (docs/reliability.md; a rank that dies: tests/mpi/
// rank_failure.sh).
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "comm_conformance.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"

namespace muonplan::exec::conformance {
namespace {

// The communicators' deadline where a case checks that notices arrive: far past ctest's
// TIMEOUT for these tests (60 s), so a lost notice fails the test by hanging, and no real run
// comes near it.
constexpr double kHangGuardS = 3600;

void bad_root(const Context& c) {
  std::vector<uint8_t> data(16, 0);
  bool threw = false;
  try {
    c.comm.broadcast(data.data(), data.size(), c.world + 5);
  } catch (const std::runtime_error& e) {
    threw = std::strstr(e.what(), "MPI_Bcast failed") != nullptr;
  }
  CONFORM_EXPECT(c, threw);
}

// Element k of the whole tensor: param k, momentum bf16(k + 0.5); rows [begin, end).
std::vector<CheckpointEntry> entries(int64_t begin, int64_t end, int64_t cols) {
  CheckpointEntry p{"w/param", "f32", begin, end, {}}, m{"w/momentum", "bf16", begin, end, {}};
  for (int64_t k = begin * cols; k < end * cols; ++k) {
    const float f = float(k);
    const bf16 h = to_bf16(float(k) + 0.5f);
    p.bytes.insert(p.bytes.end(), reinterpret_cast<const uint8_t*>(&f),
                   reinterpret_cast<const uint8_t*>(&f) + 4);
    m.bytes.insert(m.bytes.end(), reinterpret_cast<const uint8_t*>(&h),
                   reinterpret_cast<const uint8_t*>(&h) + 2);
  }
  return {p, m};
}

// Every rank saves its own rows of one tensor (uneven: rank r holds r + 1 rows), then every
// rank loads the whole tensor back, gathered from all the rank files. A bad entry on the last
// rank then fails the save on every rank instead of hanging the others, and leaves the saved
// checkpoint loadable.
void checkpoint(const Context& c) {
  uint64_t pid = c.rank == 0 ? uint64_t(::getpid()) : 0;
  c.comm.broadcast(&pid, sizeof pid, 0);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("muonplan_comm_test_" + std::to_string(pid)))
          .string();
  const int64_t rows = int64_t(c.world) * (c.world + 1) / 2, cols = 3;
  CheckpointPlanInfo model;
  model.tensors = {{"w", {rows, cols}, "muon", false}};
  const int64_t first = int64_t(c.rank) * (c.rank + 1) / 2;
  std::vector<CheckpointEntry> mine = entries(first, first + c.rank + 1, cols);
  save_checkpoint(dir, c.rank, c.world, 5, model, mine, &c.comm);
  auto load_all = [&] {
    const CheckpointManifest m = read_manifest(dir);
    check_same_model(m, model);
    return std::make_pair(
        m.step, load_shards(m, c.rank, c.world,
                            {{"w/param", "f32", 0, rows}, {"w/momentum", "bf16", 0, rows}}));
  };
  const auto [step, got] = load_all();
  const std::vector<CheckpointEntry> whole = entries(0, rows, cols);
  CONFORM_EXPECT(c, step == 5 && got.size() == 2);
  CONFORM_EXPECT(
      c, got.size() == 2 && got[0].bytes == whole[0].bytes && got[1].bytes == whole[1].bytes);
  if (c.rank == c.world - 1) mine[1].dtype = "f16";
  bool all_threw = false;
  try {
    save_checkpoint(dir, c.rank, c.world, 6, model, mine, &c.comm);
  } catch (const std::runtime_error&) {
    all_threw = true;
  }
  CONFORM_EXPECT(c, all_threw);
  c.comm.barrier();
  CONFORM_EXPECT(c, load_all().first == 5);
  c.comm.barrier();
  if (c.rank == 0) {
    for (const char* suffix : {"", ".tmp", ".old"}) std::filesystem::remove_all(dir + suffix);
  }
}

// Every rank probing at once, then one rank probing while the others wait in a barrier (a
// waiting rank answers).
void liveness(const Context& c) {
  c.comm.check_peers();
  if (c.rank == 0) c.comm.check_peers();
  c.comm.barrier();
}

// The last rank announces an error at step 7 while the others wait in a barrier; they throw
// RankFailure naming it and relay it. Every rank is alive and announces, so the run still ends
// with MPI_Finalize and exit status 0. The deadline is a hang guard only: a notice that did not
// arrive would leave the others waiting until ctest kills the test, never pass on a timeout.
// Then an error every rank shares (bad input): each announces and hears the others.
void failure_notice(const Context& c) {
  if (c.world > 1) {
    const std::unique_ptr<Communicator> n = make_mpi_communicator(kHangGuardS);
    n->set_step(7);
    if (c.rank == c.world - 1) {
      n->announce_failure("boom");
    } else {
      std::string what;
      try {
        n->barrier();
      } catch (const RankFailure& e) {
        what = e.what();
        CONFORM_EXPECT(c, e.failed_rank == c.world - 1 && e.step == 7);
        n->announce_failure(e.what());
      }
      CONFORM_EXPECT(c, what == "rank " + std::to_string(c.world - 1) + " failed at step 7: boom");
    }
  }
  const std::unique_ptr<Communicator> shared = make_mpi_communicator(kHangGuardS);
  shared->announce_failure("the same error on every rank");
}

}  // namespace

std::vector<Case> mpi_cases() {
  return {{"a bad broadcast root is an exception with MPI's text", bad_root, true},
          {"a checkpoint saved by every rank loads whole on each", checkpoint, true},
          {"liveness probes answered while waiting", liveness, true},
          {"a failure notice reaches every rank", failure_notice, true}};
}

}  // namespace muonplan::exec::conformance
