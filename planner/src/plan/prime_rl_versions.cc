// prime-rl's defaults by date (docs/trainer-config.md, "Versions"): the one table of the default
// changes muonplan follows, from prime-rl's commits (each cited in that table of the docs). A
// file planned with --prime-rl-version DATE gets the defaults in force on that date; without
// it, the newest the table knows.
#include <cctype>

#include "trainer_file.h"

namespace muonplan::detail {
namespace {

constexpr const char* kNewest = "2026-08-21";      // v0.8.1.dev67, the schema the key table follows
constexpr const char* kDefaultsOn = "2026-06-26";  // c5afcaa2e (#2868): AC, offload, ep auto on
constexpr const char* kHead1024 = "2026-06-26";    // c5afcaa2e: fused head 1024 by default
constexpr const char* kHead8192 = "2026-08-19";    // 2acb19ecc (#3302): fused head 8192

bool is_date(const std::string& d) {
  if (d.size() != 10 || d[4] != '-' || d[7] != '-') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9}) {
    if (!std::isdigit(static_cast<unsigned char>(d[i]))) return false;
  }
  return d.substr(5, 2) >= "01" && d.substr(5, 2) <= "12" && d.substr(8, 2) >= "01" &&
         d.substr(8, 2) <= "31";
}

}  // namespace

PrimeRlDefaults prime_rl_defaults(const std::string& version) {
  const std::string date = version.empty() ? kNewest : version;
  if (!is_date(date))
    throw InputError({}, "--prime-rl-version", "expected a date YYYY-MM-DD, got '" + date + "'");
  PrimeRlDefaults d;
  d.date = date;
  d.newest = date >= kNewest;
  const bool on = date >= kDefaultsOn;  // ISO dates compare as text
  d.optim_cpu_offload = d.ac = d.ac_offloading = d.ep_auto = on;
  d.lm_head_chunk = date >= kHead8192 ? 8192 : date >= kHead1024 ? 1024 : 0;
  return d;
}

std::vector<std::string> default_differences(const PrimeRlDefaults& now,
                                             const PrimeRlDefaults& then) {
  std::vector<std::string> out;
  auto on = [](bool b) { return std::string(b ? "on" : "off"); };
  if (now.optim_cpu_offload != then.optim_cpu_offload)
    out.push_back("optim_cpu_offload " + on(then.optim_cpu_offload) + " (offload, host RAM)");
  if (now.ep_auto != then.ep_auto)
    out.push_back(std::string("ep ") + (then.ep_auto ? "auto" : "1") + " (layout, all-to-all)");
  if (now.ac != then.ac) out.push_back("ac " + on(then.ac) + " (activations, step time)");
  if (now.ac_offloading != then.ac_offloading)
    out.push_back("ac_offloading " + on(then.ac_offloading) + " (GPU peak, host RAM)");
  if (now.lm_head_chunk != then.lm_head_chunk)
    out.push_back("fused_lm_head_token_chunk_size " +
                  (then.lm_head_chunk ? std::to_string(then.lm_head_chunk) : "disabled") +
                  " (GPU peak)");
  return out;
}

}  // namespace muonplan::detail
