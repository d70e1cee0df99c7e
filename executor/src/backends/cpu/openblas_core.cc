// openblas_core.h's queries (the choice itself is in executor/openblas_core/openblas_core.cc).
#include "muonplan/exec/openblas_core.h"

#include <cblas.h>

extern "C" const char* muonplan_openblas_core_origin();

namespace muonplan::exec {

std::string openblas_core_name() {
  return openblas_get_corename();
}

std::string openblas_core_origin() {
  return muonplan_openblas_core_origin();
}

}  // namespace muonplan::exec
