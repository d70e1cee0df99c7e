// The NCCL communicator over MPI, one GPU per rank (ctest runs it on 1 and 2 ranks): all-to-alls
// of device memory with uneven and zero counts (a short batch that reaches only its owner),
// ordering against the backend's current lane, the byte counter, and the collectives delegated
// to MPI. Every rank skips (exit 77) when the node has fewer devices than ranks.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"
#include "muonplan/exec/cuda_backend.h"
#include "muonplan/exec/cuda_device.h"
#include "muonplan/exec/nccl_communicator.h"

using namespace muonplan::exec;

namespace {

int passed = 0, failed = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) {
    ++passed;
  } else {
    ++failed;
    std::printf("FAIL (rank %d): %s\n", rank, what.c_str());
  }
}

// Bytes rank `from` sends rank `to` in the uneven exchange; 0 for some pairs.
size_t bytes_between(int from, int to) {
  return (from + to) % 3 == 2 ? 0 : size_t(1000 * (from + 1) + 37 * (to + 1));
}

unsigned char pattern(int from, int to, size_t i) {
  return static_cast<unsigned char>(from * 31 + to * 7 + i * 13);
}

// Uneven all-to-all, zero counts included, on lane 2: every byte arrives and the counter counts
// what went to others. Returns those bytes.
size_t uneven_exchange(CudaBackend& backend, Communicator& comm, int rank, int size) {
  backend.set_lane(2);
  std::vector<size_t> sb(size), sd(size), rb(size), rd(size);
  size_t send_total = 0, recv_total = 0, to_others = 0;
  for (int p = 0; p < size; ++p) {
    sb[p] = bytes_between(rank, p);
    sd[p] = send_total;
    send_total += sb[p];
    if (p != rank) to_others += sb[p];
    rb[p] = bytes_between(p, rank);
    rd[p] = recv_total;
    recv_total += rb[p];
  }
  std::vector<unsigned char> send(send_total);
  for (int p = 0; p < size; ++p) {
    for (size_t i = 0; i < sb[p]; ++i) send[sd[p] + i] = pattern(rank, p, i);
  }
  void* dsend = backend.alloc(send_total);
  void* drecv = backend.alloc(recv_total);
  backend.copy_to_device(dsend, send.data(), send_total);
  comm.reset_counters();
  comm.ialltoallv(dsend, sb, sd, drecv, rb, rd)->wait();
  std::vector<unsigned char> recv(recv_total);
  backend.copy_to_host(recv.data(), drecv, recv_total);
  size_t wrong = 0;
  for (int p = 0; p < size; ++p) {
    for (size_t i = 0; i < rb[p]; ++i) wrong += recv[rd[p] + i] != pattern(p, rank, i);
  }
  expect(wrong == 0, "uneven all-to-all delivers every byte", rank);
  expect(comm.alltoall_bytes_sent() == to_others, "byte counter counts what went to others", rank);
  backend.synchronize();
  backend.free(dsend);
  backend.free(drecv);
  return to_others;
}

// A rank 0 check of the short batch: the owner got every holder's slice, in order, read by a
// kernel on the same lane after wait().
void check_gathered(CudaBackend& backend, bf16* gathered, size_t piece, int size) {
  auto* widened = static_cast<float*>(backend.alloc(size * piece * 2));
  backend.cast_to_f32(static_cast<int64_t>(size * piece / 2), gathered, widened);
  std::vector<float> host(size * piece / 2);
  backend.copy_to_host(host.data(), widened, host.size() * sizeof(float));
  size_t bad = 0;
  for (int p = 0; p < size; ++p) {
    for (size_t i = 0; i < piece / 2; ++i) {
      bad += host[p * piece / 2 + i] != float(p * 1000 + int(i % 251));
    }
  }
  expect(bad == 0, "short batch: the owner gets every holder's slice, in order", 0);
  backend.free(widened);
}

// A short batch: everyone sends only to rank 0 (the owner), after a kernel on lane 1 filled the
// send buffer (the exchange must start after it).
void short_batch(CudaBackend& backend, Communicator& comm, int rank, int size, size_t to_others) {
  const size_t piece = 4096;
  std::vector<size_t> s1(size, 0), d1(size, 0), r1(size, 0), e1(size, 0);
  s1[0] = piece;
  if (rank == 0) {
    for (int p = 0; p < size; ++p) {
      r1[p] = piece;
      e1[p] = p * piece;
    }
  }
  backend.set_lane(1);
  std::vector<float> values(piece / sizeof(bf16));
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(rank * 1000 + int(i % 251));
  auto* dvalues = static_cast<float*>(backend.alloc(values.size() * sizeof(float)));
  backend.copy_to_device(dvalues, values.data(), values.size() * sizeof(float));
  auto* dpiece = static_cast<bf16*>(backend.alloc(piece));
  auto* gathered = static_cast<bf16*>(rank == 0 ? backend.alloc(size * piece) : nullptr);
  backend.cast_to_bf16(static_cast<int64_t>(values.size()), dvalues, dpiece);
  comm.ialltoallv(dpiece, s1, d1, gathered, r1, e1)->wait();
  if (rank == 0) check_gathered(backend, gathered, piece, size);
  expect(comm.alltoall_bytes_sent() == to_others + (rank == 0 ? 0 : piece),
         "a short batch counts only bytes to the owner", rank);
  backend.set_lane(0);
  backend.synchronize();
  for (void* ptr :
       {static_cast<void*>(dvalues), static_cast<void*>(dpiece), static_cast<void*>(gathered)}) {
    backend.free(ptr);
  }
}

// Collectives through MPI; broadcast of host and of device memory.
void collectives(CudaBackend& backend, Communicator& comm, int rank, int size) {
  double mx = rank;
  comm.allreduce_max(&mx, 1);
  expect(mx == size - 1, "allreduce_max", rank);
  uint64_t sum = 1;
  comm.allreduce_sum_u64(&sum, 1);
  expect(sum == uint64_t(size), "allreduce_sum_u64", rank);
  int host_value = rank == 0 ? 4242 : -1;
  comm.broadcast(&host_value, sizeof host_value, 0);
  expect(host_value == 4242, "broadcast of host memory", rank);
  auto* dint = static_cast<int*>(backend.alloc(sizeof(int)));
  const int mine = rank == 0 ? 777 : rank;
  backend.copy_to_device(dint, &mine, sizeof mine);
  comm.broadcast(dint, sizeof(int), 0);
  int got = 0;
  backend.copy_to_host(&got, dint, sizeof got);
  expect(got == 777, "broadcast of device memory", rank);
  comm.barrier();
  backend.synchronize();
  backend.free(dint);
}

}  // namespace

int main(int argc, char** argv) {
  MpiSession mpi(&argc, &argv);
  std::unique_ptr<Communicator> control = make_mpi_communicator();
  const int rank = control->rank(), size = control->size();
  const CudaDevices devices = cuda_devices();
  double lacking = devices.count < size ? 1 : 0;  // every rank skips alike
  control->allreduce_max(&lacking, 1);
  if (lacking > 0) {
    if (rank == 0) {
      std::printf("skipped: %d rank(s) need as many CUDA devices, %d visible (%s)\n", size,
                  devices.count, devices.message.c_str());
    }
    return 77;
  }
  std::unique_ptr<CudaBackend> backend =
      make_cuda_backend(local_cuda_device(rank, control->local_size()));
  std::unique_ptr<Communicator> comm = make_nccl_communicator(*backend, std::move(control), 60);
  expect(comm->rank() == rank && comm->size() == size, "rank and size from control", rank);
  const size_t to_others = uneven_exchange(*backend, *comm, rank, size);
  short_batch(*backend, *comm, rank, size, to_others);
  collectives(*backend, *comm, rank, size);
  comm.reset();
  std::printf("rank %d: %d passed, %d failed\n", rank, passed, failed);
  return failed == 0 ? 0 : 1;
}
