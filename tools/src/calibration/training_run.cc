// Calibration from measured training steps (training_run.h): each measured figure determines
// at most one constant, the one it is most sensitive to; the fit is a bounded least squares on
// log errors, by cyclic golden-section search (the figures are smooth and nearly separable in
// these constants).
#include "muonplan/tools/training_run.h"

#include "training_figures.h"

#include "muonplan/planner/prime_rl.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <set>
#include <sstream>

#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/planner/cost_model.h"
#include "muonplan/planner/data_dir.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan_request.h"
#include "muonplan/planner/workload.h"
#include "muonplan/planner/yaml_reader.h"

namespace muonplan {
namespace {

namespace fs = std::filesystem;
using detail::YamlMap;
using namespace training_figures;

// The figures a constant of figure f's group moves: the step's constants move both time figures,
// a memory constant its own figure only (tests/unit/training_fit_test.cc checks it).
bool moves(int knob_figure, int f) {
  const auto group = [](int g) { return g == step || g == post_backward ? step : g; };
  return group(knob_figure) == group(f);
}

// Run r's prediction: `replay` false leaves out the allocator replay, which only gpu_peak reads.
Prediction prediction(const Topology& topo, const TrainingRun& r, bool replay = true) {
  const Plan& pl = r.plan;
  return predict(r.spec, pl.inventory, topo, pl.options, pl.chunks,
                 replay ? PredictParts::all : PredictParts::without_allocator_replay);
}

// A constant the fit may move, within physical bounds (calibrate.cc has a Knob of its own).
struct TrainingKnob {
  const char* name;
  double& (*field)(Topology&);
  double lo, hi;
  const char* why;
  // Whether run r's figure depends on it (null: every run's does); only those count toward it.
  std::function<bool(const TrainingRun&)> exercised = nullptr;
  int figure = -1;  // whose knobs_for lists it
};

// Whether run r's attention kernel (auto resolved as the roofline resolves it) is `k`.
std::function<bool(const TrainingRun&)> uses_kernel(AttentionKernel k) {
  return [k](const TrainingRun& r) {
    const auto& w = r.plan.options.workload;
    return w && resolved_attention_kernel(w->attention, r.compute_capability) == k;
  };
}

// Per figure, the constants it determines, most sensitive first. A figure given k times (over
// the runs) fits the first k that a run exercises.
std::vector<TrainingKnob> knobs_for(int f) {
  switch (f) {
    case step:
      // The roofline's fitted constants (docs/planner.md section 8), per GPU kind: the GEMMs'
      // sustained fraction of peak (cuBLAS bf16 on large shapes runs at 0.6-0.85 of the dense
      // peak; what a trainer loses around them lands here), and per attention kernel the
      // fraction of its published throughput (attention_rate) the trainer reaches, fitted only
      // on the runs that use that kernel.
      return {{"calibration.training_gemm_efficiency",
               [](Topology& t) -> double& { return t.calibration.training_gemm_efficiency; }, 0.3,
               0.9, "training_step_s: the GEMMs are most of the step"},
              {"calibration.attention_fa3_efficiency",
               [](Topology& t) -> double& { return t.calibration.attention_fa3_efficiency; }, 0.3,
               1, "training_step_s of the runs on FlashAttention-3: its share of the step",
               uses_kernel(AttentionKernel::fa3)},
              {"calibration.attention_fa2_efficiency",
               [](Topology& t) -> double& { return t.calibration.attention_fa2_efficiency; }, 0.3,
               1, "training_step_s of the runs on FlashAttention-2: its share of the step",
               uses_kernel(AttentionKernel::fa2)},
              {"calibration.attention_sdpa_efficiency",
               [](Topology& t) -> double& { return t.calibration.attention_sdpa_efficiency; }, 0.3,
               1, "training_step_s of the runs on SDPA: its share of the step",
               uses_kernel(AttentionKernel::sdpa)}};
    case post_backward:
      return {{"pytorch.host_pass_efficiency",
               [](Topology& t) -> double& { return t.pytorch.host_pass_efficiency; }, 0.05, 1,
               "post_backward_optimizer_s: host passes over the fp32 master bound it"},
              {"calibration.pcie_efficiency",
               [](Topology& t) -> double& { return t.calibration.pcie_efficiency; }, 0.2, 1,
               "post_backward_optimizer_s of a second run"}};
    case gpu_peak:
      // The allocator's reserve is simulated (step_timeline.h), not fitted; what a measured peak
      // leaves are the backward's unlisted temporaries (which go through the simulated
      // allocator) and the CUDA context.
      return {{"pytorch.backward_temporaries_fraction",
               [](Topology& t) -> double& { return t.pytorch.backward_temporaries_fraction; }, 0, 2,
               "gpu_peak_gib (reserved): temporaries of a layer's backward the timeline does "
               "not list"},
              {"pytorch.cuda_context_gib",
               [](Topology& t) -> double& { return t.pytorch.cuda_context_gib; }, 0.2, 2,
               "gpu_peak_gib (reserved) of a second run",
               // torch's max_memory_reserved does not count the context.
               [](const TrainingRun& r) {
                 return r.gpu_peak_kind == TrainingRun::PeakKind::reserved;
               }}};
    default:
      return {{"pytorch.host_per_rank_gib",
               [](Topology& t) -> double& { return t.pytorch.host_per_rank_gib; }, 0.3, 16,
               "host_ram_per_node_gib: the per-rank runtime"}};
  }
}

// The sum of squared log errors over the figures of `runs` that knob_figure's constants move
// (every figure: -1). The figures a constant does not move are constant in its search, so
// leaving them out changes no argmin, and leaving out gpu_peak leaves out the allocator replay:
// one prediction per run either way.
double objective(const Topology& topo, const std::vector<TrainingRun>& runs, int knob_figure = -1) {
  double s = 0;
  for (const TrainingRun& r : runs) {
    const auto counts = [&](int f) {
      const auto m = measured(r, f);
      return m && *m > 0 && (knob_figure < 0 || moves(knob_figure, f));
    };
    if (!counts(step) && !counts(post_backward) && !counts(gpu_peak) && !counts(host_ram)) continue;
    const Prediction p = prediction(topo, r, counts(gpu_peak));
    for (int f = 0; f < kFigures; ++f) {
      if (!counts(f)) continue;
      const double v = figure(p, r, f), m = *measured(r, f);
      const double e = v > 0 ? std::log(v / m) : 10.0;
      s += e * e;
    }
  }
  return s;
}

// Rounds of the cyclic search. The step's two constants trade along a valley (a slower GEMM or
// a longer pass over each layer's activations): with d4a37f3's per-layer constant 6 rounds from
// the defaults stopped short of h200-ib's four-run minimum and up to 25 reached it; the search
// stops at the first round that no longer improves.
constexpr int kFitRounds = 25;

// Minimizes g on [lo, hi] by golden-section search.
double golden(const std::function<double(double)>& g, double lo, double hi) {
  const double k = (std::sqrt(5.0) - 1) / 2;
  double a = lo, b = hi, c = b - k * (b - a), d = a + k * (b - a);
  double gc = g(c), gd = g(d);
  for (int i = 0; i < 30; ++i) {
    if (gc < gd) {
      b = d, d = c, gd = gc, c = b - k * (b - a), gc = g(c);
    } else {
      a = c, c = d, gc = gd, d = a + k * (b - a), gd = g(d);
    }
  }
  return (a + b) / 2;
}

// What calibrate prints of a fitted constant: why, its bound (and whether the fit stopped on it),
// and the measured figures that determined it, run by run.
std::string fitted_note(const TrainingKnob& k, int f, double after,
                        const std::vector<TrainingRun>& fit) {
  char buf[96];
  const bool at_bound = std::abs(after - k.lo) < 1e-3 * (k.hi - k.lo) ||
                        std::abs(after - k.hi) < 1e-3 * (k.hi - k.lo);
  std::snprintf(buf, sizeof buf, "; bound [%g, %g]%s; from", k.lo, k.hi,
                at_bound ? ", at its bound" : "");
  std::string note = std::string(k.why) + buf;
  for (const TrainingRun& r : fit) {
    const auto m = measured(r, f);
    if (!m || (k.exercised && !k.exercised(r))) continue;
    std::snprintf(buf, sizeof buf, " %s %g", kFigureRows[f].name, *m);
    note += buf + std::string(" (") + fs::path(r.name).filename().string() + ")";
  }
  return note;
}

std::string resolve(const std::string& name, const std::string& beside, const char* dir,
                    const char* ext) {
  const fs::path here = fs::path(beside).parent_path() / name;
  if (fs::exists(here)) return here.string();
  if (fs::exists(name)) return name;
  return data_path(std::string(dir) + "/" + name + ext);
}

// A run's model: a file beside the run, else the name as `muonplan plan --model` resolves it
// (a path, a bundled name, a bundled spec's hf_id: model_resolve.cc).
std::string resolve_model_name(const std::string& name, const std::string& beside) {
  const fs::path here = fs::path(beside).parent_path() / name;
  if (fs::exists(here)) return here.string();
  const std::string bundled = data_path("models/" + name + ".yaml");
  return fs::exists(bundled) ? bundled : name;
}

void read_measured(const YamlMap& m, TrainingRun& r) {
  std::set<std::string> known = {"gpu_peak_kind", "oom"};
  for (const FigureRow& row : kFigureRows) known.insert(row.name);
  m.check_known(known);
  r.oom = m.get_bool("oom", false);
  auto get = [&](const char* key) -> std::optional<double> {
    if (!m.has(key)) return std::nullopt;
    const double v = m.get_double(key);
    if (!(v > 0) || !std::isfinite(v)) m.fail(key, "must be a positive number");
    return v;
  };
  for (const FigureRow& row : kFigureRows) r.*row.measured = get(row.name);
  const std::string kind = m.get_string("gpu_peak_kind", "reserved");
  using K = TrainingRun::PeakKind;
  static const std::map<std::string, K> kKinds = {{"reserved", K::reserved},
                                                  {"max_memory_reserved", K::max_memory_reserved},
                                                  {"allocated", K::allocated}};
  const auto k = kKinds.find(kind);
  if (k == kKinds.end())
    m.fail("gpu_peak_kind",
           "expected allocated, max_memory_reserved or reserved, got '" + kind + "'");
  r.gpu_peak_kind = k->second;
  if (!r.oom && !r.training_step_s && !r.gpu_peak_gib && !r.host_ram_per_node_gib &&
      !r.post_backward_optimizer_s)
    m.fail("training_step_s", "measured: gives no figure");
}

// The benchmark's LoRA (published.yaml's header): `--model.lora.rank R --max-concurrent-runs 4`,
// four adapter slots resident with the tokens all on the first; prime-rl's default alpha and
// target modules. `era_offload`: optim_cpu_offload's default at the run's date, which prime-rl
// refuses beside max_concurrent_runs > 1 (prime_rl_lora.cc).
void read_benchmark_lora(const YamlMap& root, PlanFlags& f, bool era_offload) {
  const int64_t rank = root.get_int("lora_rank", 0);
  if (rank < 0) root.fail("lora_rank", "must be 0 (none) or a positive rank");
  if (rank == 0) return;
  f.lora_rank = int(rank);
  f.lora_adapters = int(root.get_int("lora_adapters", 4));
  if (f.lora_adapters > 1 && era_offload && !root.has("offload"))
    root.fail("lora_rank",
              "prime-rl of the run's date defaults to optim_cpu_offload, which it refuses with "
              "max_concurrent_runs > 1: give offload: (what the run set)");
  // MultiLoRAOptimizer makes a run's AdamW when the run's directory appears; the benchmark
  // (--max-concurrent-runs 4, fake data, no orchestrator) creates no run directory, so no
  // slot holds moments and no optimizer step runs (trainer/runs.py, optim.py).
  f.lora_active_runs = int(root.get_int("lora_active_runs", 0));
}

// The trainer-benchmark form (docs/planner.md, "From a measured training step"): one node of
// `gpus` GPUs, FSDP over all of them, AdamW, `micro_batches` rows of seq_len tokens per GPU;
// `ac` recompute (--model.ac: full AC) or offload (--model.ac-offloading: full AC, inputs in
// host RAM) or none (neither flag); `attention` prime-rl's name. What run_single_benchmark.py
// does not pass is the trainer's default at the run's `date:` (prime_rl_era, the version
// table): optim_cpu_offload (offload optimizer), ac_offloading, RL's fused LM head (SFT's is
// unfused at every date).
void read_benchmark(const YamlMap& root, PlanFlags& f) {
  const int64_t gpus = root.get_int("gpus"), rows = root.get_int("micro_batches");
  const PrimeRlEra era = prime_rl_era(root.get_string("date", ""));
  f.nodes = std::to_string(root.get_int("nodes", 1));
  f.gpus_per_node = int(gpus);
  f.layout = "fsdp=" + std::to_string(gpus);
  f.offload = root.get_string("offload", era.optim_cpu_offload ? "optimizer" : "none");
  f.optimizer = root.get_string("optimizer", "adamw");
  f.seq_len = root.get_int("seq_len");
  f.tokens_per_step = rows * gpus * root.get_int("nodes", 1) * f.seq_len;
  f.micro_batch_seqs = 1;
  const std::string type = root.get_string("type");
  if (type != "rl" && type != "sft") root.fail("type", "expected rl or sft, got '" + type + "'");
  // Vocabulary rows before 2026-03-09, tokens after (roofline.cc).
  f.lm_head_chunk = type == "rl" ? era.rl_lm_head_chunk : 0;
  f.trainer = type;  // its host work by the run's era (date:, below)
  const std::string ac = root.get_string("ac", "recompute");
  if (ac != "recompute" && ac != "offload" && ac != "none")
    root.fail("ac", "expected recompute, offload or none, got '" + ac + "'");
  const bool ac_on = ac != "none" || era.ac;
  f.ac = ac_on ? "full" : "none";
  f.ac_offload = ac == "offload" || (ac_on && era.ac_offloading);
  const std::string attn = root.get_string("attention", "auto");
  static const std::map<std::string, std::string> kKernels = {{"flash_attention_2", "fa2"},
                                                              {"flash_attention_3", "fa3"},
                                                              {"sdpa", "sdpa"},
                                                              {"auto", "auto"},
                                                              {"fa2", "fa2"},
                                                              {"fa3", "fa3"}};
  const auto k = kKernels.find(attn);
  if (k == kKernels.end()) root.fail("attention", "unknown kernel '" + attn + "'");
  f.attention = k->second;
  // The benchmark workflow (and prime-rl's launcher) sets
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (.github/workflows/benchmarks.yaml).
  f.allocator = root.get_string("allocator", "expandable");
  read_benchmark_lora(root, f, era.optim_cpu_offload);
}

}  // namespace

TrainingRun load_training_run(const std::string& path, const Topology& topo) {
  const YamlMap root(detail::parse_yaml_text(read_input_file(path), path), path, "");
  root.check_known({"model",
                    "topology",
                    "trainer_config",
                    "nodes",
                    "gpus_per_node",
                    "layout",
                    "offload",
                    "optimizer",
                    "runtime",
                    "workload",
                    "measured",
                    "gpus",
                    "type",
                    "lora_rank",
                    "lora_adapters",
                    "lora_active_runs",
                    "allocator",
                    "runs_on",
                    "seq_len",
                    "ac",
                    "attention",
                    "micro_batches",
                    "date"});
  TrainingRun r;
  r.name = path;
  read_measured(root.get_map("measured"), r);
  r.skipped = topology_skip_reason(root.has("topology") ? root.get_string("topology") : topo.name,
                                   topo, path);
  if (!r.skipped.empty()) return r;
  // The model: model: (a path beside the run, or a bundled name), else the trainer config's
  // [model] name, resolved by prepare_plan as `muonplan plan` resolves it.
  const std::string model =
      root.has("model") ? resolve_model_name(root.get_string("model"), path) : "";
  PlanFlags f;
  f.runtime = root.get_string("runtime", "pytorch");
  if (root.has("trainer_config")) {
    f.trainer_config = resolve(root.get_string("trainer_config"), path, ".", "");
  }
  if (root.has("nodes")) f.nodes = std::to_string(root.get_int("nodes"));
  if (root.has("gpus_per_node")) f.gpus_per_node = int(root.get_int("gpus_per_node"));
  f.layout = root.get_string("layout", "");
  if (root.has("offload")) f.offload = root.get_string("offload");
  if (root.has("optimizer")) f.optimizer = root.get_string("optimizer");
  if (auto w = root.get_optional_map("workload")) {
    w->check_known({"tokens_per_step", "seq_len", "micro_batch_seqs", "ac", "ac_offload",
                    "lm_head_chunk", "cp_style", "attention"});
    f.tokens_per_step = w->get_int("tokens_per_step");
    f.seq_len = w->get_int("seq_len");
    f.micro_batch_seqs = w->get_int("micro_batch_seqs", 1);
    f.ac = w->get_string("ac", "full");
    f.ac_offload = w->get_bool("ac_offload", false);
    f.lm_head_chunk = w->get_int("lm_head_chunk", 0);
    f.cp_style = w->get_string("cp_style", "ulysses");
    f.attention = w->get_string("attention", "");
  }
  if (root.has("allocator")) f.allocator = root.get_string("allocator");
  // runs_on: the runtime that ran it, as --runs-on (muonplan: the seed's Muon under full
  // offload, which prime-rl's rules refuse).
  if (root.has("runs_on")) f.runs_on = root.get_string("runs_on");
  if (root.has("micro_batches")) read_benchmark(root, f);
  // date: the prime-rl the run ran (its era: what the trainer did then), as --prime-rl-version.
  if (root.has("date")) f.prime_rl_version = root.get_string("date");
  if (f.trainer_config.empty() && (f.nodes == "auto" || f.offload == "auto"))
    root.fail("nodes", "a training run needs nodes: and offload: (or trainer_config:)");
  const PlanInputs in = prepare_plan(model, f);
  r.spec = in.model.spec;
  r.model_path = in.model.path;
  r.trainer_config_path = f.trainer_config;
  r.plan = make_plan(r.spec, topo, in.request);
  r.compute_capability = topo.node.gpu.compute_capability;
  return r;
}

TrainingRunCheck check_training_run(const TrainingRun& r, const Topology& topo) {
  TrainingRunCheck c;
  c.run = r.name;
  c.topology = topo.name;
  c.oom = r.oom;
  const Prediction p = prediction(topo, r);
  c.measured_step_s = r.training_step_s;
  c.predicted_step_s = figure(p, r, step);
  c.measured_gpu_gib = r.gpu_peak_gib;
  c.predicted_gpu_gib = figure(p, r, gpu_peak);
  c.gpu_peak_gib = p.gpu_peak_bytes() / kGiB;
  c.gpu_limit_gib = p.gpu_limit_bytes / kGiB;
  c.predicted_between_steps_s = sum(p.between_steps_s);
  // The plan's verdict (Prediction::fit_verdict): fits, tight (the card, not the headroom).
  c.fits_card = p.fit_verdict() != Prediction::Verdict::does_not_fit;
  c.fits_headroom = p.fit_verdict() == Prediction::Verdict::fits;
  c.setting = r.spec.name + ", " + std::to_string(r.plan.world) + " GPU(s), " +
              to_string(r.plan.options.layout);
  return c;
}

std::vector<FitConstant> fit_constants() {
  std::vector<FitConstant> out;
  for (int f = 0; f < kFigures; ++f) {
    for (const TrainingKnob& k : knobs_for(f)) {
      FitConstant c{k.name, k.lo, k.hi, {}, k.field};
      for (int g = 0; g < kFigures; ++g) {
        if (moves(f, g)) c.moves.push_back(kFigureRows[g].name);
      }
      out.push_back(c);
    }
  }
  return out;
}

std::map<std::string, double> predicted_figures(const Topology& topo, const TrainingRun& r,
                                                bool replay) {
  const Prediction p = prediction(topo, r, replay);
  std::map<std::string, double> out;
  for (int f = 0; f < kFigures; ++f) {
    if (f != gpu_peak || replay) out[kFigureRows[f].name] = figure(p, r, f);
  }
  return out;
}

TrainingFit fit_training_runs(const Topology& topo, const std::vector<TrainingRun>& fit,
                              const std::vector<TrainingRun>& check, bool force) {
  if (fit.empty()) throw InputError({}, "--training-run", "no runs to fit");
  TrainingFit out;
  out.topology = topo;
  std::vector<TrainingKnob> active;
  for (int f = 0; f < kFigures; ++f) {
    const std::vector<TrainingKnob> ks = knobs_for(f);
    int total = 0, fitted = 0;
    for (const TrainingRun& r : fit) total += measured(r, f).has_value();
    for (size_t i = 0; i < ks.size(); ++i) {
      int given = 0;
      for (const TrainingRun& r : fit)
        given += measured(r, f).has_value() && (!ks[i].exercised || ks[i].exercised(r));
      Topology t = topo;
      // At most one constant per measured figure, and none that a single run determines
      // (one figure fits it exactly, whatever the model gets wrong) unless forced.
      const bool enough = given >= (force ? 1 : 2) && fitted < total;
      TrainingConstant c{ks[i].name, ks[i].field(t), ks[i].field(t), enough, ""};
      c.note = c.fitted ? ks[i].why
               : given == 1 && fitted < total
                   ? std::string("default: 1 measured ") + kFigureRows[f].name +
                         (ks[i].exercised ? " that counts it" : "") +
                         ", one run alone determines it (--force fits it)"
                   : std::string("default: ") + std::to_string(given) + " measured " +
                         kFigureRows[f].name + (ks[i].exercised ? " that count it" : "") +
                         ", too few to determine it";
      fitted += c.fitted;
      if (c.fitted) active.push_back(ks[i]), active.back().figure = f;
      out.constants.push_back(c);
    }
  }
  // A constant whose figures no other constant moves (moves(); training_fit_test checks that the
  // rest stay bit-identical) is searched once: a later round would search the same function
  // again and return the same value. The GPU peak's constant is one, and its search replays
  // the allocator: the bench-h200 fit took 58 s with it searched every round, 5 s without.
  std::vector<int> sharing(active.size(), 0);
  for (size_t i = 0; i < active.size(); ++i) {
    for (const TrainingKnob& other : active) sharing[i] += moves(other.figure, active[i].figure);
  }
  double last = objective(out.topology, fit);
  for (int round = 0; round < kFitRounds && !active.empty(); ++round) {
    for (size_t i = 0; i < active.size(); ++i) {
      const TrainingKnob& k = active[i];
      if (round > 0 && sharing[i] == 1) continue;
      auto g = [&](double v) {
        Topology t = out.topology;
        k.field(t) = v;
        return objective(t, fit, k.figure);
      };
      k.field(out.topology) = golden(g, k.lo, k.hi);
    }
    const double now = objective(out.topology, fit);
    if (last - now < 1e-9 * last) break;  // a round that no longer improves: converged
    last = now;
  }
  for (TrainingConstant& c : out.constants) {
    for (int f = 0; f < kFigures; ++f) {
      for (const TrainingKnob& k : knobs_for(f)) {
        if (c.fitted && c.name == k.name) {
          c.after = k.field(out.topology);
          c.note = fitted_note(k, f, c.after, fit);
        }
      }
    }
  }
  auto residuals = [&](const std::vector<TrainingRun>& runs, bool held_out) {
    for (const TrainingRun& r : runs) {
      const Prediction before = prediction(topo, r), after = prediction(out.topology, r);
      for (int f = 0; f < kFigures; ++f) {
        const auto m = measured(r, f);
        if (!m) continue;
        out.residuals.push_back(
            {r.name, kFigureRows[f].name, *m, figure(before, r, f), figure(after, r, f), held_out});
      }
    }
  };
  residuals(fit, false);
  residuals(check, true);
  return out;
}

std::string with_training_constants(const std::string& yaml, const TrainingFit& fit,
                                    const std::string& comment) {
  std::map<std::string, double> values;
  for (const TrainingConstant& c : fit.constants) {
    if (c.fitted) values[c.name] = c.after;
  }
  return with_section_constants(yaml, values, comment);
}

std::string with_section_constants(const std::string& yaml,
                                   const std::map<std::string, double>& values,
                                   const std::string& comment) {
  // section -> key -> value.
  std::map<std::string, std::map<std::string, double>> todo;
  for (const auto& [name, value] : values) {
    const size_t dot = name.find('.');
    todo[name.substr(0, dot)][name.substr(dot + 1)] = value;
  }
  auto line_for = [&](const std::string& key, double v) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %s: %.4g  # %s", key.c_str(), v, comment.c_str());
    return std::string(buf);
  };
  std::istringstream in(yaml);
  std::ostringstream out;
  std::string line, section;
  auto flush_section = [&]() {  // keys of the section just left that it did not have
    auto it = todo.find(section);
    if (it == todo.end()) return;
    for (const auto& [key, v] : it->second) out << line_for(key, v) << "\n";
    todo.erase(it);
  };
  while (std::getline(in, line)) {
    const bool top = !line.empty() && line[0] != ' ' && line[0] != '#';
    if (top) {
      flush_section();
      section = line.substr(0, line.find(':'));
    } else if (todo.count(section)) {
      const size_t start = line.find_first_not_of(' ');
      const size_t colon = line.find(':');
      if (start == 2 && colon != std::string::npos) {
        auto& keys = todo[section];
        const auto k = keys.find(line.substr(2, colon - 2));
        if (k != keys.end()) {
          out << line_for(k->first, k->second) << "\n";
          keys.erase(k);
          continue;
        }
      }
    }
    out << line << "\n";
  }
  flush_section();
  for (const auto& [sec, keys] : todo) {  // sections the file did not have
    out << sec << ":\n";
    for (const auto& [key, v] : keys) out << line_for(key, v) << "\n";
  }
  return out.str();
}

}  // namespace muonplan
