// Checks shared by every front end and loader, so that whatever `muonplan plan` writes the
// executor accepts, and whatever the executor would refuse the planner refuses first, with the
// same message (docs/reliability.md): the optimizer's hyperparameters and Newton-Schulz
// schedule, metrics files, duplicate keys in our JSON formats, and UTF-8 text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "muonplan/base/error.h"
#include "muonplan/planfile/metric_keys.h"
#include "muonplan/planfile/ns_schedule.h"
#include "muonplan/planfile/plan_options.h"

namespace muonplan {

// What the executor runs, checked alike from flags and from a plan file: `hyper` resolved
// (update_rms and adamw_lr 0 replaced by their defaults, as plan_to_json writes them).
//   lr, update_rms, adamw lr, adamw eps: finite, > 0
//   momentum: in (0, 1)
//   weight_decay, adamw weight_decay: finite, >= 0
//   adamw beta1, beta2: in [0, 1)
//   schedule: 1 to kMaxNsSteps steps of finite coefficients, norm_scale finite and > 0
// InputError naming the flag ("--lr: must be a finite number > 0, got inf") when plan_path is
// empty, else the plan's field ("plan.json: optimizer_config.lr: must be ...").
void check_optimizer_config(const OptimizerHyper& hyper, const NsSchedule& schedule,
                            const std::string& plan_path = "");

// The decoupled-decay bound (check_optimizer_config: lr * weight_decay at most 1) said of lr, for
// a trainer config that gave lr while its weight decay is the trainer's default: "must be at
// most 1/weight_decay = 100 (weight decay 0.01, the trainer's default): ...". The check itself
// names the weight decay, which such a file never wrote.
std::string decay_bound_on_lr(double lr, double weight_decay);

// A flag or field that must hold a finite number > 0 (a limit, a timeout): InputError
// "FIELD: must be a finite number > 0, got X" at `loc` (none for a flag).
void check_positive_finite(double value, const std::string& field, const SourceLoc& loc = {});

// A memory size in GiB (a topology's memory_gib and ram_gib, --gpu-memory-gib, --host-ram-gib)
// whose bytes the plan's figures hold: "" when at most kMaxMetric bytes, else why not (1e300 GiB
// was written as null, which execute then refused). Declared below with kMaxMetric.
std::string memory_gib_problem(double gib);

// hyper with update_rms and adamw_lr 0 ("the default") replaced by what runs.
OptimizerHyper resolved_hyper(const OptimizerHyper& hyper, const NsSchedule& schedule);

// The message for a Newton-Schulz schedule of `steps` steps outside 1..kMaxNsSteps.
std::string ns_steps_message(size_t steps);

// A `muonplan.metrics/2` file as `execute` writes it: InputError "FILE: KEY: ..." for another
// schema, `measured` or `predicted` missing, a string where a number belongs, or a number that
// is negative, non-finite or above kMaxMetric.
constexpr double kMaxMetric = 1e18;
// The metrics schema `execute` writes and `calibrate` and the report read. /2: `measured` in
// the prediction's names (gpu_peak_gib, h2d_gb_per_gpu, busy_s by resource); /1 files, with
// peak_bytes and busy_s.device, are refused: run execute again.
inline constexpr const char* kMetricsSchema = "muonplan.metrics/2";
void check_metrics(const nlohmann::json& metrics, const std::string& path);
// A plan's `predicted` (but its `breakdown`, which execute does not copy) read through the
// figures' table (metric_keys.h), which is what execute writes into the metrics: each figure a
// number by the rules above or null, "FILE: predicted.KEY: ..." otherwise (a plan holding -5
// ran, and report then refused its metrics), and a key the table lacks refused as unknown (it
// was copied into the metrics unread). No `predicted`: every figure unset.
PredictedFigures read_plan_predicted(const nlohmann::json& plan, const std::string& path);
// Every figure of the table, null where unset: the metrics' `predicted`.
nlohmann::json figures_to_json(const PredictedFigures& figures);

bool is_valid_utf8(std::string_view text);

// Why `name` (a model's, a topology's or a GPU's) is refused, or "" when it is not: names are
// non-empty, valid UTF-8 and hold no control character (C0, DEL, C1, U+2028/2029, bidi
// overrides), since they are echoed to terminals and into report.md headings. One rule for
// every name muonplan reads.
std::string name_problem(std::string_view name);
// Why a string read from a file (a path, a name, a keyword: TOML, YAML or JSON) is refused, or
// "" when it is not: valid UTF-8 without a control character, name_problem's rule without the
// emptiness (an empty path has its own message). A NUL would end a path at the C library
// ("model.yaml\0/etc/passwd" opened model.yaml) and an ESC would reach the terminal. Every
// file reader's string getter asks it: YamlMap::get_string, the TOML trainer config's, the
// plan loader's and the Hugging Face config's.
std::string text_problem(std::string_view text);
// `text` safe to echo: control characters, backslashes and bytes of invalid UTF-8 as \xNN
// (\uNNNN for a control character past ASCII); printable UTF-8 unchanged.
std::string printable(std::string_view text);

}  // namespace muonplan
