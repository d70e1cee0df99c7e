#include "muonplan/planfile/plan_checks.h"

#include "muonplan/base/io.h"
#include "muonplan/planfile/decay_factor.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>

namespace muonplan {
namespace {

using json = nlohmann::json;

// Shortest text that reads back the same value: 0.95, not 0.94999999999999996.
std::string num(double v) {
  char s[40];
  // At least the integer digits below 1e15, so 1000 reads 1000, not 1e+03.
  const double mag = std::abs(v);
  const int digits = mag >= 1 && mag < 1e15 ? int(std::floor(std::log10(mag))) + 1 : 1;
  for (int p = digits; p <= 17; ++p) {
    std::snprintf(s, sizeof s, "%.*g", p, v);
    if (!std::isfinite(v) || std::strtod(s, nullptr) == v) break;
  }
  return s;
}

// One checked value: its flag and its plan field, so both name it their way.
class Checker {
 public:
  explicit Checker(const std::string& plan_path) : path_(plan_path) {}

  void check(bool ok, const char* flag, const std::string& plan_field, const std::string& what,
             double got) const {
    if (ok) return;
    const std::string message = what + ", got " + num(got);
    if (path_.empty()) throw InputError({}, flag, message);
    throw InputError({path_, 0, 0}, plan_field, message);
  }
  // lr, update_rms and eps reach the step in fp32: 5e-324 is 0 there (no update at all) and
  // 1e39 is inf (every weight NaN).
  void positive(double v, const char* flag, const std::string& field) const {
    check(std::isfinite(v) && v > 0, flag, field, "must be a finite number > 0", v);
    const float f = static_cast<float>(v);
    check(std::isfinite(f) && f > 0, flag, field,
          "must be a finite number > 0 in fp32, the precision of the step (it rounds to " + num(f) +
              ")",
          v);
  }
  void non_negative(double v, const char* flag, const std::string& field) const {
    check(std::isfinite(v) && v >= 0, flag, field, "must be a finite number >= 0", v);
  }
  // The step computes momentum and betas in fp32: 0.99999999 is 1 there, and AdamW's bias
  // correction 1 - beta1^t is then 0 (every AdamW weight became NaN with exit 0).
  void fraction(double v, const char* flag, const std::string& field, bool open_low) const {
    const bool ok = open_low ? v > 0 && v < 1 : v >= 0 && v < 1;
    const std::string range = open_low ? "must be in (0, 1)" : "must be in [0, 1)";
    check(ok, flag, field, range, v);
    const float f = static_cast<float>(v);
    check(open_low ? f > 0 && f < 1 : f < 1, flag, field,
          range + " in fp32, the precision of the step (it rounds to " + num(f) + ")", v);
  }
  bool from_plan() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

void check_positive_finite(double value, const std::string& field, const SourceLoc& loc) {
  if (!(std::isfinite(value) && value > 0)) {
    throw InputError(loc, field, "must be a finite number > 0, got " + num(value));
  }
}

std::string memory_gib_problem(double gib) {
  const double max_gib = std::floor(kMaxMetric / (1024.0 * 1024.0 * 1024.0));
  if (gib <= max_gib) return "";
  return "must be at most " + num(max_gib) + " GiB (" + num(kMaxMetric) +
         " bytes, the bound on every figure a plan and its metrics hold), got " + num(gib);
}

std::string ns_steps_message(size_t steps) {
  return "expected 1 to " + std::to_string(kMaxNsSteps) + " (a, b, c) steps, got " +
         std::to_string(steps);
}

OptimizerHyper resolved_hyper(const OptimizerHyper& hyper, const NsSchedule& schedule) {
  OptimizerHyper h = hyper;
  if (h.update_rms == 0) h.update_rms = schedule.update_rms;
  if (h.adamw_lr == 0) h.adamw_lr = h.lr;
  return h;
}

std::string decay_bound_on_lr(double lr, double weight_decay) {
  char bound[32];
  std::snprintf(bound, sizeof bound, "%.6g", 1 / weight_decay);
  return std::string("must be at most 1/weight_decay = ") + bound + " (weight decay " +
         num(weight_decay) +
         ", the trainer's default): each step multiplies W by 1 - lr * weight_decay, got " +
         num(lr);
}

void check_optimizer_config(const OptimizerHyper& h, const NsSchedule& s,
                            const std::string& plan_path) {
  const Checker c(plan_path);
  const std::string oc = "optimizer_config.";
  c.positive(h.lr, "--lr", oc + "lr");
  c.fraction(h.momentum, "--momentum", oc + "momentum", true);
  c.non_negative(h.weight_decay, "--weight-decay", oc + "weight_decay");
  c.positive(h.update_rms, "--update-rms", oc + "update_rms");
  c.positive(h.adamw_lr, "--adamw-lr", oc + "adamw.lr");
  c.fraction(h.adamw_beta1, "--adamw-betas", oc + "adamw.beta1", false);
  c.fraction(h.adamw_beta2, "--adamw-betas", oc + "adamw.beta2", false);
  c.positive(h.adamw_eps, "eps", oc + "adamw.eps");  // no flag sets it
  c.non_negative(h.adamw_weight_decay, "--adamw-weight-decay", oc + "adamw.weight_decay");
  // Decoupled decay multiplies W by 1 - lr * weight_decay each step: past lr * wd = 1 the factor
  // is negative, and past 2 it grows |W| every step until W overflows. --weight-decay 1e30
  // left every Muon weight inf with exit 0: the non-finite check sums the updates, which stayed
  // finite. A factor in [0, 1] keeps |W| within its update's reach. The factor is checked as the
  // kernel computes it (decay_factor.h): AdamW's is fp32, negative where lr * wd is 1 in double.
  const auto decay = [&](double lr, double wd, float factor, const char* flag, const char* lr_flag,
                         const std::string& field) {
    char bound[32], f32[32];
    std::snprintf(bound, sizeof bound, "%.6g", 1 / lr);
    std::snprintf(f32, sizeof f32, "%.3g", double(factor));
    const std::string at = std::string(" (") + lr_flag + " " + num(lr) + ")";
    c.check(lr * wd <= 1, flag, field,
            std::string("must be at most 1/lr = ") + bound + at +
                ": each step multiplies W by 1 - lr * weight_decay",
            wd);
    c.check(factor >= 0, flag, field,
            std::string("each step multiplies W by 1 - lr * weight_decay, ") + f32 +
                " in fp32 as the kernel computes it" + at +
                ": it must be at least 0 (weight decay " + "at most " + bound + ")",
            wd);
  };
  decay(h.lr, h.weight_decay, muon_decay_factor(h.lr, h.weight_decay), "--weight-decay", "lr",
        oc + "weight_decay");
  decay(h.adamw_lr, h.adamw_weight_decay, adamw_decay_factor(h.adamw_lr, h.adamw_weight_decay),
        "--adamw-weight-decay", "AdamW lr", oc + "adamw.weight_decay");
  const std::string coeffs = oc + "newton_schulz_coefficients";
  if (s.steps.empty() || s.steps.size() > kMaxNsSteps) {
    if (!c.from_plan()) throw InputError({}, "--ns-schedule", ns_steps_message(s.steps.size()));
    throw InputError({c.path(), 0, 0}, coeffs, ns_steps_message(s.steps.size()));
  }
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const NsCoefficients& k = s.steps[i];
    for (double v : {k.a, k.b, k.c}) {
      // The NS kernels run in fp32 (bf16 GEMMs): 1e39 is finite in double, inf once rounded.
      c.check(std::isfinite(v) && std::fabs(v) <= std::numeric_limits<float>::max(),
              "--ns-schedule", coeffs + "[" + std::to_string(i) + "]",
              "coefficients must be finite in fp32 (|c| at most 3.40282e+38)", v);
    }
  }
  c.positive(s.norm_scale, "--ns-schedule", oc + "ns_norm_scale");
}

namespace {

// The strings execute writes into metrics; every other value is a number (null: none, e.g. no
// workload).
bool is_metrics_string(const std::string& field) {
  static const std::set<std::string> strings = [] {
    std::set<std::string> s = {"schema",           "backend", "plan",
                               "plan_fingerprint", "path",    "resumed_from"};
    for (const char* key : metric::kMeasuredStrings) s.insert(std::string("measured.") + key);
    return s;
  }();
  return strings.count(field) > 0;
}

// Every value under `v` (named `field`) is a number in [0, kMaxMetric], null, or a string where
// execute writes one.
void check_metric_values(const json& v, const std::string& field, const std::string& path) {
  auto fail = [&](const std::string& message) { throw InputError({path, 0, 0}, field, message); };
  if (is_metrics_string(field) && !v.is_string()) {
    fail("expected a string, got " + json_brief(v));
  } else if (v.is_object()) {
    for (const auto& [k, child] : v.items())
      check_metric_values(child, field.empty() ? k : field + "." + k, path);
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i)
      check_metric_values(v[i], field + "[" + std::to_string(i) + "]", path);
  } else if (v.is_string()) {
    if (!is_metrics_string(field)) fail("expected a number, got " + json_brief(v));
    // A path (`plan`) calibrate and report open, a name they print: text_problem's rule.
    if (const std::string why = text_problem(v.get_ref<const std::string&>()); !why.empty())
      fail(why);
  } else if (v.is_number()) {
    const double x = v.get<double>();
    if (!(std::isfinite(x) && x >= 0 && x <= kMaxMetric)) {
      fail("expected a number in [0, 1e18], got " + json_brief(v));
    }
  } else if (!v.is_null()) {
    fail("expected a number, got " + json_brief(v));
  }
}

}  // namespace

void check_metrics(const json& j, const std::string& path) {
  auto fail = [&](const std::string& field, const std::string& message) {
    throw InputError({path, 0, 0}, field, message);
  };
  if (!j.is_object()) fail("json", "expected an object");
  // Another schema first: such a file is named for what it is, whatever else it lacks.
  const auto schema = j.find("schema");
  if (schema != j.end() && *schema != kMetricsSchema) {
    fail("schema",
         std::string("expected ") + kMetricsSchema + ", got " +
             (schema->is_string() ? "'" + printable(schema->get<std::string>().substr(0, 60)) + "'"
                                  : json_brief(*schema)));
  }
  for (const char* key : {"measured", "predicted"}) {
    if (!j.contains(key) || !j[key].is_object()) {
      fail(key, "missing (expected the metrics of muonplan execute)");
    }
  }
  if (schema == j.end()) fail("schema", std::string("missing (expected ") + kMetricsSchema + ")");
  check_metric_values(j, "", path);
}

PredictedFigures read_plan_predicted(const json& plan, const std::string& path) {
  PredictedFigures figures;
  const auto it = plan.is_object() ? plan.find("predicted") : plan.end();
  if (it == plan.end()) return figures;
  if (!it->is_object()) {
    throw InputError({path, 0, 0}, "predicted", "expected an object, got " + json_brief(*it));
  }
  for (const auto& [k, v] : it->items()) {
    if (k == metric::kBreakdown) continue;  // not copied
    const std::string field = "predicted." + k;
    const PredictedFigureKey* key = nullptr;
    for (const PredictedFigureKey& f : kPredictedFigureKeys) key = k == f.name ? &f : key;
    if (!key)
      throw InputError({path, 0, 0}, field, "unknown key (muonplan plan does not write it)");
    check_metric_values(v, field, path);
    if (!v.is_number() && !v.is_null()) {
      throw InputError({path, 0, 0}, field, "expected a number, got " + json_brief(v));
    }
    if (v.is_number()) figures.*(key->member) = v.get<double>();
  }
  return figures;
}

json figures_to_json(const PredictedFigures& figures) {
  json j = json::object();
  for (const PredictedFigureKey& f : kPredictedFigureKeys) {
    const std::optional<double>& v = figures.*(f.member);
    j[f.name] = v ? json(*v) : json(nullptr);
  }
  return j;
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    uint32_t cp = 0;
    if ((b & 0xE0) == 0xC0) {
      len = 2;
      cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      len = 3;
      cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      len = 4;
      cp = b & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cb = static_cast<unsigned char>(s[i + k]);
      if ((cb & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cb & 0x3F);
    }
    const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

namespace {

// The code point of the UTF-8 sequence at s[i] (valid UTF-8), and its length in `len`.
uint32_t code_point_at(std::string_view s, size_t i, size_t& len) {
  const auto b = static_cast<unsigned char>(s[i]);
  len = b < 0x80 ? 1 : (b & 0xE0) == 0xC0 ? 2 : (b & 0xF0) == 0xE0 ? 3 : 4;
  uint32_t cp = len == 1 ? b : len == 2 ? (b & 0x1F) : len == 3 ? (b & 0x0F) : (b & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

// C0, DEL and C1 controls, the line and paragraph separators and the bidirectional overrides:
// each can move the cursor, end a line or reorder what a terminal or report.md shows.
bool is_control(uint32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string name_problem(std::string_view name) {
  if (name.empty()) return "must not be empty";
  return text_problem(name);
}

std::string text_problem(std::string_view name) {
  if (!is_valid_utf8(name)) return "is not valid UTF-8";
  for (size_t i = 0, len = 0; i < name.size(); i += len) {
    const uint32_t cp = code_point_at(name, i, len);
    if (is_control(cp)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "U+%04X", unsigned(cp));
      return std::string("must be printable text, got the control character ") + hex;
    }
  }
  return "";
}

std::string printable(std::string_view text) {
  const bool utf8 = is_valid_utf8(text);
  std::string out;
  char hex[16];
  for (size_t i = 0, len = 1; i < text.size(); i += len) {
    const auto b = static_cast<unsigned char>(text[i]);
    len = 1;
    if (b < 0x80 || !utf8) {
      if (b >= 0x20 && b < 0x7F && b != '\\') {
        out += char(b);
      } else {
        std::snprintf(hex, sizeof hex, "\\x%02X", unsigned(b));
        out += hex;
      }
      continue;
    }
    const uint32_t cp = code_point_at(text, i, len);
    if (is_control(cp)) {
      std::snprintf(hex, sizeof hex, "\\u%04X", unsigned(cp));
      out += hex;
    } else {
      out.append(text.substr(i, len));
    }
  }
  return out;
}

}  // namespace muonplan
