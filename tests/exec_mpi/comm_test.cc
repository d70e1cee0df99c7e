// The MPI communicator under mpiexec with any number of ranks: uneven all-to-all with zero
// counts, several exchanges in flight, the byte counter, reductions, broadcast, errors that
// become exceptions, a checkpoint saved and loaded by every rank, liveness probes, and a
// failure notice that reaches every rank (docs/reliability.md; a rank that dies:
// tests/mpi/rank_failure.sh). Exits non-zero (on any failing rank) when a check fails.
#include <climits>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include <filesystem>

#include "muonplan/base/error.h"
#include "muonplan/exec/agreed_error.h"
#include "muonplan/exec/bf16.h"
#include "muonplan/exec/checkpoint.h"
#include "muonplan/exec/communicator.h"

using namespace muonplan::exec;

namespace {

int failures = 0;

// The communicators' deadline where a test checks that notices arrive: far past ctest's
// TIMEOUT for these tests (60 s), so a lost notice fails the test by hanging, and no real run
// comes near it.
constexpr double kHangGuardS = 3600;

#define EXPECT(cond)                                                                         \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      std::fprintf(stderr, "rank %d: %s:%d: failed: %s\n", rank, __FILE__, __LINE__, #cond); \
      ++failures;                                                                            \
    }                                                                                        \
  } while (0)

// Bytes rank `from` sends rank `to` in exchange `round`: uneven, often zero (self included).
size_t count(int from, int to, int round) {
  return size_t((from * 7 + to * 3 + round) % 5) * 3;
}
uint8_t byte(int from, int to, int round, size_t i) {
  return uint8_t(from * 31 + to * 17 + round * 5 + i);
}

// One exchange's buffers, laid out with gaps so displacements matter.
struct Exchange {
  std::vector<uint8_t> send, recv;
  std::vector<size_t> send_bytes, send_displs, recv_bytes, recv_displs;
  Exchange(int rank, int world, int round) {
    size_t s = 1, r = 2;  // leading gaps
    for (int p = 0; p < world; ++p) {
      send_bytes.push_back(count(rank, p, round));
      send_displs.push_back(s);
      s += send_bytes.back() + 1;
      recv_bytes.push_back(count(p, rank, round));
      recv_displs.push_back(r);
      r += recv_bytes.back() + 2;
    }
    send.assign(s, 0xee);
    recv.assign(r, 0xcc);
    for (int p = 0; p < world; ++p) {
      for (size_t i = 0; i < send_bytes[p]; ++i) send[send_displs[p] + i] = byte(rank, p, round, i);
    }
  }
  // Every received byte right, every gap byte untouched.
  bool received_right(int rank, int world, int round) const {
    std::vector<uint8_t> want(recv.size(), 0xcc);
    for (int p = 0; p < world; ++p) {
      for (size_t i = 0; i < recv_bytes[p]; ++i) want[recv_displs[p] + i] = byte(p, rank, round, i);
    }
    return want == recv;
  }
  uint64_t sent_to_others(int rank) const {
    uint64_t n = 0;
    for (size_t p = 0; p < send_bytes.size(); ++p) n += int(p) == rank ? 0 : send_bytes[p];
    return n;
  }
};

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  int rank = -1;
  {
    const std::unique_ptr<Communicator> comm = make_mpi_communicator();
    rank = comm->rank();
    const int world = comm->size();

    // Three exchanges in flight, completed out of order.
    std::vector<Exchange> ex;
    for (int round = 0; round < 3; ++round) ex.emplace_back(rank, world, round);
    std::vector<std::unique_ptr<Request>> reqs;
    for (Exchange& e : ex) {
      reqs.push_back(comm->ialltoallv(e.send.data(), e.send_bytes, e.send_displs, e.recv.data(),
                                      e.recv_bytes, e.recv_displs));
    }
    for (int i = 2; i >= 0; --i) reqs[i]->wait();
    uint64_t expected_sent = 0;
    for (int round = 0; round < 3; ++round) {
      EXPECT(ex[round].received_right(rank, world, round));
      expected_sent += ex[round].sent_to_others(rank);
    }
    EXPECT(comm->alltoall_bytes_sent() == expected_sent);
    comm->reset_counters();
    EXPECT(comm->alltoall_bytes_sent() == 0);

    // All counts zero: a valid exchange that moves nothing; a dropped request still completes.
    std::vector<size_t> zeros(world, 0);
    comm->ialltoallv(nullptr, zeros, zeros, nullptr, zeros, zeros);
    EXPECT(comm->alltoall_bytes_sent() == 0);

    // A count past INT_MAX is refused before MPI sees it (and is not counted as sent).
    std::vector<size_t> huge(world, 0);
    huge[(rank + 1) % world] = size_t(INT_MAX) + 1;
    bool refused = false;
    try {
      comm->ialltoallv(nullptr, huge, zeros, nullptr, zeros, zeros);
    } catch (const std::runtime_error& e) {
      refused = std::strstr(e.what(), "INT_MAX") != nullptr;
    }
    EXPECT(refused);
    EXPECT(comm->alltoall_bytes_sent() == 0);

    // Reductions: max of doubles; u64 sums wrap modulo 2^64.
    double mx[2] = {double(rank), -double(rank)};
    comm->allreduce_max(mx, 2);
    EXPECT(mx[0] == world - 1 && mx[1] == 0);
    uint64_t sum[2] = {uint64_t(rank + 1), ~uint64_t(0)};
    comm->allreduce_sum_u64(sum, 2);
    EXPECT(sum[0] == uint64_t(world) * (world + 1) / 2);
    EXPECT(sum[1] == uint64_t(0) - uint64_t(world));

    // Agreeing on errors (agreed_error.h): the even ranks fail, rank 0 with bad input; every
    // rank learns how many failed, the highest of them and its kind. Alone (no communicator):
    // this rank's own.
    {
      RankError own;
      if (rank % 2 == 0) own = {"failed on rank " + std::to_string(rank), rank == 0};
      const AgreedErrors a = agree_on_errors(comm.get(), own);
      EXPECT(a.count == (world + 1) / 2);
      EXPECT(a.highest_rank == (world - 1) / 2 * 2);
      EXPECT(a.highest_input == (a.highest_rank == 0));
      const AgreedErrors none = agree_on_errors(comm.get(), RankError{});
      EXPECT(none.count == 0 && none.highest_rank == -1);
      const AgreedErrors alone = agree_on_errors(nullptr, RankError{"x", false});
      EXPECT(alone.count == 1 && alone.highest_rank == 0 && !alone.highest_input);
      bool as_input = false;
      try {
        RankError{"bad", true}.rethrow();
      } catch (const muonplan::InputError& e) {
        as_input = std::string(e.what()) == "bad";
      }
      EXPECT(as_input);
    }

    // Broadcast from the last rank.
    std::vector<uint8_t> data(1000, uint8_t(rank));
    if (rank == world - 1) {
      for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 13);
    }
    comm->broadcast(data.data(), data.size(), world - 1);
    bool same = true;
    for (size_t i = 0; i < data.size(); ++i) same = same && data[i] == uint8_t(i * 13);
    EXPECT(same);

    // A bad root comes back as an exception with MPI's text instead of aborting the job.
    bool threw = false;
    try {
      comm->broadcast(data.data(), data.size(), world + 5);
    } catch (const std::runtime_error& e) {
      threw = std::strstr(e.what(), "MPI_Bcast failed") != nullptr;
    }
    EXPECT(threw);

    // Checkpoint: every rank saves its own rows of one tensor (uneven: rank r holds r + 1
    // rows), then every rank loads the whole tensor back, gathered from all the rank files.
    uint64_t pid = rank == 0 ? uint64_t(::getpid()) : 0;
    comm->broadcast(&pid, sizeof pid, 0);
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("muonplan_comm_test_" + std::to_string(pid)))
            .string();
    const int64_t rows = int64_t(world) * (world + 1) / 2, cols = 3;
    CheckpointPlanInfo model;
    model.tensors = {{"w", {rows, cols}, "muon", false}};
    // Element k of the whole tensor: param k, momentum bf16(k + 0.5).
    auto entries = [&](int64_t begin, int64_t end) {
      CheckpointEntry p{"w/param", "f32", begin, end, {}}, m{"w/momentum", "bf16", begin, end, {}};
      for (int64_t k = begin * cols; k < end * cols; ++k) {
        const float f = float(k);
        const bf16 h = to_bf16(float(k) + 0.5f);
        p.bytes.insert(p.bytes.end(), reinterpret_cast<const uint8_t*>(&f),
                       reinterpret_cast<const uint8_t*>(&f) + 4);
        m.bytes.insert(m.bytes.end(), reinterpret_cast<const uint8_t*>(&h),
                       reinterpret_cast<const uint8_t*>(&h) + 2);
      }
      return std::vector<CheckpointEntry>{p, m};
    };
    const int64_t first = int64_t(rank) * (rank + 1) / 2;
    std::vector<CheckpointEntry> mine = entries(first, first + rank + 1);
    save_checkpoint(dir, rank, world, 5, model, mine, comm.get());
    auto load_all = [&] {
      const CheckpointManifest m = read_manifest(dir);
      check_same_model(m, model);
      return std::make_pair(
          m.step, load_shards(m, rank, world,
                              {{"w/param", "f32", 0, rows}, {"w/momentum", "bf16", 0, rows}}));
    };
    const auto [step, got] = load_all();
    const std::vector<CheckpointEntry> whole = entries(0, rows);
    EXPECT(step == 5 && got.size() == 2);
    EXPECT(got.size() == 2 && got[0].bytes == whole[0].bytes && got[1].bytes == whole[1].bytes);
    // A bad entry on the last rank fails the save on every rank instead of hanging the others,
    // and leaves the saved checkpoint loadable.
    if (rank == world - 1) mine[1].dtype = "f16";
    bool all_threw = false;
    try {
      save_checkpoint(dir, rank, world, 6, model, mine, comm.get());
    } catch (const std::runtime_error&) {
      all_threw = true;
    }
    EXPECT(all_threw);
    comm->barrier();
    EXPECT(load_all().first == 5);
    comm->barrier();
    if (rank == 0) {
      for (const char* suffix : {"", ".tmp", ".old"}) std::filesystem::remove_all(dir + suffix);
    }

    // Liveness probes: every rank probing at once, then one rank probing while the others
    // wait in a barrier (a waiting rank answers).
    comm->check_peers();
    if (rank == 0) comm->check_peers();
    comm->barrier();

    // A failure notice: the last rank announces an error at step 7 while the others wait in a
    // barrier; they throw RankFailure naming it and relay it. Every rank is alive and
    // announces, so the run still ends with MPI_Finalize and exit status 0. The deadline is a
    // hang guard only, far past ctest's TIMEOUT (60 s): a notice that did not arrive would
    // leave the others waiting until ctest kills the test, never pass on a timeout.
    if (world > 1) {
      const std::unique_ptr<Communicator> c = make_mpi_communicator(kHangGuardS);
      c->set_step(7);
      if (rank == world - 1) {
        c->announce_failure("boom");
      } else {
        std::string what;
        try {
          c->barrier();
        } catch (const RankFailure& e) {
          what = e.what();
          EXPECT(e.failed_rank == world - 1 && e.step == 7);
          c->announce_failure(e.what());
        }
        EXPECT(what == "rank " + std::to_string(world - 1) + " failed at step 7: boom");
      }
    }
    // An error every rank shares (bad input): each announces and hears the others (announce
    // returns once every rank has announced; the hang guard, as above, otherwise).
    {
      const std::unique_ptr<Communicator> c = make_mpi_communicator(kHangGuardS);
      c->announce_failure("the same error on every rank");
    }

    // Everyone learns whether anyone failed, so every rank exits with the same status.
    uint64_t failed = failures;
    comm->allreduce_sum_u64(&failed, 1);
    comm->barrier();
    if (rank == 0) std::printf("comm_test: %d rank(s): %s\n", world, failed ? "FAILED" : "ok");
    failures = int(failed);
  }
  return failures ? 1 : 0;
}
