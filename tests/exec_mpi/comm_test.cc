// The Communicator conformance suite under mpiexec with any number of ranks
// (comm_conformance.h): every case over MPI, over MPI staged through a CPU backend's host
// memory (host-staged) and lane-ordered on the cpu-async backend, and the cases a world of one
// takes over the self communicator. Exits non-zero (on every rank) when a check fails.
#include <cstdio>

#include "comm_conformance.h"
#include "muonplan/exec/backend.h"
#include "muonplan/exec/cpu_async_backend.h"

using namespace muonplan::exec;
using namespace muonplan::exec::conformance;

namespace {

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (auto cases : {exchange_cases(), collective_cases(), mpi_cases()})
    out.insert(out.end(), cases.begin(), cases.end());
  return out;
}

// Every case `comm` takes; the MPI-only ones on MPI itself.
void run_suite(Communicator& comm, const std::string& impl, int& failures) {
  const Context c{comm, impl, comm.rank(), comm.size(), &failures};
  for (const Case& k : all_cases()) {
    if (k.mpi_only && impl != "mpi") continue;
    const int before = failures;
    k.run(c);
    if (failures != before && c.rank == 0)
      std::fprintf(stderr, "[%s] %s: failed\n", impl.c_str(), k.name);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession session(&argc, &argv);
  int failures = 0;
  const std::unique_ptr<Communicator> mpi = make_mpi_communicator();
  run_suite(*mpi, "mpi", failures);
  const std::unique_ptr<Backend> cpu = make_cpu_backend();
  const std::unique_ptr<Communicator> staged =
      make_host_staged_communicator(*cpu, make_mpi_communicator());
  run_suite(*staged, "host-staged", failures);
  const std::unique_ptr<Backend> async = make_cpu_async_backend(CpuAsyncOptions{});
  const std::unique_ptr<Communicator> ordered =
      make_lane_ordered_communicator(*async, make_mpi_communicator());
  run_suite(*ordered, "lane-ordered", failures);
  if (mpi->size() == 1) {
    const std::unique_ptr<Communicator> self = make_self_communicator(*cpu);
    run_suite(*self, "self", failures);
  }
  // Everyone learns whether anyone failed, so every rank exits with the same status.
  uint64_t failed = uint64_t(failures);
  mpi->allreduce_sum_u64(&failed, 1);
  mpi->barrier();
  if (mpi->rank() == 0) {
    std::printf("comm_test: %d rank(s), mpi, host-staged, lane-ordered%s: %s\n", mpi->size(),
                mpi->size() == 1 ? ", self" : "", failed ? "FAILED" : "ok");
  }
  return failed ? 1 : 0;
}
