// Conformance cases: uneven all-to-all with zero counts, several exchanges in flight completed
// out of order, the byte counter, and a count past INT_MAX refused before it is sent.
#include <climits>
#include <cstring>
#include <stdexcept>

#include "comm_conformance.h"

namespace muonplan::exec::conformance {
namespace {

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

void in_flight(const Context& c) {
  std::vector<Exchange> ex;
  for (int round = 0; round < 3; ++round) ex.emplace_back(c.rank, c.world, round);
  std::vector<std::unique_ptr<Request>> reqs;
  c.comm.reset_counters();
  for (Exchange& e : ex) {
    reqs.push_back(c.comm.ialltoallv(e.send.data(), e.send_bytes, e.send_displs, e.recv.data(),
                                     e.recv_bytes, e.recv_displs));
  }
  for (int i = 2; i >= 0; --i) reqs[i]->wait();
  uint64_t expected_sent = 0;
  for (int round = 0; round < 3; ++round) {
    CONFORM_EXPECT(c, ex[round].received_right(c.rank, c.world, round));
    expected_sent += ex[round].sent_to_others(c.rank);
  }
  CONFORM_EXPECT(c, c.comm.alltoall_bytes_sent() == expected_sent);
  c.comm.reset_counters();
  CONFORM_EXPECT(c, c.comm.alltoall_bytes_sent() == 0);
}

// All counts zero: a valid exchange that moves nothing; a dropped request still completes.
void all_zero(const Context& c) {
  std::vector<size_t> zeros(size_t(c.world), 0);
  c.comm.ialltoallv(nullptr, zeros, zeros, nullptr, zeros, zeros);
  CONFORM_EXPECT(c, c.comm.alltoall_bytes_sent() == 0);
}

// A count past INT_MAX is refused before it is sent (and is not counted as sent).
void past_int_max(const Context& c) {
  std::vector<size_t> zeros(size_t(c.world), 0), huge(size_t(c.world), 0);
  huge[size_t((c.rank + 1) % c.world)] = size_t(INT_MAX) + 1;
  bool refused = false;
  try {
    c.comm.ialltoallv(nullptr, huge, zeros, nullptr, zeros, zeros);
  } catch (const std::runtime_error& e) {
    refused = std::strstr(e.what(), "INT_MAX") != nullptr;
  }
  CONFORM_EXPECT(c, refused);
  CONFORM_EXPECT(c, c.comm.alltoall_bytes_sent() == 0);
}

}  // namespace

std::vector<Case> exchange_cases() {
  return {{"three exchanges in flight, completed out of order", in_flight},
          {"an exchange of zero counts", all_zero},
          {"a count past INT_MAX refused", past_int_max, true}};
}

}  // namespace muonplan::exec::conformance
