// The Communicator conformance suite (issue 37 item 6), in the manner of nccl-tests: one
// harness, thin case files (comm_case_*.cc), and every implementation runs every case it
// claims. comm_test.cc runs them over MPI and the wrappers around it (host-staged,
// lane-ordered) and over the self communicator; each case names what it checks.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "muonplan/exec/communicator.h"

namespace muonplan::exec::conformance {

// What a case runs on: the communicator, its rank and world, and where failures are counted.
struct Context {
  Communicator& comm;
  std::string impl;  // "mpi", "host-staged", "lane-ordered", "self"
  int rank = 0, world = 1;
  int* failures = nullptr;
  void expect(bool ok, const char* what, const char* file, int line) const {
    if (ok) return;
    std::fprintf(stderr, "rank %d [%s]: %s:%d: failed: %s\n", rank, impl.c_str(), file, line, what);
    ++*failures;
  }
};

#define CONFORM_EXPECT(ctx, cond) (ctx).expect((cond), #cond, __FILE__, __LINE__)

// One case: its name and its body; `mpi_only` cases check what only MPI itself promises (its
// error text, liveness probes, failure notices, a checkpoint saved by every rank).
struct Case {
  const char* name;
  std::function<void(const Context&)> run;
  bool mpi_only = false;
};

// The cases of each file, in the order they run.
std::vector<Case> exchange_cases();    // comm_case_exchange.cc
std::vector<Case> collective_cases();  // comm_case_collectives.cc
std::vector<Case> mpi_cases();         // comm_case_mpi.cc

}  // namespace muonplan::exec::conformance
