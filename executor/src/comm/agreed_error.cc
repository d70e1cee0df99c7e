// Agreeing on an error across ranks (agreed_error.h).
#include "muonplan/exec/agreed_error.h"

#include "muonplan/base/error.h"

namespace muonplan::exec {

void RankError::rethrow() const {
  if (input) throw InputError({}, "", what);
  throw std::runtime_error(what);
}

AgreedErrors agree_on_errors(Communicator* comm, const RankError& own) {
  return agree_on_errors(comm, own, [](const RankFailure&) {});
}

namespace detail {

std::vector<uint64_t> share_error_codes(Communicator* comm, const RankError& own) {
  // One slot per rank, so a sum carries every rank's code: which failed, how many, what kind.
  std::vector<uint64_t> codes(comm ? size_t(comm->size()) : 1, 0);
  codes[comm ? size_t(comm->rank()) : 0] = own.failed() ? (own.input ? 1 : 2) : 0;
  if (comm) comm->allreduce_sum_u64(codes.data(), codes.size());
  return codes;
}

AgreedErrors from_error_codes(const std::vector<uint64_t>& codes) {
  AgreedErrors a;
  for (size_t r = 0; r < codes.size(); ++r) {
    if (codes[r] == 0) continue;
    ++a.count;
    a.highest_rank = int(r);
    a.highest_input = codes[r] == 1;
  }
  return a;
}

}  // namespace detail
}  // namespace muonplan::exec
