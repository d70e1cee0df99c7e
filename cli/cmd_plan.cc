// muonplan plan: choose nodes and offload mode for a model on a topology, print the decision
// and the predicted costs (or the trainer settings they imply), write the Plan JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

#include "candidate_table.h"
#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/planfile/fit_scope.h"
#include "muonplan/planfile/prediction_terms.h"
#include "muonplan/planfile/trace.h"
#include "muonplan/planner/cost_model.h"
#include "muonplan/planner/model_io.h"
#include "muonplan/planner/plan.h"
#include "muonplan/planner/prime_rl.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

// --emit of a NO FIT plan without --force (docs/cli-contract.md).
constexpr int kExitNoFit = 3;

void print_terms(const char* title, const std::vector<Term>& terms, double scale,
                 const char* unit) {
  if (terms.empty()) return;
  std::printf("  %s\n", title);
  for (const Term& t : terms) {
    std::printf("    %-30s %12.4f %-4s %s\n", t.name.c_str(), t.value / scale, unit,
                t.formula.c_str());
  }
}

const char* unit_label(const char* unit) {
  return std::strcmp(unit, "gib") == 0 ? "GiB" : std::strcmp(unit, "gb") == 0 ? "GB" : "s";
}

// The running GPU total after the last list of its sum (allocated, reserved, peak).
void print_gpu_total(const Prediction& p, TermSum s) {
  if (s == TermSum::gpu_allocated)
    std::printf("  = GPU allocated %.4f GiB\n", p.gpu_allocated_bytes() / kGiB);
  if (s == TermSum::gpu_reserved) {
    std::printf("  = GPU reserved %.4f GiB\n", p.gpu_reserved_bytes() / kGiB);
    // The simulated allocator's peaks; the allocated terms above are what is live at the first.
    if (!p.gpu_allocated_peak_at.empty())
      std::printf("  allocated peak at %s; reserved peak at %s\n", p.gpu_allocated_peak_at.c_str(),
                  p.gpu_reserved_peak_at.c_str());
  }
  if (s == TermSum::gpu_peak) std::printf("  = GPU peak %.4f GiB\n", p.gpu_peak_bytes() / kGiB);
}

// --quiet: the first line, the decision and the chosen figures, without the tables.
void print_plan(const Plan& plan, bool explain, bool quiet, const char* rank) {
  const PlanOptions& o = plan.options;
  const Prediction& p = plan.predicted;
  // Without a workload "fits" leaves out the activations: the first line says so.
  const std::string scope =
      o.workload ? "" : std::string("; ") + kOptimizerStepOnly + " (" + kWorkloadHint + ")";
  std::printf("muonplan plan: %s on %s (%d %ss per node), optimizer %s, owners %s%s\n",
              plan.model_name.c_str(), plan.topology_name.c_str(), plan.gpus_per_node, rank,
              to_string(o.optimizer), to_string(o.owners), scope.c_str());
  std::printf(
      "limits: %s %.1f GiB, host RAM %.0f GiB per node; runtime %s, headroom %s %.0f%%, "
      "host %.0f%%\n",
      rank, p.gpu_limit_bytes / kGiB, p.host_limit_bytes / kGiB, to_string(o.runtime), rank,
      100 * p.gpu_headroom, 100 * p.host_headroom);
  if (!quiet) {
    std::printf("\n");
    print_candidates(plan, explain, rank);
    std::printf("\n");
  }
  std::printf("decision: %s%s\n", plan.fits ? "" : "NO FIT: ", plan.reason.c_str());
  std::printf("chosen: %d node(s) x %d %ss, layout %s, offload %s\n", o.nodes, plan.gpus_per_node,
              rank, to_string(o.layout).c_str(), to_string(o.offload));
  std::printf("  %s peak %s (step transient %s), host RAM %s per node: %s\n", rank,
              memory_text(p.gpu_peak_bytes(), 2).c_str(),
              memory_text(p.gpu_transient_bytes_total(), 2).c_str(),
              memory_text(p.host_bytes(), 1).c_str(), verdict_text(p).c_str());
  std::printf("  %s allocated %s, reserved %s, outside the allocator %s\n", rank,
              memory_text(p.gpu_allocated_bytes(), 2).c_str(),
              memory_text(p.gpu_reserved_bytes(), 2).c_str(),
              memory_text(sum(p.gpu_fixed_bytes), 2).c_str());
  std::printf("  all-to-all %.3f GB per rank (max), H2D %.2f GB, D2H %.2f GB per %s\n",
              p.alltoall_bytes_per_rank_max / kGB, p.h2d_bytes_per_gpu / kGB,
              p.d2h_bytes_per_gpu / kGB, rank);
  std::printf("  optimizer step %.3f s", p.optimizer_step_s);
  if (p.training_step_s) {
    std::printf(", training step %.3f s", *p.training_step_s);
    if (p.step_time_calibration.empty())
      std::printf(" (uncalibrated: no measured run on this GPU kind fits its constants)");
  }
  std::printf("\n");
  // What the trainer's loop runs besides the step (its time/step leaves it out).
  if (!p.between_steps_s.empty() && p.training_step_s) {
    const double between = sum(p.between_steps_s);
    std::string names;
    for (const auto& t : p.between_steps_s) names += (names.empty() ? "" : " + ") + t.name;
    std::printf("  between steps %.3f s (%s), so an iteration of the trainer's loop %.3f s\n",
                between, names.c_str(), *p.training_step_s + between);
  }
  if (quiet) return;
  if (!explain) {
    std::printf("(--explain prints every term; --json the full plan)\n");
    return;
  }
  std::printf("\nterms (busiest rank / node):\n");
  for (size_t i = 0; i < std::size(kTermLists); ++i) {
    const TermList& l = kTermLists[i];
    // muonplan's fixed overheads include its allocator slack; pytorch's are all outside it.
    const bool slack = l.list == &Prediction::gpu_fixed_bytes && o.runtime != RuntimeKind::pytorch;
    print_terms(slack ? "GPU fixed (context, allocator slack)" : l.label, p.*l.list,
                unit_scale(l.unit), unit_label(l.unit));
    const bool last = i + 1 == std::size(kTermLists) || kTermLists[i + 1].sum != l.sum;
    if (last) print_gpu_total(p, l.sum);
  }
}

struct PlanCommand {
  std::string model, topology = default_topology_path(), out, emit, trace, emit_out;
  PlanFlags flags;
  bool json = false, explain = false, quiet = false, force = false;
};

bool same_path(const std::string& a, const std::string& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && std::filesystem::equivalent(a, b, ec) && !ec;
}

// --emit-out: FILE's previous contents to FILE.bak, then the new ones to FILE, each by an atomic
// rename, so a failure leaves the old file or the new one, never a part, and the old one is
// kept. Returns whether there was a file to keep.
bool write_with_backup(const std::string& path, const std::string& text) {
  std::error_code ec;
  const bool had = std::filesystem::exists(path, ec);
  if (had) write_file_atomic(path + ".bak", read_input_file(path));
  write_file_atomic(path, text);
  return had;
}

// --emit-out may replace the trainer config it reads (that is its purpose); every other input,
// output and standard output is checked against it.
std::vector<PathArg> plan_outputs(const PlanCommand& f) {
  std::vector<PathArg> o = {{"--out", f.out}, {"--trace", f.trace}};
  if (!f.emit_out.empty()) {
    o.push_back({"--emit-out", f.emit_out});
    o.push_back({"--emit-out", f.emit_out + ".bak", false, "'s backup"});
  }
  return o;
}

std::vector<PathArg> without_config(const PlanCommand& f, std::vector<PathArg> in) {
  if (f.emit_out.empty()) return in;
  for (PathArg& a : in) {
    if (a.flag == "--trainer-config" && a.what.empty()) a.path.clear();
  }
  return in;
}

// The command's own flags and paths, before anything is read.
void check_plan_command(PlanCommand& f) {
  // Every input (the trainer config too) against --out and --trace, and standard output; then,
  // with --emit-out, every output against every input but the trainer config, which --emit-out
  // may replace (without it that second pass would repeat the first: plan_outputs is the same).
  const std::vector<PathArg> inputs = plan_inputs(f.model, f.topology, f.flags);
  refuse_overlaps(inputs, {{"--out", f.out}, {"--trace", f.trace}});
  if (!f.emit_out.empty()) refuse_overlaps(without_config(f, inputs), plan_outputs(f));
  if (!f.emit_out.empty() && f.emit.empty()) f.emit = "prime-rl";
  if (!f.emit_out.empty() && same_path(f.emit_out, f.flags.trainer_config) &&
      f.emit == "prime-rl-diff") {
    throw InputError({}, "--emit-out",
                     "prime-rl-diff writes only the changed keys: written over its "
                     "--trainer-config, the rest of the config would be lost; give another file");
  }
  check_emit_form(f.emit, f.flags);
  if (f.quiet && f.explain) throw InputError({}, "--quiet", "not with --explain");
  if (!f.emit.empty() && f.json) {
    throw InputError({}, "--emit", "prints instead of --json; give one of them");
  }
}

// A limit above the card plans for memory the device does not have (the topology's memory_gib
// is what the device reports): said, not refused, since a user may model a larger card on
// purpose.
void warn_gpu_limit(const PlanInputs& in, const Topology& topo) {
  if (in.request.options.gpu_memory_gib <= topo.node.gpu.memory_gib) return;
  char line[256];
  std::snprintf(line, sizeof line,
                "warning: --gpu-memory-gib %g is above the %s's %g GiB (topology %s): plans may "
                "fit this limit and not the card\n",
                in.request.options.gpu_memory_gib, topo.node.gpu.name.c_str(),
                topo.node.gpu.memory_gib, topo.name.c_str());
  std::cerr << line;
}

int run_plan(PlanCommand& f) {
  check_plan_command(f);
  const PlanInputs in = prepare_plan(f.model, f.flags);
  // Again with the file the model name resolved to: `--model DIR --out DIR/config.json`.
  std::vector<PathArg> inputs = plan_inputs(f.model, f.topology, f.flags);
  inputs.push_back(resolved_model_input(f.model, in.model));
  refuse_overlaps(without_config(f, inputs), plan_outputs(f));
  for (const std::string& w : trainer_warnings(in)) std::cerr << "warning: " << w << "\n";
  for (const std::string& o : in.overrides) std::cerr << "note: " << o << "\n";
  const Topology topo = load_topology(f.topology);
  warn_gpu_limit(in, topo);
  Plan plan;
  try {
    plan = make_plan(in.model.spec, topo, in.request);
  } catch (const InputError& e) {
    rethrow_at_file(in, e);
  }
  if (std::getenv("MUONPLAN_WORK_STATS")) {
    const CostWork w = cost_work();
    std::cerr << "work: " << w.predictions << " candidates predicted, " << w.rank_window_steps
              << " rank-window steps\n";
  }
  nlohmann::json j = plan_to_json(plan);
  // The answer is printed with the plan, not with an emitted config (Python's emit= skips it too).
  std::optional<TrainerAnswer> answer;
  if (in.trainer && f.emit.empty()) answer = trainer_answer(in.model.spec, topo, in, plan);
  // A config of a plan that does not fit is not written (exit 3), unless --force: prime-rl
  // would start it and run out of memory. Plain `plan` keeps exit 0 for NO FIT.
  if (!f.emit.empty() && !plan.fits && !f.force) {
    std::cerr << "error: --emit: the plan does not fit (" << plan.reason
              << "); no config written (exit 3); --force writes it anyway\n";
    return kExitNoFit;
  }
  // Everything that can fail comes before --out is written: a failed plan leaves it as it was.
  const std::string emitted =
      f.emit.empty() ? "" : emit_config({f.emit, f.model, f.flags}, in, topo, j);
  if (!f.out.empty()) write_file_atomic(f.out, j.dump(1) + "\n");
  if (!f.trace.empty()) write_file_atomic(f.trace, predicted_trace(plan).dump(1) + "\n");
  if (!f.emit_out.empty()) {
    const bool backed_up = write_with_backup(f.emit_out, emitted);
    std::cerr << "wrote " << f.emit_out
              << (backed_up ? " (the file it replaced: " + f.emit_out + ".bak)" : "") << "\n";
  } else if (!emitted.empty()) {
    std::cout << emitted;
  } else if (f.json) {
    if (answer) j["trainer_config"] = trainer_answer_json(in, *answer, plan);
    std::cout << j.dump(2) << "\n";
  } else {
    print_plan(plan, f.explain, f.quiet, topo.node.cpu_ranks ? "rank" : "GPU");
    if (answer) std::cout << trainer_answer_text(in, *answer, plan, f.explain);
  }
  return 0;
}

}  // namespace

Runner add_plan(CLI::App& app) {
  auto f = std::make_shared<PlanCommand>();
  CLI::App* c = app.add_subcommand("plan", "Choose node count and offload mode; predict costs");
  c->add_option("--model", f->model,
                "Model: YAML spec, config.json or its directory, bundled name (glm-4.5-air), or "
                "Hugging Face id (default: the trainer config's [model] name)")
      ->check(non_empty_path());
  c->add_option("--topology", f->topology, "Cluster description (YAML)")
      ->capture_default_str()
      ->check(non_empty_path());
  add_plan_flags(c, f->flags, true);
  c->add_flag("--json", f->json, "Print the plan as JSON");
  c->add_flag("--explain", f->explain, "Print every named term");
  c->add_flag("--quiet", f->quiet,
              "Print only the decision and the chosen plan's figures (no candidate table)");
  c->add_option("--emit", f->emit,
                "prime-rl | prime-rl-diff | prime-rl-sft: print the plan as a prime-rl config "
                "(over --trainer-config: that file with the changed keys; -diff: only those; "
                "toml: prime-rl)");
  c->add_option("--emit-out", f->emit_out,
                "Write the --emit config to this file instead of standard output: atomically, "
                "an existing file kept as FILE.bak; it may be the --trainer-config itself "
                "(--emit defaults to prime-rl)")
      ->check(non_empty_path());
  c->add_flag("--force", f->force,
              "With --emit: write the config of a plan that does not fit (else exit 3, nothing "
              "written)");
  c->add_option("--out", f->out, "Write the plan JSON to this file")->check(non_empty_path());
  c->add_option("--trace", f->trace,
                "Write the predicted step as Chrome trace-event JSON (Perfetto, chrome://tracing)")
      ->check(non_empty_path());
  return [f]() { return run_plan(*f); };
}

}  // namespace muonplan::cli
