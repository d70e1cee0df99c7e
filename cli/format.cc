#include <string>

#include "commands.h"
#include "muonplan/planner/data_dir.h"

namespace muonplan::cli {

std::string with_commas(long long value) {
  std::string digits = std::to_string(value < 0 ? -value : value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}

std::string default_topology_path() {
  try {
    return data_path("topologies/h200-ib.yaml");
  } catch (const std::exception&) {
    // No data directory: the default names a path that does not load, and says where to look.
    return "share/muonplan/topologies/h200-ib.yaml";
  }
}

}  // namespace muonplan::cli
