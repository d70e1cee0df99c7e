// Gathers each rank's measured stages to rank 0 as trace-event JSON text: a size exchange
// (one max-reduction of a per-rank table), then an all-to-all in which only rank 0 receives.
#include "muonplan/exec/trace_gather.h"

#include <string>

namespace muonplan::exec {

nlohmann::json gather_trace(const std::vector<TraceEvent>& mine, Backend& backend,
                            Communicator& comm) {
  const int world = comm.size(), rank = comm.rank();
  std::vector<TraceEvent> own = mine;
  for (TraceEvent& e : own) e.pid = rank;
  const std::string text = trace_json(own, {}).dump();
  std::vector<double> sizes(world, 0);
  sizes[rank] = double(text.size());
  comm.allreduce_max(sizes.data(), sizes.size());
  std::vector<size_t> send_bytes(world, 0), send_displs(world, 0), recv_bytes(world, 0),
      recv_displs(world, 0);
  send_bytes[0] = text.size();
  size_t total = 0;
  if (rank == 0) {
    for (int r = 0; r < world; ++r) {
      recv_displs[r] = total;
      recv_bytes[r] = size_t(sizes[r]);
      total += recv_bytes[r];
    }
  }
  // Backend buffers: the communicator moves backend memory (device memory under NCCL).
  void* send = backend.alloc(text.size() + 1);
  void* recv = backend.alloc(total + 1);
  backend.copy_to_device(send, text.data(), text.size());
  comm.ialltoallv(send, send_bytes, send_displs, recv, recv_bytes, recv_displs)->wait();
  std::string all(total, '\0');
  backend.copy_to_host(all.data(), recv, total);
  backend.free(send);
  backend.free(recv);
  if (rank != 0) return nullptr;
  std::vector<TraceEvent> events;
  std::vector<std::string> names;
  for (int r = 0; r < world; ++r) {
    const nlohmann::json part = nlohmann::json::parse(all.substr(recv_displs[r], recv_bytes[r]));
    for (const TraceEvent& e : trace_events(part, "rank " + std::to_string(r))) events.push_back(e);
    names.push_back("rank " + std::to_string(r));
  }
  return trace_json(events, names);
}

}  // namespace muonplan::exec
