#include "muonplan/planfile/offload_policy.h"

#include "muonplan/base/error.h"

namespace muonplan {
namespace {

using R = Residence;
using S = OffloadStaging;

// master, bf16 copy, momentum, moments, staging, host fold/apply/adamw, in flight, Nesterov.
// Full offload keeps two batches in flight (its staging buffers are pinned host memory, per
// batch); the others three (one exchanging out, one in NS, one exchanging back).
constexpr OffloadPolicy kNone{R::gpu, false, R::gpu, R::gpu, S::none, false, false, false, 3, true};
constexpr OffloadPolicy kOptimizerWhole{R::gpu, false, R::host, R::host, S::whole,
                                        false,  false, false,   3,       true};
constexpr OffloadPolicy kOptimizerChunked{R::gpu, false, R::host, R::host, S::chunked,
                                          false,  false, false,   3,       true};
constexpr OffloadPolicy kFull{R::host, true, R::host, R::host, S::none, true, true, true, 2, false};

}  // namespace

const OffloadPolicy& offload_policy(OffloadMode mode, OffloadStaging staging) {
  switch (mode) {
    case OffloadMode::none:
      return kNone;
    case OffloadMode::optimizer:
      return staging == OffloadStaging::chunked ? kOptimizerChunked : kOptimizerWhole;
    case OffloadMode::full:
      break;
  }
  return kFull;
}

bool nesterov_supported(OffloadMode m) {
  return offload_policy(m).nesterov_allowed;
}

void check_nesterov(const PlanOptions& o, const std::string& field, const SourceLoc& loc) {
  if (o.nesterov && !nesterov_supported(o.offload)) throw InputError(loc, field, kNesterovRefused);
}

int PlanOptions::batches_in_flight() const {
  return offload_policy(offload, optimizer_staging).batches_in_flight;
}

}  // namespace muonplan
