// The trainer's identity on a workload: which prime-rl trainer, of which date, and how its MoE
// layers route (docs/planner.md section 8).
#include "trainer_flags.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"

namespace muonplan::detail {

std::vector<double> read_expert_load(const std::string& path) {
  std::istringstream in(read_input_file(path));
  std::vector<double> out;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    for (char& ch : line) {
      if (ch == ',' || ch == '[' || ch == ']') ch = ' ';
    }
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
      char* end = nullptr;
      const double v = std::strtod(word.c_str(), &end);
      if (end == word.c_str() || *end != '\0' || !std::isfinite(v) || v < 0)
        throw InputError(
            {}, "--expert-load",
            path + ": expected tokens per expert (non-negative numbers), got '" + word + "'");
      out.push_back(v);
    }
  }
  double sum = 0;
  for (double v : out) sum += v;
  if (out.empty() || !(sum > 0))
    throw InputError({}, "--expert-load", path + ": no tokens per expert (balanced, or a file)");
  return out;
}

void apply_trainer_flags(const PlanFlags& f, Workload& w) {
  if (!f.trainer.empty() && f.trainer != "rl" && f.trainer != "sft")
    throw InputError({}, "--trainer", "expected rl or sft, got '" + brief(f.trainer) + "'");
  w.trainer = f.trainer;
  // The date as given (to_plan_request has checked it); empty: today's prime-rl, whose mechanisms
  // the cost model takes when no era is named. The prime-rl room's version table is above this
  // folder (docs/architecture.md), so the date is not resolved to the table's newest here.
  if (!f.trainer.empty()) w.prime_rl_date = f.prime_rl_version;
  if (f.expert_load != "balanced") w.expert_load = read_expert_load(f.expert_load);
}

}  // namespace muonplan::detail
