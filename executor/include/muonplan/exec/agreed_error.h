// Agreeing on an error across ranks: each rank catches its own error in a phase, the ranks
// learn of every one in one collective, and all throw, so that no rank waits in a later
// collective for one that gave up (docs/reliability.md). What each rank then throws is the
// caller's: its own error, or a message naming the others'.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"

namespace muonplan::exec {

// One rank's error in such a phase.
struct RankError {
  std::string what;    // empty: this rank did not fail
  bool input = false;  // bad input (InputError, exit 2), not a runtime failure (exit 1)
  bool failed() const { return !what.empty(); }
  // Throws `what` as an InputError (input) or a std::runtime_error.
  [[noreturn]] void rethrow() const;
  void rethrow_if_failed() const {
    if (failed()) rethrow();
  }
};

// How the ranks' errors came out: the same on every rank.
struct AgreedErrors {
  int count = 0;               // ranks that failed, this one included
  int highest_rank = -1;       // the highest of them; -1 when none failed
  bool highest_input = false;  // whether that rank's error was bad input
};

// Collective over `comm` (null: this process alone): every rank's `own` error, shared. When a
// peer's failure notice ends the collective (RankFailure), this rank's own error is thrown if it
// has one (the cause to print), else the notice goes to `on_notice`, and is rethrown if that
// returns.
template <class OnNotice>
AgreedErrors agree_on_errors(Communicator* comm, const RankError& own, OnNotice&& on_notice);

// As above; a peer's failure notice is rethrown as it is.
AgreedErrors agree_on_errors(Communicator* comm, const RankError& own);

namespace detail {
// The collective: per rank 0 (no error), 1 (bad input) or 2 (runtime), summed over the ranks.
std::vector<uint64_t> share_error_codes(Communicator* comm, const RankError& own);
AgreedErrors from_error_codes(const std::vector<uint64_t>& codes);
}  // namespace detail

template <class OnNotice>
AgreedErrors agree_on_errors(Communicator* comm, const RankError& own, OnNotice&& on_notice) {
  try {
    return detail::from_error_codes(detail::share_error_codes(comm, own));
  } catch (const RankFailure& e) {
    // A peer that learned of our failure first may announce it back: our own cause is the
    // message to print.
    own.rethrow_if_failed();
    on_notice(e);
    throw;
  }
}

}  // namespace muonplan::exec
