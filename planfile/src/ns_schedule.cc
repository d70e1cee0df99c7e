#include "muonplan/planfile/ns_schedule.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/planfile/plan_checks.h"

namespace muonplan {
namespace {

NsSchedule repeat(const std::string& name, NsCoefficients c, int n) {
  return {name, std::vector<NsCoefficients>(n, c), 1.0, 0.2};
}

constexpr NsCoefficients kJordan{3.4445, -4.7750, 2.0315};

NsSchedule parse_list(const std::string& text) {
  NsSchedule s{"custom", {}, 1.0, 0.2};
  std::stringstream in(text);
  std::string step;
  while (std::getline(in, step, ';')) {
    NsCoefficients c;
    char sep1 = 0, sep2 = 0;
    std::stringstream item(step);
    if (!(item >> c.a >> sep1 >> c.b >> sep2 >> c.c) || sep1 != ',' || sep2 != ',' ||
        !(item >> std::ws).eof()) {
      throw InputError({}, "--ns-schedule",
                       "expected a preset (" + std::string("quintic, polar-express, jordan, ") +
                           "deepseek-v4) or 'a,b,c;a,b,c;...', got '" + brief(text) + "'");
    }
    for (double v : {c.a, c.b, c.c}) {
      if (!std::isfinite(v)) {
        throw InputError({}, "--ns-schedule",
                         "coefficients must be finite, got '" + brief(step) + "'");
      }
    }
    s.steps.push_back(c);
    // Bounded while reading: a list of a million steps is refused before it is stored.
    if (s.steps.size() > kMaxNsSteps) break;
  }
  if (s.steps.empty() || s.steps.size() > kMaxNsSteps) {
    size_t steps = s.steps.size();
    if (steps > kMaxNsSteps) steps = size_t(std::count(text.begin(), text.end(), ';')) + 1;
    throw InputError({}, "--ns-schedule", ns_steps_message(steps));
  }
  return s;
}

}  // namespace

std::vector<std::string> ns_schedule_presets() {
  return {"quintic", "polar-express", "jordan", "deepseek-v4"};
}

NsSchedule ns_schedule(const std::string& name) {
  if (name == "quintic") {
    return {name,
            {{4.0848, -6.8946, 2.9270},
             {3.9505, -6.3029, 2.6377},
             {3.7418, -5.5913, 2.3037},
             {2.8769, -3.1427, 1.2046},
             {2.8366, -3.0525, 1.2012}},
            1.0,
            0.2};
  }
  if (name == "polar-express") {
    return {name,
            {{8.15655, -22.48329, 15.87877},
             {4.04293, -2.80892, 0.50002},
             {3.89167, -2.77248, 0.50606},
             {3.28575, -2.36813, 0.46449},
             {2.34654, -1.70978, 0.42324}},
            1.02,
            0.2};
  }
  if (name == "jordan") return repeat(name, kJordan, 5);
  if (name == "deepseek-v4") {
    NsSchedule s = repeat(name, kJordan, 8);
    s.steps.push_back({2, -1.5, 0.5});
    s.steps.push_back({2, -1.5, 0.5});
    s.update_rms = 0.18;
    return s;
  }
  return parse_list(name);
}

}  // namespace muonplan
