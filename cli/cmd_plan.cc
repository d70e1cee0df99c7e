// muonplan plan: choose nodes and offload mode for a model on a topology, print the decision
// and the predicted costs (or the trainer settings they imply), write the Plan JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "candidate_table.h"
#include "commands.h"
#include "muonplan/base/error.h"
#include "muonplan/base/io.h"
#include "muonplan/base/units.h"
#include "muonplan/cost_model.h"
#include "muonplan/model_io.h"
#include "muonplan/plan.h"
#include "muonplan/plan_inputs.h"
#include "muonplan/trace.h"
#include "muonplan/trainer_answer.h"
#include "muonplan/trainer_config.h"
#include "paths.h"

namespace muonplan::cli {
namespace {

void print_terms(const char* title, const std::vector<Term>& terms, double scale,
                 const char* unit) {
  if (terms.empty()) return;
  std::printf("  %s\n", title);
  for (const Term& t : terms) {
    std::printf("    %-30s %12.4f %-4s %s\n", t.name.c_str(), t.value / scale, unit,
                t.formula.c_str());
  }
}

void print_plan(const Plan& plan, bool explain) {
  const PlanOptions& o = plan.options;
  const Prediction& p = plan.predicted;
  std::printf("muonplan plan: %s on %s (%d GPUs per node), optimizer %s, owners %s\n",
              plan.model_name.c_str(), plan.topology_name.c_str(), plan.gpus_per_node,
              to_string(o.optimizer), to_string(o.owners));
  std::printf(
      "limits: GPU %.1f GiB, host RAM %.0f GiB per node; runtime %s, headroom GPU %.0f%%, "
      "host %.0f%%\n\n",
      p.gpu_limit_bytes / kGiB, p.host_limit_bytes / kGiB, to_string(o.runtime),
      100 * p.gpu_headroom, 100 * p.host_headroom);
  print_candidates(plan);
  std::printf("\ndecision: %s%s\n", plan.fits ? "" : "NO FIT: ", plan.reason.c_str());
  std::printf("chosen: %d node(s) x %d GPUs, layout %s, offload %s\n", o.nodes, plan.gpus_per_node,
              to_string(o.layout).c_str(), to_string(o.offload));
  std::printf("  GPU peak %.2f GiB (step transient %.2f GiB), host RAM %.1f GiB per node: %s\n",
              p.gpu_peak_bytes() / kGiB, p.gpu_transient_bytes_total() / kGiB,
              p.host_bytes() / kGiB, margin_text(p.fits(), p.fit_margin()).c_str());
  std::printf("  GPU allocated %.2f GiB, reserved %.2f GiB, outside the allocator %.2f GiB\n",
              p.gpu_allocated_bytes() / kGiB, p.gpu_reserved_bytes() / kGiB,
              sum(p.gpu_fixed_bytes) / kGiB);
  std::printf("  all-to-all %.3f GB per rank (max), H2D %.2f GB, D2H %.2f GB per GPU\n",
              p.alltoall_bytes_per_rank_max / kGB, p.h2d_bytes_per_gpu / kGB,
              p.d2h_bytes_per_gpu / kGB);
  std::printf("  optimizer step %.3f s", p.optimizer_step_s);
  if (p.training_step_s) std::printf(", training step %.3f s", *p.training_step_s);
  std::printf("\n");
  if (!explain) {
    std::printf("(--explain prints every term; --json the full plan)\n");
    return;
  }
  std::printf("\nterms (busiest rank / node):\n");
  print_terms("GPU persistent", p.gpu_persistent_bytes, kGiB, "GiB");
  print_terms("GPU step transient", p.gpu_transient_bytes, kGiB, "GiB");
  print_terms("GPU workload", p.gpu_workload_bytes, kGiB, "GiB");
  print_terms("GPU runtime allocations", p.gpu_runtime_bytes, kGiB, "GiB");
  std::printf("  = GPU allocated %.4f GiB\n", p.gpu_allocated_bytes() / kGiB);
  print_terms("GPU allocator reserve (reserved - allocated)", p.gpu_reserve_bytes, kGiB, "GiB");
  std::printf("  = GPU reserved %.4f GiB\n", p.gpu_reserved_bytes() / kGiB);
  if (!p.gpu_allocated_peak_at.empty()) {
    std::printf("  allocated peak at %s; reserved peak at %s\n", p.gpu_allocated_peak_at.c_str(),
                p.gpu_reserved_peak_at.c_str());
    print_terms("GPU live at the allocated peak (simulated allocator blocks)",
                p.gpu_live_at_peak_bytes, kGiB, "GiB");
  }
  // muonplan's fixed overheads include its allocator slack; pytorch's are all outside it.
  print_terms(o.runtime == RuntimeKind::pytorch ? "GPU outside the allocator"
                                                : "GPU fixed (context, allocator slack)",
              p.gpu_fixed_bytes, kGiB, "GiB");
  std::printf("  = GPU peak %.4f GiB\n", p.gpu_peak_bytes() / kGiB);
  print_terms("host RAM per node", p.host_bytes_per_node, kGiB, "GiB");
  print_terms("traffic per GPU per step", p.comm_bytes, kGB, "GB");
  print_terms("optimizer step", p.step_phases_s, 1, "s");
  print_terms("training step", p.training_terms_s, 1, "s");
  print_terms("training step, under compute (not in the sum)", p.training_hidden_s, 1, "s");
}

struct PlanCommand {
  std::string model, topology = default_topology_path(), out, emit, trace;
  PlanFlags flags;
  bool json = false, explain = false;
};

// --emit prime-rl writes the SFT form when the input was SFT; --emit toml is the old name.
EmitInput emit_input(const PlanCommand& f, const PlanInputs& in) {
  EmitInput e;
  e.sft = f.emit == "prime-rl-sft" || (f.emit != "prime-rl-rl" && in.trainer && in.trainer->sft);
  e.model_id = !f.model.empty() ? (in.model.spec.hf_id.empty() ? f.model : in.model.spec.hf_id)
               : in.trainer     ? in.trainer->model_name
                                : in.model.spec.name;
  if (in.trainer && !in.trainer->batch_key.empty()) e.batch_key = in.trainer->batch_key;
  e.ac_max_inflight = in.flags.ac_max_inflight;
  e.single_node = in.trainer && in.trainer->single_node;
  return e;
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
  c->add_option("--emit", f->emit,
                "prime-rl | prime-rl-sft: print the plan as a prime-rl config (toml: prime-rl)");
  c->add_option("--out", f->out, "Write the plan JSON to this file")->check(non_empty_path());
  c->add_option("--trace", f->trace,
                "Write the predicted step as Chrome trace-event JSON (Perfetto, chrome://tracing)")
      ->check(non_empty_path());
  return [f]() {
    refuse_overlaps(plan_inputs(f->model, f->topology, f->flags),
                    {{"--out", f->out}, {"--trace", f->trace}});
    if (f->emit == "toml") f->emit = "prime-rl";
    if (!f->emit.empty() && f->emit != "prime-rl" && f->emit != "prime-rl-sft") {
      throw InputError({}, "--emit", "expected prime-rl or prime-rl-sft, got '" + f->emit + "'");
    }
    if (!f->emit.empty() && f->json) {
      throw InputError({}, "--emit", "prints instead of --json; give one of them");
    }
    const PlanInputs in = prepare_plan(f->model, f->flags);
    if (in.trainer) {
      for (const std::string& w : in.trainer->warnings) std::cerr << "warning: " << w << "\n";
    }
    for (const std::string& o : in.overrides) std::cerr << "note: " << o << "\n";
    const Topology topo = load_topology(f->topology);
    Plan plan;
    try {
      plan = make_plan(in.model.spec, topo, in.request);
    } catch (const InputError& e) {
      if (in.trainer) rethrow_at_file(*in.trainer, e, in.overrides);
      throw;
    }
    if (std::getenv("MUONPLAN_WORK_STATS")) {
      const CostWork w = cost_work();
      std::cerr << "work: " << w.predictions << " candidates predicted, " << w.rank_window_steps
                << " rank-window steps\n";
    }
    nlohmann::json j = plan_to_json(plan);
    std::optional<TrainerAnswer> answer;
    if (in.trainer) answer = trainer_answer(in.model.spec, topo, in, plan);
    // Everything that can fail comes before --out is written: a failed plan leaves it as it was.
    const std::string emitted = f->emit.empty() ? "" : prime_rl_config(j, emit_input(*f, in));
    if (!f->out.empty()) write_file_atomic(f->out, j.dump(1) + "\n");
    if (!f->trace.empty()) write_file_atomic(f->trace, predicted_trace(plan).dump(1) + "\n");
    if (!emitted.empty()) {
      std::cout << emitted;
    } else if (f->json) {
      if (answer) j["trainer_config"] = trainer_answer_json(in, *answer);
      std::cout << j.dump(2) << "\n";
    } else {
      print_plan(plan, f->explain);
      if (answer) std::cout << trainer_answer_text(in, *answer, plan, f->explain);
    }
    return 0;
  };
}

}  // namespace muonplan::cli
